//! [`PhysicalSchema`]: the columns a connector reads and writes, in the table's order.

use sluice_sql::ddl::ColumnKind;
use sluice_sql::{DataType, Result, SqlError, TableDef};

/// A table's physical columns (the connector's row), in declared order.
#[derive(Clone, Debug, PartialEq)]
pub struct PhysicalSchema {
    /// The table's name, for messages.
    pub table: String,
    /// The columns' names.
    pub names: Vec<String>,
    /// The columns' types.
    pub types: Vec<DataType>,
}

impl PhysicalSchema {
    /// The physical columns of `def`. Metadata columns are refused (no connector here reads or
    /// writes metadata yet, not even Kafka's `timestamp`, `partition`, `offset`), naming the
    /// column.
    pub fn of(def: &TableDef) -> Result<PhysicalSchema> {
        let mut names = Vec::new();
        let mut types = Vec::new();
        for c in &def.columns {
            match &c.kind {
                ColumnKind::Physical(ty) => {
                    names.push(c.name.clone());
                    types.push(ty.clone());
                }
                ColumnKind::Computed(_) => {}
                ColumnKind::Metadata { .. } => {
                    return Err(SqlError::unsupported(
                        Some(c.pos),
                        format!(
                            "metadata column '{}' of table '{}': metadata columns are not supported yet (no connector reads or writes metadata in this version)",
                            c.name, def.name
                        ),
                    ))
                }
            }
        }
        Ok(PhysicalSchema {
            table: def.name.to_string(),
            names,
            types,
        })
    }

    /// A schema of these columns.
    pub fn new(table: &str, columns: Vec<(String, DataType)>) -> PhysicalSchema {
        let (names, types) = columns.into_iter().unzip();
        PhysicalSchema {
            table: table.to_string(),
            names,
            types,
        }
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no columns.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
