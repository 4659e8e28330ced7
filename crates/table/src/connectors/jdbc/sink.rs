//! The jdbc sink: rows written by sluice-postgres's sink, upserted by the SQL table's
//! `PRIMARY KEY … NOT ENFORCED` (`INSERT … ON CONFLICT (key) DO UPDATE`, idempotent across a
//! replay) or, without a key, appended (binary `COPY`, exactly once by two-phase commit when the
//! job checkpoints). Flink's JDBC sink chooses the same way by the key.
//!
//! Types written: `BOOLEAN` (boolean), `TINYINT`/`SMALLINT`/`INT` (integer), `BIGINT` (bigint),
//! `FLOAT`/`DOUBLE` (double precision), `CHAR`/`VARCHAR`/`STRING` (text, varchar),
//! `TIMESTAMP(p)` and `TIMESTAMP_LTZ(p)` with p ≤ 6 (timestamp, timestamptz: PostgreSQL keeps
//! microseconds). Any other column type is refused before the job starts, naming the column.
//! The database's table is checked while the job is built (and again when it is deployed):
//! it exists, every column is there with a type these values fit, the primary key is a key
//! of the table. A NULL written into a `NOT NULL` column of the database fails the job when it is
//! written, as Flink's sink fails.
//!
//! With a primary key the rows are hash-partitioned by it before the sink, so every row of a
//! key is written by one subtask in the order it arrives (Flink's keyed shuffle for upsert
//! sinks); without one the sink takes its input as it is.

use std::time::{Duration, UNIX_EPOCH};

use sluice_datastream::{DataStream, Sink};
use sluice_postgres::{
    ColumnType, Mode, PostgresError, PostgresSink, PostgresSinkExt, RowMapping, SinkOptions,
};
use sluice_sql::{Change, DataType, LogicalType, Result, Row, RowKind, SqlError, TableDef, Value};

use super::JdbcTable;
use crate::key::SqlKey;
use crate::options::Options;
use crate::schema::PhysicalSchema;

/// A checked jdbc sink.
#[derive(Clone, Debug)]
pub struct JdbcSink {
    table: JdbcTable,
    column_types: Vec<ColumnType>,
    /// The primary key's column indexes (empty: append).
    key: Vec<usize>,
    options: SinkOptions,
    parallelism: Option<usize>,
}

/// The PostgreSQL column type the values of `ty` are written as, or why there is none.
fn column_type(ty: &DataType) -> std::result::Result<ColumnType, String> {
    use LogicalType as L;
    Ok(match &ty.logical {
        L::Boolean => ColumnType::Bool,
        L::TinyInt | L::SmallInt | L::Int => ColumnType::Int4,
        L::BigInt => ColumnType::Int8,
        L::Float | L::Double => ColumnType::Float8,
        L::Char { .. } | L::Varchar { .. } => ColumnType::Text,
        L::Timestamp { precision, .. } | L::TimestampLtz { precision, .. } => {
            if *precision > 6 {
                return Err(format!(
                    "the precision {precision} is out of the TIMESTAMP precision range [0, 6] PostgreSQL supports"
                ));
            }
            ColumnType::Timestamp
        }
        _ => return Err(
            "the jdbc sink writes BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, CHAR, \
                 VARCHAR/STRING, TIMESTAMP(p) and TIMESTAMP_LTZ(p) columns (declare the column \
                 as one of them and CAST in the query)"
                .into(),
        ),
    })
}

/// A SQL value as sluice-postgres writes it into a column of `ty`.
fn pg_value(v: &Value, ty: ColumnType) -> sluice_postgres::Value {
    use sluice_postgres::Value as P;
    match (v, ty) {
        (Value::Int(i), ColumnType::Int4) => i32::try_from(*i).map_or(P::Null, P::I32),
        (Value::Int(i), _) => P::I64(*i),
        (Value::Float(f), _) => P::F64(f64::from(*f)),
        (Value::Double(f), _) => P::F64(*f),
        (Value::Str(s), _) => P::Text(s.to_string()),
        (Value::Bool(b), _) => P::Bool(*b),
        (Value::Timestamp(t), _) => {
            let nanos = Duration::from_nanos(u64::from(t.nanos_of_milli));
            let at = if t.millis >= 0 {
                UNIX_EPOCH + Duration::from_millis(t.millis.unsigned_abs())
            } else {
                UNIX_EPOCH - Duration::from_millis(t.millis.unsigned_abs())
            };
            P::Timestamp(at + nanos)
        }
        _ => P::Null,
    }
}

