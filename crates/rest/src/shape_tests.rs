//! The typed answers write exactly what the `json!` builders they replaced wrote: the old
//! builders, copied here as they were, are the reference, compared byte for byte on records
//! and graphs that reach every branch; and each answer reads back as it was written.

use serde_json::{json, Map, Value};
use sluice_doctor::{PlanChange, ShipStrategy};
use sluice_plan::{ChainingStrategy, JobEdge, JobGraph, JobVertex, NodeKind, ResolvedNode};
use sluice_types::Id128;

use crate::doctor_api::{locate, plan_change, TWO_PHASE_ADDS};
use crate::live::{change_json, plan_nodes, RescaleRecord, RescaleState, VertexRescale};
use crate::rescale_api::{flink_details, record_shape};
use sluice_rest_api::{JobRescaleDetails, RecordedChange, SluiceRescaleRecord, VertexParallelism};

// ---- the builders as they were (05f2956) ----

fn old_plan_nodes(g: &JobGraph) -> Value {
    Value::Array(
        g.nodes
            .iter()
            .map(|(id, n)| {
                let mut options = Map::new();
                for (k, v) in &n.options {
                    options.insert(k.clone(), Value::String(v.clone()));
                }
                json!({
                    "id": id,
                    "name": n.name,
                    "parallelism": n.parallelism,
                    "inputs": n.inputs.iter().map(|(from, s)| json!({
                        "id": from,
                        "ship_strategy": s.as_str(),
                    })).collect::<Vec<_>>(),
                    "options": options,
                })
            })
            .collect(),
    )
}

fn old_change_json(c: &PlanChange) -> Value {
    // The doctor's machine form, with the ship strategy under Flink's REST name.
    let mut v = sluice_doctor::plan_change_json(c);
    if let Some(o) = v.as_object_mut() {
        if let Some(ship) = o.remove("ship") {
            o.insert("ship-strategy".into(), ship);
        }
    }
    v
}

/// The old record, whose `change` and `plan` were JSON values.
struct OldRecord<'a> {
    r: &'a RescaleRecord,
    change: Value,
    plan_before: Value,
    plan_after: Value,
}

fn old_record_json(o: &OldRecord) -> Value {
    let r = o.r;
    let (state, failure) = match &r.state {
        RescaleState::Completed => ("COMPLETED", Value::Null),
        RescaleState::Failed(why) => ("FAILED", Value::String(why.clone())),
    };
    json!({
        "rescaleUuid": r.uuid.to_string(),
        "rescaleAttemptId": r.attempt,
        "trigger": r.trigger,
        "change": o.change,
        "rollbackOf": r.rollback_of.map(|u| u.to_string()),
        "state": state,
        "failure": failure,
        "startTimestampInMillis": r.start_ms,
        "endTimestampInMillis": r.end_ms,
        "pauseMillis": r.pause_ms,
        "sourcesPausedMillis": r.sources_paused_ms,
        "savepoint": r.savepoint,
        "vertices": r.vertices.iter().map(|v| json!({
            "id": v.id.to_string(),
            "name": v.name,
            "parallelism": {"before": v.before, "after": v.after},
        })).collect::<Vec<_>>(),
        "plan": {"before": o.plan_before, "after": o.plan_after},
        "changes": r.changes,
    })
}

