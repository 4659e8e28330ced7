//! A vertex's answers: `/jobs/:jobid/vertices/:vertexid`, its `backpressure`, `subtasktimes`
//! and `accumulators`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;
use crate::{IoMetrics, OrderedMap};

/// `GET /jobs/:jobid/vertices/:vertexid` (Flink's `JobVertexDetailsInfo`), in Flink's field
/// order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexDetails {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The vertex's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// Its parallelism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub parallelism: Option<u64>,
    /// The most subtasks it may be scaled to.
    #[serde(
        rename = "maxParallelism",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub max_parallelism: Option<u64>,
    /// When the answer was made, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub now: Option<i64>,
    /// Its subtasks, by index.
    #[serde(default, deserialize_with = "lenient::list")]
    pub subtasks: Vec<SubtaskDetails>,
    /// I/O and state durations summarised over the subtasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_object")]
    #[schema(nullable = false)]
    pub aggregated: Option<Aggregated>,
}

/// One subtask of [`VertexDetails`], and `GET .../subtasks/:subtaskindex` (Flink's
/// `SubtaskExecutionAttemptDetailsInfo`), in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[schema(as = Subtask)]
pub struct SubtaskDetails {
    /// The subtask's index.
    #[serde(default, deserialize_with = "lenient::count")]
    pub subtask: Option<u64>,
    /// Its state.
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: String,
    /// The execution attempt (Sluice: always 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub attempt: Option<i64>,
    /// Where it runs (`host:port` of its task manager); `None` when not a string.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub endpoint: Option<String>,
    /// When it started, ms since the epoch (`-1`: not yet).
    #[serde(
        rename = "start-time",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub start_time: Option<i64>,
    /// When it ended, ms since the epoch (`-1`: not yet).
    #[serde(rename = "end-time", default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub end_time: Option<i64>,
    /// Its run time, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub duration: Option<i64>,
    /// Its I/O.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_object")]
    #[schema(nullable = false)]
    pub metrics: Option<IoMetrics>,
    /// The task manager it runs on.
    #[serde(
        rename = "taskmanager-id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub taskmanager_id: Option<String>,
    /// How long it spent in each pre-terminal state, ms, in Flink's key order.
    #[serde(
        rename = "status-duration",
        default,
        deserialize_with = "lenient::object"
    )]
    #[serde(skip_serializing_if = "OrderedMap::is_empty")]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub status_duration: OrderedMap<i64>,
    /// `start-time` again, under the name Flink also writes.
    #[serde(
        rename = "start_time",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub start_time_again: Option<i64>,
}

/// Flink's `aggregated` block of a vertex (or of its subtasks on one task manager): I/O and
/// state durations summarised over subtasks.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct Aggregated {
    /// Each I/O metric summarised, in Flink's key order.
    #[serde(default, deserialize_with = "lenient::object")]
    #[schema(value_type = std::collections::HashMap<String, StatsSummary>)]
    pub metrics: OrderedMap<StatsSummary>,
    /// Each state's duration summarised, in Flink's key order.
    #[serde(
        rename = "status-duration",
        default,
        deserialize_with = "lenient::object"
    )]
    #[schema(value_type = std::collections::HashMap<String, StatsSummary>)]
    pub status_duration: OrderedMap<StatsSummary>,
}

/// A summary of whole numbers over subtasks, in Flink's key order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct StatsSummary {
    /// The 25th percentile.
    #[serde(default, deserialize_with = "lenient::int")]
    pub p25: Option<i64>,
    /// The smallest value.
    #[serde(default, deserialize_with = "lenient::int")]
    pub min: Option<i64>,
    /// The mean.
    #[serde(default, deserialize_with = "lenient::int")]
    pub avg: Option<i64>,
    /// The median.
    #[serde(default, deserialize_with = "lenient::int")]
    pub median: Option<i64>,
    /// The largest value.
    #[serde(default, deserialize_with = "lenient::int")]
    pub max: Option<i64>,
    /// The sum.
    #[serde(default, deserialize_with = "lenient::int")]
    pub sum: Option<i64>,
    /// The 95th percentile.
    #[serde(default, deserialize_with = "lenient::int")]
    pub p95: Option<i64>,
    /// The 75th percentile.
    #[serde(default, deserialize_with = "lenient::int")]
    pub p75: Option<i64>,
}

/// `GET /jobs/:jobid/vertices/:vertexid/taskmanagers` (Flink's
/// `JobVertexTaskManagersInfo`): the vertex's subtasks grouped by task manager.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexTaskManagers {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The vertex's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// When the answer was made, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub now: Option<i64>,
    /// One entry per task manager running some of its subtasks.
    #[serde(default, deserialize_with = "lenient::list")]
    pub taskmanagers: Vec<VertexTaskManager>,
}

