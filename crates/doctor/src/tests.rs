//! Every cause on a synthetic job.

use super::*;

pub(crate) fn sub(busy: f64, bp: f64, idle: f64, rin: f64) -> SubtaskSample {
    SubtaskSample {
        busy: Some(busy),
        backpressured: Some(bp),
        idle: Some(idle),
        records_in: Some(rin),
        records_out: Some(rin),
        ..Default::default()
    }
}

pub(crate) fn with_cpu(mut s: SubtaskSample, cpu: f64) -> SubtaskSample {
    s.cpu = Some(cpu);
    s
}

fn with_ops(mut s: SubtaskSample, ops: &[(&str, f64)]) -> SubtaskSample {
    s.operator_busy = ops.iter().map(|(n, ms)| (n.to_string(), *ms)).collect();
    s
}

/// source chain → keyed chain (HASH) → sink (FORWARD... a third vertex via REBALANCE).
pub(crate) fn job(
    src: Vec<SubtaskSample>,
    keyed: Vec<SubtaskSample>,
    sink: Vec<SubtaskSample>,
) -> JobView {
    let vertex =
        |name: &str, ops: &[&str], inputs: Vec<usize>, ship: &[&str], subs: Vec<SubtaskSample>| {
            VertexView {
                id: name.to_string(),
                name: name.to_string(),
                parallelism: subs.len(),
                inputs,
                ship_strategies: ship.iter().map(|s| s.to_string()).collect(),
                is_source: false,
                is_sink: false,
                operators: ops.iter().map(|s| s.to_string()).collect(),
                subtasks: subs,
                hot_keys: None,
                options: Vec::new(),
                profile: None,
            }
        };
    let mut v = vec![
        vertex(
            "Source: gen -> map",
            &["Source: gen", "map"],
            vec![],
            &[],
            src,
        ),
        vertex("agg", &["agg"], vec![0], &["HASH"], keyed),
        vertex("Sink: out", &["Sink: out"], vec![1], &["REBALANCE"], sink),
    ];
    v[0].is_source = true;
    v[2].is_sink = true;
    JobView {
        vertices: v,
        available_cores: None,
    }
}

pub(crate) fn idle2() -> Vec<SubtaskSample> {
    vec![sub(50.0, 0.0, 950.0, 1000.0), sub(50.0, 0.0, 950.0, 1000.0)]
}

pub(crate) fn bp2() -> Vec<SubtaskSample> {
    vec![sub(200.0, 800.0, 0.0, 0.0), sub(200.0, 800.0, 0.0, 0.0)]
}

#[test]
fn key_skew_names_hot_keys_and_proposes_two_phase() {
    let mut j = job(
        bp2(),
        vec![
            sub(1000.0, 0.0, 0.0, 90_000.0),
            sub(150.0, 0.0, 850.0, 10_000.0),
        ],
        idle2(),
    );
    j.vertices[1].hot_keys = Some(vec![
        HotKey {
            key: "0".into(),
            share: 0.8,
        },
        HotKey {
            key: "7".into(),
            share: 0.01,
        },
    ]);
    let d = diagnose(&j);
    let b = d.bottleneck.clone().unwrap();
    assert_eq!(
        (b.vertex, b.subtasks, b.operator.as_deref()),
        (1, vec![0], Some("agg"))
    );
    assert_eq!(
        d.cause,
        Cause::KeySkew {
            hot_keys: vec![HotKey {
                key: "0".into(),
                share: 0.8
            }]
        }
    );
    assert_eq!(
        d.fix.as_ref().unwrap().plan_change,
        Some(PlanChange::TwoPhase {
            operator: "agg".into(),
            buckets: 16
        })
    );
    assert!(
        d.evidence.iter().any(|e| e.contains("will not help")),
        "{:?}",
        d.evidence
    );
    assert!(d.evidence.iter().any(|e| e.contains("key `0` carries 80%")));
    assert!(d
        .evidence
        .iter()
        .any(|e| e.starts_with("`Source: gen -> map` is backpressured")));
    assert!(d.confidence > 0.85, "{}", d.confidence);
    assert!(d.expected_effect.contains("1.8x"), "{}", d.expected_effect);
}