fn old_flink_details(job: Id128, o: &OldRecord, detailed: bool) -> Value {
    let r = o.r;
    let slot_group =
        Id128::hash_of(format!("slot-sharing-group:default:{}", job).as_bytes()).to_string();
    let mut vertices = Map::new();
    if detailed {
        for v in &r.vertices {
            vertices.insert(
                v.id.to_string(),
                json!({
                    "jobVertexId": v.id.to_string(),
                    "jobVertexName": v.name,
                    "slotSharingGroupId": slot_group,
                    "slotSharingGroupName": "default",
                    "desiredParallelism": v.after.or(v.before),
                    "sufficientParallelism": 1,
                    "preRescaleParallelism": v.before,
                    "postRescaleParallelism": v.after,
                }),
            );
        }
    }
    let (terminal, reason) = match r.state {
        RescaleState::Completed => ("COMPLETED", "SUCCEEDED"),
        RescaleState::Failed(_) => ("FAILED", "EXCEPTION_OCCURRED"),
    };
    json!({
        "rescaleUuid": r.uuid.to_string(),
        "resourceRequirementsUuid": Id128::hash_of(format!("requirements:{}", r.uuid).as_bytes()).to_string(),
        "rescaleAttemptId": r.attempt,
        "vertices": vertices,
        "slots": {},
        "schedulerStates": [],
        "startTimestampInMillis": r.start_ms,
        "endTimestampInMillis": r.end_ms,
        "terminalState": terminal,
        "triggerCause": "UPDATE_REQUIREMENT",
        "terminatedReason": reason,
        "sluice": old_record_json(o),
    })
}

fn old_plan_change(g: &JobGraph, c: &PlanChange) -> Value {
    let operator = c.operator();
    let at = locate(g, operator);
    let vertex = at.map(|(v, _)| g.vertices[v].id.to_string());
    let vertex_name = at.map(|(v, _)| g.vertices[v].name.clone());
    match c {
        PlanChange::Parallelism {
            parallelism, ship, ..
        } => {
            let before = g
                .nodes
                .values()
                .find(|n| n.name == *operator)
                .map(|n| n.parallelism);
            json!({
                "kind": "parallelism",
                "operator": operator,
                "vertex": vertex,
                "vertex-name": vertex_name,
                "parallelism": {"before": before, "after": parallelism},
                "ship-strategy": {"before": at.and_then(|(_, s)| s), "after": ship.as_str()},
            })
        }
        PlanChange::TwoPhase { buckets, .. } => json!({
            "kind": "two-phase",
            "operator": operator,
            "vertex": vertex,
            "vertex-name": vertex_name,
            "buckets": buckets,
            "adds": TWO_PHASE_ADDS,
            "removes": [operator],
        }),
        PlanChange::AsyncCapacity { capacity, .. } => json!({
            "kind": "async-io",
            "operator": operator,
            "vertex": vertex,
            "vertex-name": vertex_name,
            "capacity": capacity,
        }),
        PlanChange::LookupCache { max_rows, .. } => json!({
            "kind": "lookup-cache",
            "operator": operator,
            "vertex": vertex,
            "vertex-name": vertex_name,
            "max-rows": max_rows,
        }),
        PlanChange::SinkOption { key, value, .. } => {
            let before = g
                .nodes
                .values()
                .find(|n| n.name == *operator)
                .and_then(|n| n.options.iter().rfind(|(k, _)| k == key))
                .map(|(_, v)| v.clone());
            json!({
                "kind": "sink-option",
                "operator": operator,
                "vertex": vertex,
                "vertex-name": vertex_name,
                "key": key,
                "before": before,
                "after": value,
            })
        }
    }
}

// ---- the comparisons ----

fn node(
    id: u32,
    name: &str,
    kind: NodeKind,
    p: usize,
    inputs: Vec<(u32, ShipStrategy)>,
) -> ResolvedNode {
    ResolvedNode {
        id,
        name: name.into(),
        kind,
        parallelism: p,
        max_parallelism: 128,
        chaining: ChainingStrategy::Always,
        inputs,
        options: Vec::new(),
    }
}

