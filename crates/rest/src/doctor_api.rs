//! `GET /jobs/:jobid/doctor` (Sluice extension): the doctor (`sluice_doctor`) run in-process on
//! the job's latest metrics sample (already moving averages), answered as a
//! [`DoctorAnswer`]: the doctor's diagnosis ([`sluice_doctor::to_shape`], the CLI's
//! `sluice doctor --json` shape) plus `plan-change`: the proposed change against the live job
//! graph, for display.

use std::num::NonZeroUsize;

use sluice_doctor::examine::ViewProbe;
use sluice_doctor::{
    examine, ConnectorOption, Diagnosis, ExamineOptions, HotKey, JobView, PlanChange,
    SubtaskSample, VertexView,
};
use sluice_plan::{JobGraph, JobVertex};
use sluice_runtime::telemetry::{SubtaskSnapshot, VertexSnapshot};
use sluice_runtime::JobMonitor;

use sluice_rest_api::{
    DoctorAnswer, DoctorStatus, ParallelismDiff, PlanChangeDiff, ShipStrategyDiff,
};

use crate::api::{ok_shape, ApiResult, Ctx};

/// What a two-phase aggregation adds in place of the keyed operator.
pub const TWO_PHASE_ADDS: [&str; 3] = ["salt", "pre-aggregate (salted)", "combine"];

/// `GET /jobs/:jobid/doctor`.
pub fn doctor(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let Some(d) = diagnosis(&m) else {
        return ok_shape(&DoctorStatus::no_metrics_yet());
    };
    let plan_change = d
        .fix
        .as_ref()
        .and_then(|f| f.plan_change.as_ref())
        .map(|c| plan_change(&m.graph, c));
    ok_shape(&DoctorAnswer {
        diagnosis: sluice_doctor::to_shape(&d),
        plan_change,
    })
}

/// The doctor's diagnosis of a running job through its one call ([`sluice_doctor::examine`],
/// as `sluice doctor` and the autopilot make it), over the job's latest metrics sample (already
/// moving averages, so one view with no series); `None` before the first sample.
pub fn diagnosis(m: &JobMonitor) -> Option<Diagnosis> {
    let snaps = m.vertex_metrics();
    let view = m.last_sample_ms().and_then(|_| job_view(m, &snaps))?;
    let probe = ViewProbe::new(&m.job_id.to_string(), &m.graph.name, view, "this server");
    let opts = ExamineOptions {
        window: 0.0,
        // The latest flame graphs are in the view when someone sampled them: none are started.
        flame_graphs: false,
    };
    // A view probe neither fetches nor fails, and a zero window is in range.
    examine(&probe, None, &opts).ok().map(|e| e.diagnosis)
}

/// The doctor's view of a running job; `None` while some vertex has no sampled subtask.
pub fn job_view(m: &JobMonitor, snaps: &[VertexSnapshot]) -> Option<JobView> {
    let g = &m.graph;
    let mut vertices = Vec::with_capacity(g.vertices.len());
    for (i, v) in g.vertices.iter().enumerate() {
        let snap = snaps.iter().find(|s| s.index == i)?;
        if snap.subtasks.is_empty() {
            return None;
        }
        let (inputs, ship_strategies) = g
            .edges
            .iter()
            .filter(|e| e.to_vertex == i)
            .map(|e| (e.from_vertex, e.strategy.as_str().to_string()))
            .unzip();
        let hot_keys = m.subtasks.get(i).map(|subs| {
            sluice_runtime::hotkeys::vertex_hot_keys(subs.iter())
                .into_iter()
                .map(|k| HotKey {
                    key: k.key,
                    share: k.share_of_vertex,
                })
                .collect()
        });
        vertices.push(VertexView {
            id: v.id.to_string(),
            name: v.name.clone(),
            parallelism: v.parallelism,
            inputs,
            ship_strategies,
            is_source: !g.edges.iter().any(|e| e.to_vertex == i),
            is_sink: !g.edges.iter().any(|e| e.from_vertex == i),
            operators: v
                .nodes
                .iter()
                .filter_map(|n| g.nodes.get(n).map(|n| n.name.clone()))
                .collect(),
            subtasks: snap
                .subtasks
                .iter()
                .enumerate()
                .map(|(j, s)| {
                    let live = m.subtasks.get(i).and_then(|subs| subs.get(j));
                    with_connector_gauges(sample(s), live.map(|t| t.gauges()).unwrap_or_default())
                })
                .collect(),
            hot_keys,
            options: connector_options(g, v),
            // The latest flame graphs when someone sampled them (never started from here).
            profile: m.profiler.cached(i).map(|p| profile_of(&p)),
        });
    }
    Some(JobView {
        vertices,
        available_cores: std::thread::available_parallelism()
            .ok()
            .map(NonZeroUsize::get),
    })
}

/// The connector options of a vertex's operators, chain order, the last value of each key.
pub fn connector_options(g: &JobGraph, v: &JobVertex) -> Vec<ConnectorOption> {
    let mut out: Vec<ConnectorOption> = Vec::new();
    for n in v.nodes.iter().filter_map(|id| g.nodes.get(id)) {
        for (key, value) in &n.options {
            match out
                .iter_mut()
                .find(|o| o.operator == n.name && o.key == *key)
            {
                Some(o) => o.value = value.clone(),
                None => out.push(ConnectorOption {
                    operator: n.name.clone(),
                    key: key.clone(),
                    value: value.clone(),
                }),
            }
        }
    }
    out
}

