//! A job's answers: `/jobs/:jobid` (with its `plan`), `/jobs/:jobid/config` and Flink's
//! `/jobs/:jobid/jobmanager/config`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient::{self, Scalar};
use crate::OrderedMap;

/// `GET /jobs/:jobid` (Flink's `JobDetailsInfo`), in Flink's field order. Fields a reader
/// may miss from other servers are `Option` and left out when `None`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobDetails {
    /// The job id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub jid: String,
    /// The application the job belongs to (Sluice: the job id again).
    #[serde(
        rename = "application-id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub application_id: Option<String>,
    /// The job's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// Whether the job can be stopped gracefully.
    #[serde(
        rename = "isStoppable",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub is_stoppable: Option<bool>,
    /// The job's state.
    #[serde(default, deserialize_with = "lenient::text")]
    pub state: String,
    /// `STREAMING` or `BATCH`.
    #[serde(rename = "job-type", default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub job_type: Option<String>,
    /// The job's scheduler (`Default`, `Adaptive`, …); older Flink versions leave it out.
    #[serde(
        rename = "schedulerType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub scheduler_type: Option<String>,
    /// When the job started, ms since the epoch (`-1`: not yet).
    #[serde(
        rename = "start-time",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub start_time: Option<i64>,
    /// When the job ended, ms since the epoch (`-1`: not yet).
    #[serde(rename = "end-time", default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub end_time: Option<i64>,
    /// Run time so far, ms (written as an integer when whole, as Flink does).
    #[serde(default, deserialize_with = "lenient::number")]
    #[serde(serialize_with = "lenient::write_number")]
    #[schema(value_type = Option<i64>)]
    pub duration: Option<f64>,
    /// The job's maximum parallelism (`-1`: none set).
    #[serde(
        rename = "maxParallelism",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub max_parallelism: Option<i64>,
    /// When the answer was made, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub now: Option<i64>,
    /// When the job entered each job status (0: never), in Flink's key order.
    #[serde(default, deserialize_with = "lenient::object")]
    #[serde(skip_serializing_if = "OrderedMap::is_empty")]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub timestamps: OrderedMap<i64>,
    /// The job's vertices; `None` when the answer has no `vertices` list.
    #[serde(default, deserialize_with = "lenient::some_list")]
    pub vertices: Option<Vec<JobVertex>>,
    /// How many subtasks are in each execution state, in Flink's key order.
    #[serde(
        rename = "status-counts",
        default,
        deserialize_with = "lenient::object"
    )]
    #[serde(skip_serializing_if = "OrderedMap::is_empty")]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub status_counts: OrderedMap<u64>,
    /// The job graph.
    #[serde(default, deserialize_with = "lenient::object")]
    pub plan: Plan,
    /// Operators not yet started (Sluice: always 0).
    #[serde(
        rename = "pending-operators",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub pending_operators: Option<i64>,
}

/// One vertex of [`JobDetails`], in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobVertex {
    /// The vertex id (32 hex digits).
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The slot sharing group the vertex's subtasks share.
    #[serde(
        rename = "slotSharingGroupId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub slot_sharing_group_id: Option<String>,
    /// The vertex's name: its chained operators joined by ` -> `.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// The most subtasks the vertex may be scaled to.
    #[serde(
        rename = "maxParallelism",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub max_parallelism: Option<u64>,
    /// Its parallelism as sent (the reader checks it: a whole number in range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::present")]
    #[schema(value_type = Option<i64>)]
    pub parallelism: Option<Scalar>,
    /// The vertex's state (`RUNNING`, …), aggregated over its subtasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub status: Option<String>,
    /// When its first subtask started, ms since the epoch (`-1`: not yet).
    #[serde(
        rename = "start-time",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub start_time: Option<i64>,
    /// When its last subtask ended, ms since the epoch (`-1`: not yet).
    #[serde(rename = "end-time", default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub end_time: Option<i64>,
    /// Its run time, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub duration: Option<i64>,
    /// How many of its subtasks are in each execution state, in Flink's key order.
    #[serde(default, deserialize_with = "lenient::object")]
    #[serde(skip_serializing_if = "OrderedMap::is_empty")]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub tasks: OrderedMap<u64>,
    /// Its I/O summed over its subtasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_object")]
    #[schema(nullable = false)]
    pub metrics: Option<IoMetrics>,
    /// Sluice extension: the connector options of the vertex's operators.
    #[serde(
        rename = "connector-options",
        default,
        deserialize_with = "lenient::list"
    )]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connector_options: Vec<ConnectorOption>,
}

