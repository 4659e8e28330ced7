//! The diagnosis as JSON (the CLI's `--json` output and the REST `/jobs/:jobid/doctor` answer),
//! written through its shape in `sluice-rest-api` ([`sluice_rest_api::Diagnosis`]), so the CLI,
//! the server and the OpenAPI document share one definition.

use serde_json::Value;
use sluice_rest_api::{
    DiagnosisBottleneck, DiagnosisFix, DiagnosisHotKey, PlanChangeSpec, SourceLag,
};

use crate::{Cause, Diagnosis, PlanChange};

/// The plan change in machine form ([`PlanChangeSpec`]): `{"kind": "parallelism" |
/// "two-phase" | "async-io" | "sink-option" | "lookup-cache", "operator", …}`.
pub fn plan_change_spec(c: &PlanChange) -> PlanChangeSpec {
    match c {
        PlanChange::Parallelism {
            operator,
            parallelism,
            ship,
        } => PlanChangeSpec::Parallelism {
            operator: operator.clone(),
            parallelism: *parallelism as u64,
            ship: ship.as_str().to_string(),
        },
        PlanChange::TwoPhase { operator, buckets } => PlanChangeSpec::TwoPhase {
            operator: operator.clone(),
            buckets: u64::from(*buckets),
        },
        PlanChange::AsyncCapacity { operator, capacity } => PlanChangeSpec::AsyncIo {
            operator: operator.clone(),
            capacity: *capacity as u64,
        },
        PlanChange::SinkOption {
            operator,
            key,
            value,
        } => PlanChangeSpec::SinkOption {
            operator: operator.clone(),
            key: key.clone(),
            value: value.clone(),
        },
        PlanChange::LookupCache { operator, max_rows } => PlanChangeSpec::LookupCache {
            operator: operator.clone(),
            max_rows: *max_rows as u64,
        },
    }
}

/// The plan change in machine form as JSON ([`plan_change_spec`]).
pub fn plan_change_json(c: &PlanChange) -> Value {
    to_value(&plan_change_spec(c))
}

/// The diagnosis in its REST shape: verdict, bottleneck, cause, hot keys, confidence (two
/// decimals), evidence, fix (with its plan change), expected effect, what could not be
/// determined, source splits and lag.
pub fn to_shape(d: &Diagnosis) -> sluice_rest_api::Diagnosis {
    let hot_keys = match &d.cause {
        Cause::KeySkew { hot_keys } => hot_keys
            .iter()
            .map(|k| DiagnosisHotKey {
                key: k.key.clone(),
                share: k.share,
            })
            .collect(),
        _ => Vec::new(),
    };
    sluice_rest_api::Diagnosis {
        verdict: d.verdict(),
        bottleneck: d.bottleneck.as_ref().map(|b| DiagnosisBottleneck {
            vertex: b.vertex as u64,
            vertex_name: b.vertex_name.clone(),
            operator: b.operator.clone(),
            subtasks: b.subtasks.iter().map(|&s| s as u64).collect(),
        }),
        cause: d.cause.name().to_string(),
        hot_keys,
        confidence: (d.confidence * 100.0).round() / 100.0,
        evidence: d.evidence.clone(),
        fix: d.fix.as_ref().map(|f| DiagnosisFix {
            description: f.description.clone(),
            change: f.change.clone(),
            plan_change: f.plan_change.as_ref().map(plan_change_spec),
        }),
        expected_effect: d.expected_effect.clone(),
        undetermined: d.undetermined.clone(),
        source_splits: d
            .source_splits
            .as_ref()
            .map(|s| sluice_rest_api::SourceSplits {
                partitions: s.partitions as u64,
                idle_subtasks: s.idle_subtasks.iter().map(|&i| i as u64).collect(),
            }),
        lag: d.lag.as_ref().map(|l| SourceLag {
            first: l.first,
            last: l.last,
            samples: l.samples as u64,
            growing: l.growing(),
            near_zero: l.near_zero(),
        }),
    }
}

/// The diagnosis as JSON ([`to_shape`]).
pub fn to_json(d: &Diagnosis) -> Value {
    to_value(&to_shape(d))
}