/// One task manager of [`VertexTaskManagers`], summarising the subtasks it runs.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexTaskManager {
    /// Its `host:port`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub endpoint: String,
    /// The state of its subtasks, aggregated.
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: String,
    /// When its first subtask started, ms since the epoch (`-1`: not yet).
    #[serde(rename = "start-time", default, deserialize_with = "lenient::int")]
    pub start_time: Option<i64>,
    /// When its last subtask ended, ms since the epoch (`-1`: not yet).
    #[serde(rename = "end-time", default, deserialize_with = "lenient::int")]
    pub end_time: Option<i64>,
    /// Their run time, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    pub duration: Option<i64>,
    /// Their I/O, summed.
    #[serde(default, deserialize_with = "lenient::object")]
    pub metrics: IoMetrics,
    /// How many of them are in each execution state, in Flink's key order.
    #[serde(
        rename = "status-counts",
        default,
        deserialize_with = "lenient::object"
    )]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub status_counts: OrderedMap<u64>,
    /// The task manager's id.
    #[serde(rename = "taskmanager-id", default, deserialize_with = "lenient::text")]
    pub taskmanager_id: String,
    /// Their I/O and state durations summarised.
    #[serde(default, deserialize_with = "lenient::object")]
    pub aggregated: Aggregated,
}

/// `GET /jobs/:jobid/vertices/:vertexid/backpressure` (Flink's `JobVertexBackPressureInfo`).
/// Before the first sample only `status` is sent (`deprecated`, as Flink does).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexBackPressure {
    /// `ok` once sampled, `deprecated` before.
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: String,
    /// The vertex's level: `ok`, `low` or `high` (its busiest subtask's).
    #[serde(
        rename = "backpressureLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub backpressure_level: Option<String>,
    /// When the sample was taken, ms since the epoch.
    #[serde(
        rename = "end-timestamp",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub end_timestamp: Option<i64>,
    /// One entry per subtask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_list")]
    #[schema(nullable = false)]
    pub subtasks: Option<Vec<SubtaskBackPressure>>,
    /// The level again, under the name older Flink versions used.
    #[serde(
        rename = "backpressure-level",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub backpressure_level_legacy: Option<String>,
}

/// One subtask of [`VertexBackPressure`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SubtaskBackPressure {
    /// The subtask's index.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub subtask: Option<u64>,
    /// `ok`, `low` or `high`.
    #[serde(
        rename = "backpressureLevel",
        default,
        deserialize_with = "lenient::text"
    )]
    pub backpressure_level: String,
    /// Share of time back-pressured, 0..1.
    #[serde(default, deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub ratio: Option<f64>,
    /// Share of time idle, 0..1.
    #[serde(rename = "idleRatio", default, deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub idle_ratio: Option<f64>,
    /// Share of time busy, 0..1.
    #[serde(rename = "busyRatio", default, deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub busy_ratio: Option<f64>,
    /// The level again, under the name older Flink versions used.
    #[serde(
        rename = "backpressure-level",
        default,
        deserialize_with = "lenient::text"
    )]
    pub backpressure_level_legacy: String,
}

/// `GET /jobs/:jobid/vertices/:vertexid/subtasktimes`: when each subtask entered each state.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SubtasksTimes {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The vertex's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// The server's clock, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub now: Option<i64>,
    /// One entry per subtask.
    #[serde(default, deserialize_with = "lenient::list")]
    pub subtasks: Vec<SubtaskTimes>,
}

/// One subtask of [`SubtasksTimes`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SubtaskTimes {
    /// The subtask's index.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub subtask: Option<u64>,
    /// Where it runs (`host:port`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub endpoint: String,
    /// Run time so far, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub duration: Option<i64>,
    /// State name → when it was entered (0: never), in Flink's key order.
    #[serde(default, deserialize_with = "lenient::object")]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub timestamps: OrderedMap<i64>,
}

/// `GET /jobs/:jobid/vertices/:vertexid/accumulators`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexAccumulators {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The user's accumulators (Sluice has none).
    #[serde(
        rename = "user-accumulators",
        default,
        deserialize_with = "lenient::list"
    )]
    pub user_accumulators: Vec<UserAccumulator>,
}

/// One entry of [`VertexAccumulators`] (Flink's `UserAccumulator`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct UserAccumulator {
    /// The accumulator's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// Its Java type.
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub kind: String,
    /// Its value, as text.
    #[serde(default, deserialize_with = "lenient::text")]
    pub value: String,
}
