//! The last step of an `INSERT`: each column cast to the sink table's declared type (Flink's
//! implicit cast: `DECIMAL(24, 3)` into `DECIMAL(23, 3)` rounds HALF_UP and an overflow is NULL),
//! `NOT NULL` columns enforced as `table.exec.sink.not-null-enforcer` says (`ERROR`, the
//! default: the job fails with Flink's message; `DROP`: the row is dropped), then the connector.
//! A value the cast cannot hold is counted in [`RowErrors`] and its row dropped.

use sluice_datastream::{DataStream, Sink};
use sluice_sql::cast::cast;
use sluice_sql::{
    Change, ChangelogMode, DataType, LogicalType, Result, Row, SessionConfig, SqlError, TableDef,
};
use sluice_types::{Collector, Operator, OperatorError, OutputBatch};

use crate::connectors::SinkConnector;
use crate::row_errors::RowErrors;
use crate::schema::PhysicalSchema;

/// What a NULL in a `NOT NULL` sink column does (`table.exec.sink.not-null-enforcer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NotNullEnforcer {
    /// Fail the job (Flink's default).
    #[default]
    Error,
    /// Drop the row silently.
    Drop,
}

/// Whether a value of `from` may be written into a column of `to` (Flink's implicit casts for
/// sinks: within numbers, within strings, within times, or the same type).
fn assignable(from: &DataType, to: &DataType) -> bool {
    use LogicalType as L;
    let time = |t: &L| matches!(t, L::Timestamp { .. } | L::TimestampLtz { .. });
    let string = |t: &L| matches!(t, L::Char { .. } | L::Varchar { .. });
    let bytes = |t: &L| matches!(t, L::Binary { .. } | L::Varbinary { .. });
    let (f, t) = (&from.logical, &to.logical);
    matches!(f, L::Null)
        || (from.is_numeric() && to.is_numeric())
        || (string(f) && string(t))
        || (bytes(f) && bytes(t))
        || (time(f) && time(t))
        || std::mem::discriminant(f) == std::mem::discriminant(t)
}

/// The cast of a query's rows into a sink table's columns.
#[derive(Clone, Debug)]
pub struct SinkCast {
    table: String,
    names: Vec<String>,
    from: Vec<DataType>,
    to: Vec<DataType>,
    /// Columns whose type differs (others pass as they are).
    differs: Vec<bool>,
    enforcer: NotNullEnforcer,
}

