//! The Flink REST endpoints: JSON bodies built from a job's monitor and metric snapshots, with
//! Flink 2.3's keys, key order and value types.

use std::collections::BTreeSet;

use sluice_graph::plan::job_plan_json;
use sluice_graph::{JobMonitor, JobOutcome, Json};
use sluice_runtime::telemetry::data_skew_percent;
use sluice_runtime::{TaskMetrics, TaskState};
use sluice_types::Id128;

use crate::format::LongStats;
use crate::http::{shorten, Response};
use crate::metrics::{subtask_metric_names, JobData, Subtask};
use crate::registry::JobRegistry;

/// The Flink version whose REST API this server reproduces (reported as `flink-version`).
pub const FLINK_API_VERSION: &str = "2.3.0";
/// What `flink-commit` / `flink-revision` report: this engine and its version.
pub const REVISION: &str = concat!("sluice-", env!("CARGO_PKG_VERSION"));

/// A request that cannot be answered: status and the message of Flink's `{"errors":[...]}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
        }
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 404,
            message: message.into(),
        }
    }
    pub fn into_response(self) -> Response {
        Response::error(self.status, &self.message)
    }
}

pub type ApiResult = Result<Response, ApiError>;

pub fn ok(j: Json) -> ApiResult {
    Ok(Response::json(200, j.to_compact()))
}

pub fn now_ms() -> i64 {
    sluice_runtime::executor::epoch_ms() as i64
}

/// Execution states in Flink's `ExecutionState` declaration order.
const EXEC_STATES: [&str; 10] = [
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
];

/// Per-state counts in the key order Flink 2.3 serialises vertex `tasks` / `status-counts`.
const TASKS_KEY_ORDER: [&str; 10] = [
    "FINISHED",
    "CREATED",
    "FAILED",
    "INITIALIZING",
    "SCHEDULED",
    "DEPLOYING",
    "CANCELING",
    "RECONCILING",
    "RUNNING",
    "CANCELED",
];

/// `/jobs/overview` `tasks` key order (lower case).
const OVERVIEW_TASKS_ORDER: [&str; 10] = [
    "running",
    "canceling",
    "canceled",
    "created",
    "scheduled",
    "deploying",
    "reconciling",
    "finished",
    "initializing",
    "failed",
];

/// Job status key order of `/jobs/:id` `timestamps`.
const JOB_TIMESTAMP_ORDER: [&str; 11] = [
    "INITIALIZING",
    "RUNNING",
    "FAILED",
    "FINISHED",
    "FAILING",
    "CREATED",
    "SUSPENDED",
    "RESTARTING",
    "CANCELED",
    "RECONCILING",
    "CANCELLING",
];

#[derive(Clone, Copy, Default)]
struct StateCounts([usize; 10]);

impl StateCounts {
    fn add(&mut self, state: &str) {
        if let Some(i) = EXEC_STATES.iter().position(|s| *s == state) {
            self.0[i] += 1;
        }
    }
    fn get(&self, state: &str) -> usize {
        EXEC_STATES
            .iter()
            .position(|s| s.eq_ignore_ascii_case(state))
            .map_or(0, |i| self.0[i])
    }
    fn total(&self) -> usize {
        self.0.iter().sum()
    }
    fn merge(&mut self, o: &StateCounts) {
        for i in 0..10 {
            self.0[i] += o.0[i];
        }
    }
    fn json(&self) -> Json {
        let mut j = Json::obj();
        for k in TASKS_KEY_ORDER {
            j = j.with(k, self.get(k));
        }
        j
    }
    /// Flink's `ExecutionJobVertex.getAggregateJobVertexState`.
    fn aggregate_state(&self, parallelism: usize) -> &'static str {
        if self.get("FAILED") > 0 {
            "FAILED"
        } else if self.get("CANCELING") > 0 {
            "CANCELING"
        } else if self.get("CANCELED") > 0 {
            "CANCELED"
        } else if self.get("INITIALIZING") > 0 {
            "INITIALIZING"
        } else if self.get("RUNNING") > 0 {
            "RUNNING"
        } else if self.get("FINISHED") > 0 {
            if self.get("FINISHED") == parallelism {
                "FINISHED"
            } else {
                "RUNNING"
            }
        } else {
            "CREATED"
        }
    }
}

