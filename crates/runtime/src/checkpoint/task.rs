//! The checkpoint side of one task thread: which hub it reports to, the snapshots its
//! operators took for the barrier passing through the chain, and what it restores.
//!
//! Operators and sinks reach it through free functions (like the hot-key hooks) so the
//! `Operator` trait stays free of checkpoint plumbing: a chain link calls [`record`] with the
//! bytes its operator's `snapshot_state` returned, and the task calls [`ack`] once the barrier
//! has passed the whole chain.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use super::{CheckpointHub, CompletedCheckpoint, TaskAck};

struct TaskCheckpoint {
    hub: Arc<CheckpointHub>,
    vertex: usize,
    subtask: usize,
    restore: Option<Arc<CompletedCheckpoint>>,
    states: Vec<(String, Vec<u8>)>,
    sync_started: Option<Instant>,
    /// Why an operator could not snapshot for the barrier passing now.
    declined: Option<String>,
}

thread_local! {
    static TASK: RefCell<Option<TaskCheckpoint>> = const { RefCell::new(None) };
}

/// Clears the task's checkpoint context when the task thread ends.
pub struct Entered(());

impl Drop for Entered {
    fn drop(&mut self) {
        TASK.with(|t| {
            if let Some(t) = t.borrow_mut().take() {
                t.hub.task_finished();
            }
        });
    }
}

/// Binds the calling task thread to `hub` as subtask `subtask` of vertex `vertex`.
pub fn enter(hub: Arc<CheckpointHub>, vertex: usize, subtask: usize) -> Entered {
    let restore = hub.restore_point();
    TASK.with(|t| {
        *t.borrow_mut() = Some(TaskCheckpoint {
            hub,
            vertex,
            subtask,
            restore,
            states: Vec::new(),
            sync_started: None,
            declined: None,
        })
    });
    Entered(())
}

/// The hub of the calling task, if the job checkpoints.
pub fn hub() -> Option<Arc<CheckpointHub>> {
    TASK.with(|t| t.borrow().as_ref().map(|t| t.hub.clone()))
}

/// Stores operator `op`'s snapshot for the barrier passing now.
pub fn record(op: &str, bytes: Vec<u8>) {
    TASK.with(|t| {
        if let Some(t) = t.borrow_mut().as_mut() {
            t.sync_started.get_or_insert_with(Instant::now);
            t.states.push((op.to_string(), bytes));
        }
    });
}

/// An operator could not snapshot for the barrier passing now: the task declines the
/// checkpoint instead of acknowledging it (the job goes on; the coordinator counts a failure).
pub fn decline(op: &str, reason: String) {
    TASK.with(|t| {
        if let Some(t) = t.borrow_mut().as_mut() {
            t.declined.get_or_insert(format!("operator {op}: {reason}"));
        }
    });
}

/// The barrier of `checkpoint_id` passed the whole chain: acknowledge with the snapshots (or
/// decline, if an operator could not take one).
pub fn ack(checkpoint_id: u64, trigger_ms: i64, alignment_ns: u64) {
    TASK.with(|t| {
        if let Some(t) = t.borrow_mut().as_mut() {
            if let Some(reason) = t.declined.take() {
                t.states.clear();
                t.sync_started = None;
                t.hub.decline(checkpoint_id, reason);
                return;
            }
            let now = crate::executor::epoch_ms() as i64;
            let states = std::mem::take(&mut t.states);
            t.hub.ack(TaskAck {
                checkpoint_id,
                vertex: t.vertex,
                subtask: t.subtask,
                state_bytes: states.iter().map(|(_, b)| b.len()).sum(),
                states,
                alignment_ns,
                sync_ns: t
                    .sync_started
                    .take()
                    .map_or(0, |s| s.elapsed().as_nanos() as u64),
                start_delay_ms: (now - trigger_ms).max(0) as u64,
                ack_ms: now,
            });
        }
    });
}

/// Keeps the task's in-flight records for unaligned checkpoint `checkpoint_id` (before
/// [`ack`]).
pub fn store_channel_state(checkpoint_id: u64, state: Box<dyn std::any::Any + Send>) {
    TASK.with(|t| {
        if let Some(t) = t.borrow().as_ref() {
            t.hub
                .store_channel_state(checkpoint_id, t.vertex, t.subtask, state);
        }
    });
}

/// The in-flight input records this task must process first when it restores from an
/// unaligned checkpoint (records of type `T`).
pub fn restored_channel_state<T: Clone + 'static>() -> Option<Vec<T>> {
    TASK.with(|t| {
        let t = t.borrow();
        let t = t.as_ref()?;
        let cp = t.restore.as_ref()?;
        let state = t.hub.channel_state(cp.id, t.vertex, t.subtask)?;
        let guard = state.lock().unwrap_or_else(|p| p.into_inner());
        guard.downcast_ref::<Vec<T>>().cloned()
    })
}

/// The snapshots of operator `op` to restore, one per subtask of the run that took them (in
/// subtask order), or `None` when the task does not restore or the checkpoint holds no state
/// of `op` (an operator new to the job starts empty, a new source from its beginning, as in
/// Flink; the job master has checked that no state of the checkpoint is left unmapped). A
/// keyed operator takes the key groups of its own range from all of them; others take their
/// own subtask's.
pub fn restored_parts(op: &str) -> Option<RestoredParts> {
    TASK.with(|t| {
        let t = t.borrow();
        let t = t.as_ref()?;
        let cp = t.restore.as_ref()?;
        let state = cp.operators.get(op)?;
        Some(RestoredParts {
            checkpoint_id: cp.id,
            parallelism: state.parallelism,
            parts: state
                .subtasks
                .iter()
                .map(|(i, b)| (*i, b.clone()))
                .collect(),
        })
    })
}

/// What an operator restores from.
#[derive(Debug, Clone, Default)]
pub struct RestoredParts {
    pub checkpoint_id: u64,
    /// The operator's parallelism when the snapshot was taken.
    pub parallelism: usize,
    /// `(old subtask, bytes)`.
    pub parts: Vec<(usize, Vec<u8>)>,
}

/// The id of the last completed checkpoint of the job (0 = none or no checkpointing).
pub fn completed_checkpoint() -> u64 {
    TASK.with(|t| {
        t.borrow()
            .as_ref()
            .map_or(0, |t| t.hub.completed_checkpoint())
    })
}