#[test]
fn key_skew_without_hot_keys_says_so() {
    let j = job(
        bp2(),
        vec![
            sub(990.0, 0.0, 10.0, 90_000.0),
            sub(150.0, 0.0, 850.0, 10_000.0),
        ],
        idle2(),
    );
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::KeySkew { hot_keys: vec![] });
    assert!(d
        .undetermined
        .iter()
        .any(|u| u.starts_with("hot keys: not reported")));
    assert!(d
        .undetermined
        .iter()
        .any(|u| u.starts_with("CPU time: could not be determined")));
}

#[test]
fn uneven_load_behind_a_non_keyed_edge() {
    let mut j = job(
        bp2(),
        vec![
            sub(1000.0, 0.0, 0.0, 90_000.0),
            sub(100.0, 0.0, 900.0, 10_000.0),
        ],
        idle2(),
    );
    j.vertices[1].ship_strategies = vec!["FORWARD".into()];
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::UnevenLoad);
    assert_eq!(
        d.fix.unwrap().plan_change,
        Some(PlanChange::Parallelism {
            operator: "agg".into(),
            parallelism: 2,
            ship: ShipStrategy::Rebalance
        })
    );
}

#[test]
fn under_provisioned_keyed_operator_keeps_hash() {
    let busy = |b| with_cpu(sub(b, 0.0, 1000.0 - b, 50_000.0), b * 0.95);
    let j = job(bp2(), vec![busy(980.0), busy(960.0)], idle2());
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::UnderProvisioned);
    assert_eq!(d.bottleneck.as_ref().unwrap().subtasks, vec![0, 1]);
    // ceil(2 × 0.97 / 0.7) = 3
    assert_eq!(
        d.fix.as_ref().unwrap().plan_change,
        Some(PlanChange::Parallelism {
            operator: "agg".into(),
            parallelism: 3,
            ship: ShipStrategy::Hash
        })
    );
    assert!(d
        .fix
        .unwrap()
        .change
        .contains("raise `agg` to parallelism 3 behind HASH"));
    assert!(
        d.expected_effect.starts_with("at least"),
        "{}",
        d.expected_effect
    );
}

#[test]
fn parallelism_is_capped_by_cores() {
    let busy = |b| with_cpu(sub(b, 0.0, 1000.0 - b, 50_000.0), b);
    let mut j = job(bp2(), vec![busy(1000.0); 4], idle2());
    j.available_cores = Some(5);
    let d = diagnose(&j);
    let Some(PlanChange::Parallelism { parallelism, .. }) = d.fix.unwrap().plan_change else {
        panic!()
    };
    assert_eq!(parallelism, 5, "ceil(4/0.7)=6 capped at 5");
    j.available_cores = Some(4);
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::UnderProvisioned);
    assert_eq!(
        d.fix.unwrap().plan_change,
        None,
        "no cores: make it cheaper"
    );
}

#[test]
fn expensive_map_in_a_source_chain_is_named() {
    let s = |_| {
        with_ops(
            with_cpu(sub(1000.0, 0.0, 0.0, 0.0), 990.0),
            &[("Source: gen", 40.0), ("map", 900.0)],
        )
    };
    let j = job(vec![s(0), s(1)], idle2(), idle2());
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::UnderProvisioned);
    let b = d.bottleneck.as_ref().unwrap();
    assert_eq!((b.vertex, b.operator.as_deref()), (0, Some("map")));
    assert_eq!(
        d.fix.unwrap().plan_change,
        Some(PlanChange::Parallelism {
            operator: "map".into(),
            parallelism: 3,
            ship: ShipStrategy::Rebalance
        })
    );
    assert!(
        d.evidence.iter().any(|e| e.contains("`map` takes 96%")),
        "{:?}",
        d.evidence
    );
}

#[test]
fn source_ceiling_when_the_source_operator_is_busy() {
    let s = |_| {
        with_ops(
            with_cpu(sub(1000.0, 0.0, 0.0, 0.0), 990.0),
            &[("Source: gen", 900.0), ("map", 40.0)],
        )
    };
    let j = job(vec![s(0), s(1)], idle2(), idle2());
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::SourceCeiling);
    assert_eq!(
        d.bottleneck.unwrap().operator.as_deref(),
        Some("Source: gen")
    );
    // Without per-operator time: still a source ceiling, less sure.
    let j = job(vec![sub(1000.0, 0.0, 0.0, 0.0); 2], idle2(), idle2());
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::SourceCeiling);
    assert!(d.confidence <= 0.5);
}