fn vertex_counts(m: &JobMonitor, vertex: usize) -> StateCounts {
    let mut c = StateCounts::default();
    for t in &m.subtasks[vertex] {
        c.add(t.state().as_str());
    }
    c
}

fn job_counts(m: &JobMonitor) -> StateCounts {
    let mut c = StateCounts::default();
    for v in 0..m.subtasks.len() {
        c.merge(&vertex_counts(m, v));
    }
    c
}

/// Flink job status: `CANCELLING` between a cancel request and the end of the job.
pub fn job_state(m: &JobMonitor) -> &'static str {
    match m.outcome() {
        JobOutcome::Running if m.control.is_cancelled() => "CANCELLING",
        o => o.status(),
    }
}

fn ms_or_minus_one(v: u64) -> i64 {
    if v == 0 {
        -1
    } else {
        v.min(i64::MAX as u64) as i64
    }
}

/// `(start, end)` of a subtask, −1 where not (yet) reached.
fn subtask_times(t: &TaskMetrics) -> (i64, i64) {
    use std::sync::atomic::Ordering::Relaxed;
    (
        ms_or_minus_one(t.started_ms.load(Relaxed)),
        ms_or_minus_one(t.ended_ms.load(Relaxed)),
    )
}

fn duration(start: i64, end: i64, now: i64) -> i64 {
    if start < 0 {
        -1
    } else if end >= 0 {
        (end - start).max(0)
    } else {
        (now - start).max(0)
    }
}

struct JobTimes {
    start: i64,
    end: i64,
    duration: i64,
}

fn job_times(m: &JobMonitor, now: i64) -> JobTimes {
    let start = m.start_time_ms as i64;
    let end = m.outcome().end_time_ms().map_or(-1, |e| e as i64);
    JobTimes {
        start,
        end,
        duration: duration(start, end, now),
    }
}

fn last_modification(m: &JobMonitor) -> i64 {
    let mut t = m.start_time_ms as i64;
    for v in &m.subtasks {
        for s in v {
            let (a, b) = subtask_times(s);
            t = t.max(a).max(b);
        }
    }
    if let Some(e) = m.outcome().end_time_ms() {
        t = t.max(e as i64);
    }
    t
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
const ENDPOINT: &str = "localhost:-1";

pub struct Ctx<'a> {
    pub registry: &'a JobRegistry,
    pub query: &'a [(String, String)],
    pub now: i64,
}

impl Ctx<'_> {
    /// All values of a query parameter, comma-split, trimmed, empty parts dropped, deduplicated.
    fn list_param(&self, key: &str) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        let mut seen = false;
        for (k, v) in self.query {
            if k == key {
                seen = true;
                for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    if !out.iter().any(|o| o == part) {
                        out.push(part.to_string());
                    }
                }
            }
        }
        (seen && !out.is_empty()).then_some(out)
    }

    fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn job(&self, raw: &str) -> Result<std::sync::Arc<JobMonitor>, ApiError> {
        let id = Id128::parse_hex(raw).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Bad request: '{}' is not a valid job id (expected 32 hex digits).",
                shorten(raw)
            ))
        })?;
        self.registry
            .get(id)
            .ok_or_else(|| ApiError::not_found(format!("Job {id} not found")))
    }
}

/// Resolves a vertex id of a job to its index.
pub fn vertex_index(m: &JobMonitor, raw: &str) -> Result<usize, ApiError> {
    let id = Id128::parse_hex(raw).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Bad request: '{}' is not a valid vertex id (expected 32 hex digits).",
            shorten(raw)
        ))
    })?;
    m.graph
        .vertices
        .iter()
        .position(|v| v.id == id)
        .ok_or_else(|| ApiError::not_found(format!("No vertex with ID '{id}' exists.")))
}

