//! # sluice-metrics: what a subtask counts, and the plain data made of it
//!
//! The lowest layer of the runtime: every other runtime crate (keyed state, operators,
//! checkpoints, the profiler, the task core) writes or reads these counters, so they live
//! below all of them.
//!
//! Main types:
//! - [`TaskMetrics`]: per-subtask counters (records and bytes in/out, idle and backpressured
//!   time, state-access time, watermarks, hot keys, operator and connector gauges), written by
//!   the task thread per buffer and readable from anywhere while the job runs.
//! - [`TaskState`], [`OperatorMetrics`], [`OperatorGauge`], [`GaugeKind`]: a subtask's life
//!   cycle and its operators' figures.
//! - [`hot_keys::HotKeysSnapshot`]: a subtask's hot keys as published by its keyed operator.
//! - [`snapshot`]: per-second views of vertices, subtasks and operators (what REST, `sluice
//!   top` and the doctor read); [`report::ProcessReport`]: what a process of a split job sends
//!   process 0 after every update.
//! - [`cpu`]: per-thread CPU time from procfs; [`clock::epoch_ms`]: wall-clock milliseconds.
//!
//! Invariant: this crate only counts and describes. It must NOT compute per-second rates
//! (that is `sluice-runtime`'s `telemetry`), run threads, or know about operators, state or
//! checkpoints beyond the numbers they publish.

#![warn(missing_docs)]

pub mod clock;
pub mod cpu;
pub mod hot_keys;
pub mod report;
pub mod snapshot;
mod task;

pub use task::*;
