//! The integration tests of `sluice-state`, one binary (`it`) with one module per
//! former test file: one link instead of one per file. Run one module with
//! `cargo test -p sluice-state --test it MODULE::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod state_props;
mod state_restore;