/// Resolves a subtask index of a vertex.
pub fn subtask_index(m: &JobMonitor, vertex: usize, raw: &str) -> Result<usize, ApiError> {
    let v = &m.graph.vertices[vertex];
    let i: usize = if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        raw.parse().map_err(|_| {
            ApiError::not_found(format!(
                "Invalid subtask index {} for vertex {} (parallelism {}).",
                shorten(raw),
                v.id,
                v.parallelism
            ))
        })?
    } else {
        return Err(ApiError::bad_request(format!(
            "Bad request: '{}' is not a valid subtask index (expected a non-negative integer).",
            shorten(raw)
        )));
    };
    if i >= m.subtasks[vertex].len() {
        return Err(ApiError::not_found(format!(
            "Invalid subtask index {i} for vertex {} (parallelism {}).",
            v.id, v.parallelism
        )));
    }
    Ok(i)
}

// ---------------------------------------------------------------------------------------------
// Cluster-level endpoints

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

// ---------------------------------------------------------------------------------------------
// Job-level endpoints

/// Flink's `IOMetricsInfo` of one subtask or a sum of them.
#[derive(Clone, Copy, Default)]
struct Io {
    read_bytes: i64,
    write_bytes: i64,
    read_records: i64,
    write_records: i64,
    backpressured: i64,
    idle: i64,
    busy: f64,
}

impl Io {
    fn of(s: &Subtask) -> Io {
        use std::sync::atomic::Ordering::Relaxed;
        let c = |v: u64| v.min(i64::MAX as u64) as i64;
        Io {
            read_bytes: c(s.live.bytes_in.load(Relaxed)),
            write_bytes: c(s.live.bytes_out.load(Relaxed)),
            read_records: c(s.live.records_in.load(Relaxed)),
            write_records: c(s.live.records_out.load(Relaxed)),
            backpressured: s.snap.accumulated_backpressured_ms.max(0.0) as i64,
            idle: s.snap.accumulated_idle_ms.max(0.0) as i64,
            busy: if s.snap.accumulated_busy_ms.is_finite() {
                s.snap.accumulated_busy_ms.floor()
            } else {
                0.0
            },
        }
    }
    fn add(&mut self, o: &Io) {
        self.read_bytes = self.read_bytes.saturating_add(o.read_bytes);
        self.write_bytes = self.write_bytes.saturating_add(o.write_bytes);
        self.read_records = self.read_records.saturating_add(o.read_records);
        self.write_records = self.write_records.saturating_add(o.write_records);
        self.backpressured = self.backpressured.saturating_add(o.backpressured);
        self.idle = self.idle.saturating_add(o.idle);
        self.busy += o.busy;
    }
    fn json(&self) -> Json {
        Json::obj()
            .with("read-bytes", self.read_bytes)
            .with("read-bytes-complete", true)
            .with("write-bytes", self.write_bytes)
            .with("write-bytes-complete", true)
            .with("read-records", self.read_records)
            .with("read-records-complete", true)
            .with("write-records", self.write_records)
            .with("write-records-complete", true)
            .with("accumulated-backpressured-time", self.backpressured)
            .with("accumulated-idle-time", self.idle)
            .with("accumulated-busy-time", self.busy)
    }
}

fn vertex_io(d: &JobData, vertex: usize) -> Io {
    let mut io = Io::default();
    for i in 0..d.parallelism(vertex) {
        if let Some(s) = d.subtask(vertex, i) {
            io.add(&Io::of(&s));
        }
    }
    io
}

fn vertex_times(m: &JobMonitor, vertex: usize, now: i64) -> (i64, i64, i64) {
    let times: Vec<(i64, i64)> = m.subtasks[vertex]
        .iter()
        .map(|t| subtask_times(t))
        .collect();
    let start = times
        .iter()
        .filter(|(s, _)| *s >= 0)
        .map(|(s, _)| *s)
        .min()
        .unwrap_or(-1);
    let end = if !times.is_empty() && times.iter().all(|(_, e)| *e >= 0) {
        times.iter().map(|(_, e)| *e).max().unwrap_or(-1)
    } else {
        -1
    };
    (start, end, duration(start, end, now))
}

fn plan_of(m: &JobMonitor) -> Json {
    job_plan_json(&m.graph, m.job_id)
        .get("plan")
        .cloned()
        .unwrap_or_else(Json::obj)
}

