//! The doctor on real Flink 2.3 REST answers (tests/fixtures/flink/flink-rest/skew/): a hot key
//! makes subtask 1 of `sum-per-key -> counting-sink: Writer` busy while subtask 0 idles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use sluice_doctor::flink_rest::{read_graph, subtask_sample};
use sluice_doctor::{diagnose, Cause, JobView, PlanChange};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-rest/skew/"
);

fn fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{DIR}{name}")).unwrap()).unwrap()
}

/// Builds the view with the shared adapter ([`sluice_doctor::flink_rest`]), as the CLI does:
/// vertices and inputs from `/jobs/:id` (+ its plan), metrics from
/// `/jobs/:id/vertices/:vid/subtasks/:n/metrics`. Flink has no hot-keys endpoint.
fn flink_job() -> JobView {
    let mut vertices = read_graph(&fixture("job.json")).unwrap();
    let slugs = [
        "v0-source-generator-map",
        "v1-sum-per-key-counting-sink-writer",
    ];
    for (v, slug) in vertices.iter_mut().zip(slugs) {
        v.subtasks = (0..v.parallelism)
            .map(|n| {
                let answer = fixture(&format!("{slug}-subtask{n}-metrics.json"));
                subtask_sample(&answer, &v.operators)
            })
            .collect();
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
