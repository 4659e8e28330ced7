//! Sluice's own answers (doctor, rescale history, autopilot): a sample of each, written with
//! `json!` in the key order the server's old builders wrote, reads into its shape and writes
//! back to the same text (same keys, same order, `null`s kept).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use sluice_rest_api::*;

/// `sample` reads as `T` and writes back byte for byte; returns what it read.
fn round_trips<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(sample: Value) -> T {
    let text = sample.to_string();
    let shape: T = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&shape).unwrap(), text);
    assert_eq!(serde_json::from_str::<T>(&text).unwrap(), shape);
    shape
}

fn diagnosis(plan_change: Value) -> Value {
    json!({
        "verdict": "key skew in sum (vertex \"sum -> sink\", subtask 2/2)",
        "bottleneck": {"vertex": 1, "vertex-name": "sum -> sink", "operator": "sum", "subtasks": [1]},
        "cause": "key-skew",
        "hot-keys": [{"key": "k1", "share": 0.61}],
        "confidence": 0.88,
        "evidence": ["subtask 2/2 busy 980 ms/s"],
        "fix": {"description": "spread the hot key", "change": "two-phase aggregation",
                "plan-change": plan_change},
        "expected-effect": "about twice the rate",
        "undetermined": [],
        "source-splits": {"partitions": 2, "idle-subtasks": [2, 3]},
        "lag": {"first": 1000.0, "last": 52000.5, "samples": 3, "growing": true, "near-zero": false},
    })
}

#[test]
fn the_diagnosis_round_trips_with_every_plan_change_kind() {
    let specs = [
        json!({"kind": "parallelism", "operator": "map", "parallelism": 2, "ship": "REBALANCE"}),
        json!({"kind": "two-phase", "operator": "sum", "buckets": 8}),
        json!({"kind": "async-io", "operator": "lookup", "capacity": 16}),
        json!({"kind": "sink-option", "operator": "sink", "key": "sink.buffer-flush.max-rows", "value": "500"}),
        json!({"kind": "lookup-cache", "operator": "lookup", "max-rows": 100}),
        Value::Null,
    ];
    for spec in specs {
        let d: Diagnosis = round_trips(diagnosis(spec.clone()));
        assert_eq!(d.fix.unwrap().plan_change.is_none(), spec.is_null());
    }
    let none = json!({
        "verdict": "no bottleneck", "bottleneck": null, "cause": "no-bottleneck", "hot-keys": [],
        "confidence": 0.0, "evidence": [], "fix": null, "expected-effect": "", "undetermined": [],
        "source-splits": null, "lag": null,
    });
    let d: Diagnosis = round_trips(none);
    assert!(d.bottleneck.is_none() && d.fix.is_none() && d.lag.is_none());
}

#[test]
fn the_doctor_answer_round_trips_with_every_before_after_kind() {
    let diffs = [
        json!({"kind": "parallelism", "operator": "map", "vertex": "ab", "vertex-name": "map",
               "parallelism": {"before": 1, "after": 2},
               "ship-strategy": {"before": "FORWARD", "after": "REBALANCE"}}),
        json!({"kind": "parallelism", "operator": "src", "vertex": null, "vertex-name": null,
               "parallelism": {"before": null, "after": 2},
               "ship-strategy": {"before": null, "after": "REBALANCE"}}),
        json!({"kind": "two-phase", "operator": "sum", "vertex": "cd", "vertex-name": "sum",
               "buckets": 8, "adds": ["salt", "pre-aggregate (salted)", "combine"], "removes": ["sum"]}),
        json!({"kind": "async-io", "operator": "lookup", "vertex": "ef", "vertex-name": "lookup",
               "capacity": 16}),
        json!({"kind": "lookup-cache", "operator": "lookup", "vertex": "ef", "vertex-name": "lookup",
               "max-rows": 100}),
        json!({"kind": "sink-option", "operator": "sink", "vertex": "gh", "vertex-name": "sink",
               "key": "sink.buffer-flush.max-rows", "before": "1", "after": "500"}),
        json!({"kind": "sink-option", "operator": "sink", "vertex": "gh", "vertex-name": "sink",
               "key": "sink.parallelism", "before": null, "after": "2"}),
        Value::Null,
    ];
    for diff in diffs {
        let mut answer = diagnosis(Value::Null);
        answer
            .as_object_mut()
            .unwrap()
            .insert("plan-change".into(), diff.clone());
        let a: DoctorAnswer = round_trips(answer);
        assert_eq!(a.plan_change.is_none(), diff.is_null());
        assert_eq!(a.diagnosis.cause, "key-skew");
    }
    let status: DoctorStatus = round_trips(json!({"status": "no-metrics-yet"}));
    assert_eq!(status, DoctorStatus::no_metrics_yet());
}