pub fn job(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let d = JobData::new(&m);
    let t = job_times(&m, ctx.now);
    let state = job_state(&m);
    let mut timestamps = Json::obj();
    for k in JOB_TIMESTAMP_ORDER {
        let v = match k {
            "INITIALIZING" | "CREATED" | "RUNNING" => t.start,
            k if k == state && t.end >= 0 => t.end,
            _ => 0,
        };
        timestamps = timestamps.with(k, v);
    }
    let slot_group = Id128::hash_of(format!("slot-sharing-group:default:{}", m.job_id).as_bytes());
    let mut all = StateCounts::default();
    let vertices: Vec<Json> = m
        .graph
        .vertices
        .iter()
        .map(|v| {
            let counts = vertex_counts(&m, v.index);
            all.merge(&counts);
            let (start, end, dur) = vertex_times(&m, v.index, ctx.now);
            Json::obj()
                .with("id", v.id.to_string())
                .with("slotSharingGroupId", slot_group.to_string())
                .with("name", v.name.as_str())
                .with("maxParallelism", v.max_parallelism)
                .with("parallelism", v.parallelism)
                .with("status", counts.aggregate_state(v.parallelism))
                .with("start-time", start)
                .with("end-time", end)
                .with("duration", dur)
                .with("tasks", counts.json())
                .with("metrics", vertex_io(&d, v.index).json())
        })
        .collect();
    ok(Json::obj()
        .with("jid", m.job_id.to_string())
        .with("application-id", m.job_id.to_string())
        .with("name", m.graph.name.as_str())
        .with("isStoppable", false)
        .with("state", state)
        .with("job-type", "STREAMING")
        .with("schedulerType", "Default")
        .with("start-time", t.start)
        .with("end-time", t.end)
        .with("duration", t.duration)
        .with("maxParallelism", -1i64)
        .with("now", ctx.now)
        .with("timestamps", timestamps)
        .with("vertices", vertices)
        .with("status-counts", all.json())
        .with("plan", plan_of(&m))
        .with("pending-operators", 0i64))
}

pub fn job_plan(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    ok(job_plan_json(&m.graph, m.job_id))
}

pub fn job_config(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let c = &m.config;
    let user = Json::obj()
        .with(
            "sluice.buffer-timeout-ms",
            c.buffer_timeout.as_millis().to_string(),
        )
        .with("sluice.buffer-bytes", c.buffer_bytes.to_string())
        .with(
            "sluice.buffers-per-channel",
            c.exclusive_credits.to_string(),
        )
        .with(
            "sluice.floating-buffers-per-gate",
            c.floating_credits.to_string(),
        )
        .with("sluice.operator-chaining", c.chaining.to_string())
        .with(
            "sluice.metrics.update-interval-ms",
            c.metrics.update_interval.as_millis().to_string(),
        )
        .with(
            "sluice.metrics.window-slots",
            c.metrics.window_slots.to_string(),
        );
    ok(Json::obj()
        .with("jid", m.job_id.to_string())
        .with("name", m.graph.name.as_str())
        .with(
            "execution-config",
            Json::obj()
                .with("restart-strategy", "Restart deactivated.")
                .with("job-parallelism", c.parallelism)
                .with("object-reuse-mode", true)
                .with("user-config", user),
        ))
}

/// `PATCH /jobs/:id`: cancels a running job (Flink answers 202 with `{}`).
pub fn cancel_job(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    match ctx.param("mode") {
        None | Some("") | Some("cancel") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Bad request: unsupported termination mode '{}' (only 'cancel').",
                shorten(other)
            )))
        }
    }
    if m.outcome() != JobOutcome::Running {
        return Err(ApiError {
            status: 409,
            message: format!(
                "Job cancellation failed: job {} is already {}.",
                m.job_id,
                job_state(&m)
            ),
        });
    }
    m.control.cancel_by_user();
    Ok(Response::json(202, "{}".into()))
}

// ---------------------------------------------------------------------------------------------
// Vertex-level endpoints