/// The connector facts a source or sink publishes as operator gauges: FLIP-33
/// `pendingRecords` (summed over the subtask's operators), Sluice's `assignedSplits`, and
/// FLIP-33 `currentSendTime`.
fn with_connector_gauges(
    mut s: SubtaskSample,
    gauges: Vec<std::sync::Arc<sluice_runtime::OperatorGauge>>,
) -> SubtaskSample {
    let sum = |name: &str| {
        let v: Vec<f64> = gauges
            .iter()
            .filter(|g| g.name == name)
            .map(|g| g.get() as f64)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    s.pending_records = sum("pendingRecords");
    s.assigned_splits = sum("assignedSplits");
    s.send_time = sum("currentSendTime");
    // A lookup join's key repeat ratio (one lookup per chain in practice: the highest).
    s.key_repeat = gauges
        .iter()
        .filter(|g| g.name == "lookupKeyRepeatPerMille")
        .map(|g| g.get() as f64 / 1000.0)
        .reduce(f64::max);
    s
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

fn sample(s: &SubtaskSnapshot) -> SubtaskSample {
    SubtaskSample {
        busy: finite(s.busy_ms_per_second),
        backpressured: finite(s.backpressured_ms_per_second),
        idle: finite(s.idle_ms_per_second),
        records_in: finite(s.records_in_per_second),
        records_out: finite(s.records_out_per_second),
        cpu: finite(s.cpu_ms_per_second),
        cpu_wait: finite(s.cpu_wait_ms_per_second),
        operator_busy: s
            .operators
            .iter()
            .filter(|o| o.busy_ms_per_second.is_finite())
            .map(|o| (o.name.clone(), o.busy_ms_per_second))
            .collect(),
        state_access: finite(s.state_access_ms_per_second),
        serialization: finite(s.serialization_ms_per_second),
        deserialization: finite(s.deserialization_ms_per_second),
        // Connector metrics are operator gauges: see `with_connector_gauges`.
        pending_records: None,
        assigned_splits: None,
        send_time: None,
        last_records_in: None,
        key_repeat: None,
        // One process: no TaskManager JVM of its own to read.
        host: None,
    }
}

/// The vertex running `operator` and the ship strategy of its input edge(s) into that operator
/// (`None` for a source).
pub(crate) fn locate(g: &JobGraph, operator: &str) -> Option<(usize, Option<&'static str>)> {
    let (id, _) = g.nodes.iter().find(|(_, n)| n.name == operator)?;
    let v = g.vertices.iter().position(|v| v.nodes.contains(id))?;
    let edge = g
        .edges
        .iter()
        .find(|e| e.to_node == *id)
        .or_else(|| g.edges.iter().find(|e| e.to_vertex == v));
    Some((v, edge.map(|e| e.strategy.as_str())))
}

/// The proposed change against the live graph: before/after of what it changes.
pub fn plan_change(g: &JobGraph, c: &PlanChange) -> PlanChangeDiff {
    let operator = c.operator().to_string();
    let at = locate(g, &operator);
    let vertex = at.map(|(v, _)| g.vertices[v].id.to_string());
    let vertex_name = at.map(|(v, _)| g.vertices[v].name.clone());
    let node = g.nodes.values().find(|n| n.name == operator);
    match c {
        PlanChange::Parallelism {
            parallelism, ship, ..
        } => PlanChangeDiff::Parallelism {
            vertex,
            vertex_name,
            parallelism: ParallelismDiff {
                before: node.map(|n| n.parallelism as u64),
                after: *parallelism as u64,
            },
            ship_strategy: ShipStrategyDiff {
                before: at.and_then(|(_, s)| s).map(str::to_string),
                after: ship.as_str().to_string(),
            },
            operator,
        },
        PlanChange::TwoPhase { buckets, .. } => PlanChangeDiff::TwoPhase {
            vertex,
            vertex_name,
            buckets: u64::from(*buckets),
            adds: TWO_PHASE_ADDS.iter().map(|a| a.to_string()).collect(),
            removes: vec![operator.clone()],
            operator,
        },
        PlanChange::AsyncCapacity { capacity, .. } => PlanChangeDiff::AsyncIo {
            operator,
            vertex,
            vertex_name,
            capacity: *capacity as u64,
        },
        PlanChange::LookupCache { max_rows, .. } => PlanChangeDiff::LookupCache {
            operator,
            vertex,
            vertex_name,
            max_rows: *max_rows as u64,
        },
        PlanChange::SinkOption { key, value, .. } => PlanChangeDiff::SinkOption {
            before: node
                .and_then(|n| n.options.iter().rfind(|(k, _)| k == key))
                .map(|(_, v)| v.clone()),
            operator,
            vertex,
            vertex_name,
            key: key.clone(),
            after: value.clone(),
        },
    }
}

/// A sampled flame graph as the doctor reads it (every subtask's samples).
fn profile_of(p: &sluice_runtime::profiler::VertexProfile) -> sluice_doctor::VertexProfile {
    use sluice_runtime::profiler::{FlameGraphType, FlameNode};
    fn tree(n: &FlameNode) -> sluice_doctor::FlameTree {
        sluice_doctor::FlameTree {
            name: n.name.clone(),
            value: n.value,
            children: n.children.iter().map(tree).collect(),
        }
    }
    sluice_doctor::VertexProfile {
        on_cpu: tree(&p.tree(FlameGraphType::OnCpu, None)),
        off_cpu: tree(&p.tree(FlameGraphType::OffCpu, None)),
    }
}
