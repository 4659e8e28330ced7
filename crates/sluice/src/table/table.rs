//! [`Table`]: a query's result as a value of the program (Flink's `Table`): planned when it is
//! made, registered under a generated name so that later SQL can read it, turned into a
//! stream by [`TableEnv::to_data_stream`](super::TableEnv::to_data_stream).

use std::fmt;

use sluice_sql::plan::{explain_plan, PhysicalPlan};
use sluice_sql::{DataType, QueryStatement, SqlError};

use super::TableEnv;

/// A planned query of a [`TableEnv`]. `Display` gives its registered name (`UnnamedTable$0`,
/// as Flink's `Table.toString`), so it can be used in SQL text:
/// `tenv.sql_query(&format!("SELECT * FROM {table}"))`.
#[derive(Clone)]
pub struct Table {
    pub(crate) tenv: TableEnv,
    pub(crate) name: String,
    pub(crate) query: QueryStatement,
    /// The plan, or the refusal of an updating query (Flink plans it and refuses it when it is
    /// turned into an append-only stream; Sluice's planner refuses it at once, so the refusal
    /// is kept until then).
    pub(crate) plan: Result<PhysicalPlan, SqlError>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("query", &self.query.text)
            .finish()
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&super::schema::quoted(&self.name))
    }
}

impl Table {
    /// The name it is registered under (`UnnamedTable$<n>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its columns: names and types (a rowtime column typed `TIMESTAMP(3) *ROWTIME*`).
    pub fn columns(&self) -> Result<Vec<(String, DataType)>, SqlError> {
        let plan = self.plan.as_ref().map_err(Clone::clone)?;
        Ok(plan
            .roots
            .first()
            .map(|r| {
                r.schema
                    .iter()
                    .map(|f| (f.name.clone(), f.ty.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Flink's `EXPLAIN` of the query: abstract syntax tree, optimized physical plan, execution
    /// plan.
    pub fn explain(&self) -> Result<String, SqlError> {
        Ok(explain_plan(self.plan.as_ref().map_err(Clone::clone)?))
    }

    /// The environment it belongs to.
    pub fn table_env(&self) -> &TableEnv {
        &self.tenv
    }
}
