//! Async I/O (`ordered_wait` / `unordered_wait`) on real jobs: ordering guarantees, the capacity
//! bound counted inside the function itself, backpressure to the upstream, timeouts and retries.

use crate::common;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use common::{guarded, HANG_GUARD};
use sluice_datastream::async_io::AsyncError;
use sluice_datastream::StreamEnv;

type Reply =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<u64>, AsyncError>> + Send>>;

/// Counts requests in flight inside the function: the current number and the maximum seen.
#[derive(Clone, Default)]
struct Concurrency {
    now: Arc<AtomicI64>,
    max: Arc<AtomicI64>,
    calls: Arc<AtomicU64>,
}

impl Concurrency {
    fn enter(&self) {
        self.calls.fetch_add(1, SeqCst);
        let n = self.now.fetch_add(1, SeqCst) + 1;
        self.max.fetch_max(n, SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, SeqCst);
    }
    fn max(&self) -> i64 {
        self.max.load(SeqCst)
    }
}

/// A service whose latency varies by key (0–3 ms), so completions arrive out of order.
fn doubling(c: Concurrency) -> impl Fn(u64) -> Reply + Clone + Send + Sync + 'static {
    move |x: u64| {
        let c = c.clone();
        Box::pin(async move {
            c.enter();
            tokio::time::sleep(Duration::from_micros((x * 7919) % 4 * 1000)).await;
            c.leave();
            Ok(vec![x * 2])
        })
    }
}

#[test]
fn ordered_wait_emits_in_input_order_within_capacity() {
    let (out, max) = guarded("ordered", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let c = Concurrency::default();
        let sink = env
            .from_iter(0..2000u64)
            .ordered_wait(doubling(c.clone()), Duration::from_secs(5), 8)
            .collect();
        env.execute().expect("job");
        (sink.handle.take(), c.max())
    });
    assert_eq!(out, (0..2000u64).map(|x| x * 2).collect::<Vec<_>>());
    assert!(max <= 8, "{max} requests in flight, capacity 8");
    assert!(max >= 2, "requests never overlapped (max {max})");
}

#[test]
fn unordered_wait_emits_the_same_multiset_reordered() {
    let (out, max) = guarded("unordered", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let c = Concurrency::default();
        let sink = env
            .from_iter(0..2000u64)
            .unordered_wait(doubling(c.clone()), Duration::from_secs(5), 16)
            .collect();
        env.execute().expect("job");
        (sink.handle.take(), c.max())
    });
    let mut sorted = out.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..2000u64).map(|x| x * 2).collect::<Vec<_>>());
    assert_ne!(out, sorted, "unordered mode kept input order throughout");
    assert!(max <= 16, "{max} requests in flight, capacity 16");
}

