//! Cluster-level endpoints: `/config`, `/overview`, `/jobs`, `/jobs/overview`, `/taskmanagers`,
//! and the identity of the process's single in-process "task manager".

use sluice_plan::Json;
use sluice_runtime::{JobMonitor, JobOutcome};
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
        .with("taskmanagers", taskmanager_count(ctx))
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

/// A TaskManager as the REST API names it: its id and Flink's `endpoint` (`host:dataPort`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TaskManagerRef {
    pub id: String,
    pub endpoint: String,
}

/// The TaskManager subtask `i` of vertex `v` runs on: a process of a split job, or this
/// process's single in-process one.
pub(super) fn subtask_taskmanager(m: &JobMonitor, v: usize, i: usize) -> TaskManagerRef {
    match m.cluster().and_then(|c| c.taskmanager_of(v, i)) {
        Some(tm) => TaskManagerRef {
            id: tm.id.clone(),
            endpoint: tm.endpoint(),
        },
        None => TaskManagerRef {
            id: taskmanager_id(),
            endpoint: ENDPOINT.to_string(),
        },
    }
}

/// The TaskManagers running subtasks of vertex `v`, in process order, each with its subtasks.
pub(super) fn taskmanagers_of_vertex(
    m: &JobMonitor,
    v: usize,
) -> Vec<(TaskManagerRef, Vec<usize>)> {
    let mut out: Vec<(TaskManagerRef, Vec<usize>)> = Vec::new();
    for i in 0..m.subtasks.get(v).map_or(0, Vec::len) {
        let tm = subtask_taskmanager(m, v, i);
        match out.iter_mut().find(|(t, _)| *t == tm) {
            Some((_, subs)) => subs.push(i),
            None => out.push((tm, vec![i])),
        }
    }
    out
}

/// One TaskManager of `/taskmanagers`.
struct TaskManagerRow {
    id: String,
    path: String,
    data_port: i64,
    /// Flink's `timeSinceLastHeartbeat` (despite its name, the time of the last heartbeat,
    /// ms since the Unix epoch).
    heartbeat_ms: i64,
    slots: usize,
    assigned: usize,
    cores: i64,
    physical_memory: i64,
    free_memory: i64,
}

/// Every TaskManager: this process's, and each other process of a split job (with what it
/// last reported of itself).
fn taskmanager_rows(ctx: &Ctx) -> Vec<TaskManagerRow> {
    let jobs = ctx.registry.jobs();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as i64;
    // Flink's shape, no extension keys: the process index is in the path
    // (`sluice://host:port/taskmanager_<process>`); a remote process that has not reported
    // yet has heartbeat 0 and hardware -1.
    let local = |id: String, path: String, data_port: i64| TaskManagerRow {
        id,
        path,
        data_port,
        heartbeat_ms: ctx.now,
        slots: 0,
        assigned: 0,
        cores,
        physical_memory: meminfo_bytes("MemTotal:"),
        free_memory: meminfo_bytes("MemAvailable:"),
    };
    let mut rows: Vec<TaskManagerRow> = Vec::new();
    let mut in_process = false;
    for m in &jobs {
        let running = m.outcome() == JobOutcome::Running;
        let Some(c) = m.cluster() else {
            in_process = true;
            continue;
        };
        let layout = c.layout();
        for (p, tm) in layout.taskmanagers.iter().enumerate() {
            if !rows.iter().any(|r| r.id == tm.id) {
                let path = format!("sluice://{}/taskmanager_{p}", tm.endpoint());
                let mut row = local(tm.id.clone(), path, i64::from(tm.data_port));
                if p != layout.process {
                    let heard = c.heard_from(p);
                    let stats = heard.as_ref().map(|h| h.stats.clone()).unwrap_or_default();
                    row.heartbeat_ms = heard.as_ref().map_or(0, |h| h.at_ms as i64);
                    row.cores = heard.as_ref().map_or(-1, |_| i64::from(stats.cpu_cores));
                    row.physical_memory = heard.as_ref().map_or(-1, |_| stats.physical_memory);
                    row.free_memory = heard.as_ref().map_or(-1, |_| stats.free_memory);
                }
                rows.push(row);
            }
            let Some(row) = rows.iter_mut().find(|r| r.id == tm.id) else {
                continue;
            };
            if running {
                // Slot sharing: a slot per subtask index of the widest vertex on it.
                row.slots += layout
                    .process_of
                    .iter()
                    .map(|v| v.iter().filter(|&&q| q == p).count())
                    .max()
                    .unwrap_or(0);
            }
            for (v, subs) in layout.process_of.iter().enumerate() {
                for (i, &q) in subs.iter().enumerate() {
                    let state = m.subtasks[v][i].state().as_str();
                    if q == p && matches!(state, "RUNNING" | "CREATED" | "CANCELING") {
                        row.assigned += 1;
                    }
                }
            }
        }
    }
    if in_process || rows.is_empty() {
        let mut row = local(
            taskmanager_id(),
            format!("sluice://{}/taskmanager_0", std::process::id()),
            -1,
        );
        for m in jobs.iter().filter(|m| m.cluster().is_none()) {
            if m.outcome() == JobOutcome::Running {
                row.slots += m
                    .graph
                    .vertices
                    .iter()
                    .map(|v| v.parallelism)
                    .max()
                    .unwrap_or(0);
            }
            let c = job_counts(m);
            row.assigned += c.get("RUNNING") + c.get("CREATED") + c.get("CANCELING");
        }
        rows.insert(0, row);
    }
    rows
}

