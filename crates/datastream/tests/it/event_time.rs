//! Event time end to end: watermarks through chains and network channels, keyed windows and
//! event-time timers, compared with brute-force models of Flink's semantics.

use std::collections::BTreeMap;

use sluice_datastream::{
    Collector, KeyedProcessFunction, OnTimerContext, OperatorError, ProcessContext,
    StateBackendKind, StreamEnv, TimeDomain, WatermarkStrategy, WindowAssigner,
};

/// (key, timestamp, value): timestamps wander up to 300 ms backwards, well inside the 1 s bound,
/// so nothing is late and results are deterministic whatever the scheduling.
fn event(i: u64) -> (u32, i64, i64) {
    let key = (i.wrapping_mul(2_654_435_761) % 7) as u32;
    let jitter = (i.wrapping_mul(40_503) % 300) as i64;
    (key, (i as i64) * 10 - jitter, (i % 13) as i64)
}

fn env(p: usize) -> StreamEnv {
    let env = StreamEnv::new();
    env.set_parallelism(p);
    env
}

fn strategy() -> WatermarkStrategy<(u32, i64, i64)> {
    WatermarkStrategy::for_bounded_out_of_orderness(1_000, |e: &(u32, i64, i64)| e.1)
        .with_interval(std::time::Duration::from_millis(1))
}

/// Per (key, window start) sums for windows of `size` sliding by `slide` (tumbling: equal).
fn sliding_model(n: u64, size: i64, slide: i64) -> BTreeMap<(u32, i64), i64> {
    let mut m = BTreeMap::new();
    for i in 0..n {
        let (k, ts, v) = event(i);
        let last = ts - ts.rem_euclid(slide);
        let mut start = last;
        while start > ts - size {
            *m.entry((k, start)).or_insert(0) += v;
            start -= slide;
        }
    }
    m
}

fn run_sliding(
    p: usize,
    n: u64,
    size: i64,
    slide: i64,
    backend: StateBackendKind,
) -> BTreeMap<(u32, i64), i64> {
    let env = env(p);
    env.set_state_backend(backend);
    let assigner = if size == slide {
        WindowAssigner::tumbling(size).unwrap()
    } else {
        WindowAssigner::sliding(size, slide).unwrap()
    };
    let out = env
        .generate(n, event)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|e: &(u32, i64, i64)| e.0)
        .window(assigner)
        .reduce(|a, b| (a.0, a.1, a.2 + b.2))
        .collect();
    env.execute().unwrap();
    let mut got = BTreeMap::new();
    for r in out.handle.take() {
        assert_eq!(r.window.end - r.window.start, size);
        let prev = got.insert((r.key, r.window.start), r.value.2);
        assert!(
            prev.is_none(),
            "window {:?} of key {} fired twice",
            r.window,
            r.key
        );
    }
    got
}

#[test]
fn tumbling_windows_over_the_network_equal_the_model_at_parallelism_1_and_3() {
    let model = sliding_model(20_000, 1_000, 1_000);
    for p in [1, 3] {
        assert_eq!(
            run_sliding(p, 20_000, 1_000, 1_000, StateBackendKind::Memory),
            model,
            "p={p}"
        );
    }
}

