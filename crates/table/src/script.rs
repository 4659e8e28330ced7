//! [`SqlScript`]: a SQL script read and planned whole before anything runs, as Flink's SQL
//! client runs a file: `SET`, `RESET`, `CREATE` and `DROP` change the session for the
//! statements after them; each INSERT (or statement set) becomes a job ([`PlannedJob`]) run in
//! order; a query on its own becomes a job printing its rows; `EXPLAIN`, `SHOW TABLES`,
//! `DESCRIBE` and a bare `SET` give text to show in their place.
//!
//! Every job is planned and translated on a scratch environment when the script is prepared,
//! so any refusal (syntax, unknown name, unsupported feature, bad connector option) comes
//! before the first job starts, naming where in the script it is.

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_datastream::StreamEnv;
use sluice_sql::catalog::{CatalogTable, ObjectPath};
use sluice_sql::ddl::ColumnKind;
use sluice_sql::plan::{explain_plan, plan_insert, plan_query, plan_statement_set, PhysicalPlan};
use sluice_sql::session::{parse_script, PlannedStatement};
use sluice_sql::{Position, Result, Session, SqlError};

use crate::translate::{QueryOutput, SqlJob};

/// What an INSERT-less job does with its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// INSERTs (one, or a statement set): the sinks are tables.
    Insert,
    /// A query on its own: its rows are printed.
    Query,
}

/// One job of a script: its plan and the session as it was at its statement.
#[derive(Clone, Debug)]
pub struct PlannedJob {
    /// The session at the statement (its SETs and tables so far).
    pub session: Session,
    /// The planned operators.
    pub plan: PhysicalPlan,
    /// INSERTs or a query.
    pub kind: JobKind,
    /// The job's name: `pipeline.name` if set, else Flink's (`insert-into_<sink>…`, `collect`).
    pub name: String,
    /// Where its statement starts.
    pub pos: Position,
}

impl PlannedJob {
    /// `SET 'parallelism.default'`, if the script set it.
    pub fn parallelism(&self) -> Option<u32> {
        self.session.config.parallelism()
    }

    /// `SET 'execution.checkpointing.interval'`, if the script set it.
    pub fn checkpoint_interval(&self) -> Option<Duration> {
        self.session.config.checkpoint_interval()
    }

    /// Adds the job's operators to `env` (named after the job); a query's rows go to `output`.
    pub fn build(&self, env: &StreamEnv, output: QueryOutput) -> Result<SqlJob> {
        env.set_job_name(self.name.clone());
        let job = match self.kind {
            JobKind::Insert => SqlJob::build(env, &self.session, &self.plan),
            JobKind::Query => SqlJob::build_query(env, &self.session, &self.plan, output),
        };
        job.map_err(|e| locate(e, self.pos))
    }
}

/// One step of a script, in order.
// A script holds a handful of steps, built once: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Step {
    /// Text to show (`EXPLAIN`, `SHOW TABLES`, `DESCRIBE`, `SET`).
    Show(String),
    /// A job to run to its end.
    Job(PlannedJob),
}

/// A script, read, planned and checked.
#[derive(Clone, Debug)]
pub struct SqlScript {
    /// Its steps in order.
    pub steps: Vec<Step>,
}

impl SqlScript {
    /// Reads `text` (its `${KEY}` variables from `vars`), runs its session statements and plans
    /// every job, each translated once on a scratch environment: the first refusal is returned,
    /// with its place in the script.
    pub fn prepare(text: &str, vars: &BTreeMap<String, String>) -> Result<SqlScript> {
        SqlScript::prepare_in(Session::new(), text, vars)
    }

    /// [`SqlScript::prepare`] starting from `session` (tables and settings already made).
    pub fn prepare_in(
        mut session: Session,
        text: &str,
        vars: &BTreeMap<String, String>,
    ) -> Result<SqlScript> {
        let mut steps = Vec::new();
        for stmt in parse_script(text, vars)? {
            let pos = stmt.pos();
            let Some(planned) = session.execute(stmt).map_err(|e| locate(e, pos))? else {
                continue;
            };
            let step = plan_step(&session, planned).map_err(|e| locate(e, pos))?;
            if let Step::Job(job) = &step {
                // Translated once now so that connector options and unsupported nodes are
                // refused before any job runs.
                job.build(&StreamEnv::new(), QueryOutput::Lines(Default::default()))?;
            }
            steps.push(step);
        }
        Ok(SqlScript { steps })
    }

