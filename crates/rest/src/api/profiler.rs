//! Profiling endpoints: a vertex's flame graph (`/jobs/:id/vertices/:vid/flamegraph`) and the
//! task manager's thread dump (`/taskmanagers/:tm/thread-dump`), in Flink 2.3's shapes. The
//! sampling itself is the runtime's (`sluice_runtime::profiler`); a request never waits for a
//! run (the first one answers `endTimestamp: -3` as Flink does), except the thread dump's
//! 200 ms glance at the running threads' stacks, on a handler thread.

use sluice_plan::Json;
use sluice_runtime::profiler::{self, FlameGraphAnswer, FlameGraphType, FlameNode};

use super::{ok, subtask_index, vertex_index, ApiError, ApiResult, Ctx};
use crate::http::shorten;

/// Flink's `endTimestamp` sentinels.
const TERMINATED: i64 = -1;
const WAITING_FOR_SAMPLES: i64 = -3;

/// The `type` values, as Flink's `FlameGraphTypeQueryParameter` takes them (any case).
pub const FLAME_GRAPH_TYPES: [&str; 3] = ["full", "on_cpu", "off_cpu"];

/// A flame graph node as Flink's JSON: `name`, `value`, `children`.
pub fn node_json(n: &FlameNode) -> Json {
    Json::obj()
        .with("name", n.name.as_str())
        .with("value", n.value as i64)
        .with(
            "children",
            n.children.iter().map(node_json).collect::<Vec<Json>>(),
        )
}

/// `GET /jobs/:jobid/vertices/:vertexid/flamegraph?type=&subtaskindex=`.
pub fn flame_graph(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let v = vertex_index(&m, vid)?;
    let ty = match ctx.param("type") {
        None => FlameGraphType::Full,
        Some(t) => FlameGraphType::parse(t).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Bad request: unknown flame graph type '{}' (expected one of full, on_cpu, off_cpu).",
                shorten(t)
            ))
        })?,
    };
    let subtask = match ctx.param("subtaskindex") {
        None => None,
        Some(raw) => Some(subtask_index(&m, v, raw)?),
    };
    let body = match m.flame_graph(v) {
        FlameGraphAnswer::Pending => Json::obj().with("endTimestamp", WAITING_FOR_SAMPLES),
        FlameGraphAnswer::Terminated => Json::obj().with("endTimestamp", TERMINATED),
        FlameGraphAnswer::Ready(p) => Json::obj()
            .with("endTimestamp", p.end_timestamp_ms)
            .with("data", node_json(&p.tree(ty, subtask))),
    };
    ok(body)
}

/// `GET /taskmanagers/:taskmanagerid/thread-dump`: every thread of the process.
pub fn thread_dump(ctx: &Ctx, tmid: &str) -> ApiResult {
    if let Some(p) = super::cluster::remote_taskmanager(ctx, tmid) {
        // Another process of a split job: it dumps its own threads, asked over the link.
        let dump = ctx
            .registry
            .jobs()
            .iter()
            .find_map(|m| m.remote_thread_dump(p));
        return match dump {
            Some(threads) => ok(Json::obj().with(
                "threadInfos",
                threads
                    .into_iter()
                    .map(|(name, text)| {
                        Json::obj()
                            .with("threadName", name)
                            .with("stringifiedThreadInfo", text)
                    })
                    .collect::<Vec<Json>>(),
            )),
            None => Err(ApiError {
                status: 503,
                message: format!(
                    "TaskManager {} (process {p} of the job) did not answer within {} s.",
                    shorten(tmid),
                    sluice_runtime::job_master::inspect::THREAD_DUMP_WAIT.as_secs()
                ),
            }),
        };
    }
    if !super::cluster::is_local_taskmanager(ctx, tmid) {
        return Err(ApiError::not_found(format!(
            "Could not find TaskManager {}.",
            shorten(tmid)
        )));
    }
    let mut tasks = Vec::new();
    for m in ctx.registry.jobs() {
        for v in 0..m.graph.vertices.len() {
            tasks.extend(m.profiled_threads(v));
        }
    }
    let depth = profiler::ProfilerConfig::default().stack_depth;
    let infos: Vec<Json> = profiler::thread_dump(&tasks, depth)
        .into_iter()
        .map(|t| {
            Json::obj()
                .with("threadName", t.thread_name)
                .with("stringifiedThreadInfo", t.stringified)
        })
        .collect();
    ok(Json::obj().with("threadInfos", infos))
}
