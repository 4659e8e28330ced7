//! Flink 2.3's rescale history (`/jobs/:jobid/rescales/history`, `.../overview`,
//! `.../details/:rescaleuuid`) with Sluice's record of each change under `sluice`, and that
//! record alone (`POST /jobs/:jobid/doctor/apply`'s answer).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;
use crate::OrderedMap;

/// One rescale in Flink 2.3's `JobRescaleDetails` shape (a history entry, or
/// `GET /jobs/:jobid/rescales/details/:rescaleuuid`), with Sluice's record under `sluice`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JobRescaleDetails {
    /// The rescale's id, 32 hex digits.
    #[serde(default, deserialize_with = "lenient::text")]
    pub rescale_uuid: String,
    /// The id of the resource requirements it served, 32 hex digits.
    #[serde(default, deserialize_with = "lenient::text")]
    pub resource_requirements_uuid: String,
    /// Sequence number of the change in the job, from 1.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub rescale_attempt_id: u64,
    /// Vertex id → its parallelism before and after, in the job's vertex order; empty in a
    /// history entry (the details endpoint fills it).
    #[serde(default)]
    #[schema(value_type = std::collections::HashMap<String, VertexParallelismRescaleInfo>)]
    pub vertices: OrderedMap<VertexParallelismRescaleInfo>,
    /// Slot sharing group → its slots; always empty on Sluice (its slots are threads).
    #[serde(default)]
    #[schema(value_type = std::collections::HashMap<String, UnmodelledObject>)]
    pub slots: OrderedMap<UnmodelledObject>,
    /// The scheduler states the rescale went through; always empty on Sluice.
    #[serde(default)]
    pub scheduler_states: Vec<UnmodelledObject>,
    /// When the change started, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int_or_zero")]
    pub start_timestamp_in_millis: i64,
    /// When it ended, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int_or_zero")]
    pub end_timestamp_in_millis: i64,
    /// `COMPLETED` or `FAILED`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub terminal_state: String,
    /// What triggered it; `UPDATE_REQUIREMENT` on Sluice.
    #[serde(default, deserialize_with = "lenient::text")]
    pub trigger_cause: String,
    /// `SUCCEEDED` or `EXCEPTION_OCCURRED`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub terminated_reason: String,
    /// Sluice's record of the change (Sluice extension; absent from Flink's answers).
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    #[schema(nullable = false)]
    pub sluice: Option<SluiceRescaleRecord>,
}

/// One vertex of [`JobRescaleDetails`] (Flink's `VertexParallelismRescaleInfo`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VertexParallelismRescaleInfo {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub job_vertex_id: String,
    /// The vertex name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub job_vertex_name: String,
    /// Its slot sharing group's id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub slot_sharing_group_id: String,
    /// Its slot sharing group's name (`default`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub slot_sharing_group_name: String,
    /// The parallelism asked for (`null` when the vertex exists neither before nor after).
    #[serde(default, deserialize_with = "lenient::count")]
    pub desired_parallelism: Option<u64>,
    /// The least parallelism it may run at.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub sufficient_parallelism: u64,
    /// Its parallelism before (`null`: the change added the vertex).
    #[serde(default, deserialize_with = "lenient::count")]
    pub pre_rescale_parallelism: Option<u64>,
    /// Its parallelism after (`null`: the change removed or re-chained it).
    #[serde(default, deserialize_with = "lenient::count")]
    pub post_rescale_parallelism: Option<u64>,
}

/// An object of Flink's whose fields Sluice neither writes nor reads (it writes none of
/// them: [`JobRescaleDetails`]' `slots` and `schedulerStates` are empty).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct UnmodelledObject {}

/// `GET /jobs/:jobid/rescales/overview`: counts by terminal state and the latest of each.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RescalesOverview {
    /// How many rescales ended in each state.
    #[serde(default, deserialize_with = "lenient::object")]
    pub rescales_counts: RescalesCounts,
    /// The latest rescale of each terminal state.
    #[serde(default, deserialize_with = "lenient::object")]
    pub latest: LatestRescales,
}

/// The `rescalesCounts` of [`RescalesOverview`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RescalesCounts {
    /// Rescales the scheduler ignored (0 on Sluice).
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub ignored: u64,
    /// Rescales in progress (0 on Sluice: its history holds ended ones).
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub in_progress: u64,
    /// Rescales that completed.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub completed: u64,
    /// Rescales that failed.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub failed: u64,
}

/// The `latest` of [`RescalesOverview`]: each `null` when there is none.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct LatestRescales {
    /// The latest completed rescale.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub completed: Option<JobRescaleDetails>,
    /// The latest failed rescale.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub failed: Option<JobRescaleDetails>,
    /// The latest ignored rescale (always `null` on Sluice).
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub ignored: Option<JobRescaleDetails>,
}

