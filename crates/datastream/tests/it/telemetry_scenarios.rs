//! Busy / backpressured / idle per subtask in controlled scenarios
//! (docs/src/reference/flink-formats.md#time-accounting).
//! Margins are generous, nothing asserts on wall-clock durations, and metrics are polled until
//! they show the scenario (a loaded machine shows it later, not differently).

use std::time::{Duration, Instant};

use sluice_datastream::{EnvConfig, StreamEnv};
use sluice_runtime::telemetry::{MetricsConfig, SubtaskSnapshot, VertexSnapshot};

fn env(p: usize) -> StreamEnv {
    StreamEnv::with_config(EnvConfig {
        parallelism: p,
        metrics: MetricsConfig {
            update_interval: Duration::from_millis(200),
            window_slots: 5,
        },
        ..EnvConfig::default()
    })
}

/// Burns CPU for about `d` (no sleeping: a busy operator must show CPU time too).
fn burn(d: Duration) {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// Runs the job and polls its metrics (every 200 ms, up to a minute) until `check` accepts
/// them, then cancels it; panics with the last refusal at the deadline. A loaded machine fills
/// the window late and starves threads for a while: the test waits for the evidence instead of
/// reading once after a fixed sleep, and what it asserts stays as strict.
fn observe_until(
    env: &StreamEnv,
    check: impl Fn(&[VertexSnapshot], &[String]) -> Result<(), String>,
) {
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    let names: Vec<String> = monitor
        .graph
        .vertices
        .iter()
        .map(|v| v.name.clone())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let verdict = loop {
        // Poll once the first window is full (5 updates of 200 ms), then every 200 ms.
        std::thread::sleep(Duration::from_millis(200));
        if monitor.started.elapsed() < Duration::from_millis(1000) {
            continue;
        }
        let v = monitor.vertex_metrics();
        match check(&v, &names) {
            Ok(()) => break Ok(()),
            Err(e) if Instant::now() > deadline => break Err(e),
            Err(_) => {}
        }
    };
    handle.cancel();
    let _ = handle.wait();
    if let Err(e) = verdict {
        panic!("{e}");
    }
}

/// `Err(what)` unless `cond`.
fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

fn sum_is_about_1000(s: &SubtaskSnapshot) -> Result<(), String> {
    let total = s.busy_ms_per_second + s.backpressured_ms_per_second + s.idle_ms_per_second;
    ensure((total - 1000.0).abs() < 30.0, || {
        format!("busy+bp+idle = {total}: {s:?}")
    })
}

#[test]
fn a_slow_operator_is_busy_its_upstream_backpressured_its_downstream_idle() {
    let env = env(1);
    env.set_buffer_size(64 * 8);
    env.generate(u64::MAX, |i| i)
        .name("fast-source")
        .map(|i: u64| i)
        .name("prepare")
        .disable_chaining()
        .map(|i: u64| {
            burn(Duration::from_micros(50));
            i
        })
        .name("slow")
        .disable_chaining()
        .map(|i: u64| i)
        .name("after")
        .disable_chaining()
        .discard();
    observe_until(&env, |v, names| {
        let by = |n: &str| {
            let i = names.iter().position(|x| x.starts_with(n)).unwrap();
            v[i].subtasks[0].clone()
        };
        let (src, slow, after) = (by("Source: fast-source"), by("slow"), by("after"));
        for s in [&src, &slow, &after] {
            sum_is_about_1000(s)?;
        }
        ensure(src.backpressured_ms_per_second > 500.0, || {
            format!("source: {src:?}")
        })?;
        ensure(slow.busy_ms_per_second > 800.0, || {
            format!("slow: {slow:?}")
        })?;
        ensure(slow.backpressured_ms_per_second < 100.0, || {
            format!("slow: {slow:?}")
        })?;
        ensure(after.idle_ms_per_second > 800.0, || {
            format!("after: {after:?}")
        })?;
        // Busy with CPU, not blocked: the slow subtask's thread is on a CPU most of the time.
        if !slow.cpu_ms_per_second.is_nan() {
            ensure(slow.cpu_ms_per_second > 300.0, || format!("cpu: {slow:?}"))?;
        }
        // The chain's operator time lands on the operator that burns it.
        let op = &slow.operators[0];
        assert_eq!(op.name, "slow");
        ensure(op.busy_ms_per_second > 500.0, || format!("{op:?}"))
    });
}

#[test]
fn a_hot_key_makes_one_subtask_busy_and_its_siblings_idle() {
    let env = env(2);
    env.generate(u64::MAX, |i| {
        if i % 10 == 0 {
            (i % 97) as i64 + 1
        } else {
            0i64
        }
    })
    .name("keys")
    .key_by(|k: &i64| *k)
    .reduce(|a, _b| {
        burn(Duration::from_micros(20));
        a
    })
    .name("per-key")
    .discard();
    let hot = sluice_datastream::partition::assign_key_to_subtask(&0i64, 128, 2) as usize;
    observe_until(&env, |v, names| {
        let i = names.iter().position(|n| n.starts_with("per-key")).unwrap();
        let (h, cold) = (&v[i].subtasks[hot], &v[i].subtasks[1 - hot]);
        sum_is_about_1000(h)?;
        sum_is_about_1000(cold)?;
        ensure(h.busy_ms_per_second > 800.0, || format!("hot: {h:?}"))?;
        ensure(cold.idle_ms_per_second > 500.0, || {
            format!("cold: {cold:?}")
        })?;
        ensure(h.records_in > 5 * cold.records_in, || {
            format!("hot {} cold {}", h.records_in, cold.records_in)
        })
    });
}
