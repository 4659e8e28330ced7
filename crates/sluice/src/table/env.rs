//! [`TableEnv`]: Flink's `StreamTableEnvironment` over a [`StreamEnv`] — SQL statements, tables
//! from the program's streams and streams from tables, Rust functions — every SQL job added to
//! the environment's one job.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use sluice_datastream::{DataStream, StreamEnv};
use sluice_sql::catalog::{FunctionDef, FunctionLanguage, FunctionScope};
use sluice_sql::plan::changelog_mode::refuse_updates;
use sluice_sql::plan::{explain, operator_uids, plan_insert, plan_query, plan_statement_set};
use sluice_sql::plan::{PhysicalPlan, UPDATING};
use sluice_sql::{
    parse_script, FunctionImpl, ObjectPath, PlannedStatement, Position, QueryStatement, Row,
    Session, SqlError, Statement, ViewDef,
};
use sluice_table::script::{describe, locate};
use sluice_table::{LateRecords, RowErrors, SqlJob, StreamTable, StreamTables, Translation};
use sluice_types::Data;

use super::convert::{rows_of, Layout};
use super::schema::{in_schema, quoted, Schema};
use super::{ScalarUdf, StatementSet, Table};

/// Flink's `StreamTableEnvironment` for a Rust program: plans SQL and mixes it with DataStream
/// code on one [`StreamEnv`], so every SQL job is part of the environment's job and gets what
/// any job gets (`sluice::run`: REST, checkpoints, the doctor).
///
/// * [`execute_sql`](Self::execute_sql): one statement — `SET`, `RESET`, `CREATE TABLE | VIEW
///   | FUNCTION`, `DROP`, `SHOW TABLES`, `DESCRIBE`, `EXPLAIN`; an `INSERT INTO` (or
///   `EXECUTE STATEMENT SET`) adds its operators and sink to the environment's job (the job
///   runs when the program runs the environment; Flink's `executeSql` submits a job of its
///   own instead).
/// * [`sql_query`](Self::sql_query) → [`Table`]; [`from_data_stream`](Self::from_data_stream)
///   (a typed stream, a [`Schema`] and a conversion to rows) → [`Table`];
///   [`create_temporary_view`](Self::create_temporary_view) names a table for SQL;
///   [`to_data_stream`](Self::to_data_stream) → `DataStream<Row>` (append-only tables only).
/// * [`create_temporary_function`](Self::create_temporary_function) /
///   [`register_function`](Self::register_function): Rust scalar functions ([`ScalarUdf`]).
/// * [`create_statement_set`](Self::create_statement_set): INSERTs planned together.
///
/// Every refusal is a [`SqlError`] naming what and where, returned before anything is added to
/// the job. Rows SQL operators cannot evaluate (a failed cast, a Rust function's error, a
/// record the conversion refuses) are dead letters counted in [`row_errors`](Self::row_errors).
///
/// Cheap to clone (a shared handle, like the `StreamEnv`); build on one thread.
#[derive(Clone)]
pub struct TableEnv {
    env: StreamEnv,
    inner: Rc<RefCell<Inner>>,
}

impl std::fmt::Debug for TableEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.borrow();
        f.debug_struct("TableEnv")
            .field("tables", &inner.session.catalog.table_names())
            .finish()
    }
}

struct Inner {
    session: Session,
    tables: StreamTables,
    errors: RowErrors,
    late: LateRecords,
    /// Plan nodes numbered so far (Flink's one exec-node counter per session).
    uid_offset: usize,
    /// Numbers of Flink's generated names: `*anonymous_datastream_source$n*`,
    /// `UnnamedTable$n`, `*anonymous_datastream_sink$n*`.
    next_source: usize,
    next_table: usize,
    next_sink: usize,
}

/// What [`TableEnv::execute_sql`] gives back (Flink's `TableResult`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableResult {
    text: Option<String>,
}

impl TableResult {
    /// The text a statement shows (`EXPLAIN`, `SHOW TABLES`, `DESCRIBE`, `SET`), if it shows
    /// any.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// Prints the text, or `OK` for a statement that shows none.
    pub fn print(&self) {
        println!("{}", self.text.as_deref().unwrap_or("OK"));
    }
}