/// One plan change as Sluice records it: `POST /jobs/:jobid/doctor/apply`'s answer and the
/// `sluice` of a [`JobRescaleDetails`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SluiceRescaleRecord {
    /// The change's id, 32 hex digits (Flink's `rescaleUuid`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub rescale_uuid: String,
    /// Sequence number of the change in the job, from 1.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub rescale_attempt_id: u64,
    /// What asked: `resource-requirements`, `doctor-apply` or `rollback`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub trigger: String,
    /// The change; for a rollback the change it undid (`null` when that is unknown).
    #[serde(default)]
    pub change: Option<RecordedChange>,
    /// The uuid of the change a rollback undid; else `null`.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub rollback_of: Option<String>,
    /// `COMPLETED` or `FAILED`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub state: String,
    /// Why it failed; `null` when it completed.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub failure: Option<String>,
    /// When the change started, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int_or_zero")]
    pub start_timestamp_in_millis: i64,
    /// When it ended, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int_or_zero")]
    pub end_timestamp_in_millis: i64,
    /// Milliseconds in which nothing was processed (the old plan's sinks' last record to the
    /// new plan's first source record); `null` when none came yet.
    #[serde(default, deserialize_with = "lenient::number")]
    pub pause_millis: Option<f64>,
    /// Milliseconds from the stop request to the new plan's first source record; `null` when
    /// none came yet.
    #[serde(default, deserialize_with = "lenient::number")]
    pub sources_paused_millis: Option<f64>,
    /// The aligned savepoint the new plan restored from; `null` when it failed.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub savepoint: Option<String>,
    /// Each vertex's parallelism before and after.
    #[serde(default, deserialize_with = "lenient::list")]
    pub vertices: Vec<VertexRescale>,
    /// The stream nodes before and after.
    #[serde(default, deserialize_with = "lenient::object")]
    pub plan: PlanBeforeAfter,
    /// The plan diff, one line per changed node (`~ [4] heavy-map  parallelism 1 -> 2 ...`).
    #[serde(default, deserialize_with = "lenient::list_of_text")]
    pub changes: Vec<String>,
}

/// A change as [`SluiceRescaleRecord`] holds it, tagged by `kind`: a plan change in machine
/// form (the ship strategy under Flink's REST name, `ship-strategy`) or the vertices' new
/// parallelism from `PUT /jobs/:jobid/resource-requirements`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(tag = "kind")]
pub enum RecordedChange {
    /// Run `operator` at `parallelism`, fed behind `ship-strategy`.
    #[serde(rename = "parallelism")]
    Parallelism {
        /// The operator's name.
        operator: String,
        /// Its new parallelism.
        parallelism: u64,
        /// The ship strategy of its input (`REBALANCE`, `HASH`, …).
        #[serde(rename = "ship-strategy")]
        ship_strategy: String,
    },
    /// Replace the keyed aggregation `operator` with a salted two-phase one.
    #[serde(rename = "two-phase")]
    TwoPhase {
        /// The operator's name.
        operator: String,
        /// How many salt buckets.
        buckets: u64,
    },
    /// Let the async operator keep `capacity` requests in flight.
    #[serde(rename = "async-io")]
    AsyncIo {
        /// The operator's name.
        operator: String,
        /// Requests in flight per subtask.
        capacity: u64,
    },
    /// Set a sink's connector option.
    #[serde(rename = "sink-option")]
    SinkOption {
        /// The sink's name.
        operator: String,
        /// The option's key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// Give a lookup join a cache of `max-rows` rows.
    #[serde(rename = "lookup-cache")]
    LookupCache {
        /// The lookup join's name.
        operator: String,
        /// Rows the cache keeps.
        #[serde(rename = "max-rows")]
        max_rows: u64,
    },
    /// New parallelism per vertex (`PUT /jobs/:jobid/resource-requirements`).
    #[serde(rename = "resource-requirements")]
    ResourceRequirements {
        /// The vertices whose parallelism changes.
        vertices: Vec<VertexParallelism>,
    },
}

/// One vertex of [`RecordedChange::ResourceRequirements`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexParallelism {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// Its new parallelism.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub parallelism: u64,
}

/// One vertex of [`SluiceRescaleRecord`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexRescale {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The vertex name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// Its parallelism before and after.
    #[serde(default, deserialize_with = "lenient::object")]
    pub parallelism: ParallelismBeforeAfter,
}

/// A vertex's parallelism before and after a change.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ParallelismBeforeAfter {
    /// `null`: the vertex did not exist before (the change added it).
    #[serde(default, deserialize_with = "lenient::count")]
    pub before: Option<u64>,
    /// `null`: the vertex does not exist after (the change removed or re-chained it).
    #[serde(default, deserialize_with = "lenient::count")]
    pub after: Option<u64>,
}

/// The `plan` of [`SluiceRescaleRecord`]: the stream nodes before and after, in id order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct PlanBeforeAfter {
    /// The stream nodes before the change.
    #[serde(default, deserialize_with = "lenient::list")]
    pub before: Vec<PlanNodeState>,
    /// The stream nodes after it.
    #[serde(default, deserialize_with = "lenient::list")]
    pub after: Vec<PlanNodeState>,
}

/// One stream node of a [`PlanBeforeAfter`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct PlanNodeState {
    /// The stream node id.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub id: u64,
    /// The operator's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// Its parallelism.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub parallelism: u64,
    /// Its inputs, in order.
    #[serde(default, deserialize_with = "lenient::list")]
    pub inputs: Vec<PlanNodeInput>,
    /// Its connector options (the last value of a key, as it takes effect), in order.
    #[serde(default)]
    #[schema(value_type = std::collections::HashMap<String, String>)]
    pub options: OrderedMap<String>,
}

/// One input of a [`PlanNodeState`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct PlanNodeInput {
    /// The input node's id.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub id: u64,
    /// The ship strategy of the edge (`FORWARD`, `HASH`, …).
    #[serde(default, deserialize_with = "lenient::text")]
    pub ship_strategy: String,
}
