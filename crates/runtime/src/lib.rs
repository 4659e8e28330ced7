//! # sluice-runtime: subtasks on threads, the operator run loop, job control
//!
//! The runtime executes a planned job. The [`job_master::JobMaster`] owns a job's life: it takes
//! the job graph (`sluice-plan`) and a way to build the tasks of an attempt (the DataStream API
//! implements it), and runs attempts, restarts, restores, final commits and savepoints; its
//! [`JobMonitor`] is what REST and the CLI read. An attempt is a list of [`TaskSpec`]s, one per
//! subtask of each chained vertex. Each runs on its own OS thread named like Flink's tasks
//! (`Map -> Filter (2/4)`), and [`run_job`] joins them into a [`JobResult`] or the first
//! [`JobError`].
//!
//! Main types:
//! - [`job_master::JobMaster`], [`JobHandle`], [`JobMonitor`], [`EnvConfig`]: one job's life and
//!   its settings.
//! - [`JobControl`]: the job-wide switchboard: cancellation, the first failure, the gates to wake
//!   on cancel, the buffer-timeout flush clock and the dead-letter output.
//! - [`TaskServices`]: what a task offers the operators of its chain (its metrics, checkpoint
//!   reporting and restore data), reached through the handle in their `OperatorContext`.
//! - [`TaskMetrics`]: per-subtask counters (records and bytes in/out, idle and backpressured time),
//!   updated per buffer and readable while the job runs.
//! - [`chain::Link`]: an [`Operator`](sluice_types::Operator) bound to its downstream collector;
//!   a chain of operators is a chain of links, one virtual call per operator per record.
//! - [`writer::RecordWriter`]: the end of a chain that feeds a network edge: picks a channel per
//!   record with a [`writer::ChannelSelector`] and appends to that channel's buffer.
//! - [`input::run_one_input`]: the loop of a non-source task: take a buffer from the input gate,
//!   push its records through the chain, release it (which returns the credit).
//! - [`sources`], [`sinks`], [`operators`]: the built-in functions, among them
//!   [`operators::async_io`]: the async wait operator (Flink's Async I/O) on tokio, one
//!   current-thread runtime per subtask by default — the module docs give the benchmark that
//!   chose it over one shared runtime.
//! - [`profiler`]: flame graphs (native stacks of the task threads, symbolised, and logical
//!   off-CPU frames) and thread dumps, in Flink's shapes; [`profiler::JobProfiler`] is a job's
//!   cache of them.
//!
//! The runtime is the task execution core; its other rooms are crates of their own, re-exported
//! here at their old paths: `sluice-metrics` ([`metrics`]), `sluice-state` ([`state`],
//! [`fasthash`], [`private_dir`]), `sluice-checkpoint` ([`checkpoint`], with the coordinator
//! thread [`checkpoint::driver`] kept here), `sluice-operators` ([`operators`], [`time`],
//! [`hotkeys`], [`services`]) and `sluice-profiler` ([`profiler`]).
//!
//! Invariant: the runtime never decides placement. The job master reads the job graph to deploy
//! and restart it, tasks run closures and count; deciding what runs where (chaining,
//! partitioning, parallelism) belongs to `sluice-plan`.
//!
//! ```
//! use std::sync::Arc;
//! use sluice_runtime::{run_job, JobControl, TaskSpec, TaskMetrics, VertexInfo};
//! let control = JobControl::new(std::time::Duration::from_millis(100));
//! let metrics = Arc::new(TaskMetrics::default());
//! let m = metrics.clone();
//! let task = TaskSpec::new(0, "Source: numbers", 0, 1, metrics, Box::new(move |_ctx| {
//!     m.add_records_out(3);
//!     Ok(())
//! }));
//! let result = run_job("demo", vec![VertexInfo::new("Source: numbers", 1)], vec![task], control).unwrap();
//! assert_eq!(result.vertices[0].records_out, 3);
//! ```
#![warn(missing_docs)]

pub mod chain;
pub mod checkpoint;
pub mod control;
pub mod executor;
pub mod input;
pub mod job_master;
pub mod sched;
pub mod sinks;
pub mod sources;
pub mod telemetry;
pub mod writer;

// The crates split out of the runtime, at their old paths (`sluice_runtime::state::…`).
pub use sluice_metrics as metrics;
pub use sluice_operators as operators;
pub use sluice_operators::{hotkeys, services, time};
pub use sluice_profiler as profiler;
pub use sluice_state as state;
pub use sluice_state::{fasthash, private_dir};

pub use control::{DeadLetter, JobControl};
pub use executor::{run_job, JobError, JobResult, TaskContext, TaskSpec, VertexInfo, VertexResult};
pub use job_master::{
    AttemptBuilder, EnvConfig, FaultSpec, JobExecution, JobHandle, JobMaster, JobMonitor,
    JobOutcome,
};
pub use metrics::{GaugeKind, OperatorGauge, OperatorMetrics, TaskMetrics, TaskState};
pub use services::TaskServices;
