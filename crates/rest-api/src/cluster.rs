//! The cluster-level answers: `/overview`, `/jobs`, `/jobs/overview`, `/taskmanagers`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient::{self, Scalar};
use crate::OrderedMap;

/// `GET /overview`: task managers, slots and job counts by state (Flink's `ClusterOverview`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct ClusterOverview {
    /// Number of task managers.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub taskmanagers: u64,
    /// Task slots in the cluster (Sluice: subtasks running, it has no fixed slots).
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub slots_total: u64,
    /// Free task slots.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub slots_available: u64,
    /// Jobs running.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub jobs_running: u64,
    /// Jobs finished.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub jobs_finished: u64,
    /// Jobs cancelled.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub jobs_cancelled: u64,
    /// Jobs failed.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub jobs_failed: u64,
    /// Flink version (Sluice: the API version it reproduces).
    #[serde(default, deserialize_with = "lenient::text")]
    pub flink_version: String,
    /// Flink's commit; Sluice's server names itself `sluice-<version>` here.
    #[serde(default, deserialize_with = "lenient::text")]
    pub flink_commit: String,
}

/// `GET /jobs`: ids and states of all jobs.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobIdsWithStatus {
    /// One entry per job.
    #[serde(default, deserialize_with = "lenient::list")]
    pub jobs: Vec<JobIdWithStatus>,
}

/// One job of [`JobIdsWithStatus`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobIdWithStatus {
    /// The job id (32 hex digits).
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The job's state (`RUNNING`, `FINISHED`, …).
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: String,
}

/// `GET /jobs/overview`: one summary per job.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobsOverview {
    /// The jobs; `None` when the answer has no `jobs` list (not a Flink answer).
    #[serde(default, deserialize_with = "lenient::some_list")]
    pub jobs: Option<Vec<JobOverview>>,
}

/// One job of [`JobsOverview`] (Flink's `JobDetails` of the overview).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct JobOverview {
    /// The job id (32 hex digits).
    #[serde(default, deserialize_with = "lenient::text")]
    pub jid: String,
    /// The job's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// `STREAMING` or `BATCH`.
    #[serde(rename = "jobType", default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    pub job_type: Option<String>,
    /// The scheduler (`Default`, `Adaptive`).
    #[serde(
        rename = "schedulerType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(deserialize_with = "lenient::some_text")]
    pub scheduler_type: Option<String>,
    /// Start, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub start_time: Option<i64>,
    /// End, ms since the epoch (-1 while running).
    #[serde(default, deserialize_with = "lenient::int")]
    pub end_time: Option<i64>,
    /// Run time so far, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    pub duration: Option<i64>,
    /// The job's state.
    #[serde(default, deserialize_with = "lenient::text")]
    pub state: String,
    /// Time of the last state change, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub last_modification: Option<i64>,
    /// Subtask counts by state (lower-case state names, and `total`).
    #[serde(default, deserialize_with = "lenient::object")]
    pub tasks: TaskCounts,
    /// Operators not yet scheduled (Flink 2.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::count")]
    pub pending_operators: Option<u64>,
}

/// Subtask counts by state, in Flink's key order (`total` after `canceled`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct TaskCounts {
    /// RUNNING subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub running: u64,
    /// CANCELING subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub canceling: u64,
    /// CANCELED subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub canceled: u64,
    /// All subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub total: u64,
    /// CREATED subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub created: u64,
    /// SCHEDULED subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub scheduled: u64,
    /// DEPLOYING subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub deploying: u64,
    /// RECONCILING subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub reconciling: u64,
    /// FINISHED subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub finished: u64,
    /// INITIALIZING subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub initializing: u64,
    /// FAILED subtasks.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub failed: u64,
}

/// `GET /config`: the settings Flink's web dashboard starts from.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DashboardConfig {
    /// How often the dashboard refreshes, ms.
    #[serde(
        rename = "refresh-interval",
        default,
        deserialize_with = "lenient::int"
    )]
    #[schema(nullable = false)]
    pub refresh_interval: Option<i64>,
    /// The server's time zone.
    #[serde(rename = "timezone-name", default, deserialize_with = "lenient::text")]
    pub timezone_name: String,
    /// Its offset from UTC, ms.
    #[serde(rename = "timezone-offset", default, deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub timezone_offset: Option<i64>,
    /// The Flink version the API follows.
    #[serde(rename = "flink-version", default, deserialize_with = "lenient::text")]
    pub flink_version: String,
    /// The build's revision.
    #[serde(rename = "flink-revision", default, deserialize_with = "lenient::text")]
    pub flink_revision: String,
    /// Which dashboard features the server supports.
    #[serde(default, deserialize_with = "lenient::object")]
    pub features: DashboardFeatures,
}

