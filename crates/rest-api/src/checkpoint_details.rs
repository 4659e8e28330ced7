//! One checkpoint's statistics: an entry of `/jobs/:jobid/checkpoints` (its `latest` and
//! `history`), `/checkpoints/details/:cid` (the same with its `tasks`) and
//! `/checkpoints/details/:cid/subtasks/:vid` (one vertex's subtasks), in Flink's field order.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::checkpoints::DurationStats;
use crate::lenient;
use crate::OrderedMap;

/// One checkpoint (Flink's `CheckpointStatistics`); the fields after `tasks` are written only
/// for the outcome they belong to.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct CheckpointStatistics {
    /// `completed`, `failed` or `in_progress`.
    #[serde(rename = "className", default, deserialize_with = "lenient::some_text")]
    pub class_name: Option<String>,
    /// The checkpoint's id.
    #[serde(default, deserialize_with = "lenient::count")]
    pub id: Option<u64>,
    /// `COMPLETED`, `FAILED` or `IN_PROGRESS`.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub status: Option<String>,
    /// Whether it is a savepoint.
    #[serde(default, deserialize_with = "lenient::flag")]
    pub is_savepoint: Option<bool>,
    /// The savepoint's format (always `null` here).
    #[serde(
        rename = "savepointFormat",
        default,
        deserialize_with = "lenient::some_text"
    )]
    pub savepoint_format: Option<String>,
    /// When it was triggered, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub trigger_timestamp: Option<i64>,
    /// When the latest acknowledgement came, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub latest_ack_timestamp: Option<i64>,
    /// Checkpointed size, bytes.
    #[serde(default, deserialize_with = "lenient::count")]
    pub checkpointed_size: Option<u64>,
    /// State size, bytes.
    #[serde(default, deserialize_with = "lenient::count")]
    pub state_size: Option<u64>,
    /// From trigger to the latest acknowledgement, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    pub end_to_end_duration: Option<i64>,
    /// Bytes buffered during alignment.
    #[serde(default, deserialize_with = "lenient::count")]
    pub alignment_buffered: Option<u64>,
    /// Bytes processed during alignment.
    #[serde(default, deserialize_with = "lenient::count")]
    pub processed_data: Option<u64>,
    /// In-flight bytes persisted.
    #[serde(default, deserialize_with = "lenient::count")]
    pub persisted_data: Option<u64>,
    /// Subtasks of the job.
    #[serde(default, deserialize_with = "lenient::count")]
    pub num_subtasks: Option<u64>,
    /// Subtasks that acknowledged.
    #[serde(default, deserialize_with = "lenient::count")]
    pub num_acknowledged_subtasks: Option<u64>,
    /// `CHECKPOINT`, `UNALIGNED_CHECKPOINT` or `SAVEPOINT`.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub checkpoint_type: Option<String>,
    /// Per vertex id, its part of the checkpoint (empty in the list answer).
    #[serde(default, deserialize_with = "lenient::object")]
    #[schema(value_type = std::collections::HashMap<String, TaskCheckpointStatistics>)]
    pub tasks: OrderedMap<TaskCheckpointStatistics>,
    /// Where a completed checkpoint lies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub external_path: Option<String>,
    /// Whether a completed checkpoint was discarded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub discarded: Option<bool>,
    /// When a failed checkpoint failed, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub failure_timestamp: Option<i64>,
    /// Why a failed checkpoint failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub failure_message: Option<String>,
}

/// One vertex's part of a checkpoint (Flink's `TaskCheckpointStatistics`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct TaskCheckpointStatistics {
    /// The checkpoint's id.
    #[serde(default, deserialize_with = "lenient::count")]
    pub id: Option<u64>,
    /// `COMPLETED`, `FAILED` or `IN_PROGRESS`.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub status: Option<String>,
    /// When the vertex's latest acknowledgement came, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub latest_ack_timestamp: Option<i64>,
    /// Checkpointed size, bytes.
    #[serde(default, deserialize_with = "lenient::count")]
    pub checkpointed_size: Option<u64>,
    /// State size, bytes.
    #[serde(default, deserialize_with = "lenient::count")]
    pub state_size: Option<u64>,
    /// From trigger to the vertex's latest acknowledgement, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    pub end_to_end_duration: Option<i64>,
    /// Bytes buffered during alignment.
    #[serde(default, deserialize_with = "lenient::count")]
    pub alignment_buffered: Option<u64>,
    /// Bytes processed during alignment.
    #[serde(default, deserialize_with = "lenient::count")]
    pub processed_data: Option<u64>,
    /// In-flight bytes persisted.
    #[serde(default, deserialize_with = "lenient::count")]
    pub persisted_data: Option<u64>,
    /// The vertex's subtasks.
    #[serde(default, deserialize_with = "lenient::count")]
    pub num_subtasks: Option<u64>,
    /// Those that acknowledged.
    #[serde(default, deserialize_with = "lenient::count")]
    pub num_acknowledged_subtasks: Option<u64>,
}