/// source (1) -REBALANCE-> heavy-map (2) -FORWARD-> sink (3, options with a repeated key).
fn graph() -> JobGraph {
    let mut sink = node(
        3,
        "sink",
        NodeKind::Sink,
        2,
        vec![(2, ShipStrategy::Forward)],
    );
    sink.options = vec![
        ("sink.buffer-flush.max-rows".into(), "1".into()),
        ("url".into(), "jdbc:postgresql://x".into()),
        ("sink.buffer-flush.max-rows".into(), "100".into()),
    ];
    let nodes = [
        node(1, "source", NodeKind::Source, 1, Vec::new()),
        node(
            2,
            "heavy-map",
            NodeKind::Operator,
            2,
            vec![(1, ShipStrategy::Rebalance)],
        ),
        sink,
    ];
    let vertex = |index: usize, name: &str, p: usize, nodes: Vec<u32>| JobVertex {
        index,
        id: Id128::hash_of(name.as_bytes()),
        name: name.into(),
        parallelism: p,
        max_parallelism: 128,
        head: nodes[0],
        nodes,
    };
    JobGraph {
        name: "job".into(),
        nodes: nodes.into_iter().map(|n| (n.id, n)).collect(),
        vertices: vec![
            vertex(0, "Source: source", 1, vec![1]),
            vertex(1, "heavy-map -> sink", 2, vec![2, 3]),
        ],
        edges: vec![JobEdge {
            from_vertex: 0,
            to_vertex: 1,
            from_node: 1,
            to_node: 2,
            input: 0,
            strategy: ShipStrategy::Rebalance,
        }],
        chained: vec![(2, 3)],
        query_plan: None,
    }
}

fn every_change() -> Vec<PlanChange> {
    vec![
        PlanChange::Parallelism {
            operator: "heavy-map".into(),
            parallelism: 4,
            ship: ShipStrategy::Hash,
        },
        PlanChange::Parallelism {
            operator: "source".into(),
            parallelism: 2,
            ship: ShipStrategy::Rebalance,
        },
        PlanChange::TwoPhase {
            operator: "heavy-map".into(),
            buckets: 8,
        },
        PlanChange::AsyncCapacity {
            operator: "heavy-map".into(),
            capacity: 16,
        },
        PlanChange::SinkOption {
            operator: "sink".into(),
            key: "sink.buffer-flush.max-rows".into(),
            value: "500".into(),
        },
        PlanChange::SinkOption {
            operator: "sink".into(),
            key: "sink.parallelism".into(),
            value: "2".into(),
        },
        PlanChange::LookupCache {
            operator: "no-such-operator".into(),
            max_rows: 1000,
        },
    ]
}

/// Records reaching every branch: completed and failed, a rollback of a known and an unknown
/// change, a resource-requirements change, vertices added and removed. With each, the old
/// record's JSON `change`.
fn records(g: &JobGraph) -> Vec<(RescaleRecord, Value)> {
    let base = |attempt: u64, change: Option<RecordedChange>| RescaleRecord {
        uuid: Id128::hash_of(format!("rescale:{attempt}").as_bytes()),
        attempt,
        trigger: "doctor-apply",
        change,
        rollback_of: None,
        start_ms: 1_796_000_000_000,
        end_ms: 1_796_000_000_412,
        state: RescaleState::Completed,
        vertices: vec![
            VertexRescale {
                id: Id128::hash_of(b"a"),
                name: "heavy-map".into(),
                before: Some(1),
                after: Some(2),
            },
            VertexRescale {
                id: Id128::hash_of(b"b"),
                name: "salt".into(),
                before: None,
                after: Some(2),
            },
            VertexRescale {
                id: Id128::hash_of(b"c"),
                name: "sum".into(),
                before: Some(2),
                after: None,
            },
        ],
        plan_before: plan_nodes(g),
        plan_after: plan_nodes(g),
        changes: vec!["~ [2] heavy-map  parallelism 1 -> 2".into()],
        pause_ms: Some(390.0),
        sources_paused_ms: Some(402.5),
        savepoint: Some("/tmp/savepoint-1".into()),
    };
    let mut out = Vec::new();
    for (i, c) in every_change().iter().enumerate() {
        out.push((base(i as u64 + 1, Some(change_json(c))), old_change_json(c)));
    }
    let targets = [(Id128::hash_of(b"a"), 3usize)];
    let mut rr = base(
        10,
        Some(RecordedChange::ResourceRequirements {
            vertices: targets
                .iter()
                .map(|(id, p)| VertexParallelism {
                    id: id.to_string(),
                    parallelism: *p as u64,
                })
                .collect(),
        }),
    );
    rr.trigger = "resource-requirements";
    // As `sluice::live` wrote it.
    let rr_old = json!({
        "kind": "resource-requirements",
        "vertices": targets.iter().map(|(id, p)| json!({"id": id.to_string(), "parallelism": p})).collect::<Vec<_>>(),
    });
    out.push((rr, rr_old));
    let mut failed = base(11, Some(change_json(&every_change()[0])));
    failed.state = RescaleState::Failed("Refused plan change: no".into());
    failed.vertices.clear();
    failed.pause_ms = None;
    failed.sources_paused_ms = None;
    failed.savepoint = None;
    out.push((failed, old_change_json(&every_change()[0])));
    let mut rollback = base(12, Some(change_json(&every_change()[2])));
    rollback.trigger = "rollback";
    rollback.rollback_of = Some(Id128::hash_of(b"rescale:3"));
    out.push((rollback, old_change_json(&every_change()[2])));
    let mut unknown = base(13, None);
    unknown.trigger = "rollback";
    unknown.rollback_of = Some(Id128::hash_of(b"gone"));
    out.push((unknown, Value::Null));
    out
}

