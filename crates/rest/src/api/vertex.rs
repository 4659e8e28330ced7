//! Vertex-level endpoints: `/jobs/:id/vertices/:vid` and its `subtasks/:n`, `subtasktimes`,
//! `taskmanagers`, `backpressure`, `accumulators`, `watermarks`, and Sluice's `hot-keys`.

use sluice_runtime::JobMonitor;
use sluice_runtime::{TaskMetrics, TaskState};

use super::cluster::{subtask_taskmanager, taskmanagers_of_vertex};
use super::io::{subtasks_io, Io};
use super::states::{duration, subtask_counts, subtask_span, subtask_times, TASKS_KEY_ORDER};
use super::{ok_shape, subtask_index, vertex_index, ApiResult, Ctx};
use crate::format::LongStats;
use crate::metrics::JobData;
use sluice_rest_api::lenient::Scalar;
use sluice_rest_api::{
    Aggregated, HotKey, HotKeys, MetricValue, StatsSummary, SubtaskBackPressure, SubtaskDetails,
    SubtaskTimes, SubtasksTimes, VertexAccumulators, VertexBackPressure, VertexDetails,
    VertexTaskManager, VertexTaskManagers,
};

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

fn subtask_shape(d: &JobData, vertex: usize, i: usize, now: i64) -> SubtaskDetails {
    let live = &d.monitor.subtasks[vertex][i];
    let tm = subtask_taskmanager(d.monitor, vertex, i);
    let (start, end) = subtask_times(live);
    let io = d.subtask(vertex, i).map(|s| Io::of(&s)).unwrap_or_default();
    SubtaskDetails {
        subtask: Some(i as u64),
        status: live.state().as_str().to_string(),
        attempt: Some(0),
        endpoint: Some(tm.endpoint),
        start_time: Some(start),
        end_time: Some(end),
        duration: Some(duration(start, end, now)),
        metrics: Some(io.shape()),
        taskmanager_id: Some(tm.id),
        status_duration: status_durations(d.monitor, live, now)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        start_time_again: Some(start),
    }
}

fn stats(values: &[i64]) -> StatsSummary {
    let s = LongStats::of(values);
    StatsSummary {
        p25: Some(s.p25),
        min: Some(s.min),
        avg: Some(s.avg),
        median: Some(s.median),
        max: Some(s.max),
        sum: Some(s.sum),
        p95: Some(s.p95),
        p75: Some(s.p75),
    }
}

/// Flink's `aggregated` block: IO metrics and state durations summarised over subtasks.
pub(super) fn aggregated(d: &JobData, vertex: usize, subtasks: &[usize], now: i64) -> Aggregated {
    let ios: Vec<Io> = subtasks
        .iter()
        .map(|&i| d.subtask(vertex, i).map(|s| Io::of(&s)).unwrap_or_default())
        .collect();
    let col = |f: fn(&Io) -> i64| stats(&ios.iter().map(f).collect::<Vec<_>>());
    let metrics = [
        ("write-records", col(|io| io.write_records)),
        ("accumulated-backpressured-time", col(|io| io.backpressured)),
        ("accumulated-idle-time", col(|io| io.idle)),
        ("write-bytes", col(|io| io.write_bytes)),
        ("read-bytes", col(|io| io.read_bytes)),
        ("read-records", col(|io| io.read_records)),
        ("accumulated-busy-time", col(|io| io.busy as i64)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let durations: Vec<[(&str, i64); 5]> = subtasks
        .iter()
        .filter_map(|&i| d.monitor.subtasks[vertex].get(i))
        .map(|t| status_durations(d.monitor, t, now))
        .collect();
    let status_duration = [
        "CREATED",
        "RUNNING",
        "INITIALIZING",
        "SCHEDULED",
        "DEPLOYING",
    ]
    .into_iter()
    .map(|key| {
        let vals: Vec<i64> = durations
            .iter()
            .map(|ds| ds.iter().find(|(k, _)| *k == key).map_or(0, |(_, v)| *v))
            .collect();
        (key.to_string(), stats(&vals))
    })
    .collect();
    Aggregated {
        metrics,
        status_duration,
    }
}

pub fn vertex(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    let v = &m.graph.vertices[vi];
    let all: Vec<usize> = (0..d.parallelism(vi)).collect();
    ok_shape(&VertexDetails {
        id: v.id.to_string(),
        name: v.name.clone(),
        parallelism: Some(v.parallelism as u64),
        max_parallelism: Some(u64::from(v.max_parallelism)),
        now: Some(ctx.now),
        subtasks: all
            .iter()
            .map(|&i| subtask_shape(&d, vi, i, ctx.now))
            .collect(),
        aggregated: Some(aggregated(&d, vi, &all, ctx.now)),
    })
}

pub fn subtask(ctx: &Ctx, jid: &str, vid: &str, idx: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let i = subtask_index(&m, vi, idx)?;
    let d = JobData::new(&m);
    ok_shape(&subtask_shape(&d, vi, i, ctx.now))
}

pub fn subtask_times_ep(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let v = &m.graph.vertices[vi];
    let subtasks = m.subtasks[vi]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (start, end) = subtask_times(t);
            let state = t.state();
            let timestamps = TASKS_KEY_ORDER
                .iter()
                .map(|&k| {
                    let v = match k {
                        "CREATED" => m.start_time_ms as i64,
                        "RUNNING" => start.max(0),
                        "FINISHED" | "CANCELED" | "FAILED" if state.as_str() == k => end.max(0),
                        _ => 0,
                    };
                    (k.to_string(), v)
                })
                .collect();
            SubtaskTimes {
                subtask: Some(i as u64),
                endpoint: subtask_taskmanager(&m, vi, i).endpoint,
                duration: Some(duration(start, end, ctx.now)),
                timestamps,
            }
        })
        .collect();
    ok_shape(&SubtasksTimes {
        id: v.id.to_string(),
        name: v.name.clone(),
        now: Some(ctx.now),
        subtasks,
    })
}