/// `GET /jobs/:jobid/checkpoints/details/:cid/subtasks/:vid` (Flink's
/// `TaskCheckpointStatisticsWithSubtaskDetails`): the vertex's part, then statistics over its
/// subtasks and each subtask.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct TaskCheckpointStatisticsWithSubtaskDetails {
    /// The vertex's part of the checkpoint.
    #[serde(flatten)]
    pub task: TaskCheckpointStatistics,
    /// Statistics over the subtasks that acknowledged.
    #[serde(default, deserialize_with = "lenient::object")]
    pub summary: SubtaskCheckpointSummary,
    /// Each subtask, by index.
    #[serde(default, deserialize_with = "lenient::list")]
    pub subtasks: Vec<SubtaskCheckpointStatistics>,
}

/// The `summary` of [`TaskCheckpointStatisticsWithSubtaskDetails`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SubtaskCheckpointSummary {
    /// Checkpointed size, bytes.
    #[serde(default, deserialize_with = "lenient::object")]
    pub checkpointed_size: DurationStats,
    /// State size, bytes.
    #[serde(default, deserialize_with = "lenient::object")]
    pub state_size: DurationStats,
    /// From trigger to acknowledgement, ms.
    #[serde(default, deserialize_with = "lenient::object")]
    pub end_to_end_duration: DurationStats,
    /// Synchronous and asynchronous parts, ms.
    #[serde(default, deserialize_with = "lenient::object")]
    pub checkpoint_duration: SyncAsyncStats,
    /// Alignment.
    #[serde(default, deserialize_with = "lenient::object")]
    pub alignment: AlignmentStats,
    /// From trigger to the subtask's start of the checkpoint, ms.
    #[serde(default, deserialize_with = "lenient::object")]
    pub start_delay: DurationStats,
}

/// The `checkpoint_duration` of [`SubtaskCheckpointSummary`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SyncAsyncStats {
    /// The synchronous part, ms.
    #[serde(default, deserialize_with = "lenient::object")]
    pub sync: DurationStats,
    /// The asynchronous part, ms.
    #[serde(rename = "async", default, deserialize_with = "lenient::object")]
    pub asynchronous: DurationStats,
}

/// The `alignment` of [`SubtaskCheckpointSummary`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct AlignmentStats {
    /// Bytes buffered.
    #[serde(default, deserialize_with = "lenient::object")]
    pub buffered: DurationStats,
    /// Bytes processed.
    #[serde(default, deserialize_with = "lenient::object")]
    pub processed: DurationStats,
    /// Bytes persisted.
    #[serde(default, deserialize_with = "lenient::object")]
    pub persisted: DurationStats,
    /// Duration, ms.
    #[serde(default, deserialize_with = "lenient::object")]
    pub duration: DurationStats,
}

/// One subtask of [`TaskCheckpointStatisticsWithSubtaskDetails`]: `index` and `status` only
/// (`pending_or_failed`) until it acknowledged, then all of them (`completed`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SubtaskCheckpointStatistics {
    /// The subtask's index.
    #[serde(default, deserialize_with = "lenient::count")]
    pub index: Option<u64>,
    /// `completed` or `pending_or_failed`.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub status: Option<String>,
    /// When it acknowledged, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub ack_timestamp: Option<i64>,
    /// From trigger to acknowledgement, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub end_to_end_duration: Option<i64>,
    /// State size, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub state_size: Option<u64>,
    /// Checkpointed size, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub checkpointed_size: Option<u64>,
    /// Synchronous and asynchronous parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_object")]
    #[schema(nullable = false)]
    pub checkpoint: Option<SubtaskCheckpointDuration>,
    /// Alignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_object")]
    #[schema(nullable = false)]
    pub alignment: Option<SubtaskAlignment>,
    /// From trigger to the subtask's start of the checkpoint, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub start_delay: Option<i64>,
    /// Whether the subtask's checkpoint was unaligned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub unaligned_checkpoint: Option<bool>,
    /// Whether it was aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub aborted: Option<bool>,
}

/// The `checkpoint` of [`SubtaskCheckpointStatistics`], ms.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SubtaskCheckpointDuration {
    /// The synchronous part.
    #[serde(default, deserialize_with = "lenient::int")]
    pub sync: Option<i64>,
    /// The asynchronous part.
    #[serde(rename = "async", default, deserialize_with = "lenient::int")]
    pub asynchronous: Option<i64>,
}

/// The `alignment` of [`SubtaskCheckpointStatistics`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SubtaskAlignment {
    /// Bytes buffered.
    #[serde(default, deserialize_with = "lenient::count")]
    pub buffered: Option<u64>,
    /// Bytes processed.
    #[serde(default, deserialize_with = "lenient::count")]
    pub processed: Option<u64>,
    /// Bytes persisted.
    #[serde(default, deserialize_with = "lenient::count")]
    pub persisted: Option<u64>,
    /// Duration, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    pub duration: Option<i64>,
}
