//! The integration tests of `sluice-rest-api`, one binary (`it`) with one module per file.
//! Run one module with `cargo test -p sluice-rest-api --test it MODULE::`.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fixtures;
mod sluice_shapes;