/// `/jobs/:id/vertices/:vid/taskmanagers`: one entry per TaskManager running subtasks of the
/// vertex (one process: its single in-process TaskManager; a job split over processes: each
/// process that runs some), summarising those subtasks.
pub fn vertex_taskmanagers(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let d = JobData::new(&m);
    let v = &m.graph.vertices[vi];
    let taskmanagers = taskmanagers_of_vertex(&m, vi)
        .into_iter()
        .map(|(tm, subtasks)| {
            let counts = subtask_counts(&m, vi, &subtasks);
            let (start, end, dur) = subtask_span(&m, vi, &subtasks, ctx.now);
            VertexTaskManager {
                endpoint: tm.endpoint,
                status: counts.aggregate_state(subtasks.len()).to_string(),
                start_time: Some(start),
                end_time: Some(end),
                duration: Some(dur),
                metrics: subtasks_io(&d, vi, &subtasks).shape(),
                status_counts: counts.map(),
                taskmanager_id: tm.id,
                aggregated: aggregated(&d, vi, &subtasks, ctx.now),
            }
        })
        .collect();
    ok_shape(&VertexTaskManagers {
        id: v.id.to_string(),
        name: v.name.clone(),
        now: Some(ctx.now),
        taskmanagers,
    })
}

/// The level of a backpressure ratio (docs/src/reference/flink-formats.md#backpressure-levels).
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
        return ok_shape(&VertexBackPressure {
            status: "deprecated".to_string(),
            ..VertexBackPressure::default()
        });
    };
    let d = JobData::new(&m);
    let mut max_ratio = 0.0f64;
    let mut subtasks = Vec::new();
    for i in 0..d.parallelism(vi) {
        let Some(s) = d.subtask(vi, i) else { continue };
        let (ratio, idle, busy) = s.ratios();
        max_ratio = max_ratio.max(ratio);
        let level = backpressure_level(ratio);
        subtasks.push(SubtaskBackPressure {
            subtask: Some(i as u64),
            backpressure_level: level.to_string(),
            ratio: Some(ratio),
            idle_ratio: Some(idle),
            busy_ratio: Some(busy),
            backpressure_level_legacy: level.to_string(),
        });
    }
    let level = backpressure_level(max_ratio);
    ok_shape(&VertexBackPressure {
        status: "ok".to_string(),
        backpressure_level: Some(level.to_string()),
        end_timestamp: Some(sampled_at.min(i64::MAX as u64) as i64),
        subtasks: Some(subtasks),
        backpressure_level_legacy: Some(level.to_string()),
    })
}

pub fn accumulators(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    ok_shape(&VertexAccumulators {
        id: m.graph.vertices[vi].id.to_string(),
        user_accumulators: Vec::new(),
    })
}

/// Sluice extension: `{"id", "records", "hot-keys": [{key, count, error, share-of-vertex, subtask,
/// share-of-subtask}]}`, hottest first.
pub fn hot_keys(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    let keys = sluice_runtime::hotkeys::vertex_hot_keys(m.subtasks[vi].iter());
    let records: u64 = m.subtasks[vi].iter().map(|t| t.records_in()).sum();
    // Counts are capped at `i64::MAX`, as Flink's Jackson writes longs.
    let long = |n: u64| Some(n.min(i64::MAX as u64));
    let hot_keys = keys
        .iter()
        .map(|k| HotKey {
            key: Some(Scalar::Str(k.key.clone())),
            count: long(k.count),
            error: long(k.error),
            share_of_vertex: Some(k.share_of_vertex),
            subtask: Some(k.subtask as u64),
            share_of_subtask: Some(k.share_of_subtask),
        })
        .collect();
    ok_shape(&HotKeys {
        id: m.graph.vertices[vi].id.to_string(),
        records: long(records),
        hot_keys,
    })
}

/// Flink's `JobVertexWatermarksHandler`: one `{"id": "<subtask>.currentInputWatermark",
/// "value": "<ms>"}` per subtask of a vertex with inputs, values as strings like every metric
/// value.
pub fn watermarks(ctx: &Ctx, jid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vi = vertex_index(&m, vid)?;
    if !m.graph.edges.iter().any(|e| e.to_vertex == vi) {
        // A source task has no input watermark: Flink answers an empty list.
        return ok_shape(&Vec::<MetricValue>::new());
    }
    let list: Vec<MetricValue> = m.subtasks[vi]
        .iter()
        .enumerate()
        .map(|(i, t)| MetricValue {
            id: format!("{i}.currentInputWatermark"),
            value: Some(Scalar::Str(t.input_watermark.get().to_string())),
        })
        .collect();
    ok_shape(&list)
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