#[test]
fn sink_limit() {
    let s = |_| with_cpu(sub(900.0, 0.0, 100.0, 1000.0), 800.0);
    let j = job(bp2(), bp2(), vec![s(0), s(1)]);
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::SinkLimit);
    assert_eq!(d.bottleneck.unwrap().vertex, 2);
    assert!(d.fix.unwrap().description.contains("batch"));
}

#[test]
fn blocking_calls_from_low_cpu() {
    let s = |_| with_cpu(sub(950.0, 0.0, 50.0, 100.0), 50.0);
    let j = job(bp2(), vec![s(0), s(1)], idle2());
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::BlockingCalls);
    assert_eq!(
        d.fix.unwrap().plan_change,
        Some(PlanChange::AsyncCapacity {
            operator: "agg".into(),
            // Little's law: 950 ms busy / 50 ms CPU per second = 19, × 1.25 headroom.
            capacity: 24
        })
    );
    assert!(!d.undetermined.iter().any(|u| u.starts_with("CPU")));
}

/// A blocking lookup join `agg` (it declares `lookup.async` and `lookup.cache = NONE`) whose
/// keys repeat with ratio `repeat`.
fn blocking_lookup(repeat: f64, cache: &str) -> Diagnosis {
    let s = |_| {
        let mut x = with_cpu(sub(950.0, 0.0, 50.0, 100.0), 50.0);
        x.key_repeat = Some(repeat);
        x
    };
    let mut j = job(bp2(), vec![s(0), s(1)], idle2());
    j.vertices[1].options = [("lookup.async", "false"), ("lookup.cache", cache)]
        .iter()
        .map(|(k, v)| crate::ConnectorOption {
            operator: "agg".into(),
            key: k.to_string(),
            value: v.to_string(),
        })
        .collect();
    diagnose(&j)
}

#[test]
fn a_blocking_lookup_whose_keys_repeat_gets_a_cache_before_async() {
    let d = blocking_lookup(0.9, "NONE");
    assert_eq!(d.cause, Cause::BlockingCalls);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("90% of `agg`'s recent lookups")
                && e.contains("a cache before async")),
        "{:?}",
        d.evidence
    );
    let fix = d.fix.unwrap();
    assert!(
        fix.change.contains("LookupCache::partial(10000, 60s)"),
        "{}",
        fix.change
    );
    assert_eq!(
        fix.plan_change,
        Some(PlanChange::LookupCache {
            operator: "agg".into(),
            max_rows: 10_000
        })
    );
    // Keys that hardly repeat, or a cache already on: async with the Little's-law capacity.
    for d in [
        blocking_lookup(0.2, "NONE"),
        blocking_lookup(0.9, "PARTIAL"),
    ] {
        assert_eq!(
            d.fix.unwrap().plan_change,
            Some(PlanChange::AsyncCapacity {
                operator: "agg".into(),
                capacity: 24
            })
        );
    }
    let d = blocking_lookup(0.2, "NONE");
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("a cache would mostly miss")),
        "{:?}",
        d.evidence
    );
}

#[test]
fn state_access_dominates() {
    let s = |_| {
        let mut x = with_cpu(sub(900.0, 0.0, 100.0, 100.0), 880.0);
        x.state_access = Some(600.0);
        x
    };
    let j = job(bp2(), vec![s(0), s(1)], idle2());
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::StateAccess);
    assert!(d.evidence.iter().any(|e| e.contains("keyed-state calls")));
}

#[test]
fn everything_idle_is_no_bottleneck() {
    let d = diagnose(&job(idle2(), idle2(), idle2()));
    assert_eq!(d.cause, Cause::NoBottleneck);
    assert!(d.bottleneck.is_none() && d.fix.is_none());
    assert_eq!(d.verdict(), "no bottleneck: the input is the limit");
}

#[test]
fn periodic_stalls_over_a_window() {
    let busy = |rate| with_cpu(sub(950.0, 0.0, 50.0, rate), 900.0);
    let snap = |rate| vec![bp2(), vec![busy(rate), busy(rate)], idle2()];
    let samples: Vec<Snapshot> = [50_000.0, 50_000.0, 1_000.0, 50_000.0, 50_000.0, 2_000.0]
        .into_iter()
        .map(snap)
        .collect();
    let j = job(vec![], vec![], vec![]);
    let d = diagnose_window(&j, &samples);
    assert_eq!(d.cause, Cause::Stalls, "{:?}", d.evidence);
    assert!(d
        .evidence
        .iter()
        .any(|e| e.starts_with("in 2 of 6 samples")));
    // A steady rate is no stall.
    let steady: Vec<Snapshot> = (0..6).map(|_| snap(50_000.0)).collect();
    assert_eq!(diagnose_window(&j, &steady).cause, Cause::UnderProvisioned);
}

