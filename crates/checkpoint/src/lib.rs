//! # sluice-checkpoint: consistent snapshots of a running job, and recovery from them
//!
//! Flink's asynchronous barrier snapshotting, in one process:
//!
//! - The [`Coordinator`] (pure decisions: when to trigger, expire, complete, fail the job)
//!   runs on a coordinator thread that owns a [`CheckpointHub`], shared by every task.
//! - To trigger checkpoint `n`, the hub publishes barrier `n`; each source injects it into its
//!   output between two records and records its position. A barrier needs no credit and keeps
//!   its place behind the records written before it.
//! - Each operator snapshots its state when the barrier passes it in the chain
//!   (`Operator::snapshot_state`), keyed operators per key group. A task with several input
//!   channels aligns: a channel that delivered barrier `n` is not read again until every
//!   channel did ([`sluice_channel::InputGate::set_blocked`]); then the barrier moves on.
//! - When the barrier has passed its whole chain, the task acknowledges with its operators'
//!   snapshots ([`task::TaskCheckpoints::ack`], reached through the operator context's
//!   `TaskServices` (in `sluice-operators`)). When every task has, the coordinator writes the checkpoint
//!   (one file per operator subtask and a `_metadata` manifest, [`storage`]), marks it
//!   complete, and transactional sinks publish what they wrote before it.
//! - On a failure the job restarts from the latest completed checkpoint: sources rewind to
//!   their positions, operators restore their state ([`task::TaskCheckpoints::restored_parts`]; keyed state is
//!   split by key group, so a restore may change the parallelism).
//!
//! Main types: [`Coordinator`] and [`CheckpointConfig`] (the decisions), [`CheckpointHub`]
//! (shared by a job's tasks; between processes through a [`ProcessLink`] carrying
//! [`HubMessage`]s), [`task::TaskCheckpoints`] (one task's reporting), [`storage`] (the
//! `_metadata` manifest and state files; on an object store with the cargo feature
//! `object-store`, on by default), [`savepoints`], [`RestartStrategy`], [`mapping`] (which
//! operator restores which state).
//!
//! Invariant: checkpoints never block the data path: a hub publishes barriers and collects
//! acknowledgements; it must NOT wait on a task thread, and it must NOT decide placement or
//! run tasks (the coordinator thread that drives it lives in `sluice-runtime`, which owns the
//! job's control).

#![warn(missing_docs)]

pub mod coordinator;
pub mod hub;
pub mod link;
pub mod mapping;
#[cfg(feature = "object-store")]
pub mod object;
#[cfg(not(feature = "object-store"))]
#[path = "object_off.rs"]
pub mod object;
pub mod restart;
pub mod savepoints;
pub mod storage;
pub mod task;

pub use coordinator::{Action, CheckpointConfig, Coordinator};
pub use hub::{
    CheckpointHub, CheckpointRecord, CheckpointStatus, SavepointRefused, SavepointRequest,
    SavepointStatus, StatsView, TaskAck,
};
pub use link::{HubMessage, HubRole, JobFailer, ProcessLink};
pub use restart::RestartStrategy;
pub use storage::{CompletedCheckpoint, OperatorState};
