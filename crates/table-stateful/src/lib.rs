#![warn(missing_docs)]

//! # sluice-table-stateful: Flink SQL's stateful operators
//!
//! The operators a SQL plan's windows and joins are translated into, each taking and giving a
//! `DataStream<Row>` ([`sluice_sql::Row`]) and keeping its state in Sluice's keyed state, so a
//! SQL job checkpoints, restores and rescales as a DataStream job does. `sluice-table`
//! translates plans onto them and re-exports every module here under its own name.
//!
//! * [`key`]: [`SqlKey`], the key of a SQL keyed operator (a `Row` of key columns, a single
//!   `Value`, or a [`KeyRow`]: the key columns packed, one column inline), hashed and
//!   serialized as Flink's key groups and Sluice's savepoints expect.
//! * [`window_agg`]: Flink's window aggregation ([`window_aggregate`] over a
//!   [`WindowAggSpec`]: TUMBLE/HOP/CUMULATE/SESSION, event or processing time, one phase or
//!   Flink's local/global two phases; event-time aligned windows kept by window, one table of
//!   keys each, drained when the watermark passes it).
//! * [`group_agg`]: Flink's unbounded `GroupAggregate` ([`group_aggregate`]): a changelog of
//!   each key's aggregates, over insertions or over another changelog (retracting).
//! * [`group_agg_two_phase`]: Flink's mini-batch `LocalGroupAggregate` → `GlobalGroupAggregate`
//!   ([`group_agg_two_phase::two_phase_group_aggregate`]): bundles pre-aggregated before the shuffle.
//! * [`rank`]: Flink's `Rank` ([`rank()`]: a Top-N per partition by `ROW_NUMBER()`, over
//!   insertions or a changelog) and `Deduplicate` ([`deduplicate`]: the first or last row per key
//!   by a time attribute).
//! * [`joins`]: inner joins of append-only rows, output `left ++ right`: [`interval_join`],
//!   [`window_join`] (per window, at the watermark) and [`regular_join`].
//! * [`stateful`]: what those operators are given besides their spec: [`OperatorIds`] (the
//!   caller's Flink-style name and stable uid) and [`LateRecords`] (rows dropped as late).
//! * [`row_errors`]: [`RowErrors`], where rows that fail evaluation are counted.
//! * [`rowtime`]: the rowtime column as a stream's event timestamp.
//!
//! Invariant: no planning and no connectors — only the DataStream API's public surface; the
//! bytes a checkpoint holds are the layout savepoints promise (a savepoint restores into the
//! same SQL), whichever in-memory layout an operator keeps.

pub mod group_agg;
pub mod group_agg_two_phase;
pub mod joins;
pub mod key;
pub mod rank;
pub mod row_errors;
pub mod rowtime;
pub mod stateful;
pub mod window_agg;

pub use group_agg::{group_aggregate, ChangeInput, GroupAggCall, GroupAggSpec};
pub use joins::{
    interval_join, regular_join, window_join, IntervalJoinSpec, JoinType, RegularJoinSpec,
    WindowJoinSpec,
};
pub use key::{KeyRow, SqlKey};
pub use rank::{deduplicate, deduplicate_first_rows, rank, DedupSpec, RankOrder, RankSpec};
pub use row_errors::RowErrors;
pub use stateful::{LateRecords, OperatorIds};
pub use window_agg::{
    window_aggregate, WindowAggCall, WindowAggSpec, WindowKind, WindowProperty, WindowTime,
};