/// Flink's `IOMetricsInfo`: bytes and records in and out and accumulated busy, idle and
/// backpressured time, of a subtask or summed over a vertex (schema name: Flink's `IOMetrics`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[schema(as = IOMetrics)]
pub struct IoMetrics {
    /// Bytes read.
    #[serde(rename = "read-bytes", default, deserialize_with = "lenient::int")]
    pub read_bytes: Option<i64>,
    /// Whether `read-bytes` is complete.
    #[serde(
        rename = "read-bytes-complete",
        default,
        deserialize_with = "lenient::flag"
    )]
    pub read_bytes_complete: Option<bool>,
    /// Bytes written.
    #[serde(rename = "write-bytes", default, deserialize_with = "lenient::int")]
    pub write_bytes: Option<i64>,
    /// Whether `write-bytes` is complete.
    #[serde(
        rename = "write-bytes-complete",
        default,
        deserialize_with = "lenient::flag"
    )]
    pub write_bytes_complete: Option<bool>,
    /// Records read.
    #[serde(rename = "read-records", default, deserialize_with = "lenient::int")]
    pub read_records: Option<i64>,
    /// Whether `read-records` is complete.
    #[serde(
        rename = "read-records-complete",
        default,
        deserialize_with = "lenient::flag"
    )]
    pub read_records_complete: Option<bool>,
    /// Records written.
    #[serde(rename = "write-records", default, deserialize_with = "lenient::int")]
    pub write_records: Option<i64>,
    /// Whether `write-records` is complete.
    #[serde(
        rename = "write-records-complete",
        default,
        deserialize_with = "lenient::flag"
    )]
    pub write_records_complete: Option<bool>,
    /// Time spent backpressured, ms.
    #[serde(
        rename = "accumulated-backpressured-time",
        default,
        deserialize_with = "lenient::int"
    )]
    pub accumulated_backpressured_time: Option<i64>,
    /// Time spent idle, ms.
    #[serde(
        rename = "accumulated-idle-time",
        default,
        deserialize_with = "lenient::int"
    )]
    pub accumulated_idle_time: Option<i64>,
    /// Time spent busy, ms (a JSON number with a fraction, as Flink writes it).
    #[serde(
        rename = "accumulated-busy-time",
        default,
        deserialize_with = "lenient::number"
    )]
    pub accumulated_busy_time: Option<f64>,
}

/// One connector option of a vertex (Sluice's `connector-options`; Flink has none).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ConnectorOption {
    /// The operator the option belongs to.
    #[serde(default, deserialize_with = "lenient::text")]
    pub operator: String,
    /// The option's key (`sink.buffer-flush.max-rows`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub key: String,
    /// Its value, as text.
    #[serde(default, deserialize_with = "lenient::text")]
    pub value: String,
}

/// `GET /jobs/:jobid/plan` (`plan`), and the `plan` of [`JobDetails`]: Flink's JSON plan.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The job id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub jid: String,
    /// The job's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// `STREAMING` or `BATCH`.
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub job_type: String,
    /// The vertices as plan nodes.
    #[serde(default, deserialize_with = "lenient::list")]
    pub nodes: Vec<PlanNode>,
}

/// `GET /jobs/:jobid/plan`: the job's [`Plan`] under `plan`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobPlan {
    /// The job graph.
    #[serde(default, deserialize_with = "lenient::object")]
    pub plan: Plan,
}

/// One node of a [`Plan`] (a job vertex), in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct PlanNode {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The operator (empty on Flink's streaming plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub operator: Option<String>,
    /// The vertex's parallelism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub parallelism: Option<i64>,
    /// The operator strategy (empty on Flink's streaming plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub operator_strategy: Option<String>,
    /// The chained operators as an HTML-escaped tree, lines ending in `<br/>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub description: Option<String>,
    /// Optimizer properties (empty on streaming plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_object")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pub optimizer_properties: Option<OrderedMap<Scalar>>,
    /// Its inputs (none for a source, then left out).
    #[serde(default, deserialize_with = "lenient::list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<PlanInput>,
}

/// One input of a [`PlanNode`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct PlanInput {
    /// The upstream vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The input's index.
    #[serde(default, deserialize_with = "lenient::count")]
    pub num: Option<u64>,
    /// `pipelined_bounded` and friends.
    #[serde(default, deserialize_with = "lenient::text")]
    pub exchange: String,
    /// How records are shipped: `FORWARD`, `HASH`, `REBALANCE`, …
    #[serde(default, deserialize_with = "lenient::text")]
    pub ship_strategy: String,
}

/// `GET /jobs/:jobid/config`, the part its readers use.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobConfig {
    /// The job id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub jid: String,
    /// The job's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// The execution configuration.
    #[serde(
        rename = "execution-config",
        default,
        deserialize_with = "lenient::object"
    )]
    pub execution_config: ExecutionConfig,
}

/// The `execution-config` of [`JobConfig`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ExecutionConfig {
    /// The restart strategy, described.
    #[serde(
        rename = "restart-strategy",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub restart_strategy: Option<String>,
    /// The job's default parallelism.
    #[serde(
        rename = "job-parallelism",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub job_parallelism: Option<u64>,
    /// Whether operators may reuse record objects.
    #[serde(
        rename = "object-reuse-mode",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub object_reuse_mode: Option<bool>,
    /// The user's settings (Sluice lists its own here, as strings), in the order sent.
    #[serde(rename = "user-config", default, deserialize_with = "lenient::object")]
    #[schema(value_type = std::collections::HashMap<String, String>)]
    pub user_config: OrderedMap<Scalar>,
}

/// One entry of Flink's `GET /jobs/:jobid/jobmanager/config` (a list of them): a setting the
/// job runs with.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ConfigEntry {
    /// The option's key.
    #[serde(default, deserialize_with = "lenient::text")]
    pub key: String,
    /// Its value as sent (a string on Flink).
    #[serde(default)]
    #[schema(value_type = String)]
    pub value: Option<Scalar>,
}
