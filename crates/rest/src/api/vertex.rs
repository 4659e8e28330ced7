//! Vertex-level endpoints: `/jobs/:id/vertices/:vid` and its `subtasks/:n`, `subtasktimes`,
//! `taskmanagers`, `backpressure`, `accumulators`, `watermarks`, and Sluice's `hot-keys`.

use sluice_plan::Json;
use sluice_runtime::JobMonitor;
use sluice_runtime::{TaskMetrics, TaskState};

use super::cluster::{subtask_taskmanager, taskmanagers_of_vertex};
use super::io::{subtasks_io, Io};
use super::states::{duration, subtask_counts, subtask_span, subtask_times, TASKS_KEY_ORDER};
use super::{ok, subtask_index, vertex_index, ApiResult, Ctx};
use crate::format::LongStats;
use crate::metrics::JobData;

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
    let tm = subtask_taskmanager(d.monitor, vertex, i);
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
        .with("endpoint", tm.endpoint)
        .with("start-time", start)
        .with("end-time", end)
        .with("duration", duration(start, end, now))
        .with("metrics", io.json())
        .with("taskmanager-id", tm.id)
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
fn aggregated_json(d: &JobData, vertex: usize, subtasks: &[usize], now: i64) -> Json {
    let ios: Vec<Io> = subtasks
        .iter()
        .map(|&i| d.subtask(vertex, i).map(|s| Io::of(&s)).unwrap_or_default())
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
    let durations: Vec<[(&str, i64); 5]> = subtasks
        .iter()
        .filter_map(|&i| d.monitor.subtasks[vertex].get(i))
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
        .with(
            "aggregated",
            aggregated_json(&d, vi, &(0..d.parallelism(vi)).collect::<Vec<_>>(), ctx.now),
        ))
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
                .with("endpoint", subtask_taskmanager(&m, vi, i).endpoint)
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

/// `/jobs/:id/vertices/:vid/taskmanagers`: one entry per TaskManager running subtasks of the
/// vertex (one process: its single in-process TaskManager; a job split over processes: each
/// process that runs some), summarising those subtasks.
pub fn vertex_taskmanagers(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    let v = &m.graph.vertices[vi];
    let tms: Vec<Json> = taskmanagers_of_vertex(&m, vi)
        .into_iter()
        .map(|(tm, subtasks)| {
            let counts = subtask_counts(&m, vi, &subtasks);
            let (start, end, dur) = subtask_span(&m, vi, &subtasks, ctx.now);
            Json::obj()
                .with("endpoint", tm.endpoint)
                .with("status", counts.aggregate_state(subtasks.len()))
                .with("start-time", start)
                .with("end-time", end)
                .with("duration", dur)
                .with("metrics", subtasks_io(&d, vi, &subtasks).json())
                .with("status-counts", counts.json())
                .with("taskmanager-id", tm.id)
                .with("aggregated", aggregated_json(&d, vi, &subtasks, ctx.now))
        })
        .collect();
    ok(Json::obj()
        .with("id", v.id.to_string())
        .with("name", v.name.as_str())
        .with("now", ctx.now)
        .with("taskmanagers", tms))
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
}