/// The 5 pre-terminal state durations of a subtask, in Flink 2.3's key order.
fn status_durations(m: &JobMonitor, t: &TaskMetrics, now: i64) -> [(&'static str, i64); 5] {
    let (start, end) = subtask_times(t);
    let created_at = m.start_time_ms as i64;
    let created = if start >= 0 {
        start - created_at
    } else {
        now - created_at
    };
    let running = if start < 0 {
        0
    } else if t.state() == TaskState::Running {
        now - start
    } else if end >= 0 {
        end - start
    } else {
        0
    };
    [
        ("CREATED", created.max(0)),
        ("INITIALIZING", 0),
        ("SCHEDULED", 0),
        ("DEPLOYING", 0),
        ("RUNNING", running.max(0)),
    ]
}

fn subtask_json(d: &JobData, vertex: usize, i: usize, now: i64) -> Json {
    let live = &d.monitor.subtasks[vertex][i];
    let (start, end) = subtask_times(live);
    let io = d.subtask(vertex, i).map(|s| Io::of(&s)).unwrap_or_default();
    let mut sd = Json::obj();
    for (k, v) in status_durations(d.monitor, live, now) {
        sd = sd.with(k, v);
    }
    Json::obj()
        .with("subtask", i)
        .with("status", live.state().as_str())
        .with("attempt", 0i64)
        .with("endpoint", ENDPOINT)
        .with("start-time", start)
        .with("end-time", end)
        .with("duration", duration(start, end, now))
        .with("metrics", io.json())
        .with("taskmanager-id", taskmanager_id())
        .with("status-duration", sd)
        .with("start_time", start)
}

fn stats_json(values: &[i64]) -> Json {
    let s = LongStats::of(values);
    Json::obj()
        .with("p25", s.p25)
        .with("min", s.min)
        .with("avg", s.avg)
        .with("median", s.median)
        .with("max", s.max)
        .with("sum", s.sum)
        .with("p95", s.p95)
        .with("p75", s.p75)
}

/// Flink's `aggregated` block: IO metrics and state durations summarised over subtasks.
fn aggregated_json(d: &JobData, vertex: usize, now: i64) -> Json {
    let n = d.parallelism(vertex);
    let ios: Vec<Io> = (0..n)
        .map(|i| d.subtask(vertex, i).map(|s| Io::of(&s)).unwrap_or_default())
        .collect();
    let col = |f: fn(&Io) -> i64| ios.iter().map(f).collect::<Vec<_>>();
    let metrics = Json::obj()
        .with("write-records", stats_json(&col(|io| io.write_records)))
        .with(
            "accumulated-backpressured-time",
            stats_json(&col(|io| io.backpressured)),
        )
        .with("accumulated-idle-time", stats_json(&col(|io| io.idle)))
        .with("write-bytes", stats_json(&col(|io| io.write_bytes)))
        .with("read-bytes", stats_json(&col(|io| io.read_bytes)))
        .with("read-records", stats_json(&col(|io| io.read_records)))
        .with(
            "accumulated-busy-time",
            stats_json(&col(|io| io.busy as i64)),
        );
    let durations: Vec<[(&str, i64); 5]> = d.monitor.subtasks[vertex]
        .iter()
        .map(|t| status_durations(d.monitor, t, now))
        .collect();
    let mut sd = Json::obj();
    for key in [
        "CREATED",
        "RUNNING",
        "INITIALIZING",
        "SCHEDULED",
        "DEPLOYING",
    ] {
        let vals: Vec<i64> = durations
            .iter()
            .map(|ds| ds.iter().find(|(k, _)| *k == key).map_or(0, |(_, v)| *v))
            .collect();
        sd = sd.with(key, stats_json(&vals));
    }
    Json::obj()
        .with("metrics", metrics)
        .with("status-duration", sd)
}

pub fn vertex(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    let v = &m.graph.vertices[vi];
    let subtasks: Vec<Json> = (0..d.parallelism(vi))
        .map(|i| subtask_json(&d, vi, i, ctx.now))
        .collect();
    ok(Json::obj()
        .with("id", v.id.to_string())
        .with("name", v.name.as_str())
        .with("parallelism", v.parallelism)
        .with("maxParallelism", v.max_parallelism)
        .with("now", ctx.now)
        .with("subtasks", subtasks)
        .with("aggregated", aggregated_json(&d, vi, ctx.now)))
}

pub fn subtask(ctx: &Ctx, jid: &str, vid: &str, idx: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let i = subtask_index(&m, vi, idx)?;
    let d = JobData::new(&m);
    ok(subtask_json(&d, vi, i, ctx.now))
}

pub fn subtask_times_ep(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let v = &m.graph.vertices[vi];
    let subtasks: Vec<Json> = m.subtasks[vi]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (start, end) = subtask_times(t);
            let state = t.state();
            let mut ts = Json::obj();
            for k in TASKS_KEY_ORDER {
                let v = match k {
                    "CREATED" => m.start_time_ms as i64,
                    "RUNNING" => start.max(0),
                    "FINISHED" | "CANCELED" | "FAILED" if state.as_str() == k => end.max(0),
                    _ => 0,
                };
                ts = ts.with(k, v);
            }
            Json::obj()
                .with("subtask", i)
                .with("endpoint", ENDPOINT)
                .with("duration", duration(start, end, ctx.now))
                .with("timestamps", ts)
        })
        .collect();
    ok(Json::obj()
        .with("id", v.id.to_string())
        .with("name", v.name.as_str())
        .with("now", ctx.now)
        .with("subtasks", subtasks))
}

