//! Sluice's `GET`/`PUT /jobs/:jobid/autopilot` (Flink answers 404): the decision log an
//! autopilot reports to, one decision at a time.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::doctor::PlanChangeSpec;
use crate::lenient;

/// `GET /jobs/:jobid/autopilot`: the decisions reported, oldest first, and how many older ones
/// the server dropped. The server keeps each decision as it was reported (`D`: its JSON as
/// sent); what an autopilot reports is an [`AutopilotDecision`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct AutopilotLog<D = AutopilotDecision> {
    /// The decisions kept, oldest first.
    #[serde(default = "Vec::new")]
    pub decisions: Vec<D>,
    /// How many older decisions were dropped.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub dropped: u64,
}

/// The answer of `PUT /jobs/:jobid/autopilot`: the id of the decision stored.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DecisionAccepted {
    /// The decision's id.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub id: u64,
}

/// One decision of the autopilot (`sluice_autopilot::Decision::to_json`), the body of
/// `PUT /jobs/:jobid/autopilot` (which needs `id`, `outcome` and `change-text`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct AutopilotDecision {
    /// 1, 2, … in the order decisions were taken.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    #[schema(minimum = 1)]
    pub id: u64,
    /// When the diagnosis that led to it was complete, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub time: u64,
    /// When its outcome settled, ms since the epoch; `null` while it is open.
    #[serde(rename = "decided-time", default, deserialize_with = "lenient::count")]
    pub decided_time: Option<u64>,
    /// The doctor's cause name (`under-provisioned`, `key-skew`, …).
    #[serde(default, deserialize_with = "lenient::text")]
    pub cause: String,
    /// The doctor's verdict line.
    #[serde(default, deserialize_with = "lenient::text")]
    pub verdict: String,
    /// The change in machine form when the fix is a plan change; else `null`.
    #[serde(default)]
    pub change: Option<PlanChangeSpec>,
    /// The fix in one line (a code change for advice).
    #[serde(rename = "change-text", default, deserialize_with = "lenient::text")]
    pub change_text: String,
    /// The doctor's evidence for the diagnosis.
    #[serde(default, deserialize_with = "lenient::list_of_text")]
    pub evidence: Vec<String>,
    /// The job measured before the change; `null` when not measured.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub before: Option<DecisionMeasurement>,
    /// The job re-measured once the change settled; `null` until judged.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub after: Option<DecisionMeasurement>,
    /// The relative gains once re-measured (`0.5` = +50 %); else `null`.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub gain: Option<DecisionGain>,
    /// `applied`, `kept`, `rolled-back`, `skipped`, `failed` or `advised`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub outcome: String,
    /// Why it was rolled back, skipped or failed; else `null`.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub reason: Option<String>,
    /// What the executor reported (plan diff, time to reach a new parallelism, …).
    #[serde(default, deserialize_with = "lenient::list_of_text")]
    pub notes: Vec<String>,
}

/// A job measured for a decision ([`AutopilotDecision`]'s `before` and `after`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DecisionMeasurement {
    /// The bottleneck vertex's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub bottleneck: String,
    /// Its parallelism.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub parallelism: u64,
    /// Records per second it processed (one decimal).
    #[serde(
        rename = "bottleneck-rate",
        default,
        deserialize_with = "lenient::number_or_zero"
    )]
    pub bottleneck_rate: f64,
    /// Records per second the job delivered (one decimal).
    #[serde(default, deserialize_with = "lenient::number_or_zero")]
    pub throughput: f64,
    /// Its subtasks doing a share of its work.
    #[serde(
        rename = "working-subtasks",
        default,
        deserialize_with = "lenient::count_or_zero"
    )]
    pub working_subtasks: u64,
}

/// The `gain` of an [`AutopilotDecision`], relative (three decimals).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DecisionGain {
    /// The bottleneck's rate.
    #[serde(
        rename = "bottleneck-rate",
        default,
        deserialize_with = "lenient::number_or_zero"
    )]
    pub bottleneck_rate: f64,
    /// The job's throughput.
    #[serde(default, deserialize_with = "lenient::number_or_zero")]
    pub throughput: f64,
}
