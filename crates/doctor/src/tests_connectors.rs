//! The connector rules on synthetic jobs: a partitioned source at its ceiling, lag as evidence,
//! a sink waiting on its database.

use super::tests::{bp2, idle2, job, sub, with_cpu};
use super::*;

/// A source subtask owning `splits` partitions with lag `pending`.
fn src(busy: f64, bp: f64, idle: f64, splits: f64, pending: f64) -> SubtaskSample {
    let mut s = with_cpu(sub(busy, bp, idle, 0.0), busy * 0.9);
    s.records_out = Some(if busy > 500.0 { 50_000.0 } else { 0.0 });
    s.assigned_splits = Some(splits);
    s.pending_records = Some(pending);
    s
}

#[test]
fn four_subtasks_on_two_partitions_say_add_partitions_and_name_the_idle_ones() {
    let j = job(
        vec![
            src(1000.0, 0.0, 0.0, 1.0, 5e5),
            src(990.0, 0.0, 10.0, 1.0, 5e5),
            src(0.0, 0.0, 1000.0, 0.0, 0.0),
            src(0.0, 0.0, 1000.0, 0.0, 0.0),
        ],
        idle2(),
        idle2(),
    );
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::SourceCeiling, "{:#?}", d);
    assert_eq!(
        d.source_splits,
        Some(SourceSplits {
            partitions: 2,
            idle_subtasks: vec![2, 3]
        })
    );
    let fix = d.fix.clone().unwrap();
    assert!(fix.change.contains("add partitions"), "{}", fix.change);
    assert!(fix.change.contains("2 → 4"), "{}", fix.change);
    assert!(
        fix.description.contains("cannot help"),
        "{}",
        fix.description
    );
    assert_eq!(fix.plan_change, None, "partitions are not a plan change");
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("3/4, 4/4 own no partition")),
        "{:?}",
        d.evidence
    );
    assert_eq!(d.bottleneck.unwrap().subtasks, vec![0, 1]);
    let json = to_json(&diagnose(&j));
    assert_eq!(json["source-splits"]["partitions"], 2);
    assert_eq!(json["source-splits"]["idle-subtasks"][1], 3);
}

#[test]
fn without_split_counts_the_same_breakdown_is_uneven_load() {
    // The facts make the difference: without assignedSplits the doctor cannot know the idle
    // subtasks have nothing to read.
    let mut subs = vec![
        src(1000.0, 0.0, 0.0, 1.0, 0.0),
        src(990.0, 0.0, 10.0, 1.0, 0.0),
        src(0.0, 0.0, 1000.0, 0.0, 0.0),
        src(0.0, 0.0, 1000.0, 0.0, 0.0),
    ];
    for s in &mut subs {
        s.assigned_splits = None;
    }
    let d = diagnose(&job(subs, idle2(), idle2()));
    assert_eq!(d.cause, Cause::UnevenLoad);
    assert_eq!(d.source_splits, None);
}

#[test]
fn one_subtask_per_partition_all_busy_means_more_partitions_and_subtasks() {
    let j = job(
        vec![
            src(1000.0, 0.0, 0.0, 1.0, 1e6),
            src(1000.0, 0.0, 0.0, 1.0, 1e6),
        ],
        idle2(),
        idle2(),
    );
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::SourceCeiling);
    let change = d.fix.unwrap().change;
    assert!(
        change.contains("2 → 3") && change.contains("parallelism 3"),
        "{change}"
    );
    assert_eq!(d.source_splits.unwrap().idle_subtasks, Vec::<usize>::new());
}

#[test]
fn growing_lag_while_backpressured_means_throttled_by_the_bottleneck() {
    let view = job(bp2(), idle2(), idle2());
    let snapshot = |lag: f64| -> Snapshot {
        let mut s = src(200.0, 800.0, 0.0, 1.0, lag);
        s.records_out = Some(10_000.0);
        vec![
            vec![s.clone(), s],
            vec![
                with_cpu(sub(1000.0, 0.0, 0.0, 10_000.0), 950.0),
                with_cpu(sub(1000.0, 0.0, 0.0, 10_000.0), 950.0),
            ],
            idle2(),
        ]
    };
    let samples: Vec<Snapshot> = [1e4, 3e4, 6e4, 9e4].into_iter().map(snapshot).collect();
    let d = diagnose_window(&view, &samples);
    assert_eq!(d.bottleneck.as_ref().unwrap().vertex, 1, "{d:#?}");
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("throttled by the bottleneck") && e.contains("20000 → 180000")),
        "{:?}",
        d.evidence
    );
    let lag = d.lag.unwrap();
    assert!(lag.growing());
    assert_eq!(
        to_json(&diagnose_window(&view, &samples))["lag"]["growing"],
        true
    );
}