fn record(change: Value, failed: bool) -> Value {
    json!({
        "rescaleUuid": "0123456789abcdef0123456789abcdef",
        "rescaleAttemptId": 2,
        "trigger": "doctor-apply",
        "change": change,
        "rollbackOf": if failed { Value::Null } else { json!("fedcba9876543210fedcba9876543210") },
        "state": if failed { "FAILED" } else { "COMPLETED" },
        "failure": if failed { json!("Refused plan change: no") } else { Value::Null },
        "startTimestampInMillis": 1_796_000_000_000i64,
        "endTimestampInMillis": 1_796_000_000_412i64,
        "pauseMillis": if failed { Value::Null } else { json!(390.0) },
        "sourcesPausedMillis": if failed { Value::Null } else { json!(402.5) },
        "savepoint": if failed { Value::Null } else { json!("/tmp/savepoint-1") },
        "vertices": [
            {"id": "aa", "name": "map", "parallelism": {"before": 1, "after": 2}},
            {"id": "bb", "name": "salt", "parallelism": {"before": null, "after": 2}},
            {"id": "cc", "name": "sum", "parallelism": {"before": 2, "after": null}},
        ],
        "plan": {
            "before": [
                {"id": 1, "name": "source", "parallelism": 1, "inputs": [], "options": {}},
                {"id": 2, "name": "map", "parallelism": 1,
                 "inputs": [{"id": 1, "ship_strategy": "FORWARD"}], "options": {}},
            ],
            "after": [
                {"id": 1, "name": "source", "parallelism": 1, "inputs": [], "options": {}},
                {"id": 2, "name": "sink", "parallelism": 2,
                 "inputs": [{"id": 1, "ship_strategy": "REBALANCE"}],
                 "options": {"url": "jdbc:x", "sink.buffer-flush.max-rows": "100"}},
            ],
        },
        "changes": ["~ [2] map  parallelism 1 -> 2"],
    })
}

fn every_recorded_change() -> Vec<Value> {
    vec![
        json!({"kind": "parallelism", "operator": "map", "parallelism": 2, "ship-strategy": "REBALANCE"}),
        json!({"kind": "two-phase", "operator": "sum", "buckets": 8}),
        json!({"kind": "async-io", "operator": "lookup", "capacity": 16}),
        json!({"kind": "sink-option", "operator": "sink", "key": "k", "value": "v"}),
        json!({"kind": "lookup-cache", "operator": "lookup", "max-rows": 100}),
        json!({"kind": "resource-requirements", "vertices": [{"id": "aa", "parallelism": 3}]}),
        Value::Null,
    ]
}

#[test]
fn sluices_rescale_record_round_trips_with_every_change() {
    for change in every_recorded_change() {
        for failed in [false, true] {
            let r: SluiceRescaleRecord = round_trips(record(change.clone(), failed));
            assert_eq!(r.change.is_none(), change.is_null());
            assert_eq!(r.failure.is_some(), failed);
        }
    }
}

fn details(vertices: Value, failed: bool) -> Value {
    json!({
        "rescaleUuid": "0123456789abcdef0123456789abcdef",
        "resourceRequirementsUuid": "00112233445566778899aabbccddeeff",
        "rescaleAttemptId": 2,
        "vertices": vertices,
        "slots": {},
        "schedulerStates": [],
        "startTimestampInMillis": 1_796_000_000_000i64,
        "endTimestampInMillis": 1_796_000_000_412i64,
        "terminalState": if failed { "FAILED" } else { "COMPLETED" },
        "triggerCause": "UPDATE_REQUIREMENT",
        "terminatedReason": if failed { "EXCEPTION_OCCURRED" } else { "SUCCEEDED" },
        "sluice": record(every_recorded_change()[0].clone(), failed),
    })
}

