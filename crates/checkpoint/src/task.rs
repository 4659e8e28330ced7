//! The checkpoint side of one task: which hub it reports to, the snapshots its operators took
//! for the barrier passing through the chain, and what it restores.
//!
//! A task owns one [`TaskCheckpoints`] inside its `TaskServices` (`sluice-operators`' `services`), which
//! operators reach through their `OperatorContext` (not through the calling thread), so the
//! `Operator` trait stays free of checkpoint plumbing: a chain link calls
//! [`TaskCheckpoints::record`] with the bytes its operator's `snapshot_state` returned, and the
//! task calls [`TaskCheckpoints::ack`] once the barrier has passed the whole chain.

use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::{CheckpointHub, CompletedCheckpoint, TaskAck};

/// One task's checkpoint reporting and restore data.
pub struct TaskCheckpoints {
    hub: Arc<CheckpointHub>,
    vertex: usize,
    subtask: usize,
    restore: Option<Arc<CompletedCheckpoint>>,
    /// What the operators reported for the barrier passing now. Only the task's own chain
    /// touches it, one barrier at a time, so the lock is never contended.
    pending: Mutex<Pending>,
    /// How the task's in-flight input records are written into an unaligned checkpoint, and
    /// under which state id ([`channel_state_id`]); without one they stay in the hub's memory
    /// (restorable only by the process that took them).
    codec: OnceLock<(String, Arc<dyn ChannelStateCodec>)>,
    /// The vertex's parallelism, set with the codec (channel state restores only at it).
    parallelism: OnceLock<usize>,
}

/// Encodes and decodes a task's in-flight input records (a `Vec<T>` of its input type) for
/// an unaligned checkpoint's channel state, so the checkpoint restores in any process.
pub trait ChannelStateCodec: Send + Sync {
    /// Serializes the records; fails if they are not a `Vec` of the task's input type.
    fn encode(&self, records: &(dyn Any + Send)) -> Result<Vec<u8>, String>;
    /// Rebuilds the records from bytes [`Self::encode`] wrote.
    fn decode(&self, bytes: &[u8]) -> Result<Box<dyn Any + Send>, String>;
}

/// The state id an unaligned checkpoint files the channel state of the vertex headed by
/// operator `head` under: the head operator's id with a suffix no operator id has, so the
/// mapping onto a job knows it for what it is ([`is_channel_state_id`]).
pub fn channel_state_id(head: &str) -> String {
    format!("{head}{CHANNEL_STATE_SUFFIX}")
}

const CHANNEL_STATE_SUFFIX: &str = "#channel-state";

/// The head operator's id when `id` is a vertex's channel state.
pub fn is_channel_state_id(id: &str) -> Option<&str> {
    id.strip_suffix(CHANNEL_STATE_SUFFIX)
}

/// What the operators reported for one barrier. Snapshots are filed under the checkpoint whose
/// barrier is passing ([`TaskCheckpoints::begin`]), and an acknowledgement carries only its own
/// checkpoint's: never another's, whatever order a protocol bug would bring them in.
#[derive(Default)]
struct Pending {
    /// The checkpoint whose barrier passes now (0: none began).
    checkpoint_id: u64,
    states: Vec<(String, Vec<u8>)>,
    sync_started: Option<Instant>,
    /// Why an operator could not snapshot for the barrier passing now.
    declined: Option<String>,
}

impl TaskCheckpoints {
    /// Subtask `subtask` of vertex `vertex` reporting to `hub`; restores from the hub's
    /// restore point (read now: the job master sets it before the attempt's tasks start).
    pub fn new(hub: Arc<CheckpointHub>, vertex: usize, subtask: usize) -> TaskCheckpoints {
        let restore = hub.restore_point();
        TaskCheckpoints {
            hub,
            vertex,
            subtask,
            restore,
            pending: Mutex::new(Pending::default()),
            codec: OnceLock::new(),
            parallelism: OnceLock::new(),
        }
    }

