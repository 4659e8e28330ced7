#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Properties of the hot-key sketch against exact counts, and the skew workload's hot key.
//!
//! The overhead measurement at the end is `#[ignore]`d (speed is not a test); run it by hand:
//! `cargo test --release -p sluice-runtime --test it -- --ignored --nocapture hotkeys_props::`.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use sluice_metrics::TaskMetrics;
use sluice_operators::hotkeys::{
    display_key, subtask_hot_keys, vertex_hot_keys, HotKeysConfig, SampledSketch, SpaceSaving,
};
use sluice_operators::KeyedReduceOp;
use sluice_operators::TaskServices;
use sluice_types::{Collector, ControlEvent, Operator, OperatorContext, OperatorError};

fn splitmix(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// How the records of a Zipf-distributed multiset are ordered (the sketch's bounds hold for any
/// order; the sampled bound needs none either).
#[derive(Clone, Copy, Debug)]
enum Order {
    /// Independent draws.
    Random,
    /// Grouped by key, rare keys first (the hot keys arrive when the sketch is full).
    RareFirst,
    /// Grouped by key, hot keys first.
    HotFirst,
}

/// `len` draws from a Zipf(`exponent`) law over `universe` keys, scattered over the u64 range.
fn zipf_stream(seed: u64, universe: usize, exponent: f64, len: usize, order: Order) -> Vec<u64> {
    let mut cdf = Vec::with_capacity(universe);
    let mut acc = 0.0;
    for r in 0..universe {
        acc += 1.0 / ((r + 1) as f64).powf(exponent);
        cdf.push(acc);
    }
    let salt = splitmix(seed);
    let mut rng = seed;
    let mut out: Vec<u64> = (0..len)
        .map(|_| {
            rng = splitmix(rng);
            let u = (rng >> 11) as f64 / (1u64 << 53) as f64 * acc;
            let rank = cdf.partition_point(|&c| c <= u).min(universe - 1) as u64;
            rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt
        })
        .collect();
    let counts = exact(&out);
    match order {
        Order::Random => {}
        Order::RareFirst => out.sort_by_key(|k| (counts[k], *k)),
        Order::HotFirst => out.sort_by_key(|k| (std::cmp::Reverse(counts[k]), *k)),
    }
    out
}

fn exact(stream: &[u64]) -> HashMap<u64, u64> {
    let mut m = HashMap::new();
    for k in stream {
        *m.entry(*k).or_insert(0) += 1;
    }
    m
}

fn order() -> impl Strategy<Value = Order> {
    prop_oneof![
        3 => Just(Order::Random),
        1 => Just(Order::RareFirst),
        1 => Just(Order::HotFirst),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Space-Saving's guarantees, against exact counts.
    #[test]
    fn space_saving_error_bounds_hold(
        seed in any::<u64>(),
        capacity in 1usize..80,
        universe in 1usize..400,
        exponent in 0.0f64..2.0,
        len in 0usize..4000,
        order in order(),
    ) {
        let stream = zipf_stream(seed, universe, exponent, len, order);
        let truth = exact(&stream);
        let mut s = SpaceSaving::new(capacity);
        for k in &stream {
            s.offer(k);
        }
        let m = capacity as u64;
        let total = len as u64;
        prop_assert_eq!(s.total(), total);
        let top = s.top(capacity);
        prop_assert_eq!(top.len(), truth.len().min(capacity));
        prop_assert_eq!(s.len(), top.len());
        // Counters sum to the total (free counters hold 0), so min ≤ total / m.
        prop_assert_eq!(top.iter().map(|h| h.count).sum::<u64>(), total);
        prop_assert!(s.min_count() * m <= total);
        prop_assert!(top.windows(2).all(|w| w[0].count >= w[1].count));
        for h in &top {
            let t = truth[&h.key];
            prop_assert!(h.count - h.error <= t && t <= h.count, "{h:?} true {t}");
            prop_assert!(h.error <= s.min_count() && h.error * m <= total, "{h:?}");
            prop_assert_eq!(s.get(&h.key), Some((h.count, h.error)));
        }
        for (k, &t) in &truth {
            if t > s.min_count() || t * m > total {
                prop_assert!(s.get(k).is_some(), "key with {t} of {total} missing (m = {m})");
            }
        }
        prop_assert_eq!(s.top(3).len(), top.len().min(3));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The sampled sketch's documented bound (module docs of `hotkeys`): with probability
    /// ≥ 1 − δ per key, q ∈ [(count − error)/S − t, count/S + t], t = sqrt(ln(2/δ) / 2S), and a
    /// key missing from the sketch has q ≤ min/S + t. Checked with δ = 10⁻⁹ for every key.
    #[test]
    fn sampled_sketch_error_bound_holds(
        seed in any::<u64>(),
        capacity in 8usize..72,
        every in prop_oneof![Just(1u32), Just(2), Just(4), Just(8), Just(16)],
        universe in 1usize..300,
        exponent in 0.3f64..2.0,
        len in 1000usize..30_000,
        order in order(),
    ) {
        let stream = zipf_stream(seed, universe, exponent, len, order);
        let truth = exact(&stream);
        let mut s = SampledSketch::new(capacity, every, seed ^ 1);
        for k in &stream {
            s.offer(k);
        }
        prop_assert_eq!(s.records(), len as u64);
        let sample = s.sketch().total();
        if every == 1 {
            prop_assert_eq!(sample, len as u64);
        }
        prop_assume!(sample > 0);
        let sf = sample as f64;
        let t = ((2.0f64 / 1e-9).ln() / (2.0 * sf)).sqrt();
        let min_share = s.sketch().min_count() as f64 / sf;
        for (k, &c) in &truth {
            let q = c as f64 / len as f64;
            match s.sketch().get(k) {
                Some((count, error)) => {
                    let lo = (count - error) as f64 / sf - t;
                    let hi = count as f64 / sf + t;
                    prop_assert!(lo <= q && q <= hi, "q {q} not in [{lo}, {hi}] (S {sample})");
                }
                None => prop_assert!(q <= min_share + t, "missing key with q {q}, S {sample}"),
            }
        }
        let snap = s.snapshot(10, |k| k.to_string());
        prop_assert_eq!(snap.subtask_records, len as u64);
        prop_assert_eq!(snap.sampled_records, sample);
        for k in &snap.keys {
            let q = truth[&k.key.parse::<u64>().unwrap()] as f64 / len as f64;
            let err = k.error as f64 / len as f64;
            prop_assert!(k.share_of_subtask - q >= -t && k.share_of_subtask - q <= t + err + 1e-12);
            let est = k.share_of_subtask * len as f64;
            prop_assert!((k.count as f64 - est).abs() <= 0.5 + 1e-6);
        }
    }
}

/// The skew workload's generator (`sluice_jobs::skew::record`,
/// docs/src/reference/skew-workload.md), copied
/// bit-exactly: sluice-jobs depends on sluice-datastream, which depends on this crate.
mod skew {
    #[inline]
    pub fn mix(z: u64) -> u64 {
        super::splitmix(z)
    }

    /// `round(hot_key_share * 2^20)`.
    pub fn hot_limit(share: f64) -> u64 {
        (share * (1u64 << 20) as f64).round() as u64
    }

    #[inline]
    pub fn record(i: u64, hot_limit: u64, keys: u64) -> (i64, i64) {
        let h = mix(i);
        let key = if (h >> 44) < hot_limit {
            0
        } else {
            1 + (h % keys) as i64
        };
        (key, ((h >> 8) & 0xFFFF) as i64)
    }
}

const SKEW_RECORDS: u64 = 200_000;

fn skew_keys(n: u64) -> Vec<i64> {
    let limit = skew::hot_limit(0.8);
    assert_eq!(limit, 838_861);
    (0..n).map(|i| skew::record(i, limit, 10_000).0).collect()
}

#[test]
fn skew_hot_key_share_is_within_two_percent() {
    let keys = skew_keys(SKEW_RECORDS);
    let truth = keys.iter().filter(|&&k| k == 0).count() as f64 / keys.len() as f64;
    assert!((0.79..0.81).contains(&truth), "{truth}");

    // Every record into the sketch.
    let mut raw = SpaceSaving::new(64);
    for k in &keys {
        raw.offer(k);
    }
    let top = raw.top(1);
    assert_eq!(top[0].key, 0);
    let share = top[0].count as f64 / raw.total() as f64;
    assert!((share - truth).abs() <= 0.02, "raw {share} vs {truth}");

    // Sampled 1 in 8, as the operator does, under several seeds (subtasks).
    for seed in 0..16 {
        let mut s = SampledSketch::new(64, 8, seed);
        for k in &keys {
            s.offer(k);
        }
        let snap = s.snapshot(10, display_key);
        assert_eq!(snap.subtask_records, SKEW_RECORDS);
        assert_eq!(snap.keys[0].key, "0");
        let got = snap.keys[0].share_of_subtask;
        assert!((got - truth).abs() <= 0.02, "seed {seed}: {got} vs {truth}");
        let count_truth = truth * SKEW_RECORDS as f64;
        assert!((snap.keys[0].count as f64 - count_truth).abs() <= 0.02 * SKEW_RECORDS as f64);
    }
}

/// Swallows records.
struct Discard(u64);

impl Collector<(i64, i64)> for Discard {
    #[inline]
    fn collect(&mut self, r: (i64, i64)) -> Result<(), OperatorError> {
        self.0 = self.0.wrapping_add(r.1 as u64);
        Ok(())
    }
    fn emit_event(&mut self, _: ControlEvent) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// The context of subtask `subtask` whose task reports into `metrics`.
fn op_ctx(subtask: usize, parallelism: usize, metrics: &Arc<TaskMetrics>) -> OperatorContext {
    OperatorContext {
        operator_name: "sum-per-key".into(),
        task_name: "sum-per-key".into(),
        subtask_index: subtask,
        parallelism,
        max_parallelism: 128,
        operator_id: "op".into(),
        services: TaskServices::metrics_only(metrics.clone()).handle(),
        options: Vec::new(),
    }
}

fn sum_op() -> impl Operator<(i64, i64), (i64, i64)> {
    KeyedReduceOp::new(
        |r: &(i64, i64)| r.0,
        |a: (i64, i64), b: (i64, i64)| (a.0, a.1.wrapping_add(b.1)),
    )
    .with_hot_keys(display_key)
}

/// The skew job's sum at parallelism 2, each subtask's operator attached to its own metrics
/// the way its task attaches it: the vertex view names key 0 with ~80% of the vertex.
#[test]
fn skew_vertex_view_names_the_hot_key() {
    let limit = skew::hot_limit(0.8);
    let parallelism = 2;
    let metrics: Vec<Arc<TaskMetrics>> = (0..parallelism)
        .map(|_| Arc::new(TaskMetrics::default()))
        .collect();
    let mut ops: Vec<_> = (0..parallelism)
        .map(|i| {
            let mut op = sum_op();
            op.open(&op_ctx(i, parallelism, &metrics[i])).unwrap();
            op
        })
        .collect();
    let mut out = Discard(0);
    let mut hot = 0u64;
    for i in 0..SKEW_RECORDS {
        let r = skew::record(i, limit, 10_000);
        hot += (r.0 == 0) as u64;
        // Any key → subtask function will do here; key groups are the graph layer's business.
        let sub = (skew::mix(r.0 as u64) % parallelism as u64) as usize;
        ops[sub].process(r, &mut out).unwrap();
    }
    for op in &mut ops {
        op.finish(&mut out).unwrap();
    }
    let truth = hot as f64 / SKEW_RECORDS as f64;
    let records: u64 = metrics
        .iter()
        .map(|m| subtask_hot_keys(m).unwrap().subtask_records)
        .sum();
    assert_eq!(records, SKEW_RECORDS);
    let view = vertex_hot_keys(&metrics);
    assert_eq!(view[0].key, "0");
    assert_eq!(view[0].subtask, (skew::mix(0) % 2) as usize);
    assert!(
        (view[0].share_of_vertex - truth).abs() <= 0.02,
        "{} vs {truth}",
        view[0].share_of_vertex
    );
    assert!(view[0].share_of_subtask > view[0].share_of_vertex);
    assert!(view.windows(2).all(|w| w[0].count >= w[1].count));
    assert!(view.len() <= 2 * HotKeysConfig::default().top);
}

/// ns/record of the sum operator with and without the sketch, and of the sketch alone. The
/// variants run interleaved, each round over the same 2M skew records; the best round counts.
#[test]
#[ignore = "a measurement, not a test: run by hand in release mode"]
fn measure_overhead() {
    use std::hint::black_box;
    use std::time::Instant;

    const N: u64 = 2_000_000;
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let limit = skew::hot_limit(0.8);
    let records: Vec<(i64, i64)> = (0..N).map(|i| skew::record(i, limit, 10_000)).collect();
    let keys: Vec<i64> = records.iter().map(|r| r.0).collect();
    let metrics = Arc::new(TaskMetrics::default());

    let run_op = |hot: Option<u32>| {
        let op = KeyedReduceOp::new(
            |r: &(i64, i64)| r.0,
            |a: (i64, i64), b: (i64, i64)| (a.0, a.1.wrapping_add(b.1)),
        );
        let mut op = match hot {
            Some(every) => op.with_hot_keys_config(
                HotKeysConfig {
                    sample_every: every,
                    ..Default::default()
                },
                display_key,
            ),
            None => op,
        };
        op.open(&op_ctx(0, 1, &metrics)).unwrap();
        let mut out = Discard(0);
        let t = Instant::now();
        for r in &records {
            op.process(black_box(*r), &mut out).unwrap();
        }
        op.finish(&mut out).unwrap();
        black_box(out.0);
        t.elapsed()
    };
    let run_raw = || {
        let mut s = SpaceSaving::new(64);
        let t = Instant::now();
        for k in &keys {
            s.offer(black_box(k));
        }
        black_box(s.total());
        t.elapsed()
    };
    let run_sampled = || {
        let mut s = SampledSketch::new(64, 8, 3);
        let t = Instant::now();
        for k in &keys {
            s.offer(black_box(k));
        }
        black_box(s.records());
        t.elapsed()
    };
    let names = [
        "keyed sum, no sketch          ",
        "keyed sum, sketch 1 in 8      ",
        "keyed sum, sketch 1 in 16     ",
        "keyed sum, sketch every record",
        "SpaceSaving::offer alone      ",
        "SampledSketch (1 in 8) alone  ",
    ];
    let mut best = [f64::INFINITY; 6];
    for _ in 0..rounds {
        let times = [
            run_op(None),
            run_op(Some(8)),
            run_op(Some(16)),
            run_op(Some(1)),
            run_raw(),
            run_sampled(),
        ];
        for (b, t) in best.iter_mut().zip(times) {
            *b = b.min(t.as_nanos() as f64 / N as f64);
        }
    }
    for (i, (name, ns)) in names.iter().zip(best).enumerate() {
        if (1..4).contains(&i) {
            println!("{name}: {ns:6.2} ns/record (+{:.2})", ns - best[0]);
        } else {
            println!("{name}: {ns:6.2} ns/record");
        }
    }
}