impl SinkCast {
    /// The cast of rows of `input` types into `table`'s physical columns; refused as Flink
    /// refuses it when the arity or a column's type does not fit.
    pub fn new(
        input: &[DataType],
        table: &PhysicalSchema,
        enforcer: NotNullEnforcer,
    ) -> Result<SinkCast> {
        let mismatch = |cause: String| {
            SqlError::validation(
                None,
                format!(
                    "Column types of query result and sink for '{}' do not match.\nCause: {cause}\n\nQuery schema: [{}]\nSink schema:  [{}]",
                    table.table,
                    input.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "),
                    table
                        .names
                        .iter()
                        .zip(&table.types)
                        .map(|(n, t)| format!("{n}: {t}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        };
        if input.len() != table.len() {
            return Err(mismatch("Different number of columns.".into()));
        }
        for (i, (f, t)) in input.iter().zip(&table.types).enumerate() {
            if !assignable(f, t) {
                return Err(mismatch(format!(
                    "Incompatible types for sink column '{}' at position {i}.",
                    table.names[i]
                )));
            }
        }
        let differs = input
            .iter()
            .zip(&table.types)
            .map(|(f, t)| f.without_time_attribute().logical != t.logical)
            .collect();
        Ok(SinkCast {
            table: table.table.clone(),
            names: table.names.clone(),
            from: input.to_vec(),
            to: table.types.clone(),
            differs,
            enforcer,
        })
    }

    /// One row cast: `Ok(None)` to drop it (NOT NULL with `DROP`), `Err` with the failure and
    /// whether it must fail the job.
    pub fn apply(&self, mut row: Row) -> std::result::Result<Option<Row>, (bool, String)> {
        for (i, v) in row.0.iter_mut().enumerate() {
            if self.differs[i] && !v.is_null() {
                *v = cast(v, &self.from[i], &self.to[i]).map_err(|e| {
                    (
                        false,
                        format!("sink '{}', column '{}': {e}", self.table, self.names[i]),
                    )
                })?;
            }
            if v.is_null() && !self.to[i].nullable {
                return match self.enforcer {
                    NotNullEnforcer::Drop => Ok(None),
                    NotNullEnforcer::Error => Err((
                        true,
                        format!(
                            "Column '{}' is NOT NULL, however, a null value is being written into it. You can set job configuration 'table.exec.sink.not-null-enforcer'='DROP' to suppress this exception and drop such records silently.",
                            self.names[i]
                        ),
                    )),
                };
            }
        }
        Ok(Some(row))
    }

    /// Whether every column passes unchanged and none is NOT NULL (the step can be left out).
    pub fn is_identity(&self) -> bool {
        !self.differs.iter().any(|d| *d) && self.to.iter().all(|t| t.nullable)
    }
}

pub(crate) struct SinkCastOp {
    cast: SinkCast,
    errors: RowErrors,
}

impl SinkCastOp {
    #[inline]
    fn apply(&mut self, row: Row) -> std::result::Result<Option<Row>, OperatorError> {
        match self.cast.apply(row) {
            Ok(r) => Ok(r),
            Err((true, message)) => Err(OperatorError::failed(message)),
            Err((false, message)) => {
                self.errors.record(|| message);
                Ok(None)
            }
        }
    }
}

impl Operator<Row, Row> for SinkCastOp {
    fn process(
        &mut self,
        row: Row,
        out: &mut dyn Collector<Row>,
    ) -> std::result::Result<(), OperatorError> {
        match self.apply(row)? {
            Some(r) => out.collect(r),
            None => Ok(()),
        }
    }

    fn process_into(
        &mut self,
        row: Row,
        out: &mut OutputBatch<'_, Row>,
    ) -> std::result::Result<(), OperatorError> {
        match self.apply(row)? {
            Some(r) => out.push(r),
            None => Ok(()),
        }
    }
}

/// The sink's connector and `stream` cast to the table's columns (a `ConstraintEnforcer` step
/// unless every column passes as it is). Reads `table.exec.sink.not-null-enforcer`.
fn cast_for_sink<T: sluice_types::Data>(
    stream: &DataStream<T>,
    input: &[DataType],
    def: &TableDef,
    config: &SessionConfig,
    errors: &RowErrors,
) -> Result<(SinkConnector, DataStream<T>)>
where
    SinkCastOp: Operator<T, T>,
{
    let connector = SinkConnector::for_table(def)?;
    let schema = PhysicalSchema::of(def)?;
    let enforcer = match config.get("table.exec.sink.not-null-enforcer") {
        Some(v) if v.eq_ignore_ascii_case("DROP") => NotNullEnforcer::Drop,
        _ => NotNullEnforcer::Error,
    };
    let cast = SinkCast::new(input, &schema, enforcer)?;
    if cast.is_identity() {
        return Ok((connector, stream.clone()));
    }
    let errors = errors.clone();
    let name = format!("ConstraintEnforcer[{}]", def.name);
    let cast_stream = stream.transform(&name, move |_| SinkCastOp {
        cast: cast.clone(),
        errors: errors.clone(),
    });
    Ok((connector, cast_stream))
}

/// `INSERT INTO def`: casts `rows` (of `input` types) to the table's columns, then writes them
/// through its connector. Reads `table.exec.sink.not-null-enforcer` from `config`.
pub fn insert_into(
    rows: &DataStream<Row>,
    input: &[DataType],
    def: &TableDef,
    config: &SessionConfig,
    errors: &RowErrors,
) -> Result<Sink<()>> {
    let (connector, rows) = cast_for_sink(rows, input, def, config, errors)?;
    connector.write(&rows)
}

impl Operator<Change, Change> for SinkCastOp {
    fn process(
        &mut self,
        c: Change,
        out: &mut dyn Collector<Change>,
    ) -> std::result::Result<(), OperatorError> {
        match self.apply(c.row)? {
            Some(row) => out.collect(Change { kind: c.kind, row }),
            None => Ok(()),
        }
    }
}

/// [`insert_into`] for an updating query: its changes cast, then written by a connector that
/// takes changes (`print` shows each kind, `blackhole` drops them, `jdbc` upserts by key).
pub fn insert_changes_into(
    changes: &DataStream<Change>,
    input: &[DataType],
    def: &TableDef,
    config: &SessionConfig,
    errors: &RowErrors,
    mode: ChangelogMode,
) -> Result<Sink<()>> {
    let (connector, changes) = cast_for_sink(changes, input, def, config, errors)?;
    connector.write_changes(&changes, mode, def)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::{Decimal, Value};

    #[test]
    fn decimals_round_half_up_and_not_null_is_enforced() {
        let table = PhysicalSchema::new(
            "t",
            vec![
                ("d".into(), DataType::decimal(23, 2)),
                ("n".into(), DataType::bigint().not_null()),
            ],
        );
        let cast = SinkCast::new(
            &[DataType::decimal(24, 3), DataType::bigint()],
            &table,
            NotNullEnforcer::Error,
        )
        .unwrap();
        let row = Row(vec![
            Value::Decimal(Decimal {
                unscaled: 12345,
                scale: 3,
            }),
            Value::Int(1),
        ]);
        assert_eq!(
            cast.apply(row).unwrap(),
            Some(Row(vec![
                Value::Decimal(Decimal {
                    unscaled: 1235,
                    scale: 2
                }),
                Value::Int(1)
            ]))
        );
        let (fatal, message) = cast.apply(Row(vec![Value::Null, Value::Null])).unwrap_err();
        assert!(
            fatal && message.starts_with("Column 'n' is NOT NULL"),
            "{message}"
        );
        assert!(SinkCast::new(
            &[DataType::string(), DataType::bigint()],
            &table,
            NotNullEnforcer::Drop
        )
        .is_err());
    }
}