/// `/jobs/:id/vertices/:vid/taskmanagers`: every subtask runs in this process's one
/// "task manager", so there is a single entry summarising all subtasks.
pub fn vertex_taskmanagers(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    let v = &m.graph.vertices[vi];
    let counts = vertex_counts(&m, vi);
    let (start, end, dur) = vertex_times(&m, vi, ctx.now);
    let tm = Json::obj()
        .with("endpoint", ENDPOINT)
        .with("status", counts.aggregate_state(v.parallelism))
        .with("start-time", start)
        .with("end-time", end)
        .with("duration", dur)
        .with("metrics", vertex_io(&d, vi).json())
        .with("status-counts", counts.json())
        .with("taskmanager-id", taskmanager_id())
        .with("aggregated", aggregated_json(&d, vi, ctx.now));
    ok(Json::obj()
        .with("id", v.id.to_string())
        .with("name", v.name.as_str())
        .with("now", ctx.now)
        .with("taskmanagers", vec![tm]))
}

/// Spec §5.2 level of a backpressure ratio.
pub fn backpressure_level(ratio: f64) -> &'static str {
    if ratio <= 0.10 {
        "ok"
    } else if ratio <= 0.5 {
        "low"
    } else {
        "high"
    }
}

pub fn backpressure(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let Some(sampled_at) = m.last_sample_ms() else {
        return ok(Json::obj().with("status", "deprecated"));
    };
    let d = JobData::new(&m);
    let mut max_ratio = 0.0f64;
    let mut subtasks = Vec::new();
    for i in 0..d.parallelism(vi) {
        let Some(s) = d.subtask(vi, i) else { continue };
        let (ratio, idle, busy) = s.ratios();
        max_ratio = max_ratio.max(ratio);
        let level = backpressure_level(ratio);
        subtasks.push(
            Json::obj()
                .with("subtask", i)
                .with("backpressureLevel", level)
                .with("ratio", ratio)
                .with("idleRatio", idle)
                .with("busyRatio", busy)
                .with("backpressure-level", level),
        );
    }
    let level = backpressure_level(max_ratio);
    ok(Json::obj()
        .with("status", "ok")
        .with("backpressureLevel", level)
        .with("end-timestamp", sampled_at.min(i64::MAX as u64) as i64)
        .with("subtasks", subtasks)
        .with("backpressure-level", level))
}

pub fn accumulators(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    ok(Json::obj()
        .with("id", m.graph.vertices[vi].id.to_string())
        .with("user-accumulators", Json::Arr(Vec::new())))
}