/// Keys of the job itself: in a program the `StreamEnv` (and `RunOptions`' flags) owns them.
fn job_key(key: &str) -> bool {
    [
        "parallelism.default",
        "pipeline.name",
        "pipeline.max-parallelism",
        "execution.runtime-mode",
    ]
    .contains(&key)
        || key.starts_with("execution.checkpointing.")
}

/// The one statement of `sql`.
fn one_statement(sql: &str) -> Result<Statement, SqlError> {
    let mut statements = parse_script(sql, &BTreeMap::new())?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        0 => Err(SqlError::validation(None, "no statement to run")),
        n => Err(SqlError::validation(
            Some(statements[1].pos()),
            format!("one statement at a time ({n} given): call execute_sql once per statement"),
        )),
    }
}

impl TableEnv {
    /// A table environment whose SQL jobs are added to `env`'s job.
    pub fn create(env: &StreamEnv) -> TableEnv {
        TableEnv {
            env: env.clone(),
            inner: Rc::new(RefCell::new(Inner {
                session: Session::new(),
                tables: StreamTables::new(),
                errors: RowErrors::new(),
                late: LateRecords::new(),
                uid_offset: 0,
                next_source: 1,
                next_table: 0,
                next_sink: 1,
            })),
        }
    }

    /// The environment the SQL jobs are added to.
    pub fn stream_env(&self) -> &StreamEnv {
        &self.env
    }

    /// Rows the SQL operators of this environment could not evaluate (dead letters: counted,
    /// the first errors kept).
    pub fn row_errors(&self) -> RowErrors {
        self.inner.borrow().errors.clone()
    }

    /// Rows its event-time window aggregates and window joins dropped as late.
    pub fn late_records(&self) -> LateRecords {
        self.inner.borrow().late.clone()
    }

    /// A copy of the session: its catalog (tables, views, functions) and `SET`s.
    pub fn session(&self) -> Session {
        self.inner.borrow().session.clone()
    }

