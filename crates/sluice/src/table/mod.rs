//! # SQL from a Rust program: Flink's `StreamTableEnvironment`
//!
//! A [`TableEnv`] plans Flink SQL on a program's [`StreamEnv`](crate::StreamEnv) and mixes it
//! with DataStream code: a typed stream becomes a [`Table`] ([`TableEnv::from_data_stream`],
//! with a [`Schema`] and a conversion to a [`Row`]), SQL reads it (`CREATE VIEW`, window
//! aggregations, joins, Rust functions registered as [`ScalarUdf`]s), and a query's rows come
//! back as a `DataStream<Row>` ([`TableEnv::to_data_stream`]) or go to a table's connector
//! (`INSERT INTO`, a [`StatementSet`]). All of it is one job: [`crate::run`] runs it with the
//! REST API, checkpoints and the doctor, its SQL operators named as Flink names them.
//!
//! ```
//! use sluice::table::{DataType, Schema, ScalarUdf, TableEnv, Value};
//! use sluice::{row, StreamEnv, WatermarkStrategy};
//!
//! # fn main() -> Result<(), sluice::SluiceError> {
//! let env = StreamEnv::new();
//! // (bidder, price, event time in ms), with event time and watermarks.
//! let bids = env
//!     .from_vec(vec![(1i64, 10i64, 1_000i64), (2, 5, 2_000), (1, 7, 12_000)])
//!     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps(
//!         |b: &(i64, i64, i64)| b.2,
//!     ));
//! let tenv = TableEnv::create(&env);
//! let schema = Schema::new()
//!     .column("bidder", "BIGINT")
//!     .column("price", "BIGINT")
//!     .column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
//!     .watermark("rowtime", "SOURCE_WATERMARK()");
//! let table = tenv.from_data_stream(&bids, schema, |(bidder, price, _)| row![bidder, price])?;
//! tenv.create_temporary_view("bids", &table)?;
//! tenv.create_temporary_function(
//!     "double_it",
//!     ScalarUdf::new("double_it", vec![DataType::bigint()], DataType::bigint(), |a| {
//!         Ok(Value::Int(a[0].as_i64().unwrap_or(0) * 2))
//!     }),
//! )?;
//! let totals = tenv.sql_query(
//!     "SELECT window_start, SUM(double_it(price)) AS total \
//!      FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(rowtime), INTERVAL '10' SECOND)) \
//!      GROUP BY window_start, window_end",
//! )?;
//! let rows = tenv.to_data_stream(&totals)?.collect();
//! env.execute()?;
//! let mut totals: Vec<i64> = rows.handle.take().iter().map(|r| r.get(1).as_i64().unwrap_or(0)).collect();
//! totals.sort();
//! assert_eq!(totals, vec![14, 30]);
//! # Ok(())
//! # }
//! ```
//!
//! Main types: [`TableEnv`], [`Table`], [`Schema`], [`ScalarUdf`], [`StatementSet`],
//! [`TableResult`]; values: [`Row`], [`Value`] ([`IntoValue`], [`crate::row!`]), [`DataType`];
//! every refusal is a [`SqlError`] naming what and where (line and column).

mod convert;
mod env;
mod schema;
mod statement_set;
#[allow(clippy::module_inception)]
mod table;
mod udf;
mod values;

pub use env::{TableEnv, TableResult};
pub use schema::Schema;
pub use statement_set::StatementSet;
pub use table::Table;
pub use udf::{ScalarUdf, UdfBody};
pub use values::{fits, IntoValue};

pub use sluice_sql::{DataType, Decimal, LogicalType, Row, SqlError, Timestamp, Value};
pub use sluice_table::{LateRecords, RowErrors};

/// A [`Row`] of Rust values, each made a SQL value by [`IntoValue`]:
/// `row![bid.auction, bid.price, Some("x")]`.
#[macro_export]
macro_rules! row {
    ($($value:expr),* $(,)?) => {
        $crate::table::Row::new(vec![$($crate::table::IntoValue::into_value($value)),*])
    };
}