/// Sluice extension: `{"id", "records", "hot-keys": [{key, count, error, share-of-vertex, subtask,
/// share-of-subtask}]}`, hottest first.
pub fn hot_keys(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let keys = sluice_runtime::hotkeys::vertex_hot_keys(m.subtasks[vi].iter());
    let records: u64 = m.subtasks[vi].iter().map(|t| t.records_in()).sum();
    let list = keys
        .iter()
        .map(|k| {
            Json::obj()
                .with("key", k.key.as_str())
                .with("count", Json::Int(k.count.min(i64::MAX as u64) as i64))
                .with("error", Json::Int(k.error.min(i64::MAX as u64) as i64))
                .with("share-of-vertex", k.share_of_vertex)
                .with("subtask", k.subtask)
                .with("share-of-subtask", k.share_of_subtask)
        })
        .collect::<Vec<_>>();
    ok(Json::obj()
        .with("id", m.graph.vertices[vi].id.to_string())
        .with("records", Json::Int(records.min(i64::MAX as u64) as i64))
        .with("hot-keys", list))
}

/// Flink's `JobVertexWatermarksHandler`: one `{"id": "<subtask>.currentInputWatermark",
/// "value": "<ms>"}` per subtask of a vertex with inputs, values as strings like every metric
/// value.
pub fn watermarks(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    if !m.graph.edges.iter().any(|e| e.to_vertex == vi) {
        // A source task has no input watermark: Flink answers an empty list.
        return ok(Json::Arr(Vec::new()));
    }
    let list = m.subtasks[vi]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            Json::obj()
                .with("id", format!("{i}.currentInputWatermark"))
                .with("value", t.input_watermark.get().to_string())
        })
        .collect();
    ok(Json::Arr(list))
}

// ---------------------------------------------------------------------------------------------
// Metric endpoints

fn id_list(names: impl IntoIterator<Item = String>) -> Json {
    Json::Arr(
        names
            .into_iter()
            .map(|n| Json::obj().with("id", n))
            .collect(),
    )
}

fn not_found_metrics(requested: &[String]) -> ApiError {
    ApiError::not_found(format!(
        "Metric(s) not found: {}",
        shorten(&requested.join(", "))
    ))
}

/// `{id, value}` pairs for the requested names that exist; 404 when none does.
fn values_json(
    requested: &[String],
    lookup: impl Fn(&str) -> Option<crate::metrics::Value>,
) -> ApiResult {
    let found: Vec<Json> = requested
        .iter()
        .filter_map(|n| {
            lookup(n).map(|v| {
                Json::obj()
                    .with("id", n.as_str())
                    .with("value", v.to_flink_string())
            })
        })
        .collect();
    if found.is_empty() {
        return Err(not_found_metrics(requested));
    }
    ok(Json::Arr(found))
}

/// `/jobs/:id/vertices/:vid/metrics`: ids `<subtask>.<name>`.
pub fn vertex_metrics(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    match ctx.list_param("get") {
        None => {
            let names = subtask_metric_names(&m.graph, vi);
            let ids = (0..d.parallelism(vi))
                .flat_map(|i| names.iter().map(move |n| format!("{i}.{n}")))
                .collect::<Vec<_>>();
            ok(id_list(ids))
        }
        Some(req) => values_json(&req, |id| {
            let (idx, name) = id.split_once('.')?;
            if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            d.value(vi, idx.parse().ok()?, name)
        }),
    }
}

/// `/jobs/:id/vertices/:vid/subtasks/:n/metrics`.
pub fn subtask_metrics(ctx: &Ctx, jid: &str, vid: &str, idx: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let i = subtask_index(&m, vi, idx)?;
    let d = JobData::new(&m);
    match ctx.list_param("get") {
        None => ok(id_list(subtask_metric_names(&m.graph, vi))),
        Some(req) => values_json(&req, |name| d.value(vi, i, name)),
    }
}

/// Aggregations of `subtasks/metrics`, in Flink's output order.
pub const AGGREGATIONS: [&str; 5] = ["min", "max", "avg", "sum", "skew"];

fn parse_aggs(ctx: &Ctx) -> Result<[bool; 5], ApiError> {
    let Some(list) = ctx.list_param("agg") else {
        return Ok([true; 5]);
    };
    let mut on = [false; 5];
    for a in &list {
        let i = AGGREGATIONS
            .iter()
            .position(|x| x.eq_ignore_ascii_case(a))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Bad request: invalid aggregation '{}' (expected min, max, avg, sum or skew).",
                    shorten(a)
                ))
            })?;
        on[i] = true;
    }
    Ok(on)
}