/// The job is named by its plan as Flink names it, and carries its settings as plan options.
#[test]
fn the_plan_shows_an_async_wait_operator_with_its_options() {
    let env = StreamEnv::new();
    env.from_iter(0..10u64)
        .unordered_wait(
            |x: u64| async move { Ok(vec![x]) },
            Duration::from_millis(1500),
            7,
        )
        .collect();
    let plan = env.execution_plan().unwrap();
    assert!(
        plan.contains("\"type\" : \"async wait operator\""),
        "{plan}"
    );
    let node = env
        .stream_nodes()
        .into_iter()
        .find(|n| n.name == "async wait operator")
        .expect("async node");
    let opt = |k: &str| {
        node.options
            .iter()
            .find(|(o, _)| o == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(opt("async.output-mode").as_deref(), Some("UNORDERED"));
    assert_eq!(opt("async.capacity").as_deref(), Some("7"));
    assert_eq!(opt("async.timeout").as_deref(), Some("1500 ms"));
}

#[test]
fn a_zero_capacity_is_refused_before_the_job_starts() {
    let env = StreamEnv::new();
    env.from_iter(0..10u64)
        .ordered_wait(|x: u64| async move { Ok(vec![x]) }, Duration::ZERO, 0)
        .collect();
    let e = match env.execute() {
        Ok(_) => panic!("a zero capacity was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("async.capacity must be greater than 0"), "{e}");
}

/// A full operator stops reading its input: the source waits for credit (backpressure), the
/// source is never further ahead of the requests started than the exchange's credits allow,
/// and the function never sees more than `capacity` requests at once.
#[test]
fn a_full_operator_backpressures_its_upstream_within_capacity() {
    const CAPACITY: i64 = 4;
    const RPB: u64 = 16;
    let (max, max_gap, bound, backpressured_ns, max_gauge, out) =
        guarded("backpressure", HANG_GUARD, || {
            let env = StreamEnv::new();
            env.set_parallelism(1)
                .set_buffer_size(std::mem::size_of::<u64>() * RPB as usize)
                .set_credits(2, 2);
            let c = Concurrency::default();
            let c2 = c.clone();
            let sink = env
                .generate(1500, |i| i)
                .rebalance()
                .ordered_wait(
                    move |x: u64| -> Reply {
                        let c = c2.clone();
                        Box::pin(async move {
                            c.enter();
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            c.leave();
                            Ok(vec![x])
                        })
                    },
                    Duration::from_secs(5),
                    CAPACITY as usize,
                )
                .collect();
            let handle = env.launch().expect("launch");
            let monitor = handle.monitor();
            let src = monitor
                .graph
                .vertices
                .iter()
                .position(|v| v.name.starts_with("Source"))
                .unwrap();
            let asy = monitor
                .graph
                .vertices
                .iter()
                .position(|v| v.name.starts_with("async wait operator"))
                .unwrap();
            // One channel: exclusive + floating credits, the sender's partial buffer, and the
            // buffer the operator is working through.
            let bound = (2 + 2 + 1 + 1) * RPB;
            let (mut max_gap, mut max_gauge) = (0u64, 0i64);
            while !handle.is_finished() {
                let started = c.calls.load(SeqCst);
                let sent: u64 = monitor.subtasks[src].iter().map(|m| m.records_out()).sum();
                max_gap = max_gap.max(sent.saturating_sub(started));
                for m in &monitor.subtasks[asy] {
                    for g in m.gauges() {
                        if g.name == "asyncInFlight" {
                            max_gauge = max_gauge.max(g.get());
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let bp: u64 = monitor.subtasks[src]
                .iter()
                .map(|m| m.backpressured_ns())
                .sum();
            handle.wait().expect("job");
            (c.max(), max_gap, bound, bp, max_gauge, sink.handle.take())
        });
    assert_eq!(out, (0..1500u64).collect::<Vec<_>>());
    assert!(
        max <= CAPACITY,
        "{max} requests in flight, capacity {CAPACITY}"
    );
    assert_eq!(max, CAPACITY, "the capacity was never used in full");
    assert!(
        max_gauge <= CAPACITY,
        "asyncInFlight gauge showed {max_gauge}"
    );
    assert!(
        max_gap <= bound,
        "the source ran {max_gap} records ahead of the requests started (credits allow {bound})"
    );
    assert!(backpressured_ns > 0, "the source was never backpressured");
}

/// A request that never answers (a dropped request): by default the job fails with Flink's
/// message; with a timeout handler, the handler's records are emitted instead.
#[test]
fn a_dropped_request_times_out_and_fails_the_job_by_default() {
    let e = guarded("timeout", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        env.from_iter(0..50u64)
            .ordered_wait(
                |x: u64| -> Reply {
                    Box::pin(async move {
                        if x == 17 {
                            std::future::pending::<()>().await;
                        }
                        Ok(vec![x])
                    })
                },
                Duration::from_millis(100),
                8,
            )
            .collect();
        env.execute().err().map(|e| e.to_string())
    });
    let e = e.expect("the job failed");
    assert!(e.contains("Async function call has timed out."), "{e}");
}

#[test]
fn a_timeout_handler_replaces_the_results_of_dropped_requests() {
    let out = guarded("timeout handler", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let f = |x: u64| -> Reply {
            Box::pin(async move {
                if x % 10 == 3 {
                    std::future::pending::<()>().await;
                }
                Ok(vec![x])
            })
        };
        let sink = env
            .from_iter(0..100u64)
            .ordered_wait(
                sluice_datastream::async_io::with_timeout_handler(f, |x: &u64| {
                    Ok(vec![1_000 + *x])
                }),
                Duration::from_millis(50),
                16,
            )
            .collect();
        env.execute().expect("job");
        sink.handle.take()
    });
    let expected: Vec<u64> = (0..100u64)
        .map(|x| if x % 10 == 3 { 1_000 + x } else { x })
        .collect();
    assert_eq!(out, expected);
}

#[derive(Clone, Debug, PartialEq)]
enum Ev {
    Rec(u64),
    Wm(i64),
}

/// Logs every record and watermark passing it, in order, and forwards them.
struct Log(Arc<std::sync::Mutex<Vec<Ev>>>);

impl sluice_datastream::Operator<u64, u64> for Log {
    fn process(
        &mut self,
        r: u64,
        out: &mut dyn sluice_datastream::Collector<u64>,
    ) -> Result<(), sluice_datastream::OperatorError> {
        self.0.lock().unwrap().push(Ev::Rec(r));
        out.collect(r)
    }
    fn on_watermark(
        &mut self,
        w: sluice_datastream::Watermark,
        out: &mut dyn sluice_datastream::Collector<u64>,
    ) -> Result<(), sluice_datastream::OperatorError> {
        self.0.lock().unwrap().push(Ev::Wm(w.0));
        out.emit_event(sluice_datastream::ControlEvent::Watermark(w))
    }
}

/// The records between consecutive watermarks, as sorted sets, and the watermarks.
fn segments(log: &[Ev]) -> (Vec<Vec<u64>>, Vec<i64>) {
    let (mut segs, mut wms, mut cur) = (Vec::new(), Vec::new(), Vec::new());
    for e in log {
        match e {
            Ev::Rec(r) => cur.push(*r),
            Ev::Wm(w) => {
                cur.sort_unstable();
                segs.push(std::mem::take(&mut cur));
                wms.push(*w);
            }
        }
    }
    cur.sort_unstable();
    segs.push(cur);
    (segs, wms)
}

#[test]
fn unordered_wait_never_moves_a_record_across_a_watermark() {
    let (before, after) = guarded("watermarks", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let (inp, outp) = (
            Arc::new(std::sync::Mutex::new(Vec::new())),
            Arc::new(std::sync::Mutex::new(Vec::new())),
        );
        let (i2, o2) = (inp.clone(), outp.clone());
        env.generate(3000, |i| i)
            .assign_timestamps_and_watermarks(
                sluice_datastream::WatermarkStrategy::for_monotonous_timestamps(|r: &u64| {
                    *r as i64
                })
                .with_interval(Duration::from_millis(1)),
            )
            .transform("Log in", move |_| Log(i2.clone()))
            .unordered_wait(doubling(Concurrency::default()), Duration::from_secs(5), 16)
            .map(|x: u64| x / 2)
            .transform("Log out", move |_| Log(o2.clone()))
            .discard();
        env.execute().expect("job");
        let b = inp.lock().unwrap().clone();
        let a = outp.lock().unwrap().clone();
        (b, a)
    });
    let (seg_in, wm_in) = segments(&before);
    let (seg_out, wm_out) = segments(&after);
    assert_eq!(wm_out, wm_in, "watermarks pass in order");
    assert_eq!(seg_out, seg_in, "a record crossed a watermark");
    let split = seg_in.iter().filter(|s| !s.is_empty()).count();
    assert!(
        split >= 3,
        "too few watermarks between records to show anything ({split} segments)"
    );
    let recs = |l: &[Ev]| -> Vec<u64> {
        l.iter()
            .filter_map(|e| match e {
                Ev::Rec(r) => Some(*r),
                Ev::Wm(_) => None,
            })
            .collect()
    };
    assert_ne!(recs(&after), recs(&before), "nothing was reordered");
}

/// A service that fails each key's first two calls: fixed-delay retries on any error make
/// every record succeed, with two retries per record; exponential backoff retries empty results.
/// Retries stop at end of input (Flink's `retryDisabledOnFinish`), so 16 well-behaved records
/// (keys ≥ 1000) close the input: in ordered mode the queue is always the last ≤ 16 elements
/// admitted, so once the 16th of them is in, every flaky record has left it.
#[test]
fn retries_on_error_and_on_empty_result() {
    use sluice_datastream::async_io::{
        ExponentialBackoffDelayRetryStrategyBuilder, FixedDelayRetryStrategyBuilder,
        RetryPredicates,
    };
    let (fixed, exp, calls_fixed, calls_exp) = guarded("retries", HANG_GUARD, || {
        let flaky = |calls: Arc<std::sync::Mutex<std::collections::HashMap<u64, u32>>>,
                     empty: bool| {
            move |x: u64| -> Reply {
                if x >= 1000 {
                    return Box::pin(async move { Ok(vec![]) });
                }
                let n = {
                    let mut m = calls.lock().unwrap();
                    let e = m.entry(x).or_insert(0);
                    *e += 1;
                    *e
                };
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_micros(200)).await;
                    match (n <= 2, empty) {
                        (true, false) => Err(AsyncError::new(format!("call {n} of {x} refused"))),
                        (true, true) => Ok(vec![]),
                        (false, _) => Ok(vec![x + 1]),
                    }
                })
            }
        };
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let (c1, c2) = (Arc::default(), Arc::default());
        let fixed = env
            .from_iter((0..200u64).chain(1000..1016))
            .ordered_wait_with_retry(
                flaky(Arc::clone(&c1), false),
                Duration::from_secs(5),
                16,
                FixedDelayRetryStrategyBuilder::new(3, Duration::from_millis(1))
                    .if_exception(RetryPredicates::has_error())
                    .build(),
            )
            .collect();
        let exp = env
            .from_iter((0..200u64).chain(1000..1016))
            .ordered_wait_with_retry(
                flaky(Arc::clone(&c2), true),
                Duration::from_secs(5),
                16,
                ExponentialBackoffDelayRetryStrategyBuilder::new(
                    2,
                    Duration::from_millis(1),
                    Duration::from_millis(4),
                    2.0,
                )
                .if_result(RetryPredicates::empty_result())
                .build(),
            )
            .collect();
        env.execute().expect("job");
        let total = |c: &Arc<std::sync::Mutex<std::collections::HashMap<u64, u32>>>| -> u32 {
            c.lock().unwrap().values().sum()
        };
        (
            fixed.handle.take(),
            exp.handle.take(),
            total(&c1),
            total(&c2),
        )
    });
    assert_eq!(fixed, (1..=200u64).collect::<Vec<_>>());
    let mut exp = exp;
    exp.sort_unstable();
    assert_eq!(exp, (1..=200u64).collect::<Vec<_>>());
    assert_eq!(calls_fixed, 600, "three calls per record");
    assert_eq!(calls_exp, 600, "three calls per record");
}

/// Retries exhausted: an error fails the job with the last error; a result that still matches
/// the predicate is emitted as it is (Flink's semantics).
#[test]
fn exhausted_retries_fail_on_error_and_emit_the_last_result() {
    use sluice_datastream::async_io::{FixedDelayRetryStrategyBuilder, RetryPredicates};
    let (err, out) = guarded("exhausted", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        env.from_iter(0..5u64)
            .ordered_wait_with_retry(
                |x: u64| async move { Err::<Vec<u64>, _>(AsyncError::new(format!("down for {x}"))) },
                Duration::from_secs(5),
                4,
                FixedDelayRetryStrategyBuilder::new(2, Duration::from_millis(1))
                    .if_exception(RetryPredicates::has_error())
                    .build(),
            )
            .collect();
        let err = env.execute().err().map(|e| e.to_string());
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let sink = env
            .from_iter(0..5u64)
            .ordered_wait_with_retry(
                |_x: u64| async move { Ok::<Vec<u64>, AsyncError>(vec![]) },
                Duration::from_secs(5),
                4,
                FixedDelayRetryStrategyBuilder::new(2, Duration::from_millis(1))
                    .if_result(RetryPredicates::empty_result())
                    .build(),
            )
            .map(|x: u64| x)
            .collect();
        env.execute().expect("job");
        (err, sink.handle.take())
    });
    let err = err.expect("the job failed");
    assert!(err.contains("async request failed: down for"), "{err}");
    assert!(out.is_empty());
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-async-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Source (2) → rebalance → async wait (2, capacity 8, 0.1–1 ms per request) → transactional
/// file sink: `i,3i` per record.
fn checkpointed_job(
    env: &StreamEnv,
    records: u64,
    mode: sluice_datastream::async_io::OutputMode,
    out: &std::path::Path,
) {
    use sluice_datastream::async_io::AsyncSettings;
    // Small buffers: under backpressure an aligned barrier waits behind the buffered records,
    // and 32 KiB buffers of u64 would hold most of this short job.
    env.set_parallelism(2).set_buffer_size(8 * 64);
    let f = |x: u64| -> Reply {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_micros(100 + (x * 7919) % 900)).await;
            Ok(vec![x * 3])
        })
    };
    env.generate(records, |i| i)
        .rebalance()
        .async_wait(
            f,
            AsyncSettings::new(mode, Duration::from_secs(10), 8),
            None,
        )
        .map(|x: u64| (x / 3, x))
        .write_text_exactly_once(out, |r: &(u64, u64), line: &mut String| {
            line.push_str(&format!("{},{}", r.0, r.1))
        });
}