    /// Writes this task's in-flight input records into unaligned checkpoints with `codec`,
    /// under `id` ([`channel_state_id`] of the vertex's head operator); `parallelism` is the
    /// vertex's. Set once, before the task runs.
    pub fn set_channel_codec(
        &self,
        id: String,
        codec: Arc<dyn ChannelStateCodec>,
        parallelism: usize,
    ) {
        let _ = self.codec.set((id, codec));
        let _ = self.parallelism.set(parallelism);
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The job's hub.
    pub fn hub(&self) -> &Arc<CheckpointHub> {
        &self.hub
    }

    /// The task ended (tells the hub, which stops waiting for its acknowledgements).
    pub fn task_finished(&self) {
        self.hub.task_finished();
    }

    /// The barrier of `checkpoint_id` is about to pass the chain. Snapshots still pending
    /// from an earlier barrier belong to a checkpoint this task abandoned (never acknowledged
    /// here, so it cannot complete): they are dropped, not carried into this one.
    pub fn begin(&self, checkpoint_id: u64) {
        let mut p = self.pending();
        if p.checkpoint_id != checkpoint_id {
            if !p.states.is_empty() || p.declined.is_some() {
                tracing::debug!(
                    abandoned = p.checkpoint_id,
                    checkpoint = checkpoint_id,
                    "dropping the snapshots of an abandoned checkpoint"
                );
            }
            *p = Pending {
                checkpoint_id,
                ..Pending::default()
            };
        }
    }

    /// Stores operator `op`'s snapshot for the barrier passing now.
    pub fn record(&self, op: &str, bytes: Vec<u8>) {
        let mut p = self.pending();
        p.sync_started.get_or_insert_with(Instant::now);
        p.states.push((op.to_string(), bytes));
    }

    /// An operator could not snapshot for the barrier passing now: the task declines the
    /// checkpoint instead of acknowledging it (the job goes on; the coordinator counts a failure).
    pub fn decline(&self, op: &str, reason: String) {
        self.pending()
            .declined
            .get_or_insert(format!("operator {op}: {reason}"));
    }

    /// The barrier of `checkpoint_id` passed the whole chain: acknowledge with the snapshots (or
    /// decline, if an operator could not take one).
    pub fn ack(&self, checkpoint_id: u64, trigger_ms: i64, alignment_ns: u64) {
        let mut p = self.pending();
        if p.checkpoint_id != checkpoint_id && (p.checkpoint_id != 0 || !p.states.is_empty()) {
            // The snapshots pending are another checkpoint's: acknowledging with them would
            // file them under the wrong id, acknowledging without them would lose state.
            let reason = format!(
                "the task's snapshots were taken for checkpoint {}, not {checkpoint_id}",
                p.checkpoint_id
            );
            *p = Pending::default();
            drop(p);
            self.hub.decline(checkpoint_id, reason);
            return;
        }
        p.checkpoint_id = 0;
        if let Some(reason) = p.declined.take() {
            p.states.clear();
            p.sync_started = None;
            drop(p);
            self.hub.decline(checkpoint_id, reason);
            return;
        }
        let now = sluice_metrics::clock::epoch_ms() as i64;
        let states = std::mem::take(&mut p.states);
        let sync_ns = p
            .sync_started
            .take()
            .map_or(0, |s| s.elapsed().as_nanos() as u64);
        drop(p);
        self.hub.ack(TaskAck {
            checkpoint_id,
            vertex: self.vertex,
            subtask: self.subtask,
            state_bytes: states.iter().map(|(_, b)| b.len()).sum(),
            states,
            alignment_ns,
            sync_ns,
            start_delay_ms: (now - trigger_ms).max(0) as u64,
            ack_ms: now,
        });
    }

    /// Keeps the task's in-flight records for unaligned checkpoint `checkpoint_id` (before
    /// [`ack`](Self::ack)): encoded into the checkpoint beside the operators' snapshots when
    /// the task has a codec, else in the hub's memory. A record set that cannot be encoded
    /// declines the checkpoint.
    pub fn store_channel_state(&self, checkpoint_id: u64, state: Box<dyn Any + Send>) {
        match self.codec.get() {
            Some((id, codec)) => match codec.encode(state.as_ref()) {
                Ok(bytes) => self.record(id, bytes),
                Err(e) => self.decline(id, format!("cannot encode its in-flight records: {e}")),
            },
            None => self
                .hub
                .store_channel_state(checkpoint_id, self.vertex, self.subtask, state),
        }
    }

    /// The in-flight input records this task must process first when it restores from an
    /// unaligned checkpoint (records of type `T`): from the hub's memory, else decoded from the
    /// checkpoint. An error when the checkpoint's channel state cannot be restored here (taken
    /// at another parallelism, or undecodable): never silently skipped.
    pub fn restored_channel_state<T: Clone + 'static>(&self) -> Result<Option<Vec<T>>, String> {
        let Some(cp) = self.restore.as_ref() else {
            return Ok(None);
        };
        if let Some(state) = self.hub.channel_state(cp.id, self.vertex, self.subtask) {
            let guard = state.lock().unwrap_or_else(|p| p.into_inner());
            return Ok(guard.downcast_ref::<Vec<T>>().cloned());
        }
        let Some((id, codec)) = self.codec.get() else {
            return Ok(None);
        };
        let Some(state) = cp.operators.get(id) else {
            return Ok(None);
        };
        let parallelism = self.hub_parallelism();
        if parallelism.is_some_and(|p| p != state.parallelism) {
            return Err(format!(
                "checkpoint {} holds in-flight records of {} subtasks; they restore only at \
                 the same parallelism (restore an aligned checkpoint or a savepoint to rescale)",
                cp.id, state.parallelism
            ));
        }
        let Some(bytes) = state.subtasks.get(&self.subtask) else {
            return Ok(None);
        };
        let records = codec
            .decode(bytes)
            .map_err(|e| format!("checkpoint {}: its in-flight records: {e}", cp.id))?;
        records
            .downcast::<Vec<T>>()
            .map(|v| Some(*v))
            .map_err(|_| format!("checkpoint {}: in-flight records of another type", cp.id))
    }

    /// This task's vertex parallelism, as the codec's owner set it (`None`: unknown).
    fn hub_parallelism(&self) -> Option<usize> {
        self.parallelism.get().copied()
    }

    /// The snapshots of operator `op` to restore, one per subtask of the run that took them (in
    /// subtask order), or `None` when the task does not restore or the checkpoint holds no
    /// state of `op` (an operator new to the job starts empty, a new source from its beginning,
    /// as in Flink; the job master has checked that no state of the checkpoint is left
    /// unmapped). A keyed operator takes the key groups of its own range from all of them;
    /// others take their own subtask's.
    pub fn restored_parts(&self, op: &str) -> Option<RestoredParts> {
        let cp = self.restore.as_ref()?;
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
    }
}

/// What an operator restores from.
#[derive(Debug, Clone, Default)]
pub struct RestoredParts {
    /// The checkpoint restored from.
    pub checkpoint_id: u64,
    /// The operator's parallelism when the snapshot was taken.
    pub parallelism: usize,
    /// `(old subtask, bytes)`.
    pub parts: Vec<(usize, Vec<u8>)>,
}