#[test]
fn averages_a_window() {
    let a = vec![vec![with_ops(sub(1000.0, 0.0, 0.0, 10.0), &[("m", 100.0)])]];
    let mut b = vec![vec![sub(500.0, 100.0, 400.0, 30.0)]];
    b[0][0].cpu = Some(40.0);
    let avg = average(&[a, b]);
    let s = &avg[0][0];
    assert_eq!(
        (s.busy, s.backpressured, s.records_in, s.cpu),
        (Some(750.0), Some(50.0), Some(20.0), Some(40.0))
    );
    assert_eq!(s.operator_busy, vec![("m".to_string(), 100.0)]);
}

#[test]
fn busy_is_derived_when_missing() {
    let s = SubtaskSample {
        idle: Some(300.0),
        backpressured: Some(200.0),
        ..Default::default()
    };
    assert_eq!(s.busy_ms(), 500.0);
    assert_eq!(SubtaskSample::default().busy_ms(), 0.0);
}

#[test]
fn walks_from_sources_even_when_listed_out_of_order() {
    let mut j = job(
        bp2(),
        vec![sub(1000.0, 0.0, 0.0, 9.0), sub(100.0, 0.0, 900.0, 1.0)],
        idle2(),
    );
    // Reverse the listing: sink, agg, source.
    j.vertices.reverse();
    j.vertices[0].inputs = vec![1];
    j.vertices[1].inputs = vec![2];
    assert_eq!(topological_order(&j), vec![2, 1, 0]);
    assert_eq!(diagnose(&j).bottleneck.unwrap().vertex, 1);
}

#[test]
fn key_skew_targets_the_keyed_head_even_when_a_chained_sink_is_slower() {
    // `agg -> Sink: last` chained behind HASH: the sink spends more time per record than the
    // aggregation, but the skew enters at the keyed head, which is what two-phase rewrites.
    let mut j = job(
        bp2(),
        vec![
            with_ops(
                sub(1000.0, 0.0, 0.0, 90_000.0),
                &[("agg", 400.0), ("Sink: last", 600.0)],
            ),
            with_ops(
                sub(150.0, 0.0, 850.0, 10_000.0),
                &[("agg", 60.0), ("Sink: last", 90.0)],
            ),
        ],
        idle2(),
    );
    j.vertices[1].name = "agg -> Sink: last".into();
    j.vertices[1].operators = vec!["agg".into(), "Sink: last".into()];
    let d = diagnose(&j);
    assert!(matches!(d.cause, Cause::KeySkew { .. }), "{d:?}");
    assert_eq!(
        d.bottleneck.as_ref().unwrap().operator.as_deref(),
        Some("agg")
    );
    assert_eq!(
        d.fix.unwrap().plan_change,
        Some(PlanChange::TwoPhase {
            operator: "agg".into(),
            buckets: 16
        })
    );
}

#[test]
fn a_chained_operator_with_a_real_share_beats_the_derived_source_time() {
    // On a loaded machine the source's derived time absorbs preemption: 59 % "source", 41 % map.
    let j = job(
        vec![
            with_ops(
                sub(1000.0, 0.0, 0.0, 30_000.0),
                &[("Source: gen", 590.0), ("map", 410.0)],
            ),
            with_ops(
                sub(1000.0, 0.0, 0.0, 30_000.0),
                &[("Source: gen", 580.0), ("map", 420.0)],
            ),
        ],
        idle2(),
        idle2(),
    );
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::UnderProvisioned, "{d:?}");
    assert_eq!(d.bottleneck.unwrap().operator.as_deref(), Some("map"));
}

