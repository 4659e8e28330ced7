//! Cluster-level endpoints: `/config`, `/overview`, `/jobs`, `/jobs/overview`, `/taskmanagers`,
//! and the identity of the process's single in-process "task manager".

use sluice_runtime::{JobMonitor, JobOutcome};
use sluice_types::Id128;

use sluice_rest_api::{
    ClusterOverview, DashboardConfig, DashboardFeatures, HardwareDescription, JobIdWithStatus,
    JobIdsWithStatus, JobOverview, JobsOverview, OrderedMap, ResourceProfile, TaskCounts,
    TaskManagerInfo, TaskManagersInfo,
};

use super::states::{job_counts, job_state, job_times, last_modification};
use super::{ok_shape, ApiResult, Ctx, FLINK_API_VERSION, REVISION};
use crate::registry::JobRegistry;

pub fn config() -> ApiResult {
    ok_shape(&DashboardConfig {
        refresh_interval: Some(3000),
        timezone_name: "Coordinated Universal Time".to_string(),
        timezone_offset: Some(0),
        flink_version: FLINK_API_VERSION.to_string(),
        flink_revision: REVISION.to_string(),
        features: DashboardFeatures {
            web_submit: Some(false),
            web_cancel: Some(true),
            web_rescale: Some(false),
            web_history: Some(false),
        },
    })
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
    let count = |s: &str| jobs.iter().filter(|m| job_state(m) == s).count() as u64;
    let running = jobs
        .iter()
        .filter(|m| m.outcome() == JobOutcome::Running)
        .count();
    ok_shape(&ClusterOverview {
        taskmanagers: taskmanager_count(ctx) as u64,
        slots_total: slots_in_use(ctx.registry) as u64,
        slots_available: 0,
        jobs_running: running as u64,
        jobs_finished: count("FINISHED"),
        jobs_cancelled: count("CANCELED"),
        jobs_failed: count("FAILED"),
        flink_version: FLINK_API_VERSION.to_string(),
        flink_commit: REVISION.to_string(),
    })
}

pub fn jobs(ctx: &Ctx) -> ApiResult {
    let jobs = ctx
        .registry
        .jobs()
        .iter()
        .map(|m| JobIdWithStatus {
            id: m.job_id.to_string(),
            status: job_state(m).to_string(),
        })
        .collect();
    ok_shape(&JobIdsWithStatus { jobs })
}

pub fn jobs_overview(ctx: &Ctx) -> ApiResult {
    let jobs = ctx
        .registry
        .jobs()
        .iter()
        .rev()
        .map(|m| job_overview(m, ctx.now))
        .collect();
    ok_shape(&JobsOverview { jobs: Some(jobs) })
}

/// One job as `/jobs/overview` lists it (and `/applications/:id` under `jobs`).
pub(super) fn job_overview(m: &JobMonitor, now: i64) -> JobOverview {
    let t = job_times(m, now);
    let counts = job_counts(m);
    let n = |state: &str| counts.get(state) as u64;
    JobOverview {
        jid: m.job_id.to_string(),
        name: m.graph.name.clone(),
        job_type: Some("STREAMING".to_string()),
        scheduler_type: Some("Default".to_string()),
        start_time: Some(t.start),
        end_time: Some(t.end),
        duration: Some(t.duration),
        state: job_state(m).to_string(),
        last_modification: Some(last_modification(m)),
        tasks: TaskCounts {
            running: n("running"),
            canceling: n("canceling"),
            canceled: n("canceled"),
            total: counts.total() as u64,
            created: n("created"),
            scheduled: n("scheduled"),
            deploying: n("deploying"),
            reconciling: n("reconciling"),
            finished: n("finished"),
            initializing: n("initializing"),
            failed: n("failed"),
        },
        pending_operators: Some(0),
    }
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
    let resource = |cpu: f64| ResourceProfile {
        cpu_cores: Some(cpu),
        task_heap_memory: Some(0),
        task_off_heap_memory: Some(0),
        managed_memory: Some(0),
        network_memory: Some(0),
        extended_resources: OrderedMap::default(),
    };
    let memory: OrderedMap<i64> = [
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
    ]
    .into_iter()
    .map(|k| (k.to_string(), 0))
    .collect();
    let taskmanagers = taskmanager_rows(ctx)
        .into_iter()
        .map(|r| TaskManagerInfo {
            id: r.id,
            path: r.path,
            data_port: Some(r.data_port),
            jmx_port: Some(-1),
            time_since_last_heartbeat: Some(r.heartbeat_ms),
            slots_number: Some(r.slots as i64),
            free_slots: Some(0),
            assigned_tasks: Some(r.assigned as i64),
            total_resource: resource(r.cores as f64),
            free_resource: resource(0.0),
            hardware: HardwareDescription {
                cpu_cores: Some(r.cores),
                physical_memory: Some(r.physical_memory),
                free_memory: Some(r.free_memory),
                managed_memory: Some(0),
            },
            memory_configuration: memory.clone(),
        })
        .collect();
    ok_shape(&TaskManagersInfo { taskmanagers })
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
