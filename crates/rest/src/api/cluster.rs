//! Cluster-level endpoints: `/config`, `/overview`, `/jobs`, `/jobs/overview`, `/taskmanagers`,
//! and the identity of the process's single in-process "task manager".

use sluice_plan::Json;
use sluice_runtime::JobOutcome;
use sluice_types::Id128;

use super::states::{job_counts, job_state, job_times, last_modification, OVERVIEW_TASKS_ORDER};
use super::{ok, ApiResult, Ctx, FLINK_API_VERSION, REVISION};
use crate::registry::JobRegistry;

pub fn config() -> ApiResult {
    ok(Json::obj()
        .with("refresh-interval", 3000i64)
        .with("timezone-name", "Coordinated Universal Time")
        .with("timezone-offset", 0i64)
        .with("flink-version", FLINK_API_VERSION)
        .with("flink-revision", REVISION)
        .with(
            "features",
            Json::obj()
                .with("web-submit", false)
                .with("web-cancel", true)
                .with("web-rescale", false)
                .with("web-history", false),
        ))
}

/// Slots: one per subtask index of the widest vertex of each unfinished job (Flink's default
/// slot sharing puts one subtask of every vertex in a slot).
fn slots_in_use(reg: &JobRegistry) -> usize {
    reg.jobs()
        .iter()
        .filter(|m| m.outcome() == JobOutcome::Running)
        .map(|m| {
            m.graph
                .vertices
                .iter()
                .map(|v| v.parallelism)
                .max()
                .unwrap_or(0)
        })
        .sum()
}

pub fn overview(ctx: &Ctx) -> ApiResult {
    let jobs = ctx.registry.jobs();
    let count = |s: &str| jobs.iter().filter(|m| job_state(m) == s).count();
    let running = jobs
        .iter()
        .filter(|m| m.outcome() == JobOutcome::Running)
        .count();
    let slots = slots_in_use(ctx.registry);
    ok(Json::obj()
        .with("taskmanagers", 1i64)
        .with("slots-total", slots)
        .with("slots-available", 0i64)
        .with("jobs-running", running)
        .with("jobs-finished", count("FINISHED"))
        .with("jobs-cancelled", count("CANCELED"))
        .with("jobs-failed", count("FAILED"))
        .with("flink-version", FLINK_API_VERSION)
        .with("flink-commit", REVISION))
}

pub fn jobs(ctx: &Ctx) -> ApiResult {
    let list: Vec<Json> = ctx
        .registry
        .jobs()
        .iter()
        .map(|m| {
            Json::obj()
                .with("id", m.job_id.to_string())
                .with("status", job_state(m))
        })
        .collect();
    ok(Json::obj().with("jobs", list))
}

pub fn jobs_overview(ctx: &Ctx) -> ApiResult {
    let list: Vec<Json> = ctx
        .registry
        .jobs()
        .iter()
        .rev()
        .map(|m| {
            let t = job_times(m, ctx.now);
            let counts = job_counts(m);
            let mut tasks = Json::obj();
            for k in OVERVIEW_TASKS_ORDER {
                tasks = tasks.with(k, counts.get(k));
                if k == "canceled" {
                    tasks = tasks.with("total", counts.total());
                }
            }
            Json::obj()
                .with("jid", m.job_id.to_string())
                .with("name", m.graph.name.as_str())
                .with("jobType", "STREAMING")
                .with("schedulerType", "Default")
                .with("start-time", t.start)
                .with("end-time", t.end)
                .with("duration", t.duration)
                .with("state", job_state(m))
                .with("last-modification", last_modification(m))
                .with("tasks", tasks)
                .with("pending-operators", 0i64)
        })
        .collect();
    ok(Json::obj().with("jobs", list))
}

fn meminfo_bytes(key: &str) -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map_or(-1, |kb| kb.saturating_mul(1024))
}

pub fn taskmanagers(ctx: &Ctx) -> ApiResult {
    let jobs = ctx.registry.jobs();
    let slots = slots_in_use(ctx.registry);
    let assigned: usize = jobs
        .iter()
        .map(|m| {
            let c = job_counts(m);
            c.get("RUNNING") + c.get("CREATED") + c.get("CANCELING")
        })
        .sum();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let resource = |cpu: f64| {
        Json::obj()
            .with("cpuCores", cpu)
            .with("taskHeapMemory", 0i64)
            .with("taskOffHeapMemory", 0i64)
            .with("managedMemory", 0i64)
            .with("networkMemory", 0i64)
            .with("extendedResources", Json::obj())
    };
    let mut memory = Json::obj();
    for k in [
        "frameworkHeap",
        "taskHeap",
        "frameworkOffHeap",
        "taskOffHeap",
        "networkMemory",
        "managedMemory",
        "jvmMetaspace",
        "jvmOverhead",
        "totalFlinkMemory",
        "totalProcessMemory",
    ] {
        memory = memory.with(k, 0i64);
    }
    let tm = Json::obj()
        .with("id", taskmanager_id())
        .with(
            "path",
            format!("sluice://{}/taskmanager_0", std::process::id()),
        )
        .with("dataPort", -1i64)
        .with("jmxPort", -1i64)
        .with("timeSinceLastHeartbeat", ctx.now)
        .with("slotsNumber", slots)
        .with("freeSlots", 0i64)
        .with("assignedTasks", assigned)
        .with("totalResource", resource(cores as f64))
        .with("freeResource", resource(0.0))
        .with(
            "hardware",
            Json::obj()
                .with("cpuCores", cores)
                .with("physicalMemory", meminfo_bytes("MemTotal:"))
                .with("freeMemory", meminfo_bytes("MemAvailable:"))
                .with("managedMemory", 0i64),
        )
        .with("memoryConfiguration", memory);
    ok(Json::obj().with("taskmanagers", vec![tm]))
}

/// The id of this process's single in-process "task manager": UUID-shaped, stable per process.
pub fn taskmanager_id() -> String {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let h = Id128::hash_of(
            format!(
                "sluice-taskmanager:{}:{}",
                std::process::id(),
                sluice_runtime::executor::epoch_ms()
            )
            .as_bytes(),
        )
        .to_string();
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    })
    .clone()
}

/// Flink's `endpoint` of a subtask: host and data port; an in-process run has no data port,
/// which Flink's local MiniCluster also reports as `-1`.
pub(super) const ENDPOINT: &str = "localhost:-1";
