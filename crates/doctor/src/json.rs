//! The diagnosis as JSON (the CLI's `--json` output and the REST `/jobs/:jobid/doctor` answer).

use serde_json::{json, Value};

use crate::{Cause, Diagnosis, PlanChange};

/// The plan change in machine form: `{"kind": "parallelism" | "two-phase" | "async-io" |
/// "sink-option", …}`.
pub fn plan_change_json(c: &PlanChange) -> Value {
    match c {
        PlanChange::Parallelism {
            operator,
            parallelism,
            ship,
        } => {
            json!({"kind": "parallelism", "operator": operator, "parallelism": parallelism, "ship": ship.as_str()})
        }
        PlanChange::TwoPhase { operator, buckets } => {
            json!({"kind": "two-phase", "operator": operator, "buckets": buckets})
        }
        PlanChange::AsyncCapacity { operator, capacity } => {
            json!({"kind": "async-io", "operator": operator, "capacity": capacity})
        }
        PlanChange::SinkOption {
            operator,
            key,
            value,
        } => {
            json!({"kind": "sink-option", "operator": operator, "key": key, "value": value})
        }
        PlanChange::LookupCache { operator, max_rows } => {
            json!({"kind": "lookup-cache", "operator": operator, "max-rows": max_rows})
        }
    }
}

/// The diagnosis as JSON: verdict, bottleneck, cause, hot keys, confidence (two decimals),
/// evidence, fix (with its plan change), expected effect, what could not be determined.
pub fn to_json(d: &Diagnosis) -> Value {
    let hot_keys: Vec<Value> = match &d.cause {
        Cause::KeySkew { hot_keys } => hot_keys
            .iter()
            .map(|k| json!({"key": k.key, "share": k.share}))
            .collect(),
        _ => Vec::new(),
    };
    json!({
        "verdict": d.verdict(),
        "bottleneck": d.bottleneck.as_ref().map(|b| json!({
            "vertex": b.vertex,
            "vertex-name": b.vertex_name,
            "operator": b.operator,
            "subtasks": b.subtasks,
        })),
        "cause": d.cause.name(),
        "hot-keys": hot_keys,
        "confidence": (d.confidence * 100.0).round() / 100.0,
        "evidence": d.evidence,
        "fix": d.fix.as_ref().map(|f| json!({
            "description": f.description,
            "change": f.change,
            "plan-change": f.plan_change.as_ref().map(plan_change_json),
        })),
        "expected-effect": d.expected_effect,
        "undetermined": d.undetermined,
        "source-splits": d.source_splits.as_ref().map(|s| json!({
            "partitions": s.partitions,
            "idle-subtasks": s.idle_subtasks,
        })),
        "lag": d.lag.as_ref().map(|l| json!({
            "first": l.first,
            "last": l.last,
            "samples": l.samples,
            "growing": l.growing(),
            "near-zero": l.near_zero(),
        })),
    })
}
