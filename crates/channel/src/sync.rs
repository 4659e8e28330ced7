//! The synchronisation primitives of the gate's park / wake / credit logic, switched to loom's
//! model-checked ones in the crate's tests under `--cfg loom` (`gate_loom_tests.rs`), so loom
//! sees every lock, wait and notification and explores their interleavings. In every other
//! build these are plain re-exports of `std::sync`: same types, same code, no cost.
//!
//! Only the lock and the condition variables are switched. The gate's atomics (per-channel
//! counters, the debloat announcement, `WaitTimes`, the profiler's `WaitStacks::wanted`) are
//! statistics or profiler switches that no park or wake decision reads, so they stay std:
//! modelling them would only multiply loom's states. `Arc` stays std too: the gate registers a
//! `Weak` of its shared state with the profiler, which loom's `Arc` does not offer, and
//! reference counting is std's logic, not the gate's.

// Only the crate's own test build links loom (a dev-dependency): any other build under
// `--cfg loom` (the library as a dependency, `cargo clippy --lib`) stays on std.
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