fn committed_sorted(dir: &std::path::Path) -> Vec<String> {
    let mut lines = sluice_runtime::sinks::committed_lines(dir).unwrap();
    lines.sort();
    lines
}

/// 12 failures injected into the async operator's subtasks while its requests are in flight:
/// the checkpoints hold the in-flight inputs, a restore re-issues them, and the committed output
/// equals a failure-free run's, in both modes.
fn exactly_once_under_failures(mode: sluice_datastream::async_io::OutputMode, tag: &str) {
    use sluice_datastream::{FaultSpec, RestartStrategy};
    let records = 30_000;
    let expected_dir = tempdir(&format!("{tag}-expected"));
    let env = StreamEnv::new();
    checkpointed_job(&env, records, mode, &expected_dir);
    env.execute().unwrap();
    let expected = committed_sorted(&expected_dir);
    assert_eq!(expected.len() as u64, records);

    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let faults: Vec<FaultSpec> = (0..12)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            FaultSpec {
                vertex: "async wait operator".into(),
                subtask: (x % 2) as usize,
                after_records: 300 + (x >> 8) % 1_500,
            }
        })
        .collect();
    let out = tempdir(&format!("{tag}-faulty"));
    let chk = tempdir(&format!("{tag}-chk"));
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(10))
        .set_checkpoint_dir(&chk)
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 20,
            delay: Duration::ZERO,
        })
        .inject_faults(faults);
    checkpointed_job(&env, records, mode, &out);
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    let hub = monitor.control.checkpoints().unwrap();
    assert_eq!(hub.attempt(), 12, "one restart per injected failure");
    assert!(
        hub.stats().restored >= 6,
        "restores from a checkpoint: {}",
        hub.stats().restored
    );
    let restored: i64 = monitor
        .subtasks
        .iter()
        .flatten()
        .flat_map(|m| m.gauges())
        .filter(|g| g.name == "asyncRestored")
        .map(|g| g.get())
        .sum();
    assert!(restored > 0, "no checkpoint held an in-flight request");
    eprintln!(
        "{tag}: {} restarts, {} restored from a checkpoint, {restored} in-flight elements re-issued",
        hub.attempt(),
        hub.stats().restored
    );
    let got = committed_sorted(&out);
    if got != expected {
        let missing = expected
            .iter()
            .filter(|l| got.binary_search(l).is_err())
            .count();
        let extra = got.len() as i64 - (expected.len() - missing) as i64;
        panic!(
            "not exactly once: {} lines, expected {}; {missing} missing, {extra} extra",
            got.len(),
            expected.len()
        );
    }
    for d in [expected_dir, out, chk] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn ordered_wait_is_exactly_once_under_12_failures_with_requests_in_flight() {
    exactly_once_under_failures(sluice_datastream::async_io::OutputMode::Ordered, "ordered");
}

