//! The integration tests of `sluice-rest-tests`, one binary (`it`) with one module per
//! former test file: one link instead of one per file. Run one module with
//! `cargo test -p sluice-rest-tests --test it MODULE::`.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod applications;
mod async_metrics;
mod autopilot_endpoint;
mod behaviour;
mod doctor_endpoint;
mod flink_structure;
mod garbage;
mod profiler;
mod security;
mod slow_clients;