#[test]
fn lag_near_zero_and_nothing_busy_means_the_input_is_the_limit() {
    let view = job(
        vec![
            src(50.0, 0.0, 950.0, 1.0, 3.0),
            src(40.0, 0.0, 960.0, 1.0, 0.0),
        ],
        idle2(),
        idle2(),
    );
    let d = diagnose(&view);
    assert_eq!(d.cause, Cause::NoBottleneck);
    assert!(d.confidence >= 0.9, "{}", d.confidence);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("lag is about 0") && e.contains("input is the limit")),
        "{:?}",
        d.evidence
    );
}

fn pg_sink(max_rows: &str, cpu: f64) -> JobView {
    let s = |_| {
        let mut x = with_cpu(sub(950.0, 0.0, 50.0, 2000.0), cpu);
        x.send_time = Some(0.4);
        x
    };
    let mut j = job(bp2(), bp2(), vec![s(0), s(1)]);
    j.vertices[2].options = vec![ConnectorOption {
        operator: "Sink: out".into(),
        key: MAX_ROWS_OPTION.into(),
        value: max_rows.into(),
    }];
    j
}

#[test]
fn a_sink_waiting_on_small_writes_gets_batch_the_writes_as_a_sink_option() {
    let d = diagnose(&pg_sink("1", 60.0));
    assert_eq!(d.cause, Cause::SinkLimit, "{d:#?}");
    let fix = d.fix.unwrap();
    assert_eq!(
        fix.plan_change,
        Some(PlanChange::SinkOption {
            operator: "Sink: out".into(),
            key: MAX_ROWS_OPTION.into(),
            value: BATCH_ROWS.to_string(),
        })
    );
    assert!(
        fix.description.starts_with("batch the writes"),
        "{}",
        fix.description
    );
    assert!(
        d.evidence.iter().any(|e| e.contains("currentSendTime")),
        "{:?}",
        d.evidence
    );
    let json = plan_change_json(fix.plan_change.as_ref().unwrap());
    assert_eq!(json["kind"], "sink-option");
    assert_eq!(json["value"], "1000");
}

#[test]
fn a_sink_already_batching_is_scaled_instead() {
    let d = diagnose(&pg_sink("5000", 60.0));
    assert_eq!(d.cause, Cause::SinkLimit);
    let fix = d.fix.unwrap();
    assert!(
        matches!(
            fix.plan_change,
            Some(PlanChange::Parallelism { parallelism: 3, .. })
        ),
        "{:?}",
        fix.plan_change
    );
    assert!(fix.description.contains("has room"), "{}", fix.description);
}

#[test]
fn small_batches_are_batched_even_when_the_sink_computes() {
    // On the CPU (a loaded machine, or per-row work): batching still saves a request per row.
    let d = diagnose(&pg_sink("1", 900.0));
    assert_eq!(d.cause, Cause::SinkLimit);
    assert!(matches!(
        d.fix.unwrap().plan_change,
        Some(PlanChange::SinkOption { .. })
    ));
}

#[test]
fn a_batched_sink_computing_hard_is_the_generic_sink_limit() {
    let d = diagnose(&pg_sink("5000", 900.0));
    assert_eq!(d.cause, Cause::SinkLimit);
    assert!(matches!(
        d.fix.unwrap().plan_change,
        Some(PlanChange::Parallelism { .. })
    ));
}

#[test]
fn a_sink_fed_a_keyed_stream_is_scaled_with_its_keyed_operator_behind_hash() {
    // `agg` (HASH input) → FORWARD → the sink: an upsert's per-key order must hold, so the
    // keyed operator is raised with HASH kept and the sink moves with it.
    let mut j = pg_sink("5000", 60.0);
    j.vertices[2].ship_strategies = vec!["FORWARD".into()];
    j.vertices[1] = VertexView {
        subtasks: bp2(),
        ..j.vertices[1].clone()
    };
    let d = diagnose(&j);
    assert_eq!(
        d.fix.unwrap().plan_change,
        Some(PlanChange::Parallelism {
            operator: "agg".into(),
            parallelism: 3,
            ship: ShipStrategy::Hash
        })
    );
}