/// A shape as a JSON value: plain data of strings, numbers and lists always is one (`Null`
/// only if serde_json ever refused, which it does for non-string map keys, none here).
fn to_value<T: serde::Serialize>(shape: &T) -> Value {
    serde_json::to_value(shape).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    //! The shape writes exactly what the `json!` builder it replaced wrote (copied here as it
    //! was: the reference), and reads back as it was written.

    use serde_json::{json, Value};

    use super::*;
    use crate::lag::LagTrend;
    use crate::{Bottleneck, FixProposal, HotKey, ShipStrategy, SourceSplits};

    fn old_plan_change_json(c: &PlanChange) -> Value {
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
    fn old_to_json(d: &Diagnosis) -> Value {
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
                "plan-change": f.plan_change.as_ref().map(old_plan_change_json),
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

    fn diagnoses() -> Vec<Diagnosis> {
        let changes = [
            Some(PlanChange::Parallelism {
                operator: "map".into(),
                parallelism: 2,
                ship: ShipStrategy::Rebalance,
            }),
            Some(PlanChange::TwoPhase {
                operator: "sum".into(),
                buckets: 8,
            }),
            Some(PlanChange::AsyncCapacity {
                operator: "lookup".into(),
                capacity: 16,
            }),
            Some(PlanChange::SinkOption {
                operator: "sink".into(),
                key: "sink.buffer-flush.max-rows".into(),
                value: "500".into(),
            }),
            Some(PlanChange::LookupCache {
                operator: "lookup".into(),
                max_rows: 100,
            }),
            None,
        ];
        let mut out: Vec<Diagnosis> = changes
            .into_iter()
            .map(|plan_change| Diagnosis {
                bottleneck: Some(Bottleneck {
                    vertex: 1,
                    vertex_name: "sum -> sink".into(),
                    parallelism: 2,
                    operator: Some("sum".into()),
                    operator_share: None,
                    subtasks: vec![0, 1],
                }),
                cause: Cause::KeySkew {
                    hot_keys: vec![HotKey {
                        key: "k1".into(),
                        share: 0.61,
                    }],
                },
                confidence: 0.876,
                evidence: vec!["subtask 2/2 busy 980 ms/s".into()],
                fix: Some(FixProposal {
                    description: "spread the hot key".into(),
                    change: "two-phase aggregation".into(),
                    plan_change,
                }),
                expected_effect: "about twice the rate".into(),
                undetermined: vec!["no flame graph".into()],
                source_splits: Some(SourceSplits {
                    partitions: 2,
                    idle_subtasks: vec![2, 3],
                }),
                lag: Some(LagTrend {
                    first: 1000.0,
                    last: 52000.5,
                    samples: 3,
                    source_rate: 100.0,
                }),
            })
            .collect();
        out.push(Diagnosis {
            bottleneck: Some(Bottleneck {
                vertex: 0,
                vertex_name: "source".into(),
                parallelism: 1,
                operator: None,
                operator_share: None,
                subtasks: Vec::new(),
            }),
            cause: Cause::UnderProvisioned,
            confidence: 1.0,
            evidence: Vec::new(),
            fix: None,
            expected_effect: String::new(),
            undetermined: Vec::new(),
            source_splits: None,
            lag: Some(LagTrend {
                first: f64::NAN,
                last: 0.0,
                samples: 1,
                source_rate: 0.0,
            }),
        });
        out.push(Diagnosis {
            bottleneck: None,
            cause: Cause::NoBottleneck,
            confidence: 0.0,
            evidence: Vec::new(),
            fix: None,
            expected_effect: String::new(),
            undetermined: Vec::new(),
            source_splits: None,
            lag: None,
        });
        out
    }

    #[test]
    fn the_shape_writes_what_the_builder_wrote_and_reads_back() {
        for d in diagnoses() {
            let text = to_json(&d).to_string();
            assert_eq!(text, old_to_json(&d).to_string());
            assert_eq!(
                serde_json::to_string(&to_shape(&d)).unwrap(),
                text,
                "to_json is the shape's JSON"
            );
            let back: sluice_rest_api::Diagnosis = serde_json::from_str(&text).unwrap();
            if d.lag.as_ref().is_none_or(|l| l.first.is_finite()) {
                assert_eq!(back, to_shape(&d));
            }
            if let Some(c) = d.fix.as_ref().and_then(|f| f.plan_change.as_ref()) {
                assert_eq!(plan_change_json(c), old_plan_change_json(c));
                let back: PlanChangeSpec = serde_json::from_value(plan_change_json(c)).unwrap();
                assert_eq!(back, plan_change_spec(c));
            }
        }
    }
}