#[test]
fn sliding_windows_equal_the_model_on_both_backends() {
    let model = sliding_model(5_000, 1_000, 300);
    assert_eq!(
        run_sliding(2, 5_000, 1_000, 300, StateBackendKind::Memory),
        model
    );
    let dir = tempdir("sliding-lsm");
    assert_eq!(
        run_sliding(2, 5_000, 1_000, 300, StateBackendKind::Lsm { dir }),
        model
    );
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-et-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Sessions per key by sorting timestamps: a new session when the gap to the previous element
/// exceeds `gap` (a gap of exactly `gap` touches and continues the session).
fn session_model(n: u64, gap: i64) -> BTreeMap<(u32, i64), (i64, u64)> {
    let mut per_key: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    for i in 0..n {
        let (k, ts, _) = event(i);
        per_key.entry(k).or_default().push(ts);
    }
    let mut m = BTreeMap::new();
    for (k, mut ts) in per_key {
        ts.sort();
        let mut start = ts[0];
        let mut last = ts[0];
        let mut count = 0;
        for t in ts {
            if t - last > gap {
                m.insert((k, start), (last + gap, count));
                start = t;
                count = 0;
            }
            last = t;
            count += 1;
        }
        m.insert((k, start), (last + gap, count));
    }
    m
}

#[test]
fn session_windows_merge_like_the_model() {
    // Keys see elements ~70 ms apart on average with gaps up to a few hundred ms: a 120 ms gap
    // gives many sessions and many merges.
    let model = session_model(6_000, 120);
    assert!(model.len() > 100, "the case must have many sessions");
    for p in [1, 2] {
        let env = env(p);
        let out = env
            .generate(6_000, event)
            .assign_timestamps_and_watermarks(strategy())
            .key_by(|e: &(u32, i64, i64)| e.0)
            .window(WindowAssigner::session(120).unwrap())
            .count()
            .collect();
        env.execute().unwrap();
        let got: BTreeMap<_, _> = out
            .handle
            .take()
            .into_iter()
            .map(|r| ((r.key, r.window.start), (r.window.end, r.value)))
            .collect();
        assert_eq!(got, model, "p={p}");
    }
}

/// Emits `(key, timer time, sum so far)` from an event-time timer 500 ms after each key's
/// first element of every 1 s bucket.
#[derive(Clone)]
struct SumAfterDelay;

impl KeyedProcessFunction<u32, (u32, i64, i64), (u32, i64, i64)> for SumAfterDelay {
    fn process_element(
        &mut self,
        e: (u32, i64, i64),
        ctx: &mut ProcessContext<'_, u32>,
        _out: &mut dyn Collector<(u32, i64, i64)>,
    ) -> Result<(), OperatorError> {
        let ts = ctx.timestamp().expect("the stream has timestamps");
        assert_eq!(ts, e.1);
        assert!(
            ts > ctx.timer_service().current_watermark(),
            "no element is late in this test"
        );
        let bucket_end = ts - ts.rem_euclid(1_000) + 999 + 500;
        let mut sum = ctx.value_state::<i64>("sum");
        let s = sum.value()?.unwrap_or(0) + e.2;
        sum.update(s)?;
        ctx.timer_service().register_event_time_timer(bucket_end);
        Ok(())
    }

    fn on_timer(
        &mut self,
        ts: i64,
        ctx: &mut OnTimerContext<'_, u32>,
        out: &mut dyn Collector<(u32, i64, i64)>,
    ) -> Result<(), OperatorError> {
        assert_eq!(ctx.time_domain(), Some(TimeDomain::EventTime));
        assert!(ctx.timer_service().current_watermark() >= ts);
        let s = ctx.value_state::<i64>("sum").value()?.unwrap_or(0);
        out.collect((*ctx.current_key(), ts, s))
    }
}

#[test]
fn event_time_timers_fire_once_the_watermark_passes_them() {
    let n = 8_000;
    let mut totals: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    // Model: per key, the timer of bucket b fires with the sum of all elements with ts below
    // the timer time... only those already processed, which is every element with ts <= timer
    // time − (out-of-orderness + 1): the watermark passes the timer only after them. Elements
    // between that and the timer time may or may not have arrived, so compare the final timer.
    let mut sum: BTreeMap<u32, i64> = BTreeMap::new();
    for i in 0..n {
        let (k, _, v) = event(i);
        *sum.entry(k).or_insert(0) += v;
    }
    for p in [1, 2] {
        let env = env(p);
        let out = env
            .generate(n, event)
            .assign_timestamps_and_watermarks(strategy())
            .key_by(|e: &(u32, i64, i64)| e.0)
            .process_event_time(SumAfterDelay)
            .collect();
        env.execute().unwrap();
        totals.clear();
        for (k, ts, s) in out.handle.take() {
            totals.entry(k).or_default().push((ts, s));
        }
        for (k, fired) in &totals {
            let times: Vec<i64> = fired.iter().map(|f| f.0).collect();
            let mut sorted = times.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(
                times, sorted,
                "key {k}: timers fire once each, in time order"
            );
            let sums: Vec<i64> = fired.iter().map(|f| f.1).collect();
            assert!(sums.windows(2).all(|w| w[0] <= w[1]), "key {k}: sums grow");
            assert_eq!(
                fired.last().unwrap().1,
                sum[k],
                "key {k}: final timer sees all"
            );
        }
        assert_eq!(totals.len(), 7, "p={p}");
    }
}

#[test]
fn late_data_goes_to_the_side_output_and_counts_add_up() {
    // One source subtask, in-order timestamps except every 50th element, which is 5 s old: with
    // a 100 ms bound these are late once the watermark has moved on (the first few may not be,
    // depending on when watermarks are emitted), so main + late must account for every element.
    let n = 30_000u64;
    let env = env(1);
    let (main, late) = env
        .generate(n, |i| {
            let ts = i as i64 * 2;
            (
                (i % 3) as u32,
                if i % 50 == 49 { ts - 5_000 } else { ts },
                1i64,
            )
        })
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(100, |e: &(u32, i64, i64)| e.1)
                .with_interval(std::time::Duration::ZERO),
        )
        .key_by(|e: &(u32, i64, i64)| e.0)
        .window(WindowAssigner::tumbling(1_000).unwrap())
        .aggregate_with_late(
            sluice_datastream::CountAggregate,
            |k: &u32,
             w: &sluice_datastream::TimeWindow,
             n: u64,
             out: &mut dyn Collector<(u32, i64, u64)>| {
                out.collect((*k, w.start, n))
            },
        );
    let main = main.collect();
    let late = late.collect();
    env.execute().unwrap();
    let main = main.handle.take();
    let late = late.handle.take();
    let counted: u64 = main.iter().map(|m| m.2).sum();
    assert_eq!(counted + late.len() as u64, n);
    assert!(
        late.len() > 500,
        "most 5 s old elements are late: {}",
        late.len()
    );
    assert!(late
        .iter()
        .all(|l| l.1 % 2 == 0 && (l.1 + 5_000) % 100 == 98));
}