    /// The script's jobs, in order.
    pub fn jobs(&self) -> Vec<&PlannedJob> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Job(j) => Some(j),
                Step::Show(_) => None,
            })
            .collect()
    }
}

fn job_name(session: &Session, sinks: &[String], query: bool) -> String {
    if let Some(n) = session.config.pipeline_name() {
        return n.to_string();
    }
    if query {
        return "collect".to_string();
    }
    format!("insert-into_{}", sinks.join(","))
}

/// The step of one statement `session` has executed (its jobs planned, its text made): what a
/// script runs in its place, and what Sluice's SQL gateway answers a statement with.
pub fn plan_step(session: &Session, planned: PlannedStatement) -> Result<Step> {
    let job = |plan: PhysicalPlan, kind, pos| {
        let sinks: Vec<String> = plan
            .roots
            .iter()
            .filter_map(|r| match &r.op {
                sluice_sql::plan::PhysicalOp::Sink(s) => Some(s.full_name()),
                _ => None,
            })
            .collect();
        Step::Job(PlannedJob {
            session: session.clone(),
            name: job_name(session, &sinks, kind == JobKind::Query),
            plan,
            kind,
            pos,
        })
    };
    Ok(match planned {
        PlannedStatement::Insert(i) => job(plan_insert(session, &i)?, JobKind::Insert, i.pos),
        PlannedStatement::StatementSet(s) => {
            job(plan_statement_set(session, &s)?, JobKind::Insert, s.pos)
        }
        PlannedStatement::Query(q) => job(plan_query(session, &q)?, JobKind::Query, q.pos),
        PlannedStatement::Explain(e) => Step::Show(sluice_sql::plan::explain(session, &e)?),
        PlannedStatement::ShowTables { .. } => {
            let names = session.catalog.table_names();
            Step::Show(names.join("\n"))
        }
        PlannedStatement::ShowConfig { .. } => Step::Show(
            session
                .config
                .entries()
                .map(|(k, v)| format!("'{k}' = '{v}'"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        PlannedStatement::Describe { name } => Step::Show(describe(session, &name)?),
    })
}

/// `DESCRIBE name`: a table's columns (`name TYPE`, `name AS expr`, `name TYPE METADATA`),
/// or a view's name.
pub fn describe(session: &Session, name: &ObjectPath) -> Result<String> {
    Ok(match session.catalog.lookup(name)? {
        CatalogTable::Table(def) => def
            .columns
            .iter()
            .map(|c| match &c.kind {
                ColumnKind::Physical(ty) => format!("{} {ty}", c.name),
                ColumnKind::Computed(e) => format!("{} AS {e}", c.name),
                ColumnKind::Metadata { ty, .. } => format!("{} {ty} METADATA", c.name),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        CatalogTable::View(_) => format!("view {name}"),
    })
}

/// The error with the statement's place when it names none itself.
pub fn locate(e: SqlError, at: Position) -> SqlError {
    match e {
        SqlError::Unsupported { pos: None, what } => SqlError::Unsupported {
            pos: Some(at),
            what,
        },
        SqlError::Validation { pos: None, message } => SqlError::Validation {
            pos: Some(at),
            message,
        },
        SqlError::UnknownName {
            pos: None,
            kind,
            name,
            nearest_names,
        } => SqlError::UnknownName {
            pos: Some(at),
            kind,
            name,
            nearest_names,
        },
        SqlError::BadOption {
            table,
            key,
            message,
        } => SqlError::BadOption {
            table,
            key,
            message: if message.contains(" at line ") {
                message
            } else {
                format!("{message} (statement at {at})")
            },
        },
        other => other,
    }
}

/// The `EXPLAIN` text of a job's plan (what `sluice plan sql` prints beside the job graph).
pub fn explain_job(job: &PlannedJob) -> String {
    explain_plan(&job.plan)
}
