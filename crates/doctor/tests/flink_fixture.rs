//! The doctor on real Flink 2.3 REST answers (tests/fixtures/flink/flink-rest/skew/): a hot key
//! makes subtask 1 of `sum-per-key -> counting-sink: Writer` busy while subtask 0 idles.

use serde_json::Value;
use sluice_doctor::{diagnose, Cause, JobView, PlanChange, SubtaskSample, VertexView};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-rest/skew/"
);

fn fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{DIR}{name}")).unwrap()).unwrap()
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// Builds the view as an adapter would: vertices and inputs from `/jobs/:id` (+ its plan), metrics
/// from `/jobs/:id/vertices/:vid/subtasks/:n/metrics`. Flink has no hot-keys endpoint.
fn flink_job() -> JobView {
    let job = fixture("job.json");
    let vs = job["vertices"].as_array().unwrap();
    let ids: Vec<&str> = vs.iter().map(|v| v["id"].as_str().unwrap()).collect();
    let slugs = [
        "v0-source-generator-map",
        "v1-sum-per-key-counting-sink-writer",
    ];
    let nodes = job["plan"]["nodes"].as_array().unwrap();
    let mut vertices: Vec<VertexView> = vs
        .iter()
        .zip(slugs)
        .map(|(v, slug)| {
            let id = v["id"].as_str().unwrap();
            let node = nodes.iter().find(|n| n["id"] == id).unwrap();
            let inputs = node["inputs"].as_array().cloned().unwrap_or_default();
            let p = v["parallelism"].as_u64().unwrap() as usize;
            let name = v["name"].as_str().unwrap().to_string();
            VertexView {
                id: id.to_string(),
                parallelism: p,
                inputs: inputs
                    .iter()
                    .map(|i| {
                        ids.iter()
                            .position(|x| *x == i["id"].as_str().unwrap())
                            .unwrap()
                    })
                    .collect(),
                ship_strategies: inputs
                    .iter()
                    .map(|i| i["ship_strategy"].as_str().unwrap().to_string())
                    .collect(),
                is_source: inputs.is_empty(),
                operators: name.split(" -> ").map(str::to_string).collect(),
                name,
                subtasks: (0..p)
                    .map(|n| {
                        let values = fixture(&format!("{slug}-subtask{n}-metrics.json"));
                        let get = |k: &str| {
                            values
                                .as_array()
                                .unwrap()
                                .iter()
                                .find(|m| m["id"] == k)
                                .and_then(|m| number(&m["value"]))
                        };
                        SubtaskSample {
                            busy: get("busyTimeMsPerSecond"),
                            backpressured: get("backPressuredTimeMsPerSecond"),
                            idle: get("idleTimeMsPerSecond"),
                            records_in: get("numRecordsInPerSecond"),
                            records_out: get("numRecordsOutPerSecond"),
                            cpu: get("cpuTimeMsPerSecond"),
                            ..Default::default()
                        }
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    let n = vertices.len();
    for i in 0..n {
        let consumed = (0..n).any(|j| vertices[j].inputs.contains(&i));
        vertices[i].is_sink = !consumed;
    }
    JobView {
        vertices,
        available_cores: None,
    }
}

#[test]
fn flink_skew_capture_is_key_skew_on_subtask_1() {
    let d = diagnose(&flink_job());
    let b = d.bottleneck.as_ref().expect("a bottleneck");
    assert_eq!(b.vertex_name, "sum-per-key -> counting-sink: Writer");
    assert_eq!(b.subtasks, vec![1]);
    assert_eq!(
        b.operator.as_deref(),
        Some("sum-per-key"),
        "the keyed operator heads the chain"
    );
    assert_eq!(d.cause, Cause::KeySkew { hot_keys: vec![] });
    assert!(
        d.evidence
            .iter()
            .any(|e| e.starts_with("`Source: generator -> map` is backpressured (max 80%)")),
        "{:#?}",
        d.evidence
    );
    assert!(d.evidence.iter().any(|e| e.contains("will not help")));
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("they receive 90% of the vertex's records")),
        "{:#?}",
        d.evidence
    );
    assert!(
        d.undetermined
            .iter()
            .any(|u| u.starts_with("CPU time: could not be determined")),
        "{:#?}",
        d.undetermined
    );
    assert!(d
        .undetermined
        .iter()
        .any(|u| u.starts_with("hot keys: not reported")));
    assert_eq!(
        d.fix.as_ref().unwrap().plan_change,
        Some(PlanChange::TwoPhase {
            operator: "sum-per-key".into(),
            buckets: 16
        })
    );
    assert!(d.confidence >= 0.75, "{}", d.confidence);
}