#[test]
fn unordered_wait_is_exactly_once_under_12_failures_with_requests_in_flight() {
    exactly_once_under_failures(
        sluice_datastream::async_io::OutputMode::Unordered,
        "unordered",
    );
}

/// A completed request leaves at once even when no input follows: with a buffer timeout of 0
/// the task never ticks, so result 0 can only arrive before record 1 exists (the source holds
/// record 1 back for a while) if the completion woke the waiting input loop.
#[test]
fn a_completion_is_emitted_while_the_input_is_idle() {
    let (arrived, second_made) = guarded("prompt emission", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1).set_buffer_timeout(Duration::ZERO);
        let made = Arc::new(std::sync::Mutex::new(None));
        let arrived = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (m, a) = (made.clone(), arrived.clone());
        env.from_iter(0..2u64)
            .map(move |x: u64| {
                if x == 1 {
                    std::thread::sleep(Duration::from_millis(1500));
                    *m.lock().unwrap() = Some(std::time::Instant::now());
                }
                x
            })
            .rebalance()
            .ordered_wait(
                |x: u64| async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Ok(vec![x])
                },
                Duration::from_secs(5),
                4,
            )
            .sink_fn("times", move |x: u64| {
                a.lock().unwrap().push((x, std::time::Instant::now()));
                Ok(())
            });
        env.execute().expect("job");
        let a = arrived.lock().unwrap().clone();
        let m = made.lock().unwrap().expect("record 1 made");
        (a, m)
    });
    assert_eq!(
        arrived.iter().map(|(x, _)| *x).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert!(
        arrived[0].1 < second_made,
        "result 0 waited for the next input record"
    );
}

