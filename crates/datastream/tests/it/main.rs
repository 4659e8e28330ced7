//! The integration tests of `sluice-datastream`, one binary (`it`) with one module per
//! former test file: one link instead of one per file. Run one module with
//! `cargo test -p sluice-datastream --test it MODULE::`.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod own_process;

mod async_io;
mod backpressure;
mod backpressure_across_processes;
mod chaining;
mod checkpoint_storage;
mod checkpoints;
mod default_dirs;
mod event_time;
mod exchange_end_to_end;
mod failure;
mod file_sink_exactly_once;
mod keyed_state;
mod overdraft;
mod socket_source;
mod sources_sinks;
mod telemetry_scenarios;
