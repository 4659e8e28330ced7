//! `GET /jobs/:jobid/explain-analyze` (Sluice extension): `EXPLAIN ANALYZE` of a running SQL
//! job. The job hands its plan over as plain data (its job graph's
//! [`QueryPlan`](sluice_plan::QueryPlan): each node of `EXPLAIN`'s optimized physical plan
//! with the stream-graph node its operator became), so this server, which knows no SQL, joins
//! each plan node with the figures it already keeps:
//!
//! - busy / backpressured / idle ms per second: the latest sample of the vertex running the
//!   operator (mean over its subtasks), and the operator's own sampled time;
//! - records in and out: the operator's own counters where the chain counts them (records in
//!   at every operator; records out as its chained successor's records in), else the vertex's
//!   `numRecordsIn` / `numRecordsOut` (said by the `*-scope` fields);
//! - state size: the vertex's bytes in the latest completed checkpoint, on its head operator
//!   (the keyed operator of a keyed vertex, the source of a source vertex);
//! - hot keys: the vertex's hot-key records, on its head operator.
//!
//! A job not planned from SQL answers 404 with the reason.

use sluice_plan::{JobGraph, QueryPlan};
use sluice_rest_api::{ExplainAnalyze, ExplainAnalyzeNode, OperatorFigures, PlanHotKey};
use sluice_runtime::telemetry::VertexSnapshot;
use sluice_runtime::JobMonitor;

use crate::api::{ok_shape, ApiError, ApiResult, Ctx};

/// Hot keys shown per plan node.
const HOT_KEYS_SHOWN: usize = 3;

/// `GET /jobs/:jobid/explain-analyze`.
pub fn explain_analyze(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let Some(plan) = &m.graph.query_plan else {
        return Err(ApiError::not_found(format!(
            "Job {} was not planned from SQL: it has no query plan to EXPLAIN ANALYZE.",
            m.job_id
        )));
    };
    ok_shape(&analyze(&m, plan))
}

/// The plan's nodes joined with the job's figures, and their text.
pub fn analyze(m: &JobMonitor, plan: &QueryPlan) -> ExplainAnalyze {
    let snaps = m.vertex_metrics();
    let state = latest_state(m);
    let g = &m.graph;
    let nodes = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let at = n.node.and_then(|id| {
                let v = g.vertices.iter().position(|v| v.nodes.contains(&id))?;
                Some((id, v))
            });
            let operator = at
                .and_then(|(id, _)| g.nodes.get(&id))
                .map(|r| r.name.clone());
            ExplainAnalyzeNode {
                id: i as u64,
                depth: n.depth as u64,
                line: n.line.clone(),
                description: n.text.clone(),
                uid: n.uid.clone(),
                operator,
                vertex_id: at.map(|(_, v)| g.vertices[v].id.to_string()),
                vertex_name: at.map(|(_, v)| g.vertices[v].name.clone()),
                parallelism: at.map(|(_, v)| g.vertices[v].parallelism as u64),
                note: n.note.clone(),
                figures: at.map(|(id, v)| figures(m, &snaps, &state, id, v)),
            }
        })
        .collect();
    let mut answer = ExplainAnalyze {
        jid: m.job_id.to_string(),
        name: g.name.clone(),
        sample_time: m.last_sample_ms().map(|t| t as i64),
        nodes,
        text: String::new(),
    };
    answer.text = answer.render();
    answer
}

/// The state bytes of each vertex in the latest completed checkpoint, and its id.
fn latest_state(m: &JobMonitor) -> Option<(u64, Vec<u64>)> {
    let r = m.control.checkpoints()?.stats().latest_completed?;
    let mut bytes = vec![0u64; m.graph.vertices.len()];
    for a in &r.acks {
        if let Some(b) = bytes.get_mut(a.vertex) {
            *b += a.state_bytes as u64;
        }
    }
    Some((r.id, bytes))
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Records operator `name` received, summed over the vertex's subtasks; `None` when no
/// subtask counts it (operator timing off).
fn operator_records_in(m: &JobMonitor, vertex: usize, name: &str) -> Option<u64> {
    let mut found = false;
    let mut sum = 0u64;
    for t in m.subtasks.get(vertex).into_iter().flatten() {
        let ops = t.operators.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = ops.iter().find(|o| o.name == name) {
            found = true;
            sum += o.records_in.load(std::sync::atomic::Ordering::Relaxed);
        }
    }
    found.then_some(sum)
}

fn name_of(g: &JobGraph, id: u32) -> &str {
    g.nodes.get(&id).map_or("", |r| r.name.as_str())
}

fn figures(
    m: &JobMonitor,
    snaps: &[VertexSnapshot],
    state: &Option<(u64, Vec<u64>)>,
    id: u32,
    v: usize,
) -> OperatorFigures {
    let g = &m.graph;
    let name = name_of(g, id);
    let subs = m.subtasks.get(v).map(Vec::as_slice).unwrap_or_default();
    let vertex_in: u64 = subs.iter().map(|t| t.records_in()).sum();
    let vertex_out: u64 = subs.iter().map(|t| t.records_out()).sum();
    let (records_in, in_scope) = match operator_records_in(m, v, name) {
        Some(n) => (n, "operator"),
        None => (vertex_in, "vertex"),
    };
    // A chained successor receives every record the operator emits.
    let successor = g
        .chained
        .iter()
        .find(|(a, _)| *a == id)
        .and_then(|(_, b)| operator_records_in(m, v, name_of(g, *b)));
    let (records_out, out_scope) = match successor {
        Some(n) => (n, "operator"),
        None => (vertex_out, "vertex"),
    };
    let snap = snaps.iter().find(|s| s.index == v);
    let subtasks = snap.map(|s| s.subtasks.as_slice()).unwrap_or_default();
    let head = g.vertices.get(v).is_some_and(|x| x.head == id);
    OperatorFigures {
        busy: mean(subtasks.iter().map(|s| s.busy_ms_per_second)),
        backpressured: mean(subtasks.iter().map(|s| s.backpressured_ms_per_second)),
        idle: mean(subtasks.iter().map(|s| s.idle_ms_per_second)),
        operator_busy: mean(
            subtasks
                .iter()
                .filter_map(|s| s.operators.iter().find(|o| o.name == name))
                .map(|o| o.busy_ms_per_second),
        ),
        records_in,
        records_in_scope: in_scope.into(),
        records_out,
        records_out_scope: out_scope.into(),
        vertex_records_in: vertex_in,
        vertex_records_out: vertex_out,
        state_size: state
            .as_ref()
            .filter(|_| head)
            .and_then(|(_, b)| b.get(v).copied()),
        state_checkpoint: state.as_ref().filter(|_| head).map(|(id, _)| *id),
        hot_keys: if head {
            sluice_runtime::hotkeys::vertex_hot_keys(subs.iter())
                .into_iter()
                .take(HOT_KEYS_SHOWN)
                .map(|k| PlanHotKey {
                    key: k.key,
                    share_of_vertex: k.share_of_vertex,
                })
                .collect()
        } else {
            Vec::new()
        },
    }
}