#[test]
fn flinks_rescale_details_round_trip_in_history_and_details_form() {
    let info = |id: &str, before: Value, after: Value, desired: Value| {
        json!({
            "jobVertexId": id, "jobVertexName": "map",
            "slotSharingGroupId": "99887766554433221100ffeeddccbbaa",
            "slotSharingGroupName": "default",
            "desiredParallelism": desired, "sufficientParallelism": 1,
            "preRescaleParallelism": before, "postRescaleParallelism": after,
        })
    };
    let detailed = json!({
        "bb00": info("bb00", json!(1), json!(2), json!(2)),
        "aa00": info("aa00", Value::Null, json!(2), json!(2)),
        "cc00": info("cc00", json!(2), Value::Null, json!(2)),
    });
    let d: JobRescaleDetails = round_trips(details(detailed, false));
    // The job's vertex order, not the ids' order.
    assert_eq!(d.vertices.0[0].0, "bb00");
    let h: JobRescaleDetails = round_trips(details(json!({}), true));
    assert!(h.vertices.is_empty() && h.sluice.is_some());
    let history: Vec<JobRescaleDetails> =
        round_trips(json!([details(json!({}), false), details(json!({}), true)]));
    assert_eq!(history.len(), 2);
    // A Flink answer has no `sluice`: it reads as absent.
    let mut flink = details(json!({}), false);
    flink.as_object_mut().unwrap().remove("sluice");
    let f: JobRescaleDetails = serde_json::from_value(flink).unwrap();
    assert_eq!(f.sluice, None);
}

#[test]
fn the_rescales_overview_round_trips_with_and_without_latest() {
    let o: RescalesOverview = round_trips(json!({
        "rescalesCounts": {"ignored": 0, "inProgress": 0, "completed": 3, "failed": 1},
        "latest": {"completed": details(json!({}), false), "failed": details(json!({}), true), "ignored": null},
    }));
    assert_eq!(o.rescales_counts.completed, 3);
    let empty: RescalesOverview = round_trips(json!({
        "rescalesCounts": {"ignored": 0, "inProgress": 0, "completed": 0, "failed": 0},
        "latest": {"completed": null, "failed": null, "ignored": null},
    }));
    assert_eq!(empty, RescalesOverview::default());
}

#[test]
fn the_autopilot_log_round_trips_as_decisions_are_reported() {
    // `sluice_autopilot::Decision::to_json`'s keys and order.
    let decision = |id: u64, settled: bool| {
        let m = |rate: f64| {
            json!({"bottleneck": "map", "parallelism": 1, "bottleneck-rate": rate,
                   "throughput": 990.0, "working-subtasks": 1})
        };
        json!({
            "id": id,
            "time": 1_796_000_000_000u64,
            "decided-time": if settled { json!(1_796_000_030_000u64) } else { Value::Null },
            "cause": "under-provisioned",
            "verdict": "map is busy",
            "change": {"kind": "parallelism", "operator": "map", "parallelism": 2, "ship": "REBALANCE"},
            "change-text": "parallelism of `map` 1 -> 2 behind REBALANCE",
            "evidence": ["busy 990 ms/s"],
            "before": m(1000.0),
            "after": if settled { m(1900.5) } else { Value::Null },
            "gain": if settled { json!({"bottleneck-rate": 0.901, "throughput": 0.0}) } else { Value::Null },
            "outcome": if settled { "kept" } else { "applied" },
            "reason": Value::Null,
            "notes": ["~ [2] map  parallelism 1 -> 2"],
        })
    };
    let log: AutopilotLog =
        round_trips(json!({"decisions": [decision(1, true), decision(2, false)], "dropped": 4}));
    assert_eq!(log.decisions[1].after, None);
    assert_eq!(log.dropped, 4);
    let empty: AutopilotLog = round_trips(json!({"decisions": [], "dropped": 0}));
    assert_eq!(empty, AutopilotLog::default());
    let accepted: DecisionAccepted = round_trips(json!({"id": 3}));
    assert_eq!(accepted.id, 3);
}
