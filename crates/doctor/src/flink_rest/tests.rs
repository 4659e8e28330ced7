//! The adapter over real Flink 2.3 REST answers (tests/fixtures/flink/flink-rest/skew/, read
//! only): a hot key makes subtask 1 of `sum-per-key -> counting-sink: Writer` busy while
//! subtask 0 idles.

use serde_json::{json, Value};

use super::*;
use crate::{checkpoint_advice, diagnose, Cause, JobView, PlanChange};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-rest/skew/"
);
const JOB_ID: &str = "3ae16f48a563821c4f57820703ba6b0f";
const SOURCE_ID: &str = "cbc357ccb763df2852fee8c4fc7d55f2";
const KEYED_ID: &str = "90bea66de1c231edf33913ecd54406c1";
const STEMS: [&str; 2] = [
    "v0-source-generator-map",
    "v1-sum-per-key-counting-sink-writer",
];

fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{DIR}{name}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The view as the CLI builds it from one snapshot of the capture.
fn flink_job() -> JobView {
    let mut vertices = read_graph(&fixture("job.json")).unwrap();
    for (v, stem) in vertices.iter_mut().zip(STEMS) {
        v.subtasks = (0..v.parallelism)
            .map(|n| {
                subtask_sample(
                    &fixture(&format!("{stem}-subtask{n}-metrics.json")),
                    &v.operators,
                )
            })
            .collect();
    }
    JobView {
        vertices,
        available_cores: slot_cap(&fixture("overview.json")),
    }
}

#[test]
fn the_graph_comes_from_the_job_and_its_plan() {
    let vs = read_graph(&fixture("job.json")).unwrap();
    assert_eq!(vs.len(), 2);
    let (src, keyed) = (&vs[0], &vs[1]);
    assert_eq!(
        (src.id.as_str(), src.name.as_str(), src.parallelism),
        (SOURCE_ID, "Source: generator -> map", 2)
    );
    assert_eq!(src.operators, ["Source: generator", "map"]);
    assert!(src.is_source && !src.is_sink);
    assert!(src.inputs.is_empty() && src.ship_strategies.is_empty());
    assert_eq!(keyed.id, KEYED_ID);
    assert_eq!(keyed.operators, ["sum-per-key", "counting-sink: Writer"]);
    assert_eq!(keyed.inputs, vec![0]);
    assert_eq!(keyed.ship_strategies, vec!["HASH"]);
    assert!(!keyed.is_source && keyed.is_sink);
    assert!(vs
        .iter()
        .all(|v| v.subtasks.is_empty() && v.hot_keys.is_none()));
    // The same graph from the later answer (job still running).
    assert_eq!(read_graph(&fixture("job-later.json")).unwrap(), vs);
}

#[test]
fn subtask_metrics_are_read_from_flinks_strings() {
    let ops = ["Source: generator".to_string(), "map".to_string()];
    let s = subtask_sample(
        &fixture(&format!("{}-subtask0-metrics.json", STEMS[0])),
        &ops,
    );
    assert_eq!(s.busy, Some(200.0));
    assert_eq!(s.backpressured, Some(800.0));
    assert_eq!(s.idle, Some(0.0));
    assert_eq!(s.records_in, Some(0.0));
    assert!(s
        .records_out
        .is_some_and(|r| (r - 113_920.833).abs() < 0.01));
    // Flink reports none of Sluice's extras.
    assert_eq!((s.cpu, s.cpu_wait, s.state_access), (None, None, None));
    assert!(s.operator_busy.is_empty());
    let hot = subtask_sample(
        &fixture(&format!("{}-subtask1-metrics.json", STEMS[1])),
        &[],
    );
    assert_eq!(
        (hot.busy, hot.backpressured, hot.idle),
        (Some(999.0), Some(0.0), Some(1.0))
    );
    assert!(hot.records_in.is_some_and(|r| (r - 204_619.5).abs() < 0.01));
}

#[test]
fn the_job_is_picked_from_the_overview() {
    let ov = fixture("jobs-overview.json");
    assert_eq!(pick_job(&ov, None, "flink").unwrap(), JOB_ID);
    assert_eq!(
        pick_job(&ov, Some(&JOB_ID.to_uppercase()), "flink").unwrap(),
        JOB_ID
    );
    let e = pick_job(&ov, Some("00000000000000000000000000000000"), "http://x").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "unknown job 00000000000000000000000000000000 on http://x; its jobs: {JOB_ID} \
             (RestScenario-skew, RUNNING)"
        )
    );
    let e = pick_job(&json!({"jobs": []}), Some("a"), "http://x").unwrap_err();
    assert_eq!(e.to_string(), "unknown job a on http://x; it has no jobs");
    assert_eq!(
        pick_job(&json!({"jobs": []}), None, "http://x").unwrap_err(),
        DoctorError::NoJobs {
            server: "http://x".into()
        }
    );
    assert!(
        pick_job(&fixture("overview.json"), None, "x").is_err(),
        "not a job list"
    );
}

