//! sluice-table's integration tests: real jobs over the DataStream API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod flat_scan;
mod flink_answers;
mod formats;
mod fused_scan;
mod group_agg;
mod group_agg_recovery;
mod jdbc;
mod joins;
mod kafka;
mod nexmark_lookup;
mod nexmark_scan;
mod options;
mod partitioned_fs;
mod pruning;
mod q2_oracle;
mod q5_windows;
mod rank;
mod rows;
mod support;
mod translate;
mod window_agg;
mod window_recovery;