/// The `features` of [`DashboardConfig`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct DashboardFeatures {
    /// Jobs can be submitted from the dashboard.
    #[serde(rename = "web-submit", default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub web_submit: Option<bool>,
    /// Jobs can be cancelled from the dashboard.
    #[serde(rename = "web-cancel", default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub web_cancel: Option<bool>,
    /// Jobs can be rescaled from the dashboard.
    #[serde(rename = "web-rescale", default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub web_rescale: Option<bool>,
    /// The history server is available.
    #[serde(rename = "web-history", default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub web_history: Option<bool>,
}

/// `GET /taskmanagers` (Flink's `TaskManagersInfo`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct TaskManagersInfo {
    /// One entry per task manager.
    #[serde(default, deserialize_with = "lenient::list")]
    pub taskmanagers: Vec<TaskManagerInfo>,
}

/// One task manager of [`TaskManagersInfo`], in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct TaskManagerInfo {
    /// Its id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// Its RPC address.
    #[serde(default, deserialize_with = "lenient::text")]
    pub path: String,
    /// Its data port.
    #[serde(rename = "dataPort", default, deserialize_with = "lenient::int")]
    pub data_port: Option<i64>,
    /// Its JMX port (`-1`: none).
    #[serde(rename = "jmxPort", default, deserialize_with = "lenient::int")]
    pub jmx_port: Option<i64>,
    /// Despite its name, when its last heartbeat came, ms since the epoch.
    #[serde(
        rename = "timeSinceLastHeartbeat",
        default,
        deserialize_with = "lenient::int"
    )]
    pub time_since_last_heartbeat: Option<i64>,
    /// How many slots it has.
    #[serde(rename = "slotsNumber", default, deserialize_with = "lenient::int")]
    pub slots_number: Option<i64>,
    /// How many are free.
    #[serde(rename = "freeSlots", default, deserialize_with = "lenient::int")]
    pub free_slots: Option<i64>,
    /// How many tasks it runs.
    #[serde(rename = "assignedTasks", default, deserialize_with = "lenient::int")]
    pub assigned_tasks: Option<i64>,
    /// Its resources.
    #[serde(
        rename = "totalResource",
        default,
        deserialize_with = "lenient::object"
    )]
    pub total_resource: ResourceProfile,
    /// Its resources not in use.
    #[serde(rename = "freeResource", default, deserialize_with = "lenient::object")]
    pub free_resource: ResourceProfile,
    /// The machine it runs on.
    #[serde(default, deserialize_with = "lenient::object")]
    pub hardware: HardwareDescription,
    /// Its memory settings, bytes, in Flink's key order.
    #[serde(
        rename = "memoryConfiguration",
        default,
        deserialize_with = "lenient::object"
    )]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub memory_configuration: OrderedMap<i64>,
}

/// A task manager's resources (Flink's `ResourceProfileInfo`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ResourceProfile {
    /// CPU cores (a JSON number with a fraction).
    #[serde(rename = "cpuCores", default, deserialize_with = "lenient::number")]
    pub cpu_cores: Option<f64>,
    /// Task heap memory, bytes.
    #[serde(rename = "taskHeapMemory", default, deserialize_with = "lenient::int")]
    pub task_heap_memory: Option<i64>,
    /// Task off-heap memory, bytes.
    #[serde(
        rename = "taskOffHeapMemory",
        default,
        deserialize_with = "lenient::int"
    )]
    pub task_off_heap_memory: Option<i64>,
    /// Managed memory, bytes.
    #[serde(rename = "managedMemory", default, deserialize_with = "lenient::int")]
    pub managed_memory: Option<i64>,
    /// Network memory, bytes.
    #[serde(rename = "networkMemory", default, deserialize_with = "lenient::int")]
    pub network_memory: Option<i64>,
    /// Extended resources (GPUs, …) by name.
    #[serde(
        rename = "extendedResources",
        default,
        deserialize_with = "lenient::object"
    )]
    #[schema(value_type = Object)]
    pub extended_resources: OrderedMap<Scalar>,
}

/// The machine a task manager runs on (Flink's `HardwareDescription`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct HardwareDescription {
    /// CPU cores.
    #[serde(rename = "cpuCores", default, deserialize_with = "lenient::int")]
    pub cpu_cores: Option<i64>,
    /// Physical memory, bytes.
    #[serde(rename = "physicalMemory", default, deserialize_with = "lenient::int")]
    pub physical_memory: Option<i64>,
    /// Free memory, bytes.
    #[serde(rename = "freeMemory", default, deserialize_with = "lenient::int")]
    pub free_memory: Option<i64>,
    /// Managed memory, bytes.
    #[serde(rename = "managedMemory", default, deserialize_with = "lenient::int")]
    pub managed_memory: Option<i64>,
}
