//! # The job master: one job's life, from deployment to its outcome
//!
//! [`JobMaster::new`] takes a planned [`JobGraph`](sluice_plan::JobGraph), the job's
//! [`EnvConfig`] and an [`AttemptBuilder`] (the DataStream API's way to build the tasks of one
//! attempt: gates, channels, chains of typed operators); [`JobMaster::launch`] runs the job on a
//! job thread:
//!
//! - creates every subtask's [`TaskMetrics`] (kept across attempts), the
//!   metrics sampler thread and the [`CheckpointHub`](crate::checkpoint::CheckpointHub);
//! - maps a restore's checkpoint state onto the job's operators by stable id, refusing state no
//!   operator takes before anything starts (unless allowed);
//! - per attempt: picks the restore point (the latest completed checkpoint after a failure,
//!   else the configured savepoint), asks the builder for the tasks, injects the configured
//!   fault, starts the checkpoint coordinator and runs the tasks ([`run_job`](crate::run_job));
//! - on a failure, restarts as the [`RestartStrategy`](crate::checkpoint::RestartStrategy)
//!   allows; on success, publishes the transactional sinks' output (final commits);
//! - records the [`JobOutcome`] in the [`JobMonitor`] that REST and the CLI read, and serves
//!   savepoints ([`JobMonitor::savepoint`], [`JobHandle::stop_with_savepoint`]).
//!
//! The master reads the job graph (vertices, parallelism, edges) but never decides placement:
//! chaining, parallelism and partitioning are the plan's.

mod config;
mod handle;
pub mod inspect;
mod master;
mod monitor;
mod restore;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub use config::{
    EnvConfig, FaultSpec, MAX_METRICS_INTERVAL, MAX_METRICS_WINDOW_SLOTS, MIN_METRICS_INTERVAL,
};
pub use handle::{JobExecution, JobHandle};
pub use master::JobMaster;
pub use monitor::{JobMonitor, JobOutcome};

use crate::{JobControl, TaskMetrics, TaskSpec};

/// What the builder of one attempt gets from the job master.
pub struct Attempt<'a> {
    /// 0 for the first run, then one more per restart.
    pub number: usize,
    /// The job graph to build tasks for.
    pub graph: &'a sluice_plan::JobGraph,
    /// The job's settings.
    pub config: &'a EnvConfig,
    /// The job's cancel/fail switch, reset for this attempt.
    pub control: &'a Arc<JobControl>,
    /// `metrics[vertex][subtask]`, the same objects in every attempt.
    pub metrics: &'a [Vec<Arc<TaskMetrics>>],
    /// Records emitted per source subtask `(vertex, subtask)`, kept across attempts.
    pub emitted: &'a HashMap<(usize, usize), Arc<AtomicU64>>,
}

/// Builds the tasks of one attempt of a job: fresh gates, channels and task bodies, one
/// [`TaskSpec`] per subtask of every vertex. Operators are created when the bodies run, on
/// their task threads. An error (the channels to another process could not be opened) fails
/// the attempt.
pub trait AttemptBuilder: Send + 'static {
    /// The tasks of `attempt`, or why they could not be built.
    fn build(&self, attempt: &Attempt<'_>) -> Result<Vec<TaskSpec>, String>;
}
