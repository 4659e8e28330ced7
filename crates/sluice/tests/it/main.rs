//! The integration tests of `sluice`, one binary (`it`) with one module per
//! former test file: one link instead of one per file. Run one module with
//! `cargo test -p sluice --test it MODULE::`.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod explain_analyze;
mod launch;
mod live_bounded;
mod live_failed_plan;
mod run;
mod sql_gateway;
mod table_env;
