#![warn(missing_docs)]

//! # sluice-sql: Flink's SQL dialect, planned for Sluice
//!
//! The one crate to import for SQL. It turns Flink SQL text into plans Sluice can run, in three
//! crates of one job each, re-exported here under one roof:
//!
//! * `sluice-sql-front` — the statement layer: scripts, `CREATE TABLE`, the [`Catalog`], `SET`,
//!   the [`Session`], [`DataType`], [`Value`] / [`Row`], [`SqlError`] with line and column.
//! * `sluice-sql-expr` — expressions: [`bind_expr()`], [`Expr`] and its evaluation, the built-in
//!   scalar functions ([`FunctionRegistry`]) and aggregates ([`AggregateCall`], [`Accumulator`]).
//! * `sluice-sql-plan` ([`plan`]) — queries → Flink 2.3's physical operator shapes, `EXPLAIN`,
//!   operator names and ids.
//!
//! All three are pure: they parse, resolve, type, plan and evaluate, but start no thread and do
//! no I/O; `sluice-table` runs a plan on the DataStream API with the connectors.
//!
//! Invariant: nothing here depends on the engine (no runtime, channel or DataStream crate): a
//! plan is data, and the same text always gives the same plan.

pub use sluice_sql_expr::*;
pub use sluice_sql_front::*;
/// The query planner (`sluice-sql-plan`).
pub use sluice_sql_plan as plan;