impl JdbcSink {
    /// Reads the options, maps the columns and checks the database's table (connecting to it).
    pub fn new(options: &Options, schema: &PhysicalSchema, def: &TableDef) -> Result<JdbcSink> {
        let table = JdbcTable::new(options, schema)?;
        let mut column_types = Vec::with_capacity(schema.len());
        for (name, ty) in schema.names.iter().zip(&schema.types) {
            let t = column_type(ty).map_err(|why| {
                let pos = def.column(name).map(|c| c.pos).unwrap_or(def.pos);
                SqlError::unsupported(
                    Some(pos),
                    format!("column '{name}' {ty} of jdbc table '{}': {why}", def.name),
                )
            })?;
            column_types.push(t);
        }
        let key = def
            .primary_key
            .iter()
            .map(|k| {
                schema.names.iter().position(|n| n == k).ok_or_else(|| {
                    SqlError::validation(
                        Some(def.pos),
                        format!(
                            "primary key column '{k}' of table '{}' is not a physical column",
                            def.name
                        ),
                    )
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let mut sink_options = SinkOptions::default();
        if let Some(t) = table.connect_timeout {
            sink_options.connect_timeout = t;
        }
        for k in [
            "sink.buffer-flush.max-rows",
            "sink.buffer-flush.interval",
            "sink.max-retries",
        ] {
            if let Some(v) = options.get(k) {
                sink_options
                    .set(k, v)
                    .map_err(|e| options.bad(k, e.to_string()))?;
            }
        }
        let parallelism =
            options.parse::<usize>("sink.parallelism", "a parallelism of at least 1")?;
        if parallelism == Some(0) {
            return Err(options.bad(
                "sink.parallelism",
                "expected a parallelism of at least 1, found '0'",
            ));
        }
        let sink = JdbcSink {
            table,
            column_types,
            key,
            options: sink_options,
            parallelism,
        };
        sink.builder().check().map_err(|e| {
            let at = &sink.table.connection.display;
            match e {
                PostgresError::Connect { .. } | PostgresError::Config(_) => {
                    options.bad("url", format!("{e} ({at})"))
                }
                _ => options.bad(
                    "table-name",
                    format!(
                        "{e} (the database at {at}; Flink's PostgreSQL dialect folds unquoted names to lower case)"
                    ),
                ),
            }
        })?;
        Ok(sink)
    }

    /// Append, or upsert by the primary key.
    pub fn mode(&self) -> Mode {
        if self.key.is_empty() {
            Mode::Append
        } else {
            Mode::Upsert {
                key: self
                    .key
                    .iter()
                    .map(|&i| self.table.columns[i].clone())
                    .collect(),
            }
        }
    }

    fn builder(&self) -> PostgresSink<Row> {
        self.builder_of(|r: &Row| r)
    }

    /// The sink of records whose row `row_of` gives.
    fn builder_of<T: sluice_datastream::Data>(
        &self,
        row_of: impl Fn(&T) -> &Row + Clone + Send + Sync + 'static,
    ) -> PostgresSink<T> {
        let mut mapping = RowMapping::<T>::new();
        for (i, (name, ty)) in self
            .table
            .columns
            .iter()
            .zip(&self.column_types)
            .enumerate()
        {
            let ty = *ty;
            let row_of = row_of.clone();
            // Never declared nullable: PostgreSQL's NOT NULL is enforced where the row is
            // written, as Flink's sink finds out (a nullable SQL type may hold no NULL).
            mapping =
                mapping.column_value(name, ty, false, move |r: &T| pg_value(row_of(r).get(i), ty));
        }
        PostgresSink::builder(&self.table.connection.conn, &self.table.table, mapping)
            .mode(self.mode())
            .options(self.options.clone())
            .name(&format!("jdbc: {}", self.table.table))
    }

    /// Writes a changelog by the primary key (the planner refused one without): `+I` and `+U`
    /// upsert their row, `-D` deletes its key's row, `-U` (the row its `+U` overwrites) is
    /// not needed.
    pub fn write_changes(&self, changes: &DataStream<Change>) -> Result<Sink<()>> {
        if self.key.is_empty() {
            return Err(SqlError::validation(
                None,
                format!(
                    "jdbc table '{}': please declare primary key for sink table when query contains update/delete record.",
                    self.table.name
                ),
            ));
        }
        let key = self.key.clone();
        let input = changes
            .filter(|c: &Change| c.kind != RowKind::UpdateBefore)
            .key_by(move |c: &Change| {
                SqlKey(Row(key.iter().map(|&i| c.row.get(i).clone()).collect()))
            })
            .as_stream()
            .clone();
        let builder = self
            .builder_of(|c: &Change| &c.row)
            .map_mapping(|m| m.deleted_when(|c: &Change| c.kind == RowKind::Delete));
        let sink = input.sink_to_postgres(builder).map_err(|e| {
            SqlError::validation(None, format!("jdbc table '{}': {e}", self.table.name))
        })?;
        let sink = match self.parallelism {
            Some(p) => sink.set_parallelism(p),
            None => sink,
        };
        Ok(sink.map_handle(|_| ()))
    }

    /// Writes `rows` (cast to the table's columns) into the database's table.
    pub fn write(&self, rows: &DataStream<Row>) -> Result<Sink<()>> {
        let input = if self.key.is_empty() {
            rows.clone()
        } else {
            let key = self.key.clone();
            rows.key_by(move |r: &Row| SqlKey(Row(key.iter().map(|&i| r.get(i).clone()).collect())))
                .as_stream()
                .clone()
        };
        let sink = input.sink_to_postgres(self.builder()).map_err(|e| {
            SqlError::validation(None, format!("jdbc table '{}': {e}", self.table.name))
        })?;
        let sink = match self.parallelism {
            Some(p) => sink.set_parallelism(p),
            None => sink,
        };
        Ok(sink.map_handle(|_| ()))
    }
}
