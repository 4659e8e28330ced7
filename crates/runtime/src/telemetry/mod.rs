//! Per-second views of the subtask counters, computed the way Flink computes them
//! (docs/src/reference/flink-formats.md#time-accounting):
//!
//! - **time gauges** (`busy/backPressured/idleTimeMsPerSecond`, CPU and per-operator time): every
//!   update interval (Flink: 5 s) the time spent in the interval goes into a ring of slots (Flink:
//!   12, i.e. 60 s); the value is `Σslots / (interval_s × filled slots)`, clamped to [0, 1000] ms/s.
//!   A wait in progress is counted up to the update. `busy = 1000 − min(idle + backpressured, 1000)`.
//! - **meters** (`…PerSecond`): `(count_now − count_window_ago) / window_s`, over a history that
//!   starts at zero, exactly like Flink's `MeterView` (so the first minute includes start-up).
//!
//! [`Sampler`] owns that state for a job; its [`VertexSnapshot`]s are the plain-data result the
//! REST layer, `sluice top` and the doctor read. The thread that calls [`Sampler::tick`] lives
//! with the job.

pub mod cluster;
mod sampler;
mod window;

use sluice_metrics::{cpu, snapshot};

pub use sampler::{MetricsConfig, Sampler};
pub use sluice_metrics::cpu::{current_thread_id, thread_cpu_ns, thread_run_queue_ns};
pub use sluice_metrics::snapshot::{
    data_skew_percent, OperatorSnapshot, SubtaskSnapshot, VertexSnapshot,
};
pub use window::{MeterWindow, TimerWindow};
