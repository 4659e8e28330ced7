//! Integration tests of `sluice-rest` against real jobs, in `tests/`. A package of their own so
//! that `sluice-rest` depends on no DataStream API crate, not even as a dev-dependency; this
//! library is empty.
#![warn(missing_docs)]