#[test]
fn waiting_for_a_free_cpu_is_not_blocking() {
    // Busy 100 %, on CPU only 25 %, but 70 % runnable-and-waiting for a core: an oversubscribed
    // machine, not synchronous I/O.
    let starved = |s: SubtaskSample| {
        let mut s = with_cpu(s, 250.0);
        s.cpu_wait = Some(700.0);
        s
    };
    let j = job(
        bp2(),
        vec![
            starved(sub(1000.0, 0.0, 0.0, 50_000.0)),
            starved(sub(1000.0, 0.0, 0.0, 50_000.0)),
        ],
        idle2(),
    );
    let d = diagnose(&j);
    assert_ne!(d.cause, Cause::BlockingCalls, "{d:?}");
    assert!(
        d.evidence.iter().any(|e| e.contains("oversubscribed")),
        "{:?}",
        d.evidence
    );
    // The same numbers without the wait are blocking calls.
    let mut j2 = j.clone();
    for s in &mut j2.vertices[1].subtasks {
        s.cpu_wait = None;
    }
    assert_eq!(diagnose(&j2).cause, Cause::BlockingCalls);
}

#[test]
fn key_skew_on_an_oversubscribed_machine_is_read_from_the_input_rates() {
    // The demo's job under load: the cold subtask waits for a CPU so long that it looks 67 %
    // busy beside the hot one's 98 %; its input rate (a ninth of the hot one's) shows the skew.
    let loaded = |busy: f64, cpu: f64, wait: f64, rin: f64| {
        let mut s = with_cpu(sub(busy, 0.0, 1000.0 - busy, rin), cpu);
        s.cpu_wait = Some(wait);
        s
    };
    let j = job(
        bp2(),
        vec![
            loaded(670.0, 210.0, 400.0, 250_000.0),
            loaded(980.0, 570.0, 380.0, 2_260_000.0),
        ],
        idle2(),
    );
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::KeySkew { hot_keys: vec![] }, "{d:?}");
    assert_eq!(d.bottleneck.as_ref().unwrap().subtasks, vec![1]);
    // Without the CPU wait the same busy figures are uniform load: the rates are not used.
    let mut j2 = j.clone();
    for s in &mut j2.vertices[1].subtasks {
        s.cpu_wait = Some(0.0);
    }
    assert!(
        !matches!(diagnose(&j2).cause, Cause::KeySkew { .. }),
        "{:?}",
        diagnose(&j2)
    );
}

#[test]
fn a_blocking_lookup_join_gets_an_async_lookup() {
    let s = |_| with_cpu(sub(950.0, 0.0, 50.0, 100.0), 50.0);
    let mut j = job(bp2(), vec![s(0), s(1)], idle2());
    j.vertices[1].options = vec![crate::ConnectorOption {
        operator: "agg".into(),
        key: "lookup.async".into(),
        value: "false".into(),
    }];
    let d = diagnose(&j);
    assert_eq!(d.cause, Cause::BlockingCalls);
    let fix = d.fix.unwrap();
    assert_eq!(fix.change, "async lookup in `agg` with capacity 24");
    assert!(
        fix.description.contains("lookup.async"),
        "{}",
        fix.description
    );
    assert!(
        d.evidence.iter().any(|e| e.starts_with("Little's law:")),
        "{:?}",
        d.evidence
    );
}

fn with_codec(mut s: SubtaskSample, ser: f64, de: f64) -> SubtaskSample {
    s.serialization = Some(ser);
    s.deserialization = Some(de);
    s
}

#[test]
fn an_exchange_busy_encoding_records_for_another_process_is_named_at_the_producer() {
    // The source is backpressured, the keyed vertex idle: its records wait on the exchange's
    // thread, which spends 700 ms/s encoding them (subtask 1 crosses, subtask 0 stays local).
    let src = vec![
        with_codec(sub(200.0, 800.0, 0.0, 0.0), 0.0, 0.0),
        with_codec(sub(200.0, 800.0, 0.0, 0.0), 700.0, 0.0),
    ];
    let keyed = vec![
        with_codec(sub(100.0, 0.0, 900.0, 500.0), 0.0, 200.0),
        with_codec(sub(100.0, 0.0, 900.0, 500.0), 0.0, 150.0),
    ];
    let d = diagnose(&job(src, keyed, idle2()));
    assert_eq!(d.cause, Cause::Serialization, "{d:#?}");
    let b = d.bottleneck.as_ref().expect("a bottleneck");
    assert_eq!(b.vertex, 0);
    assert_eq!(
        b.operator.as_deref(),
        Some("map"),
        "the chain's last operator emits"
    );
    assert_eq!(b.subtasks, vec![1]);
    assert!(
        d.evidence.iter().any(|e| e.contains("700 ms/s encoding")),
        "{:?}",
        d.evidence
    );
    assert!(d
        .fix
        .as_ref()
        .is_some_and(|f| f.description.contains("encode")));
}

