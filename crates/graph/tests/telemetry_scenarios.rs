//! Busy / backpressured / idle per subtask in controlled scenarios (spec §5.1 semantics).
//! Margins are generous and nothing asserts on wall-clock durations.

use std::time::{Duration, Instant};

use sluice_graph::{EnvConfig, StreamEnv};
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

/// Runs the job until the window is full, returns the vertices' metrics, then cancels.
fn observe(env: &StreamEnv) -> (Vec<VertexSnapshot>, Vec<String>) {
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    std::thread::sleep(Duration::from_millis(1500));
    let v = monitor.vertex_metrics();
    let names = monitor
        .graph
        .vertices
        .iter()
        .map(|v| v.name.clone())
        .collect();
    handle.cancel();
    let _ = handle.wait();
    (v, names)
}

fn sum_is_about_1000(s: &SubtaskSnapshot) {
    let total = s.busy_ms_per_second + s.backpressured_ms_per_second + s.idle_ms_per_second;
    assert!(
        (total - 1000.0).abs() < 30.0,
        "busy+bp+idle = {total}: {s:?}"
    );
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
    let (v, names) = observe(&env);
    let by = |n: &str| {
        let i = names.iter().position(|x| x.starts_with(n)).unwrap();
        v[i].subtasks[0].clone()
    };
    let (src, slow, after) = (by("Source: fast-source"), by("slow"), by("after"));
    for s in [&src, &slow, &after] {
        sum_is_about_1000(s);
    }
    assert!(src.backpressured_ms_per_second > 500.0, "source: {src:?}");
    assert!(slow.busy_ms_per_second > 800.0, "slow: {slow:?}");
    assert!(slow.backpressured_ms_per_second < 100.0, "slow: {slow:?}");
    assert!(after.idle_ms_per_second > 800.0, "after: {after:?}");
    // Busy with CPU, not blocked: the slow subtask's thread is on a CPU most of the time.
    if !slow.cpu_ms_per_second.is_nan() {
        assert!(slow.cpu_ms_per_second > 300.0, "cpu: {slow:?}");
    }
    // The chain's operator time lands on the operator that burns it.
    let op = &slow.operators[0];
    assert_eq!(op.name, "slow");
    assert!(op.busy_ms_per_second > 500.0, "{op:?}");
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
    let (v, names) = observe(&env);
    let i = names.iter().position(|n| n.starts_with("per-key")).unwrap();
    let hot = sluice_graph::partition::assign_key_to_subtask(&0i64, 128, 2) as usize;
    let (h, cold) = (&v[i].subtasks[hot], &v[i].subtasks[1 - hot]);
    sum_is_about_1000(h);
    sum_is_about_1000(cold);
    assert!(h.busy_ms_per_second > 800.0, "hot: {h:?}");
    assert!(cold.idle_ms_per_second > 500.0, "cold: {cold:?}");
    assert!(
        h.records_in > 5 * cold.records_in,
        "hot {} cold {}",
        h.records_in,
        cold.records_in
    );
}
