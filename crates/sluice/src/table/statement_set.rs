//! [`StatementSet`]: INSERTs planned as one (Flink's `StreamStatementSet`): a scan or a
//! subquery they share is built once, and they are added to the job together.

use std::collections::BTreeMap;

use sluice_sql::plan::{explain_plan, plan_statement_set, PhysicalPlan};
use sluice_sql::{
    parse_script, InsertStatement, Position, SqlError, Statement, StatementSet as Inserts,
};

use super::schema::quoted;
use super::{Table, TableEnv};

/// INSERTs of a [`TableEnv`] planned together; [`attach_as_data_stream`](Self::attach_as_data_stream)
/// adds them to the environment's job.
#[derive(Debug)]
pub struct StatementSet {
    tenv: TableEnv,
    inserts: Vec<InsertStatement>,
}

impl StatementSet {
    pub(crate) fn new(tenv: TableEnv) -> StatementSet {
        StatementSet {
            tenv,
            inserts: Vec::new(),
        }
    }

    /// Adds `INSERT INTO … SELECT …` (Flink's `addInsertSql`); anything else is refused.
    pub fn add_insert_sql(&mut self, sql: &str) -> Result<&mut StatementSet, SqlError> {
        let mut statements = parse_script(sql, &BTreeMap::new())?;
        match (statements.pop(), statements.is_empty()) {
            (Some(Statement::Insert(i)), true) => {
                let session = self.tenv.session();
                if let sluice_sql::CatalogTable::View(_) = session.catalog.lookup(&i.target)? {
                    return Err(SqlError::validation(
                        Some(i.target.pos),
                        format!(
                            "View '{}' cannot be the target of an INSERT: insert into a table",
                            i.target
                        ),
                    ));
                }
                self.inserts.push(i);
                Ok(self)
            }
            (Some(other), _) => Err(SqlError::validation(
                Some(other.pos()),
                "a statement set holds INSERT statements only (one per call)",
            )),
            (None, _) => Err(SqlError::validation(None, "no statement to add")),
        }
    }

    /// Adds `INSERT INTO target SELECT * FROM table` (Flink's `addInsert`).
    pub fn add_insert(
        &mut self,
        target: &str,
        table: &Table,
    ) -> Result<&mut StatementSet, SqlError> {
        let target: Vec<String> = target.split('.').map(quoted).collect();
        self.add_insert_sql(&format!(
            "INSERT INTO {} SELECT * FROM {table}",
            target.join(".")
        ))
    }

    fn plan(&self) -> Result<PhysicalPlan, SqlError> {
        let pos = self.inserts.first().map_or(Position::default(), |i| i.pos);
        if self.inserts.is_empty() {
            return Err(SqlError::validation(
                None,
                "the statement set holds no INSERT",
            ));
        }
        let set = Inserts {
            inserts: self.inserts.clone(),
            pos,
        };
        plan_statement_set(&self.tenv.session(), &set)
    }

    /// Flink's `EXPLAIN` of the INSERTs planned together.
    pub fn explain(&self) -> Result<String, SqlError> {
        Ok(explain_plan(&self.plan()?))
    }

    /// Plans the INSERTs together and adds them to the environment's job (Flink's
    /// `attachAsDataStream`); the set is empty afterwards. A refusal adds nothing.
    pub fn attach_as_data_stream(&mut self) -> Result<(), SqlError> {
        let plan = self.plan()?;
        self.tenv.attach(&plan)?;
        self.inserts.clear();
        Ok(())
    }
}