/// Parses `subtasks=0,2-4` against a vertex's parallelism.
pub fn parse_subtask_filter(
    raw: &[String],
    parallelism: usize,
) -> Result<BTreeSet<usize>, ApiError> {
    let mut set = BTreeSet::new();
    let bad = |part: &str, why: &str| {
        ApiError::bad_request(format!(
            "Bad request: invalid subtasks '{}': {why}.",
            shorten(part)
        ))
    };
    let missing = |part: &str| {
        ApiError::not_found(format!(
            "Subtasks '{}' not found: the vertex has subtasks 0 to {}.",
            shorten(part),
            parallelism.saturating_sub(1)
        ))
    };
    // Syntax first (400), then existence (404).
    let num = |s: &str, part: &str| -> Result<Option<usize>, ApiError> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(part, "expected an index or a range like 2-4"));
        }
        Ok(s.parse::<usize>().ok())
    };
    for part in raw {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a, part)?, num(b, part)?),
            None => {
                let n = num(part, part)?;
                (n, n)
            }
        };
        let (Some(a), Some(b)) = (a, b) else {
            return Err(missing(part));
        };
        if a.max(b) >= parallelism {
            return Err(missing(part));
        }
        if a > b {
            return Err(bad(part, "the range is empty (start after end)"));
        }
        set.extend(a..=b);
    }
    Ok(set)
}

/// `/jobs/:id/vertices/:vid/subtasks/metrics`: names, or `?get=` aggregated over subtasks.
pub fn subtasks_metrics(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    let p = d.parallelism(vi);
    let aggs = parse_aggs(ctx)?;
    let subtasks: BTreeSet<usize> = match ctx.list_param("subtasks") {
        Some(raw) => parse_subtask_filter(&raw, p)?,
        None => (0..p).collect(),
    };
    let Some(req) = ctx.list_param("get") else {
        return ok(id_list(subtask_metric_names(&m.graph, vi)));
    };
    let known = subtask_metric_names(&m.graph, vi);
    let mut out = Vec::new();
    let mut any_known = false;
    for name in &req {
        if !known.iter().any(|k| k == name) {
            continue;
        }
        any_known = true;
        let values: Vec<f64> = subtasks
            .iter()
            .filter_map(|&i| d.value(vi, i, name).and_then(|v| v.as_number()))
            .collect();
        if values.is_empty() {
            continue;
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = values.iter().sum();
        let avg = sum / values.len() as f64;
        let skew = data_skew_percent(&values);
        let mut j = Json::obj().with("id", name.as_str());
        for (k, (on, v)) in AGGREGATIONS
            .iter()
            .zip(aggs.iter().zip([min, max, avg, sum, skew]))
        {
            if *on {
                j = j.with(k, v);
            }
        }
        out.push(j);
    }
    if !any_known {
        return Err(not_found_metrics(&req));
    }
    ok(Json::Arr(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_flinks_thresholds() {
        assert_eq!(backpressure_level(0.0), "ok");
        assert_eq!(backpressure_level(0.10), "ok");
        assert_eq!(backpressure_level(0.11), "low");
        assert_eq!(backpressure_level(0.5), "low");
        assert_eq!(backpressure_level(0.51), "high");
    }

    #[test]
    fn subtask_filters_parse_ranges_and_reject_nonsense() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let set = parse_subtask_filter(&v(&["0", "2-4"]), 5).unwrap();
        assert_eq!(set.into_iter().collect::<Vec<_>>(), vec![0, 2, 3, 4]);
        for bad in [&["x"][..], &["4-2"], &["-1"], &["1-"], &["1-2-3"], &["a-1"]] {
            let e = parse_subtask_filter(&v(bad), 5).unwrap_err();
            assert_eq!(e.status, 400, "{bad:?}");
        }
        for missing in [&["5"][..], &["0-9"], &["99999999999999999999999"]] {
            let e = parse_subtask_filter(&v(missing), 5).unwrap_err();
            assert_eq!(e.status, 404, "{missing:?}");
        }
    }
}