#[test]
fn the_metrics_asked_for_name_each_chained_operator() {
    let vs = read_graph(&fixture("job.json")).unwrap();
    let path = subtask_metrics_path(JOB_ID, &vs[1], 1);
    assert!(
        path.starts_with(&format!(
            "/jobs/{JOB_ID}/vertices/{KEYED_ID}/subtasks/1/metrics?get=busyTimeMsPerSecond,"
        )),
        "{path}"
    );
    assert!(
        path.contains(",sum-per-key.busyTimeMsPerSecond,counting-sink__Writer.busyTimeMsPerSecond")
    );
    // The sink's own input rate (a sink chained behind a source has no task-level one).
    assert!(path.ends_with(",counting-sink__Writer.numRecordsInPerSecond"));
    assert!(path.contains(STATE_ACCESS) && path.contains(CPU_WAIT) && path.contains(CPU));
    assert_eq!(
        hot_keys_path(JOB_ID, &vs[0]),
        format!("/jobs/{JOB_ID}/vertices/{SOURCE_ID}/hot-keys")
    );
}

#[test]
fn sluice_extras_are_read_when_present() {
    let ops = vec!["Source: gen".to_string(), "map".to_string()];
    let answer = json!([
        {"id": "busyTimeMsPerSecond", "value": "900.0"},
        {"id": "cpuTimeMsPerSecond", "value": "850.5"},
        {"id": "cpuWaitTimeMsPerSecond", "value": "NaN"},
        {"id": "stateAccessTimeMsPerSecond", "value": "12"},
        {"id": "Source__gen.busyTimeMsPerSecond", "value": "100.0"},
        {"id": "map.busyTimeMsPerSecond", "value": "800.0"},
    ]);
    let s = subtask_sample(&answer, &ops);
    assert_eq!(s.cpu, Some(850.5));
    assert_eq!(s.cpu_wait, None, "NaN is not reported");
    assert_eq!(s.state_access, Some(12.0));
    assert_eq!(
        s.operator_busy,
        vec![
            ("Source: gen".to_string(), 100.0),
            ("map".to_string(), 800.0)
        ]
    );
    let keys = read_hot_keys(&json!({"hot-keys": [
        {"key": "0", "share-of-vertex": 0.8},
        {"key": 7, "share-of-vertex": 0.05},
        {"key": "no share"},
    ]}));
    assert_eq!(
        keys,
        vec![
            HotKey {
                key: "0".into(),
                share: 0.8
            },
            HotKey {
                key: "7".into(),
                share: 0.05
            }
        ]
    );
    assert_eq!(read_hot_keys(&json!({})), vec![]);
}

#[test]
fn operator_scopes_follow_flink() {
    assert_eq!(
        sanitize_operator_name("Source: generator"),
        "Source__generator"
    );
    assert_eq!(
        sanitize_operator_name("counting-sink: Writer"),
        "counting-sink__Writer"
    );
    assert_eq!(sanitize_operator_name("a.b,c"), "a_b_c");
    assert_eq!(sanitize_operator_name(&"x".repeat(100)).len(), 80);
}

#[test]
fn slots_cap_a_flink_cluster_but_not_sluice() {
    assert_eq!(slot_cap(&fixture("overview.json")), Some(2));
    assert_eq!(
        slot_cap(&json!({"slots-total": 4, "flink-commit": "sluice-0.1.0"})),
        None
    );
    assert_eq!(slot_cap(&json!({"slots-total": 0})), None);
}

#[test]
fn checkpoint_statistics_come_from_both_answers() {
    let stats = checkpoint_stats(
        &fixture("job-checkpoints.json"),
        &fixture("job-checkpoints-config.json"),
    );
    assert_eq!(
        (
            stats.unaligned,
            stats.aligned_timeout_ms,
            stats.interval_ms,
            stats.timeout_ms
        ),
        (false, 0, 2_000, 600_000)
    );
    assert_eq!((stats.completed, stats.failed), (18, 1));
    assert_eq!(stats.duration_max_ms, 260.0);
    assert!((stats.duration_p90_ms - 158.3).abs() < 1e-6);
    // One failed aligned checkpoint while the source is 80% backpressured: switch to unaligned.
    let advice = checkpoint_advice(&stats, &flink_job()).expect("advice");
    assert!(advice.contains("1 of 19 checkpoints failed"), "{advice}");
    assert!(
        advice.contains("`Source: generator -> map` is backpressured (80%"),
        "{advice}"
    );
    assert_eq!(
        checkpoint_stats(&json!({}), &json!({})),
        CheckpointStats::default()
    );
}

