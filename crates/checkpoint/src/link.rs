//! Checkpoints of a job split over processes: what the hubs of the processes tell each other.
//!
//! Process 0 is the job master: its hub is the **leader** and its coordinator thread triggers,
//! collects and completes every checkpoint, counting the subtasks of every process. The hub of
//! every other process is a **follower**: it runs no coordinator; it publishes the leader's
//! barriers to its own sources and forwards what its tasks report (acknowledgements with their
//! snapshots, declines, ends) to the leader, which writes the checkpoint. A follower learns of a
//! completion from the leader, which is what its transactional sinks commit on.
//!
//! The transport is the caller's ([`ProcessLink`]: `sluice-datastream` sends these messages over the
//! processes' network endpoint); the messages and their encoding (postcard) are here.

use serde::{Deserialize, Serialize};
use sluice_types::{Barrier, CheckpointKind};

use super::TaskAck;

/// Which hub of a split job this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubRole {
    /// Process 0: triggers and completes checkpoints for every process.
    Leader,
    /// Any other process: follows the leader's barriers, forwards its tasks' reports.
    Follower,
}

/// What a link may do to the job it serves: fail it (a process lost, a message that cannot be
/// sent). The runtime's `JobControl` implements it; the link holds it weakly or not at all.
pub trait JobFailer: Send + Sync {
    /// Fails the job with `message`; it restarts per its restart strategy.
    fn fail_job(&self, message: String);
}

/// How a hub reaches the hubs of the other processes.
pub trait ProcessLink: Send + Sync {
    /// Called once, when the job's hub and control exist: from now on deliver the other
    /// processes' messages to [`CheckpointHub::receive`](super::CheckpointHub::receive), and
    /// fail the job (`control.fail`) when a process is lost.
    fn attach(
        &self,
        hub: std::sync::Arc<super::CheckpointHub>,
        control: std::sync::Arc<dyn JobFailer>,
    );
    /// Sends `bytes`: from the leader to every other process, from a follower to the leader.
    /// A message that cannot be sent fails the job (the link reports it through `control`).
    fn send(&self, bytes: Vec<u8>);
    /// [`send`](Self::send), best effort: an error is only returned, the job goes on (metrics
    /// reports, see `sluice-runtime`'s `telemetry::cluster`; inspections, see
    /// `sluice-runtime`'s `job_master::inspect`).
    fn send_best_effort(&self, bytes: Vec<u8>) -> Result<(), String>;
}

/// A barrier as it crosses (the types crate has no serde).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WireBarrier {
    /// The checkpoint the barrier belongs to.
    pub checkpoint_id: u64,
    /// Trigger time, ms since the epoch.
    pub timestamp_ms: i64,
    /// 0 aligned, 1 unaligned, 2 savepoint.
    pub kind: u8,
}

impl From<Barrier> for WireBarrier {
    fn from(b: Barrier) -> Self {
        WireBarrier {
            checkpoint_id: b.checkpoint_id,
            timestamp_ms: b.timestamp_ms,
            kind: match b.kind {
                CheckpointKind::Aligned => 0,
                CheckpointKind::Unaligned => 1,
                CheckpointKind::Savepoint => 2,
            },
        }
    }
}

impl WireBarrier {
    /// Back to the runtime's barrier; fails on an unknown kind.
    pub fn barrier(self) -> Result<Barrier, String> {
        Ok(Barrier {
            checkpoint_id: self.checkpoint_id,
            timestamp_ms: self.timestamp_ms,
            kind: match self.kind {
                0 => CheckpointKind::Aligned,
                1 => CheckpointKind::Unaligned,
                2 => CheckpointKind::Savepoint,
                k => return Err(format!("unknown checkpoint kind {k}")),
            },
        })
    }
}

/// One message between the hubs of a split job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum HubMessage {
    /// Leader → followers: inject this barrier at your sources.
    Trigger(WireBarrier),
    /// Leader → followers: checkpoint `id` is complete (transactional sinks may commit).
    Completed(u64),
    /// Leader → followers: every source is at its end; a checkpoint above this id is final.
    FinalAfter(u64),
    /// Leader → followers: a stop-with-savepoint with this id is in progress (0: no more).
    StopSavepoint(u64),
    /// Leader → followers: a task of the job ended (barriers cannot pass it any more).
    TaskFinishedElsewhere,
    /// Follower → leader: a task's acknowledgement with its snapshots.
    Ack(TaskAck),
    /// Follower → leader: a task could not take its snapshot.
    Decline(u64, String),
    /// Follower → leader: one of its tasks ended.
    TaskFinished,
    /// Follower → leader: one of its source subtasks reached the end of its input.
    SourceAtEnd,
    /// Follower → leader: its subtasks' metrics after an update (not a checkpoint message;
    /// it shares the link).
    Metrics(sluice_metrics::report::ProcessReport),
    /// Leader → followers: look at your subtasks for process 0's REST API (a flame graph of a
    /// vertex, a thread dump); answered by [`HubMessage::InspectReply`] with the same `run`.
    InspectRequest {
        /// Numbers the request; the reply carries it back.
        run: u64,
        /// What to look at.
        what: Inspect,
    },
    /// Follower → leader: what a [`HubMessage::InspectRequest`] asked for (best effort).
    InspectReply {
        /// The request's number.
        run: u64,
        /// The answering process's index.
        process: u32,
        /// What it found.
        reply: InspectReply,
    },
}

/// What process 0 asks another process to look at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Inspect {
    /// Sample the subtasks of this vertex that run there (the profiler's sampling run).
    FlameGraph {
        /// The vertex's index in the job graph.
        vertex: u32,
    },
    /// Dump the task threads (name, Java-style stack text).
    ThreadDump,
}

/// The answer to an [`Inspect`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum InspectReply {
    /// The sampled profiles of the vertex's subtasks in that process.
    FlameGraph(Vec<sluice_profiler::SubtaskProfile>),
    /// Each task thread's name and Java-style stack text.
    ThreadDump(Vec<(String, String)>),
}

impl HubMessage {
    /// The message's bytes for the link (postcard).
    pub fn encode(&self) -> Vec<u8> {
        // Encoding plain data into a Vec cannot fail.
        postcard::to_allocvec(self).unwrap_or_default()
    }

    /// Reads a message off the link; fails on malformed bytes.
    pub fn decode(bytes: &[u8]) -> Result<HubMessage, String> {
        postcard::from_bytes(bytes).map_err(|e| format!("a malformed checkpoint message: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let b = Barrier {
            checkpoint_id: 7,
            timestamp_ms: 123,
            kind: CheckpointKind::Savepoint,
        };
        let m = HubMessage::Trigger(b.into());
        let HubMessage::Trigger(w) = HubMessage::decode(&m.encode()).unwrap() else {
            panic!()
        };
        assert_eq!(w.barrier().unwrap(), b);
        let ack = TaskAck {
            checkpoint_id: 3,
            vertex: 1,
            subtask: 2,
            states: vec![("op".into(), vec![1, 2, 3])],
            state_bytes: 3,
            alignment_ns: 4,
            sync_ns: 5,
            start_delay_ms: 6,
            ack_ms: 7,
        };
        let HubMessage::Ack(a) = HubMessage::decode(&HubMessage::Ack(ack).encode()).unwrap() else {
            panic!()
        };
        assert_eq!((a.checkpoint_id, a.subtask, a.states[0].1.len()), (3, 2, 3));
        assert!(HubMessage::decode(&[200, 1]).is_err());
    }
}
