//! Sluice's `/jobs/:jobid/doctor` (Flink answers 404): the doctor's diagnosis (also
//! `sluice doctor --json`'s output) and, on the server, the proposed change against the live
//! job graph.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;

/// The doctor's diagnosis of a job: `sluice doctor --json`'s output (`sluice_doctor::to_json`
/// writes it from the doctor's verdict).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct Diagnosis {
    /// One line: `key skew in sum-per-key (vertex "…", subtask 2/2)`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub verdict: String,
    /// Where the job is limited; `null` when nothing is busy.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub bottleneck: Option<DiagnosisBottleneck>,
    /// The cause's name (`key-skew`, `under-provisioned`, …).
    #[serde(default, deserialize_with = "lenient::text")]
    pub cause: String,
    /// The hot keys behind a key skew (empty for other causes).
    #[serde(rename = "hot-keys", default, deserialize_with = "lenient::list")]
    pub hot_keys: Vec<DiagnosisHotKey>,
    /// How sure the doctor is, 0..1 (two decimals).
    #[serde(default, deserialize_with = "lenient::number_or_zero")]
    pub confidence: f64,
    /// The observations the cause was read from, one line each.
    #[serde(default, deserialize_with = "lenient::list_of_text")]
    pub evidence: Vec<String>,
    /// What to change; `null` when there is nothing to change.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub fix: Option<DiagnosisFix>,
    /// What the fix should do to the job's figures, in prose.
    #[serde(
        rename = "expected-effect",
        default,
        deserialize_with = "lenient::text"
    )]
    pub expected_effect: String,
    /// What could not be determined from the data given.
    #[serde(default, deserialize_with = "lenient::list_of_text")]
    pub undetermined: Vec<String>,
    /// A partitioned source at its ceiling: its partitions and idle subtasks; else `null`.
    #[serde(
        rename = "source-splits",
        default,
        deserialize_with = "lenient::object_or_null"
    )]
    pub source_splits: Option<SourceSplits>,
    /// The sources' lag over the window when they report it; else `null`.
    #[serde(default, deserialize_with = "lenient::object_or_null")]
    pub lag: Option<SourceLag>,
}

/// The `bottleneck` of a [`Diagnosis`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DiagnosisBottleneck {
    /// The vertex's index in the job graph.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub vertex: u64,
    /// The vertex's name.
    #[serde(rename = "vertex-name", default, deserialize_with = "lenient::text")]
    pub vertex_name: String,
    /// The busiest operator of its chain, when known.
    #[serde(default, deserialize_with = "lenient::some_text")]
    pub operator: Option<String>,
    /// The busy subtasks (indexes from 0).
    #[serde(default)]
    pub subtasks: Vec<u64>,
}

/// One hot key of a [`Diagnosis`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DiagnosisHotKey {
    /// The key as text.
    #[serde(default, deserialize_with = "lenient::text")]
    pub key: String,
    /// Its share of the vertex's records, 0..1.
    #[serde(default, deserialize_with = "lenient::number_or_zero")]
    pub share: f64,
}

/// The `fix` of a [`Diagnosis`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DiagnosisFix {
    /// Why the change helps, in prose.
    #[serde(default, deserialize_with = "lenient::text")]
    pub description: String,
    /// The change in one line (a code change for advice).
    #[serde(default, deserialize_with = "lenient::text")]
    pub change: String,
    /// The change in machine form when the fix is a plan change; else `null` (advice only).
    #[serde(rename = "plan-change", default)]
    pub plan_change: Option<PlanChangeSpec>,
}

/// A plan change in machine form, tagged by `kind`: what the doctor proposes (its `fix`), what
/// an autopilot decision applied, and what `POST /jobs/:jobid/doctor/apply` reads.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(tag = "kind")]
pub enum PlanChangeSpec {
    /// Run `operator` at `parallelism`, fed behind `ship`.
    #[serde(rename = "parallelism")]
    Parallelism {
        /// The operator's name.
        operator: String,
        /// Its new parallelism.
        parallelism: u64,
        /// The ship strategy of its input (`REBALANCE`, `HASH`, …).
        ship: String,
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
        /// The option's key (`sink.buffer-flush.max-rows`, …).
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
}

/// The `source-splits` of a [`Diagnosis`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SourceSplits {
    /// The source's partitions (splits).
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub partitions: u64,
    /// Its subtasks that read no split.
    #[serde(rename = "idle-subtasks", default)]
    pub idle_subtasks: Vec<u64>,
}

/// The `lag` of a [`Diagnosis`]: the sources' pending records over the window.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SourceLag {
    /// Pending records at the window's start.
    #[serde(default, deserialize_with = "lenient::number_or_zero")]
    pub first: f64,
    /// Pending records at its end.
    #[serde(default, deserialize_with = "lenient::number_or_zero")]
    pub last: f64,
    /// How many samples reported it.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub samples: u64,
    /// Whether the lag grew over the window.
    #[serde(default, deserialize_with = "lenient::flag_or_false")]
    pub growing: bool,
    /// Whether the lag is near zero (the sources keep up).
    #[serde(
        rename = "near-zero",
        default,
        deserialize_with = "lenient::flag_or_false"
    )]
    pub near_zero: bool,
}

