//! The integration tests of `sluice-jobs`, one binary (`it`) with one module per
//! former test file: one link instead of one per file. Run one module with
//! `cargo test -p sluice-jobs --test it MODULE::`.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod blocking_lookup;
mod blocking_postgres;
mod duckdb_oracle;
mod fixer;
mod nexmark_oracle;
mod nexmark_recovery;
mod official_oracle;
mod plan_golden;
mod proof;
mod skew_across_processes;
mod skew_matches_flink;
mod state_migration;
mod two_phase;
