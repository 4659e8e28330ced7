//! The checkpoint answers: `/jobs/:jobid/checkpoints`, its `/config`, one checkpoint's
//! details (`/checkpoints/details/:cid`, module `checkpoint_details`) and one vertex's
//! subtasks in it (`.../subtasks/:vid`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::checkpoint_details::CheckpointStatistics;
use crate::lenient;

/// `GET /jobs/:jobid/checkpoints` (Flink's `CheckpointingStatistics`), in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct CheckpointingStatistics {
    /// Checkpoint counts by outcome.
    #[serde(default, deserialize_with = "lenient::object")]
    pub counts: CheckpointCounts,
    /// Statistics over the completed checkpoints.
    #[serde(default, deserialize_with = "lenient::object")]
    pub summary: CheckpointSummary,
    /// The latest checkpoint of each outcome.
    #[serde(default, deserialize_with = "lenient::object")]
    pub latest: LatestCheckpoints,
    /// The checkpoints remembered, newest first.
    #[serde(default, deserialize_with = "lenient::list")]
    pub history: Vec<CheckpointStatistics>,
}

/// The `latest` of [`CheckpointingStatistics`]: `null` where there is none.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct LatestCheckpoints {
    /// The latest completed checkpoint.
    #[serde(default)]
    pub completed: Option<CheckpointStatistics>,
    /// The latest savepoint.
    #[serde(default)]
    pub savepoint: Option<CheckpointStatistics>,
    /// The latest failed checkpoint.
    #[serde(default)]
    pub failed: Option<CheckpointStatistics>,
    /// The checkpoint the job was restored from.
    #[serde(default)]
    pub restored: Option<RestoredCheckpoint>,
}

/// The `latest.restored` of [`CheckpointingStatistics`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct RestoredCheckpoint {
    /// The checkpoint's id.
    #[serde(default, deserialize_with = "lenient::count")]
    pub id: Option<u64>,
    /// When the job was restored, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub restore_timestamp: Option<i64>,
    /// Whether it was a savepoint.
    #[serde(default, deserialize_with = "lenient::flag")]
    pub is_savepoint: Option<bool>,
    /// Where it lies.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub external_path: Option<String>,
}

/// The `counts` of [`CheckpointingStatistics`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct CheckpointCounts {
    /// Restored from a checkpoint.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub restored: u64,
    /// Checkpoints triggered.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub total: u64,
    /// In progress.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub in_progress: u64,
    /// Completed.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub completed: u64,
    /// Failed.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub failed: u64,
}

/// The `summary` of [`CheckpointingStatistics`]: statistics over the completed checkpoints.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct CheckpointSummary {
    /// Checkpointed size, bytes.
    #[serde(default, deserialize_with = "lenient::object")]
    pub checkpointed_size: DurationStats,
    /// State size, bytes.
    #[serde(default, deserialize_with = "lenient::object")]
    pub state_size: DurationStats,
    /// Duration from trigger to completion, ms.
    #[serde(default, deserialize_with = "lenient::object")]
    pub end_to_end_duration: DurationStats,
    /// Bytes buffered during alignment.
    #[serde(default, deserialize_with = "lenient::object")]
    pub alignment_buffered: DurationStats,
    /// Bytes processed during alignment.
    #[serde(default, deserialize_with = "lenient::object")]
    pub processed_data: DurationStats,
    /// In-flight bytes persisted.
    #[serde(default, deserialize_with = "lenient::object")]
    pub persisted_data: DurationStats,
}

/// Flink's statistics of a quantity (a duration in ms or a size in bytes): min/max/avg
/// written as integers (Flink's longs), percentiles as floats; absent ones `None`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DurationStats {
    /// Smallest.
    #[serde(default, deserialize_with = "lenient::number")]
    #[serde(serialize_with = "lenient::write_number")]
    pub min: Option<f64>,
    /// Largest.
    #[serde(default, deserialize_with = "lenient::number")]
    #[serde(serialize_with = "lenient::write_number")]
    pub max: Option<f64>,
    /// Mean.
    #[serde(default, deserialize_with = "lenient::number")]
    #[serde(serialize_with = "lenient::write_number")]
    pub avg: Option<f64>,
    /// Median.
    #[serde(default, deserialize_with = "lenient::number")]
    pub p50: Option<f64>,
    /// 90th percentile.
    #[serde(default, deserialize_with = "lenient::number")]
    pub p90: Option<f64>,
    /// 95th percentile.
    #[serde(default, deserialize_with = "lenient::number")]
    pub p95: Option<f64>,
    /// 99th percentile.
    #[serde(default, deserialize_with = "lenient::number")]
    pub p99: Option<f64>,
    /// 99.9th percentile.
    #[serde(default, deserialize_with = "lenient::number")]
    pub p999: Option<f64>,
}

/// `GET /jobs/:jobid/checkpoints/config` (Flink's `CheckpointConfigInfo`), in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct CheckpointConfigInfo {
    /// `exactly_once` or `at_least_once`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub mode: String,
    /// Checkpoint interval, ms (`i64::MAX`: periodic checkpoints are off).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub interval: Option<u64>,
    /// Checkpoint timeout, ms.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub timeout: Option<u64>,
    /// Least pause between two checkpoints, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub min_pause: Option<u64>,
    /// Most checkpoints in flight at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub max_concurrent: Option<u64>,
    /// Whether completed checkpoints are kept outside the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub externalization: Option<Externalization>,
    /// The state backend's class name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub state_backend: Option<String>,
    /// The checkpoint storage's class name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub checkpoint_storage: Option<String>,
    /// Whether checkpoints are unaligned.
    #[serde(default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub unaligned_checkpoints: Option<bool>,
    /// Failed checkpoints tolerated before the job fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub tolerable_failed_checkpoints: Option<u64>,
    /// After how long an aligned checkpoint turns unaligned, ms.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub aligned_checkpoint_timeout: Option<u64>,
    /// Whether checkpoints continue once some tasks finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub checkpoints_after_tasks_finish: Option<bool>,
    /// Whether the changelog state backend is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub state_changelog_enabled: Option<bool>,
    /// The changelog's materialization interval, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub changelog_periodic_materialization_interval: Option<u64>,
    /// The changelog's storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub changelog_storage: Option<String>,
}

/// The `externalization` of [`CheckpointConfigInfo`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct Externalization {
    /// Completed checkpoints are kept outside the job.
    #[serde(default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub enabled: Option<bool>,
    /// They are deleted when the job is cancelled.
    #[serde(default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub delete_on_cancellation: Option<bool>,
}