/// Mode and capacity are plan options: the fixer's option change reaches the running operator
/// (issue 18's "async lookup with capacity N"), and a bad value is named when the job starts.
#[test]
fn the_fixer_rewrites_capacity_and_mode_of_any_async_operator() {
    use sluice_datastream::fixer::{apply, NodeChange, PlanChange};
    let (out, max, diff) = guarded("fixer", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let c = Concurrency::default();
        let sink = env
            .from_iter(0..1000u64)
            .ordered_wait(doubling(c.clone()), Duration::from_secs(5), 2)
            .collect();
        let mut diff = Vec::new();
        for (key, value) in [("async.capacity", "32"), ("async.output-mode", "UNORDERED")] {
            let d = apply(
                &env,
                &PlanChange::SinkOption {
                    operator: "async wait operator".into(),
                    key: key.into(),
                    value: value.into(),
                },
            )
            .expect("fix");
            diff.extend(d.changes);
        }
        env.execute().expect("job");
        (sink.handle.take(), c.max(), diff)
    });
    assert!(
        matches!(&diff[..], [NodeChange::Option { key: k1, before: b1, after: a1, .. }, NodeChange::Option { key: k2, after: a2, .. }]
            if k1 == "async.capacity" && b1.as_deref() == Some("2") && a1 == "32"
                && k2 == "async.output-mode" && a2 == "UNORDERED"),
        "{diff:?}"
    );
    assert!(
        max > 2 && max <= 32,
        "{max} requests in flight after the fix"
    );
    let mut sorted = out.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1000u64).map(|x| x * 2).collect::<Vec<_>>());
    assert_ne!(out, sorted, "still ordered after the fix to UNORDERED");

    let env = StreamEnv::new();
    env.from_iter(0..10u64)
        .ordered_wait(|x: u64| async move { Ok(vec![x]) }, Duration::ZERO, 2)
        .discard();
    apply(
        &env,
        &PlanChange::SinkOption {
            operator: "async wait operator".into(),
            key: "async.capacity".into(),
            value: "many".into(),
        },
    )
    .expect("fix");
    let e = match env.execute() {
        Ok(_) => panic!("a capacity of 'many' was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("async.capacity = 'many'"), "{e}");
}
