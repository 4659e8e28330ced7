//! The rescale answers Sluice writes in Flink 2.3's shapes: `/jobs/:jobid/resource-requirements`
//! (also the body of its `PUT`) and `/jobs/:jobid/rescales/config`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;
use crate::OrderedMap;

/// `GET /jobs/:jobid/resource-requirements` and the body of its `PUT` (Flink's
/// `JobResourceRequirementsBody`): vertex id → its bounds, in the job's vertex order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(transparent)]
#[schema(value_type = std::collections::HashMap<String, VertexResourceRequirements>)]
pub struct JobResourceRequirements(pub OrderedMap<VertexResourceRequirements>);

/// One vertex of [`JobResourceRequirements`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct VertexResourceRequirements {
    /// The bounds of its parallelism.
    #[serde(default, deserialize_with = "lenient::object")]
    pub parallelism: ParallelismBounds,
}

/// The `parallelism` of [`VertexResourceRequirements`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ParallelismBounds {
    /// The least parallelism the vertex may run at.
    #[serde(rename = "lowerBound", default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub lower_bound: Option<u64>,
    /// The most (the parallelism the scheduler aims for).
    #[serde(rename = "upperBound", default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub upper_bound: Option<u64>,
}

/// `GET /jobs/:jobid/rescales/config` (Flink 2.3's rescale settings of the adaptive scheduler).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RescalesConfig {
    /// How many rescales the history keeps.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub rescale_history_max: u64,
    /// The scheduler's execution mode; `null` on Sluice, as in Flink's capture.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub scheduler_execution_mode: Option<String>,
    /// How long a submitted job waits for resources, ms.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub submission_resource_wait_timeout_in_millis: u64,
    /// How long resources must be stable before a submitted job starts, ms.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub submission_resource_stabilization_timeout_in_millis: u64,
    /// How long an idle slot is kept, ms.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub slot_idle_timeout_in_millis: u64,
    /// The pause after a rescale before the next, ms.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub executing_cooldown_timeout_in_millis: u64,
    /// How long new resources must be stable before a running job rescales, ms.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub executing_resource_stabilization_timeout_in_millis: u64,
    /// The longest a due rescale is delayed, ms.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub maximum_delay_for_triggering_rescale_in_millis: u64,
    /// Failed checkpoints after which a pending rescale is forced.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub rescale_on_failed_checkpoint_count: u64,
}
