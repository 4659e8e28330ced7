//! sluice-table's integration tests: real jobs over the DataStream API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod formats;
mod nexmark_scan;
mod options;
mod q2_oracle;
mod support;
mod translate;