/// `GET /jobs/:jobid/doctor`: the [`Diagnosis`] and, after its fields, `plan-change`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DoctorAnswer {
    /// The diagnosis, its fields inline.
    #[serde(flatten)]
    pub diagnosis: Diagnosis,
    /// The proposed change against the live job graph, before and after; `null` when the
    /// doctor proposes none.
    #[serde(rename = "plan-change", default)]
    pub plan_change: Option<PlanChangeDiff>,
}

/// `GET /jobs/:jobid/doctor` before the job's first metrics sample: `{"status":
/// "no-metrics-yet"}`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DoctorStatus {
    /// `no-metrics-yet`.
    #[serde(default, deserialize_with = "lenient::text")]
    #[schema(pattern = "^no-metrics-yet$")]
    pub status: String,
}

impl DoctorStatus {
    /// The status before the first sample.
    pub const NO_METRICS_YET: &'static str = "no-metrics-yet";

    /// `{"status": "no-metrics-yet"}`.
    pub fn no_metrics_yet() -> DoctorStatus {
        DoctorStatus {
            status: Self::NO_METRICS_YET.to_string(),
        }
    }
}

/// The proposed change against the live job graph (`plan-change` of [`DoctorAnswer`]), tagged
/// by `kind`; `vertex`/`vertex-name` are the vertex running `operator` (`null` when the graph
/// has no such operator). `POST /jobs/:jobid/doctor/apply` accepts it as it is.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(tag = "kind")]
pub enum PlanChangeDiff {
    /// A new parallelism behind a ship strategy.
    #[serde(rename = "parallelism")]
    Parallelism {
        /// The operator's name.
        operator: String,
        /// Its vertex's id.
        vertex: Option<String>,
        /// Its vertex's name.
        #[serde(rename = "vertex-name")]
        vertex_name: Option<String>,
        /// Its parallelism now and proposed.
        parallelism: ParallelismDiff,
        /// The ship strategy of its input now (`null` for a source) and proposed.
        #[serde(rename = "ship-strategy")]
        ship_strategy: ShipStrategyDiff,
    },
    /// A salted two-phase aggregation in place of the keyed operator.
    #[serde(rename = "two-phase")]
    TwoPhase {
        /// The operator's name.
        operator: String,
        /// Its vertex's id.
        vertex: Option<String>,
        /// Its vertex's name.
        #[serde(rename = "vertex-name")]
        vertex_name: Option<String>,
        /// How many salt buckets.
        buckets: u64,
        /// The operators it adds.
        adds: Vec<String>,
        /// The operators it removes (the keyed operator).
        removes: Vec<String>,
    },
    /// A new capacity of an async operator.
    #[serde(rename = "async-io")]
    AsyncIo {
        /// The operator's name.
        operator: String,
        /// Its vertex's id.
        vertex: Option<String>,
        /// Its vertex's name.
        #[serde(rename = "vertex-name")]
        vertex_name: Option<String>,
        /// Requests in flight per subtask.
        capacity: u64,
    },
    /// A cache for a lookup join.
    #[serde(rename = "lookup-cache")]
    LookupCache {
        /// The operator's name.
        operator: String,
        /// Its vertex's id.
        vertex: Option<String>,
        /// Its vertex's name.
        #[serde(rename = "vertex-name")]
        vertex_name: Option<String>,
        /// Rows the cache keeps.
        #[serde(rename = "max-rows")]
        max_rows: u64,
    },
    /// A sink's connector option, its value now and proposed.
    #[serde(rename = "sink-option")]
    SinkOption {
        /// The sink's name.
        operator: String,
        /// Its vertex's id.
        vertex: Option<String>,
        /// Its vertex's name.
        #[serde(rename = "vertex-name")]
        vertex_name: Option<String>,
        /// The option's key.
        key: String,
        /// Its value now (`null` when unset).
        before: Option<String>,
        /// Its proposed value.
        after: String,
    },
}

/// The `parallelism` of a [`PlanChangeDiff::Parallelism`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ParallelismDiff {
    /// The parallelism now (`null` when the graph has no such operator).
    #[serde(default)]
    pub before: Option<u64>,
    /// The proposed parallelism.
    #[serde(default)]
    pub after: u64,
}

/// The `ship-strategy` of a [`PlanChangeDiff::Parallelism`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ShipStrategyDiff {
    /// The ship strategy of the input now (`null` for a source or an unknown operator).
    #[serde(default)]
    pub before: Option<String>,
    /// The proposed one.
    #[serde(default)]
    pub after: String,
}