/// Right-side events: other keys and times than [`event`], same out-of-order jitter.
fn right_event(i: u64) -> (u32, i64, i64) {
    let key = (i.wrapping_mul(0x9E37_79B9) % 5) as u32;
    let jitter = (i.wrapping_mul(7_919) % 250) as i64;
    (key, (i as i64) * 17 - jitter, i as i64)
}

type Event = (u32, i64, i64);
/// A keyed stream of events by their key field; the selector's type is the closure's own.
type Keyed<F> = sluice_datastream::KeyedStream<u32, Event, F>;

fn join_inputs(
    env: &StreamEnv,
    n_left: u64,
    n_right: u64,
) -> (
    Keyed<impl sluice_datastream::KeySelector<Event, u32>>,
    Keyed<impl sluice_datastream::KeySelector<Event, u32>>,
) {
    let left = env
        .generate(n_left, event)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|e: &(u32, i64, i64)| e.0);
    let right = env
        .generate(n_right, right_event)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|e: &(u32, i64, i64)| e.0);
    (left, right)
}

#[test]
fn interval_join_equals_the_model_with_inclusive_bounds() {
    let (nl, nr, lower, upper) = (3_000u64, 2_000u64, -300i64, 200i64);
    let mut model = Vec::new();
    for i in 0..nl {
        let l = event(i);
        for j in 0..nr {
            let r = right_event(j);
            if l.0 == r.0 && l.1 + lower <= r.1 && r.1 <= l.1 + upper {
                model.push((l.2, r.2, l.1, r.1));
            }
        }
    }
    model.sort();
    assert!(model.len() > 1_000, "enough matches: {}", model.len());
    assert!(
        model.iter().any(|m| m.3 == m.2 + upper) || model.iter().any(|m| m.3 == m.2 + lower),
        "the case exercises a bound"
    );
    for p in [1, 2] {
        let env = env(p);
        let (left, right) = join_inputs(&env, nl, nr);
        let out = left
            .interval_join(&right, lower, upper)
            .process(|l: &(u32, i64, i64), r: &(u32, i64, i64)| (l.2, r.2, l.1, r.1))
            .collect();
        env.execute().unwrap();
        let mut got = out.handle.take();
        got.sort();
        assert_eq!(got, model, "p={p}");
    }
}

#[test]
fn window_join_pairs_every_left_and_right_of_a_key_in_the_same_window() {
    let (nl, nr) = (3_000u64, 2_000u64);
    let mut model = Vec::new();
    for i in 0..nl {
        let l = event(i);
        for j in 0..nr {
            let r = right_event(j);
            if l.0 == r.0 && l.1.div_euclid(500) == r.1.div_euclid(500) {
                model.push((l.2, r.2));
            }
        }
    }
    model.sort();
    assert!(model.len() > 1_000);
    for p in [1, 3] {
        let env = env(p);
        let (left, right) = join_inputs(&env, nl, nr);
        let out = left
            .co_group(&right, WindowAssigner::tumbling(500).unwrap())
            .join(|l: &(u32, i64, i64), r: &(u32, i64, i64)| (l.2, r.2))
            .collect();
        env.execute().unwrap();
        let mut got = out.handle.take();
        got.sort();
        assert_eq!(got, model, "p={p}");
    }
}