#[test]
fn the_capture_diagnoses_as_key_skew_on_subtask_1() {
    let job = flink_job();
    assert_eq!(job.available_cores, Some(2));
    let d = diagnose(&job);
    let b = d.bottleneck.as_ref().expect("a bottleneck");
    assert_eq!(b.vertex_name, "sum-per-key -> counting-sink: Writer");
    assert_eq!(b.subtasks, vec![1]);
    assert_eq!(b.operator.as_deref(), Some("sum-per-key"));
    assert_eq!(d.cause, Cause::KeySkew { hot_keys: vec![] });
    assert_eq!(
        d.fix.and_then(|f| f.plan_change),
        Some(PlanChange::TwoPhase {
            operator: "sum-per-key".into(),
            buckets: 16
        })
    );
}

#[test]
fn an_absurd_parallelism_is_refused_naming_the_field_and_vertex() {
    for bad in [
        serde_json::json!(1e18),
        serde_json::json!(-1),
        serde_json::json!(2.5),
        serde_json::json!("many"),
    ] {
        let mut job = fixture("job.json");
        job["vertices"][0]["parallelism"] = bad.clone();
        let e = read_graph(&job).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, crate::DoctorError::BadParallelism { .. })
                && msg.contains("`parallelism`")
                && msg.contains("Source: generator")
                && msg.contains("32768"),
            "{bad}: {msg}"
        );
    }
    // The bound itself is accepted.
    let mut job = fixture("job.json");
    job["vertices"][0]["parallelism"] = serde_json::json!(32768);
    assert_eq!(read_graph(&job).unwrap()[0].parallelism, 32768);
}

#[test]
fn connector_options_and_metrics_are_read_when_the_server_has_them() {
    let job = serde_json::json!({
        "vertices": [
            {"id": "a", "name": "Source: kafka", "parallelism": 4},
            {"id": "b", "name": "Sink: pg", "parallelism": 1, "connector-options": [
                {"operator": "Sink: pg", "key": "sink.buffer-flush.max-rows", "value": "1"}
            ]}
        ],
        "plan": {"nodes": [
            {"id": "a", "inputs": []},
            {"id": "b", "inputs": [{"id": "a", "ship_strategy": "REBALANCE"}]}
        ]}
    });
    let g = read_graph(&job).unwrap();
    assert_eq!(g[1].options.len(), 1);
    assert_eq!(g[1].options[0].key, "sink.buffer-flush.max-rows");
    assert_eq!(g[1].options[0].value, "1");
    assert!(g[0].options.is_empty());
    let names = subtask_metric_names(&g[0]);
    assert!(
        names.contains(",pendingRecords,Source__kafka.pendingRecords"),
        "{names}"
    );
    assert!(names.contains("assignedSplits"), "{names}");
    assert!(subtask_metric_names(&g[1]).contains("Sink__pg.currentSendTime"));
    // Scoped by the source operator, as Flink names operator metrics.
    let answer = serde_json::json!([
        {"id": "Source__kafka.pendingRecords", "value": "1234"},
        {"id": "assignedSplits", "value": "0"}
    ]);
    let s = subtask_sample(&answer, &g[0].operators);
    assert_eq!(s.pending_records, Some(1234.0));
    assert_eq!(s.assigned_splits, Some(0.0));
    assert_eq!(s.send_time, None);
}

#[test]
fn the_debloating_setting_is_read_from_the_job_configuration() {
    // Flink's capture: nothing set (the default, off, applies).
    assert_eq!(
        buffer_debloat_enabled(Some(&fixture("job-config.json")), None),
        None
    );
    // Sluice lists it in the user config; Flink's per-job configuration answer wins.
    let sluice = |on: &str| json!({"execution-config": {"user-config": {BUFFER_DEBLOAT_KEY: on}}});
    assert_eq!(
        buffer_debloat_enabled(Some(&sluice("true")), None),
        Some(true)
    );
    assert_eq!(
        buffer_debloat_enabled(Some(&sluice("false")), None),
        Some(false)
    );
    let jm = json!([{"key": "parallelism.default", "value": "2"},
                    {"key": BUFFER_DEBLOAT_KEY, "value": "true"}]);
    assert_eq!(
        buffer_debloat_enabled(Some(&sluice("false")), Some(&jm)),
        Some(true)
    );
    assert_eq!(buffer_debloat_enabled(Some(&sluice("maybe")), None), None);
}

#[test]
fn a_lookup_joins_key_repeat_ratio_is_asked_for_and_read() {
    let v = crate::VertexView {
        operators: vec!["blocking-call".into(), "Sink: digest".into()],
        options: vec![crate::ConnectorOption {
            operator: "blocking-call".into(),
            key: "lookup.async".into(),
            value: "false".into(),
        }],
        ..crate::VertexView::default()
    };
    let names = subtask_metric_names(&v);
    assert!(
        names.contains(",blocking-call.lookupKeyRepeatPerMille"),
        "{names}"
    );
    let s = subtask_sample(
        &json!([{"id": "blocking-call.lookupKeyRepeatPerMille", "value": "875"}]),
        &v.operators,
    );
    assert_eq!(s.key_repeat, Some(0.875));
}