#[test]
fn plan_nodes_write_what_they_wrote() {
    let g = graph();
    assert_eq!(
        serde_json::to_string(&plan_nodes(&g)).unwrap(),
        old_plan_nodes(&g).to_string()
    );
}

#[test]
fn the_rescale_record_and_details_write_what_they_wrote_and_read_back() {
    let g = graph();
    let job = Id128::hash_of(b"job");
    for (r, old_change) in records(&g) {
        let old = OldRecord {
            r: &r,
            change: old_change,
            plan_before: old_plan_nodes(&g),
            plan_after: old_plan_nodes(&g),
        };
        let record = record_shape(&r);
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(text, old_record_json(&old).to_string());
        assert_eq!(
            serde_json::from_str::<SluiceRescaleRecord>(&text).unwrap(),
            record
        );
        for detailed in [false, true] {
            let details = flink_details(job, &r, detailed);
            let text = serde_json::to_string(&details).unwrap();
            assert_eq!(text, old_flink_details(job, &old, detailed).to_string());
            assert_eq!(
                serde_json::from_str::<JobRescaleDetails>(&text).unwrap(),
                details
            );
        }
    }
}

#[test]
fn the_doctors_plan_change_writes_what_it_wrote_and_reads_back() {
    let g = graph();
    for c in every_change() {
        let diff = plan_change(&g, &c);
        let text = serde_json::to_string(&diff).unwrap();
        assert_eq!(text, old_plan_change(&g, &c).to_string(), "{c:?}");
        assert_eq!(
            serde_json::from_str::<sluice_rest_api::PlanChangeDiff>(&text).unwrap(),
            diff
        );
        // `doctor/apply` accepts it as it is.
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(crate::live::parse_change(&v), Ok(c));
    }
}

#[test]
fn the_doctor_status_and_the_autopilot_answers_write_what_they_wrote() {
    let status = sluice_rest_api::DoctorStatus::no_metrics_yet();
    assert_eq!(
        serde_json::to_string(&status).unwrap(),
        json!({"status": "no-metrics-yet"}).to_string()
    );
    let decisions = vec![
        json!({"id": 1, "outcome": "kept", "change-text": "x", "extra": [1, 2]}),
        json!({"outcome": "skipped", "id": 2, "change-text": "y", "after": null}),
    ];
    let log = sluice_rest_api::AutopilotLog {
        decisions: decisions.clone(),
        dropped: 3,
    };
    assert_eq!(
        serde_json::to_string(&log).unwrap(),
        json!({"decisions": decisions, "dropped": 3}).to_string()
    );
    let empty: sluice_rest_api::AutopilotLog<Value> = sluice_rest_api::AutopilotLog::default();
    assert_eq!(
        serde_json::to_string(&empty).unwrap(),
        json!({"decisions": [], "dropped": 0}).to_string()
    );
    assert_eq!(
        serde_json::to_string(&sluice_rest_api::DecisionAccepted { id: 7 }).unwrap(),
        json!({"id": 7u64}).to_string()
    );
}