#[test]
fn an_exchange_busy_decoding_is_named_at_the_consumer() {
    let src = vec![with_codec(sub(200.0, 800.0, 0.0, 0.0), 100.0, 0.0)];
    let keyed = vec![with_codec(sub(100.0, 0.0, 900.0, 500.0), 0.0, 650.0)];
    let d = diagnose(&job(src, keyed, vec![sub(50.0, 0.0, 950.0, 500.0)]));
    assert_eq!(d.cause, Cause::Serialization, "{d:#?}");
    let b = d.bottleneck.as_ref().expect("a bottleneck");
    assert_eq!((b.vertex, b.operator.as_deref()), (1, Some("agg")));
    assert!(d
        .fix
        .as_ref()
        .is_some_and(|f| f.description.contains("decode")));
}

#[test]
fn a_cheap_exchange_or_a_busy_consumer_is_not_a_serialization_cost() {
    // Codec time under the threshold: backpressure without a busy vertex, as before.
    let src = vec![with_codec(sub(200.0, 800.0, 0.0, 0.0), 200.0, 0.0)];
    let keyed = vec![with_codec(sub(100.0, 0.0, 900.0, 500.0), 0.0, 100.0)];
    let d = diagnose(&job(src, keyed, vec![sub(50.0, 0.0, 950.0, 500.0)]));
    assert_eq!(d.cause, Cause::NoBottleneck, "{d:#?}");
    // A busy consumer is the bottleneck, whatever the exchange costs.
    let src = vec![with_codec(sub(200.0, 800.0, 0.0, 0.0), 500.0, 0.0)];
    let keyed = vec![with_codec(sub(950.0, 0.0, 50.0, 500.0), 0.0, 400.0)];
    let d = diagnose(&job(src, keyed, vec![sub(50.0, 0.0, 950.0, 500.0)]));
    assert_ne!(d.cause, Cause::Serialization, "{d:#?}");
    assert_eq!(d.bottleneck.map(|b| b.vertex), Some(1));
}

#[test]
fn a_source_starved_of_cpu_is_not_the_bottleneck_when_a_hot_key_works_more() {
    // The skew job under SCHED_BATCH on a loaded 2-core machine: the sources are not preempted
    // by the hot subtask's credit wake-ups, so they wait for a core (53 % of their 94 % busy)
    // instead of for credit; the hot subtask works 90 %.
    let waiting = |busy: f64, wait: f64, rin: f64| {
        let mut s = with_cpu(sub(busy, 1000.0 - busy - 20.0, 20.0, rin), busy - wait);
        s.cpu_wait = Some(wait);
        s.backpressured = Some(20.0);
        s
    };
    let keyed = |busy: f64, wait: f64, rin: f64| {
        let mut s = with_cpu(sub(busy, 0.0, 1000.0 - busy, rin), busy - wait);
        s.cpu_wait = Some(wait);
        s
    };
    let mut j = job(
        vec![waiting(940.0, 530.0, 0.0), waiting(930.0, 520.0, 0.0)],
        vec![
            keyed(300.0, 100.0, 200_000.0),
            keyed(980.0, 80.0, 2_000_000.0),
        ],
        idle2(),
    );
    j.vertices[1].hot_keys = Some(vec![HotKey {
        key: "0".into(),
        share: 0.9,
    }]);
    let d = diagnose(&j);
    assert!(matches!(d.cause, Cause::KeySkew { .. }), "{d:?}");
    assert_eq!(d.bottleneck.as_ref().unwrap().vertex, 1);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("for a free CPU (it worked 41%)")),
        "{:?}",
        d.evidence
    );
    // A source that computes its busy time is the bottleneck, whatever works downstream.
    let mut j2 = j.clone();
    for s in &mut j2.vertices[0].subtasks {
        s.cpu_wait = Some(100.0);
    }
    assert_eq!(diagnose(&j2).bottleneck.unwrap().vertex, 0);
    // A starved source with nothing busier downstream stays the bottleneck.
    let mut j3 = j.clone();
    j3.vertices[1].subtasks[1] = keyed(700.0, 400.0, 2_000_000.0);
    assert_eq!(diagnose(&j3).bottleneck.unwrap().vertex, 0);
}
