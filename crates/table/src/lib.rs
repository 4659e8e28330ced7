#![warn(missing_docs)]

//! # sluice-table: Flink SQL's runtime side, over the DataStream API
//!
//! What a physical SQL plan is translated into: every step here takes and gives a
//! `DataStream<Row>` ([`sluice_sql::Row`]), so a SQL job is a DataStream job and gets what
//! DataStream jobs get (checkpoints, REST, the doctor).
//!
//! * [`key`]: [`SqlKey`], the key of a SQL keyed operator (a `Row` of key columns, a single
//!   `Value`, or a [`KeyRow`]: the key columns packed, one column inline, as the window
//!   aggregations and joins keep them), with the traits keyed streams and keyed state need.
//! * [`official`]: the official Nexmark SQL files as the benchmark's runner runs them (with
//!   q13's side input under `${FLINK_HOME}`).
//! * [`options`]: a table's `WITH` options checked against a connector's known keys (unknown or
//!   missing → `SqlError::BadOption` naming the key and the nearest known keys).
//! * [`connectors`]: sources and sinks by the `'connector'` option, with Flink's option names:
//!   `nexmark`, `datagen`, `filesystem` (csv, json), `kafka` (csv, json keys and values, over
//!   `sluice-kafka`), `print`, `blackhole`, `jdbc` (PostgreSQL on sluice-postgres: upsert by
//!   primary key or append); lookup tables (`jdbc` on sluice-lookup, the legacy csv table loaded
//!   into memory).
//! * [`demand`]: which columns and `ROW` fields the operators above a scan read, so that the
//!   source builds only those (nested projection push-down at run time; the plan is Flink's).
//! * [`layout`]: flat scans: a `ROW` column read only by field is emitted as one column per
//!   read field, and the operators between the scan and the plan's layout again rebound to them.
//! * [`scan`]: a table scan: source rows → computed columns → the `WATERMARK FOR` watermark, the
//!   rowtime column being the record timestamp.
//! * [`fused`]: scan fusion: source → computed columns → watermark → the first Calc run per
//!   row in the `nexmark` source (no intermediate row; events the Calc drops by kind not
//!   built), the job graph unchanged.
//! * [`calc`](mod@calc): Flink's `Calc` (projection and condition) over rows, its common
//!   subexpressions computed once per row (`calc_shared`).
//! * [`sink`]: the implicit cast of each column to the sink table's type, then the connector.
//! * [`translate`]: [`SqlJob`], a planned job (`PhysicalPlan`) as DataStream operators named
//!   and uid'd as Flink names them; a `LookupJoin` runs on sluice-lookup's operator (inner and
//!   `LEFT`).
//! * [`query_plan`]: the plan a translated job hands its environment (the `EXPLAIN` physical
//!   plan, each node with the operator it became) for the REST server's `EXPLAIN ANALYZE`.
//! * [`script`]: [`SqlScript`], a script planned whole (every refusal before any job runs),
//!   its jobs in order as Flink's SQL client runs a file.
//! * [`row_errors`]: where rows that fail evaluation go (counted, the first error kept).
//! * [`dropped`]: [`DroppedRows`], those and the late rows of a job, and the lines its run
//!   summary says about them.
//! * [`window_agg`]: Flink's window aggregation ([`window_aggregate`] over a
//!   [`WindowAggSpec`]: TUMBLE/HOP/CUMULATE/SESSION, event or processing time, one phase or
//!   Flink's slice-based local/global two phases; the legacy `GROUP BY TUMBLE(…)` is the same
//!   operator with another [`WindowProperty`] layout). Output: keys, aggregates, properties.
//! * [`joins`]: inner joins of append-only rows, output `left ++ right`: [`interval_join`]
//!   (Flink SQL's row-time interval join), [`window_join`] (per window, at the watermark) and
//!   [`regular_join`] (all rows in keyed state, optional `table.exec.state.ttl`).
//! * [`stateful`]: what those operators are given besides their spec: [`OperatorIds`] (the
//!   caller's Flink-style name and stable uid) and [`LateRecords`] (rows dropped as late).
//! * [`stream_tables`]: [`StreamTables`], tables whose rows a program gives as DataStreams
//!   (the `sluice` crate's `TableEnv`), and [`Translation`], what a translation reads besides
//!   the plan (those tables, the shared error and late-row counts, where uids start).
//!
//! Invariant: pure translation targets — this crate plans nothing (that is `sluice-sql`'s) and
//! its operators only use the DataStream API's public surface; a malformed input record or a
//! row whose evaluation fails is counted as a dead letter, never silently changed.

pub mod calc;
pub use sluice_table_stateful::{
    group_agg, group_agg_two_phase, joins, key, rank, row_errors, stateful, window_agg,
};
mod calc_shared;
pub mod connectors;
pub mod demand;
pub mod dropped;
pub mod fused;
pub mod layout;
pub mod official;
pub mod options;
pub mod query_plan;
pub mod scan;
pub mod schema;
pub mod script;
pub mod sink;
pub mod stream_tables;
pub mod translate;

pub use calc::{calc, Calc};
pub use connectors::{SinkConnector, SourceConnector};
pub use dropped::DroppedRows;
pub use joins::{
    interval_join, regular_join, window_join, IntervalJoinSpec, JoinType, RegularJoinSpec,
    WindowJoinSpec,
};
pub use key::{KeyRow, SqlKey};
pub use row_errors::RowErrors;
pub use scan::{ScanSettings, TableScan};
pub use schema::PhysicalSchema;
pub use script::{JobKind, PlannedJob, SqlScript, Step};
pub use sink::{insert_changes_into, insert_into, SinkCast};
pub use stateful::{LateRecords, OperatorIds};
pub use stream_tables::{StreamTable, StreamTables, Translation};
pub use translate::{QueryOutput, SqlJob};
pub use window_agg::{
    window_aggregate, WindowAggCall, WindowAggSpec, WindowKind, WindowProperty, WindowTime,
};