    /// Runs one statement (see [`TableEnv`]). A query on its own is refused: make it a
    /// [`Table`] with [`sql_query`](Self::sql_query).
    pub fn execute_sql(&self, sql: &str) -> Result<TableResult, SqlError> {
        let stmt = one_statement(sql)?;
        let pos = stmt.pos();
        if let Statement::Set { key, pos, .. } = &stmt {
            if job_key(key) {
                return Err(SqlError::unsupported(
                    Some(*pos),
                    format!("SET '{key}' in a program: the StreamEnv owns the job's settings (set them with its setters or RunOptions' flags: -p, --checkpoint-interval…)"),
                ));
            }
        }
        let planned = self
            .inner
            .borrow_mut()
            .session
            .execute(stmt)
            .map_err(|e| locate(e, pos))?;
        let Some(planned) = planned else {
            return Ok(TableResult::default());
        };
        let text = |t: String| Ok(TableResult { text: Some(t) });
        let session = self.session();
        match planned {
            PlannedStatement::Insert(i) => {
                let plan = plan_insert(&session, &i).map_err(|e| locate(e, pos))?;
                self.attach(&plan).map_err(|e| locate(e, pos))?;
                Ok(TableResult::default())
            }
            PlannedStatement::StatementSet(s) => {
                let plan = plan_statement_set(&session, &s).map_err(|e| locate(e, pos))?;
                self.attach(&plan).map_err(|e| locate(e, pos))?;
                Ok(TableResult::default())
            }
            PlannedStatement::Query(q) => Err(SqlError::unsupported(
                Some(q.pos),
                "a query on its own in execute_sql: make it a Table with sql_query() and read its rows with to_data_stream()",
            )),
            PlannedStatement::Explain(e) => text(explain(&session, &e)?),
            PlannedStatement::ShowTables { .. } => text(session.catalog.table_names().join("\n")),
            PlannedStatement::ShowConfig { .. } => text(
                session
                    .config
                    .entries()
                    .map(|(k, v)| format!("'{k}' = '{v}'"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            PlannedStatement::Describe { name } => text(describe(&session, &name)?),
        }
    }

    /// Plans a query (Flink's `sqlQuery`) and registers it as `UnnamedTable$<n>`, so that
    /// later SQL can read it by the [`Table`]'s `Display`. An updating query (a `GROUP BY`
    /// without a window…) makes a table that [`to_data_stream`](Self::to_data_stream) refuses
    /// with Flink's message.
    pub fn sql_query(&self, sql: &str) -> Result<Table, SqlError> {
        let stmt = one_statement(sql)?;
        let Statement::Query(query) = stmt else {
            return Err(SqlError::validation(
                Some(stmt.pos()),
                "sql_query takes a query (SELECT …); run other statements with execute_sql",
            ));
        };
        self.table_of(query)
    }

    fn table_of(&self, query: QueryStatement) -> Result<Table, SqlError> {
        let session = self.session();
        let plan = match plan_query(&session, &query) {
            Ok(plan) => Ok(plan),
            Err(e @ SqlError::Unsupported { .. }) if e.to_string().contains(UPDATING) => Err(e),
            Err(e) => return Err(e),
        };
        let name = {
            let mut inner = self.inner.borrow_mut();
            let name = format!("UnnamedTable${}", inner.next_table);
            inner.next_table += 1;
            inner
                .session
                .catalog
                .create_view(view(path(&name), &query))?;
            name
        };
        Ok(Table {
            tenv: self.clone(),
            name,
            query,
            plan,
        })
    }

    /// Registers `table` under `name` for SQL (Flink's `createTemporaryView`).
    pub fn create_temporary_view(&self, name: &str, table: &Table) -> Result<(), SqlError> {
        self.inner
            .borrow_mut()
            .session
            .catalog
            .create_view(view(path(name), &table.query))
    }

    /// A table of a typed stream (Flink's `fromDataStream`): `schema` declares its columns,
    /// `to_row` gives each record's physical columns in the schema's order (see
    /// [`crate::row!`]). A `rowtime` metadata column is the record's event timestamp, and
    /// `WATERMARK FOR rowtime AS SOURCE_WATERMARK()` keeps the stream's own watermarks (the
    /// stream must have event time); another watermark expression makes Flink SQL's periodic
    /// watermark from the rows.
    pub fn from_data_stream<T: Data>(
        &self,
        stream: &DataStream<T>,
        schema: Schema,
        to_row: impl Fn(T) -> Row + Send + Sync + 'static,
    ) -> Result<Table, SqlError> {
        let (source, errors) = {
            let inner = self.inner.borrow();
            let n = inner.next_source;
            (
                format!("*anonymous_datastream_source${n}*"),
                inner.errors.clone(),
            )
        };
        let def = schema.table_def(&source)?;
        let event_time = stream.timestamps().is_some();
        let layout = Layout::of(&def, event_time).map_err(in_schema)?;
        let source_watermark = def.watermark.as_ref().is_some_and(|w| {
            w.expr
                .to_string()
                .eq_ignore_ascii_case("SOURCE_WATERMARK()")
        });
        if source_watermark && !event_time {
            return Err(in_schema(SqlError::validation(
                def.watermark.as_ref().map(|w| w.pos),
                "SOURCE_WATERMARK() keeps the stream's watermarks, but the stream has no event time: assign it first (assign_timestamps_and_watermarks)",
            )));
        }
        let to_row: Arc<dyn Fn(T) -> Row + Send + Sync> = Arc::new(to_row);
        let typed = stream.clone();
        let rows = move || rows_of(&typed, &to_row, &layout, &errors);
        let table = StreamTable::new(rows, event_time);
        {
            let mut inner = self.inner.borrow_mut();
            inner.session.catalog.create_table(def).map_err(in_schema)?;
            inner.tables.insert(source.clone(), table);
            inner.next_source += 1;
        }
        let query = match one_statement(&format!("SELECT * FROM {}", quoted(&source)))? {
            Statement::Query(q) => q,
            other => {
                return Err(SqlError::validation(
                    Some(other.pos()),
                    "internal error: the scan of a stream is not a query",
                ))
            }
        };
        self.table_of(query).map_err(in_schema)
    }

    /// The rows of an append-only `table` as a stream (Flink's `toDataStream`), its operators
    /// added to the environment's job; a rowtime column is the stream's event time. An
    /// updating table is refused with Flink's message.
    pub fn to_data_stream(&self, table: &Table) -> Result<DataStream<Row>, SqlError> {
        let sink = {
            let mut inner = self.inner.borrow_mut();
            inner.next_sink += 1;
            format!("*anonymous_datastream_sink${}*", inner.next_sink - 1)
        };
        let plan = match &table.plan {
            Ok(plan) => plan,
            Err(SqlError::Unsupported { pos, what }) => {
                return Err(SqlError::Unsupported {
                    pos: *pos,
                    what: format!("Table sink '{sink}' doesn't support consuming update changes which is produced by {what}"),
                })
            }
            Err(e) => return Err(e.clone()),
        };
        for root in &plan.roots {
            refuse_updates(root, &format!("Table sink '{sink}'"))?;
        }
        let (session, translation) = self.translation();
        SqlJob::build_streams(
            &StreamEnv::new(),
            &session,
            plan,
            &Translation {
                tables: translation.tables.stand_ins(),
                ..translation.clone()
            },
        )?;
        let (_, mut streams) = SqlJob::build_streams(&self.env, &session, plan, &translation)?;
        self.numbered(plan);
        streams
            .pop()
            .ok_or_else(|| SqlError::validation(None, "internal plan error: a query without rows"))
    }

    /// Registers `udf` under `name` for this session's SQL (Flink's
    /// `createTemporaryFunction`); a temporary function of that name already there is an error.
    pub fn create_temporary_function(&self, name: &str, udf: ScalarUdf) -> Result<(), SqlError> {
        let identifier = format!("rust:{}", name.to_lowercase());
        let mut inner = self.inner.borrow_mut();
        let mut catalog = inner.session.catalog.clone();
        catalog.register_udf_impl(&identifier, FunctionImpl(Arc::new(udf.to_function())));
        catalog.create_function(FunctionDef {
            name: path(name),
            identifier,
            language: FunctionLanguage::Java,
            scope: FunctionScope::Temporary,
            if_not_exists: false,
            pos: Position::default(),
        })?;
        inner.session.catalog = catalog;
        Ok(())
    }

    /// Lets `CREATE FUNCTION name AS 'identifier'` (in [`execute_sql`](Self::execute_sql)) name
    /// `udf`, as a class on Flink's classpath lets it name the class (a script written for
    /// Flink runs unchanged when its classes are registered under their names).
    pub fn register_function(&self, identifier: &str, udf: ScalarUdf) {
        self.inner
            .borrow_mut()
            .session
            .catalog
            .register_udf_impl(identifier, FunctionImpl(Arc::new(udf.to_function())));
    }

    /// An empty [`StatementSet`].
    pub fn create_statement_set(&self) -> StatementSet {
        StatementSet::new(self.clone())
    }

    /// The session and what a translation of this environment reads.
    fn translation(&self) -> (Session, Translation) {
        let inner = self.inner.borrow();
        (
            inner.session.clone(),
            Translation {
                tables: inner.tables.clone(),
                errors: inner.errors.clone(),
                late: inner.late.clone(),
                uid_offset: inner.uid_offset,
                ..Translation::default()
            },
        )
    }

    /// Counts a translated plan's nodes, so that the next plan's uids follow.
    fn numbered(&self, plan: &PhysicalPlan) {
        self.inner.borrow_mut().uid_offset += operator_uids(&plan.roots).len();
    }

    /// Adds an INSERT's (or a statement set's) plan to the job, after translating it once on a
    /// scratch environment: a refusal adds nothing.
    pub(crate) fn attach(&self, plan: &PhysicalPlan) -> Result<(), SqlError> {
        let (session, translation) = self.translation();
        let check = Translation {
            tables: translation.tables.stand_ins(),
            ..translation.clone()
        };
        SqlJob::build_in(&StreamEnv::new(), &session, plan, &check)?;
        SqlJob::build_in(&self.env, &session, plan, &translation)?;
        self.numbered(plan);
        Ok(())
    }
}

/// A written name (`v`, `default_database.v`) as a path.
fn path(name: &str) -> ObjectPath {
    ObjectPath {
        parts: name.split('.').map(str::to_string).collect(),
        pos: Position::default(),
    }
}

/// A temporary view `name` of `query`.
fn view(mut name: ObjectPath, query: &QueryStatement) -> ViewDef {
    name.pos = query.pos;
    ViewDef {
        name,
        columns: Vec::new(),
        query: query.query.clone(),
        text: query.text.clone(),
        comment: None,
        temporary: true,
        if_not_exists: false,
        pos: query.pos,
    }
}
