//! The plan fixer on the skew job: the changes it makes, the ones it refuses, and that a fixed
//! job gives the same answer.

use sluice_datastream::fixer::{apply, NodeChange, PlanChange};
use sluice_datastream::{ShipStrategy, StreamEnv};
use sluice_jobs::skew::{build, SkewConfig};

fn skew(records: u64) -> (StreamEnv, sluice_jobs::skew::SkewJob) {
    let env = StreamEnv::new();
    let job = build(
        &env,
        &SkewConfig {
            records,
            ..SkewConfig::default()
        },
    )
    .unwrap();
    (env, job)
}

fn original_sums(records: u64) -> std::collections::BTreeMap<i64, i64> {
    let (env, job) = skew(records);
    env.execute().unwrap();
    job.final_sums()
}

#[test]
fn raising_the_map_behind_rebalance_changes_parallelism_and_ship_strategy_only() {
    let (env, job) = skew(50_000);
    let diff = apply(
        &env,
        &PlanChange::Parallelism {
            operator: "map".into(),
            parallelism: 4,
            ship: ShipStrategy::Rebalance,
        },
    )
    .unwrap();
    assert_eq!(diff.changes.len(), 1, "{diff}");
    match &diff.changes[0] {
        NodeChange::Changed {
            name,
            parallelism,
            inputs,
            ..
        } => {
            assert_eq!(name, "map");
            assert_eq!(*parallelism, (2, 4));
            assert_eq!(inputs.0[0].1, ShipStrategy::Forward);
            assert_eq!(inputs.1[0].1, ShipStrategy::Rebalance);
        }
        other => panic!("{other:?}"),
    }
    let text = diff.to_string();
    assert!(text.contains("parallelism 2 -> 4"), "{text}");
    assert!(
        text.contains("FORWARD from 1 -> REBALANCE from 1"),
        "{text}"
    );
    env.execute().unwrap();
    assert_eq!(job.final_sums(), original_sums(50_000));
}

#[test]
fn rebalancing_into_a_keyed_operator_is_refused_with_a_reason() {
    let (env, _) = skew(1000);
    let before = env.execution_plan().unwrap();
    let err = apply(
        &env,
        &PlanChange::Parallelism {
            operator: "sum-per-key".into(),
            parallelism: 4,
            ship: ShipStrategy::Rebalance,
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, sluice_datastream::GraphError::WouldChangeResults(_)),
        "{err}"
    );
    assert!(err.to_string().contains("keyed"), "{err}");
    assert_eq!(
        env.execution_plan().unwrap(),
        before,
        "a refused fix changes nothing"
    );
    // HASH into a non-keyed operator: no key to hash.
    let err = apply(
        &env,
        &PlanChange::Parallelism {
            operator: "map".into(),
            parallelism: 4,
            ship: ShipStrategy::Hash,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("HASH needs a key"), "{err}");
    let err = apply(
        &env,
        &PlanChange::TwoPhase {
            operator: "map".into(),
            buckets: 8,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("no two-phase form"), "{err}");
    let err = apply(
        &env,
        &PlanChange::TwoPhase {
            operator: "nope".into(),
            buckets: 8,
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("no operator named 'nope'"),
        "{err}"
    );
}

#[test]
fn raising_a_keyed_operator_keeps_hash() {
    let (env, job) = skew(50_000);
    let diff = apply(
        &env,
        &PlanChange::Parallelism {
            operator: "sum-per-key".into(),
            parallelism: 3,
            ship: ShipStrategy::Hash,
        },
    )
    .unwrap();
    assert!(diff.to_string().contains("parallelism 2 -> 3"), "{diff}");
    env.execute().unwrap();
    assert_eq!(job.final_sums(), original_sums(50_000));
}

#[test]
fn the_two_phase_rewrite_keeps_the_answer_and_shows_in_the_diff() {
    let (env, job) = skew(100_000);
    let diff = apply(
        &env,
        &PlanChange::TwoPhase {
            operator: "sum-per-key".into(),
            buckets: 8,
        },
    )
    .unwrap();
    let text = diff.to_string();
    assert!(text.contains("- [4] sum-per-key"), "{text}");
    assert!(text.contains("+ ") && text.contains("salt"), "{text}");
    assert!(text.contains("pre-aggregate (salted)"), "{text}");
    assert!(text.contains("sum-per-key (combine)"), "{text}");
    let g = env.job_graph().unwrap();
    assert!(
        g.vertices.iter().any(|v| v.name.contains("salt")),
        "{:?}",
        g.vertices
    );
    env.execute().unwrap();
    assert_eq!(job.final_sums(), original_sums(100_000));
}

fn slow_sink(records: u64) -> (StreamEnv, sluice_jobs::scenarios::ScenarioJob) {
    let env = StreamEnv::new();
    let cfg = sluice_jobs::scenarios::ScenarioConfig {
        records,
        ..sluice_jobs::scenarios::ScenarioConfig::new("slow-sink")
    };
    let job = sluice_jobs::scenarios::build(&env, &cfg).unwrap();
    (env, job)
}

#[test]
fn a_sink_option_reaches_the_running_sink_and_keeps_the_table() {
    let (env0, job0) = slow_sink(3000);
    env0.execute().unwrap();
    let (env, job) = slow_sink(3000);
    let diff = apply(
        &env,
        &PlanChange::SinkOption {
            operator: "Sink: slow-sink".into(),
            key: "sink.buffer-flush.max-rows".into(),
            value: "500".into(),
        },
    )
    .unwrap();
    assert!(
        matches!(&diff.changes[..], [NodeChange::Option { key, before, after, .. }]
            if key == "sink.buffer-flush.max-rows" && before.as_deref() == Some("1") && after == "500"),
        "{diff}"
    );
    env.execute().unwrap();
    let (t0, t) = (job0.table().unwrap(), job.table().unwrap());
    assert_eq!(t0.contents(), t.contents());
    assert_eq!(t0.requests(), 3000, "one request per row before");
    // 500 rows per request, per subtask, plus the end-of-input flushes.
    assert!(t.requests() <= 3000 / 500 + 4, "{} requests", t.requests());
}

#[test]
fn an_undeclared_sink_option_is_refused_naming_the_declared_ones() {
    let (env, _job) = slow_sink(10);
    let e = apply(
        &env,
        &PlanChange::SinkOption {
            operator: "Sink: slow-sink".into(),
            key: "sink.max-retries".into(),
            value: "3".into(),
        },
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("no connector option 'sink.max-retries'")
            && msg.contains("sink.buffer-flush.max-rows, sink.buffer-flush.interval"),
        "{msg}"
    );
    assert!(matches!(e, sluice_datastream::GraphError::InvalidChange(_)));
}