fn meminfo_bytes(key: &str) -> i64 {
    sluice_runtime::telemetry::cluster::meminfo_bytes(key)
}

pub fn taskmanagers(ctx: &Ctx) -> ApiResult {
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
    let tms: Vec<Json> = taskmanager_rows(ctx)
        .into_iter()
        .map(|r| {
            Json::obj()
                .with("id", r.id)
                .with("path", r.path)
                .with("dataPort", r.data_port)
                .with("jmxPort", -1i64)
                .with("timeSinceLastHeartbeat", r.heartbeat_ms)
                .with("slotsNumber", r.slots)
                .with("freeSlots", 0i64)
                .with("assignedTasks", r.assigned)
                .with("totalResource", resource(r.cores as f64))
                .with("freeResource", resource(0.0))
                .with(
                    "hardware",
                    Json::obj()
                        .with("cpuCores", r.cores)
                        .with("physicalMemory", r.physical_memory)
                        .with("freeMemory", r.free_memory)
                        .with("managedMemory", 0i64),
                )
                .with("memoryConfiguration", memory.clone())
        })
        .collect();
    ok(Json::obj().with("taskmanagers", tms))
}

/// Whether `tmid` names this process's own TaskManager (the one whose threads a thread
/// dump here can show).
pub(super) fn is_local_taskmanager(ctx: &Ctx, tmid: &str) -> bool {
    tmid == taskmanager_id()
        || ctx.registry.jobs().iter().any(|m| {
            m.cluster().is_some_and(|c| {
                c.layout()
                    .taskmanagers
                    .get(c.layout().process)
                    .is_some_and(|tm| tm.id == tmid)
            })
        })
}

/// The process of a split job's TaskManager `tmid` when it is another process's.
pub(super) fn remote_taskmanager(ctx: &Ctx, tmid: &str) -> Option<usize> {
    ctx.registry.jobs().iter().find_map(|m| {
        let c = m.cluster()?;
        let p = c
            .layout()
            .taskmanagers
            .iter()
            .position(|tm| tm.id == tmid)?;
        (p != c.layout().process).then_some(p)
    })
}

/// The number of TaskManagers `/taskmanagers` lists.
pub(super) fn taskmanager_count(ctx: &Ctx) -> usize {
    taskmanager_rows(ctx).len()
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
