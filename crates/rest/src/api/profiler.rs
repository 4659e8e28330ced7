//! Profiling endpoints: a vertex's flame graph (`/jobs/:id/vertices/:vid/flamegraph`) and the
//! task manager's thread dump (`/taskmanagers/:tm/thread-dump`), in Flink 2.3's shapes. The
//! sampling itself is the runtime's (`sluice_runtime::profiler`); a request never waits for a
//! run (the first one answers `endTimestamp: -3` as Flink does), except the thread dump's
//! 200 ms glance at the running threads' stacks, on a handler thread.

use sluice_runtime::profiler::{self, FlameGraphAnswer, FlameGraphType, FlameNode};

use sluice_rest_api::{FlameGraph, FlameGraphNode, ThreadDump, ThreadInfo};

use super::{ok_shape, subtask_index, vertex_index, ApiError, ApiResult, Ctx};
use crate::http::shorten;

/// Flink's `endTimestamp` sentinels.
const TERMINATED: i64 = -1;
const WAITING_FOR_SAMPLES: i64 = -3;

/// The `type` values, as Flink's `FlameGraphTypeQueryParameter` takes them (any case).
pub const FLAME_GRAPH_TYPES: [&str; 3] = ["full", "on_cpu", "off_cpu"];

/// A flame graph node in Flink's shape: `name`, `value`, `children`.
pub fn node_shape(n: &FlameNode) -> FlameGraphNode {
    FlameGraphNode {
        name: n.name.clone(),
        value: Some(n.value as i64),
        children: n.children.iter().map(node_shape).collect(),
    }
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
    let only = |at: i64| FlameGraph {
        end_timestamp: Some(at),
        data: None,
    };
    let body = match m.flame_graph(v) {
        FlameGraphAnswer::Pending => only(WAITING_FOR_SAMPLES),
        FlameGraphAnswer::Terminated => only(TERMINATED),
        FlameGraphAnswer::Ready(p) => FlameGraph {
            end_timestamp: Some(p.end_timestamp_ms),
            data: Some(node_shape(&p.tree(ty, subtask))),
        },
    };
    ok_shape(&body)
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
            Some(threads) => ok_shape(&ThreadDump {
                thread_infos: threads
                    .into_iter()
                    .map(|(thread_name, stringified_thread_info)| ThreadInfo {
                        thread_name,
                        stringified_thread_info,
                    })
                    .collect(),
            }),
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
    let thread_infos = profiler::thread_dump(&tasks, depth)
        .into_iter()
        .map(|t| ThreadInfo {
            thread_name: t.thread_name,
            stringified_thread_info: t.stringified,
        })
        .collect();
    ok_shape(&ThreadDump { thread_infos })
}
