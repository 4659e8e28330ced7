//! A program's typed stream as rows of a table (Flink's `fromDataStream` conversion): the
//! program's function gives each record's physical columns, in the schema's order; the
//! `rowtime` metadata column is the record's event timestamp. Every row is checked against the
//! schema's types ([`fits`]): a row of the wrong width or with a value of another type is a
//! dead letter (counted in the `TableEnv`'s row errors), never read as something else.

use std::sync::Arc;

use sluice_datastream::DataStream;
use sluice_sql::ddl::ColumnKind;
use sluice_sql::{DataType, LogicalType, Row, SqlError, TableDef, Timestamp, Value};
use sluice_table::RowErrors;
use sluice_types::Data;

use super::values::fits;

/// The metadata key of a stream's record timestamp (Flink's DataStream table's only key).
pub(crate) const ROWTIME: &str = "rowtime";

/// One slot of the table's physical row.
#[derive(Clone, Debug)]
enum Slot {
    /// The next value the program gives: its column's name and type.
    Given(String, DataType),
    /// The record's event timestamp.
    Rowtime,
}

/// The layout of a stream table's rows, read from its schema: physical columns in order, the
/// `rowtime` metadata column where it is declared (computed columns are the planner's).
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    slots: Vec<Slot>,
    /// How many values the program gives per record.
    given: usize,
    table: String,
}

impl Layout {
    /// The layout of `def`; a metadata column must read `rowtime` as a `TIMESTAMP_LTZ`, and only
    /// from a stream with event time (`has_event_time`).
    pub(crate) fn of(def: &TableDef, has_event_time: bool) -> Result<Layout, SqlError> {
        let table = def.name.to_string();
        let mut slots = Vec::new();
        for c in &def.columns {
            match &c.kind {
                ColumnKind::Physical(ty) => slots.push(Slot::Given(c.name.clone(), ty.clone())),
                ColumnKind::Computed(_) => {}
                ColumnKind::Metadata { ty, key, .. } => {
                    let key = key.as_deref().unwrap_or(&c.name);
                    if key != ROWTIME {
                        return Err(SqlError::validation(
                            Some(c.pos),
                            format!("Invalid metadata key '{key}' in column '{}' of table '{table}'. A table of a DataStream supports the following metadata keys for reading: {ROWTIME}", c.name),
                        ));
                    }
                    if !matches!(
                        ty.logical,
                        LogicalType::TimestampLtz {
                            precision: 0..=3,
                            ..
                        }
                    ) {
                        return Err(SqlError::validation(
                            Some(c.pos),
                            format!("Invalid data type {ty} of metadata column '{}': the '{ROWTIME}' of a DataStream is TIMESTAMP_LTZ(3) NOT NULL", c.name),
                        ));
                    }
                    if !has_event_time {
                        return Err(SqlError::validation(
                            Some(c.pos),
                            format!("metadata column '{}' reads the stream's event timestamps, but the stream has none: assign them first (assign_timestamps_and_watermarks or with_timestamps)", c.name),
                        ));
                    }
                    slots.push(Slot::Rowtime);
                }
            }
        }
        let given = slots
            .iter()
            .filter(|s| matches!(s, Slot::Given(..)))
            .count();
        Ok(Layout {
            slots,
            given,
            table,
        })
    }

    /// The table's physical row from the program's values and the record's timestamp, or why
    /// it is refused.
    fn row(&self, values: Row, timestamp: Option<i64>) -> Result<Row, String> {
        if values.len() != self.given {
            return Err(format!(
                "a record of table {} gave {} values for its {} columns: {values:?}",
                self.table,
                values.len(),
                self.given
            ));
        }
        let mut given = values.0.into_iter();
        let mut out = Vec::with_capacity(self.slots.len());
        for slot in &self.slots {
            match slot {
                Slot::Given(name, ty) => {
                    let v = given.next().unwrap_or(Value::Null);
                    if !fits(&v, ty) {
                        return Err(format!(
                            "column {name} {ty} of table {} cannot hold {v:?}",
                            self.table
                        ));
                    }
                    out.push(v);
                }
                Slot::Rowtime => out.push(timestamp.map_or(Value::Null, |ms| {
                    Value::Timestamp(Timestamp::from_millis(ms))
                })),
            }
        }
        Ok(Row(out))
    }
}

/// Adds the conversion of `stream` to the table's rows: `to_row` per record, checked against
/// `layout`; a refused record is counted in `errors` and dropped.
pub(crate) fn rows_of<T: Data>(
    stream: &DataStream<T>,
    to_row: &Arc<dyn Fn(T) -> Row + Send + Sync>,
    layout: &Layout,
    errors: &RowErrors,
) -> DataStream<Row> {
    let timestamps = stream.timestamps();
    let (to_row, layout, errors) = (to_row.clone(), layout.clone(), errors.clone());
    stream.flat_map(move |t: T| {
        let ts = timestamps.as_ref().map(|f| f(&t));
        match layout.row(to_row(t), ts) {
            Ok(row) => Some(row),
            Err(e) => {
                errors.record(|| format!("SourceConversion: {e}"));
                None
            }
        }
    })
}
