//! The integration tests of `sluice-cli`, one binary (`it`) with one module per
//! former test file: one link instead of one per file. Run one module with
//! `cargo test -p sluice-cli --test it MODULE::`.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod campaign;
mod common;
mod live;
mod pg_oracle;
mod restarts;

mod autopilot_flink;
mod autopilot_live_skew;
mod autopilot_sluice;
mod autopilot_source_ceiling;
mod bench_connectors;
mod bench_nexmark_sql;
mod checkpoints_object_store;
mod cli;
mod connectors;
mod demo;
mod doctor;
mod doctor_dir;
mod doctor_fix;
mod doctor_flink;
mod doctor_flink_cluster;
mod doctor_scenarios;
mod doctor_tls;
mod exactly_once;
mod exactly_once_campaign;
mod exactly_once_kafka;
mod explain_analyze;
mod input_errors;
mod live_heal;
mod processes;
mod processes_exactly_once;
mod produce;
mod profile;
mod run_reports;
mod savepoint;
mod socket_source;
mod sql;
mod sql_client;
mod sql_kafka;
mod sql_kafka_postgres;
mod top;
mod top_live;
