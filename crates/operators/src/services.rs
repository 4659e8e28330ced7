//! What a task offers the operators of its chain, passed in their `OperatorContext`.
//!
//! Each task (one subtask of a vertex) has one [`TaskServices`]: its metrics (where keyed
//! operators publish hot keys and state-access time) and, when the job has a checkpoint hub,
//! its checkpoint reporting ([`TaskCheckpoints`]: snapshots, declines, acknowledgements,
//! restore data, unaligned channel state). The executor creates it before the task starts; the
//! task's chain puts its handle in every operator's context, so an operator reaches its own
//! task whatever thread calls it, and an operator built without a task (a unit test) simply
//! has none.

use std::sync::Arc;

use sluice_types::{OperatorContext, ServicesHandle};

use sluice_checkpoint::task::{RestoredParts, TaskCheckpoints};
use sluice_checkpoint::CheckpointHub;
use sluice_metrics::TaskMetrics;

/// Whether the job is being torn down, as an operator that waits on something other than a
/// gate needs to know. The runtime's `JobControl` implements it.
pub trait JobCancellation: Send + Sync {
    /// `true` once the job is being cancelled (a failure elsewhere, or the user).
    fn is_cancelled(&self) -> bool;
}

/// The services of one task (see the module docs).
pub struct TaskServices {
    metrics: Arc<TaskMetrics>,
    checkpoints: Option<TaskCheckpoints>,
    /// The job's control, to know when the job is being torn down (an operator that waits on
    /// something other than a gate, the async wait operator, checks it).
    control: Option<Arc<dyn JobCancellation>>,
    /// Wakes the task's input loop (set by the loop once it owns its gate).
    input_waker: std::sync::OnceLock<sluice_channel::GateWaker>,
}

impl TaskServices {
    /// The services of subtask `subtask` of vertex `vertex`: `metrics`, and checkpoint
    /// reporting to `hub` if the job has one.
    pub fn new(
        metrics: Arc<TaskMetrics>,
        hub: Option<Arc<CheckpointHub>>,
        vertex: usize,
        subtask: usize,
        control: Option<Arc<dyn JobCancellation>>,
    ) -> Arc<TaskServices> {
        Arc::new(TaskServices {
            metrics,
            checkpoints: hub.map(|h| TaskCheckpoints::new(h, vertex, subtask)),
            control,
            input_waker: std::sync::OnceLock::new(),
        })
    }

    /// Services with metrics only (no checkpoints): for operators driven outside a job.
    pub fn metrics_only(metrics: Arc<TaskMetrics>) -> Arc<TaskServices> {
        Arc::new(TaskServices {
            metrics,
            checkpoints: None,
            control: None,
            input_waker: std::sync::OnceLock::new(),
        })
    }

    /// The handle to put in an `OperatorContext`.
    pub fn handle(self: &Arc<Self>) -> ServicesHandle {
        ServicesHandle::new(self.clone())
    }

    /// The services of the task running the operator of `ctx` (`None` outside a task).
    pub fn of(ctx: &OperatorContext) -> Option<&TaskServices> {
        ctx.services.get::<TaskServices>()
    }

    /// The task's metrics.
    pub fn metrics(&self) -> &Arc<TaskMetrics> {
        &self.metrics
    }

    /// Whether the job is being cancelled (a failure elsewhere, or the user): an operator
    /// waiting on an external system stops waiting and returns `OperatorError::Cancelled`.
    pub fn is_cancelled(&self) -> bool {
        self.control.as_ref().is_some_and(|c| c.is_cancelled())
    }

    /// Wakes the task's input loop if it waits for input, so its chain ticks now (`None`: a
    /// task without an input gate, e.g. a source, or before its loop started). For operators
    /// whose work completes on other threads: the async wait operator's completed requests.
    pub fn input_waker(&self) -> Option<&sluice_channel::GateWaker> {
        self.input_waker.get()
    }

    /// Set by the task's input loop once it owns its gate (see [`input_waker`](Self::input_waker)).
    pub fn set_input_waker(&self, waker: sluice_channel::GateWaker) {
        let _ = self.input_waker.set(waker);
    }

    /// The task's checkpoint reporting, if the job has a checkpoint hub.
    pub fn checkpoints(&self) -> Option<&TaskCheckpoints> {
        self.checkpoints.as_ref()
    }

    /// The job's checkpoint hub, if any.
    pub fn hub(&self) -> Option<&Arc<CheckpointHub>> {
        self.checkpoints.as_ref().map(|c| c.hub())
    }

    /// The barrier of `checkpoint_id` is about to pass the chain: what the operators record
    /// from now on belongs to it (no-op without checkpoints).
    pub fn begin_barrier(&self, checkpoint_id: u64) {
        if let Some(c) = &self.checkpoints {
            c.begin(checkpoint_id);
        }
    }

    /// Stores operator `op`'s snapshot for the barrier passing now (no-op without checkpoints).
    pub fn record(&self, op: &str, bytes: Vec<u8>) {
        if let Some(c) = &self.checkpoints {
            c.record(op, bytes);
        }
    }

    /// Operator `op` could not snapshot for the barrier passing now.
    pub fn decline(&self, op: &str, reason: String) {
        if let Some(c) = &self.checkpoints {
            c.decline(op, reason);
        }
    }

    /// The barrier of `checkpoint_id` passed the whole chain.
    pub fn ack(&self, checkpoint_id: u64, trigger_ms: i64, alignment_ns: u64) {
        if let Some(c) = &self.checkpoints {
            c.ack(checkpoint_id, trigger_ms, alignment_ns);
        }
    }

    /// What operator `op` restores from (`None` when the task does not restore).
    pub fn restored_parts(&self, op: &str) -> Option<RestoredParts> {
        self.checkpoints.as_ref()?.restored_parts(op)
    }

    /// The task ended: the hub stops waiting for it.
    pub fn task_finished(&self) {
        if let Some(c) = &self.checkpoints {
            c.task_finished();
        }
    }
}

/// What `ctx`'s operator restores from: its task's restore data (`None` outside a task or when
/// the task does not restore).
pub fn restored_parts(ctx: &OperatorContext) -> Option<RestoredParts> {
    TaskServices::of(ctx)?.restored_parts(&ctx.operator_id)
}

/// The metrics of the task running `ctx`'s operator (`None` outside a task).
pub fn task_metrics(ctx: &OperatorContext) -> Option<Arc<TaskMetrics>> {
    TaskServices::of(ctx).map(|s| s.metrics.clone())
}
