//! The integration tests of `sluice-kafka`, one binary (`it`) with one module per
//! former test file: one link instead of one per file. Run one module with
//! `cargo test -p sluice-kafka --test it MODULE::`.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod sink_common;

mod checkpoints;
mod metrics;
mod offsets_and_time;
mod sink_checks;
mod sink_crash_window;
mod sink_exactly_once;
mod sink_resume;
mod source;
mod tansu_transactions;
