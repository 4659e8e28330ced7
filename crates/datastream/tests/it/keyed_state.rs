//! Keyed state end to end: `process` with keyed state and processing-time timers, `aggregate` /
//! `aggregate_final` / `reduce_final` (final values equal the rolling versions' last values), and
//! the same jobs on the memory and LSM state backends giving identical results at parallelism 1
//! and 2.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{guarded, TempDir, HANG_GUARD};
use sluice_datastream::{
    AggregateFunction, Collector, CollectorExt, KeyedProcessFunction, OnTimerContext,
    OperatorError, ProcessContext, StateBackendKind, StreamEnv,
};
use sluice_runtime::sources::{SourceContext, SourceFunction};

/// The two backends, the LSM one under `dir`.
fn backends(dir: &TempDir) -> Vec<StateBackendKind> {
    vec![StateBackendKind::Memory, StateBackendKind::lsm(dir.path())]
}

/// Sum, count and maximum of the values.
#[derive(Clone)]
struct Stats;

impl AggregateFunction<(String, i64), (i64, u64, i64), (i64, u64, i64)> for Stats {
    fn create_accumulator(&self) -> (i64, u64, i64) {
        (0, 0, i64::MIN)
    }
    fn add(&self, v: (String, i64), a: (i64, u64, i64)) -> (i64, u64, i64) {
        (a.0 + v.1, a.1 + 1, a.2.max(v.1))
    }
    fn merge(&self, a: (i64, u64, i64), b: (i64, u64, i64)) -> (i64, u64, i64) {
        (a.0 + b.0, a.1 + b.1, a.2.max(b.2))
    }
    fn get_result(&self, a: &(i64, u64, i64)) -> (i64, u64, i64) {
        *a
    }
}

fn record(i: u64) -> (String, i64) {
    (format!("k{}", i % 37), ((i * 7919) % 101) as i64 - 50)
}

fn last_per_key<K: Ord, V>(records: Vec<(K, V)>) -> BTreeMap<K, V> {
    records.into_iter().collect()
}

#[test]
fn final_aggregations_equal_the_last_rolling_values_on_both_backends() {
    let dir = TempDir::new("final");
    for backend in backends(&dir) {
        for p in [1, 2] {
            let b = backend.clone();
            let (rolling, fin, reduced, reduced_final) =
                guarded("final aggregations", HANG_GUARD, move || {
                    let env = StreamEnv::new();
                    env.set_parallelism(p).set_state_backend(b);
                    let keyed = env
                        .generate(3000, record)
                        .key_by(|r: &(String, i64)| r.0.clone());
                    let rolling = keyed.aggregate(Stats).collect();
                    let fin = keyed.aggregate_final(Stats).collect();
                    let sum = |a: (String, i64), b: (String, i64)| (a.0, a.1 + b.1);
                    let reduced = keyed.reduce(sum).collect();
                    let reduced_final = keyed.reduce_final(sum).collect();
                    let exec = env.execute().unwrap();
                    let names: Vec<String> =
                        exec.graph.vertices.iter().map(|v| v.name.clone()).collect();
                    for n in ["Aggregate", "Final Aggregate", "Final Reduce"] {
                        assert!(names.iter().any(|v| v.contains(n)), "{n} not in {names:?}");
                    }
                    (
                        rolling.handle.take(),
                        fin.handle.take(),
                        reduced.handle.take(),
                        reduced_final.handle.take(),
                    )
                });
            let what = format!("{} p={p}", backend.name());
            assert_eq!(rolling.len(), 3000, "{what}: one rolling output per input");
            assert_eq!(fin.len(), 37, "{what}: one final output per key");
            assert_eq!(reduced_final.len(), 37, "{what}");
            // The model: per key, sum, count and max over the input.
            let mut model: BTreeMap<String, (i64, u64, i64)> = BTreeMap::new();
            for i in 0..3000 {
                let r = record(i);
                let a = model
                    .remove(&r.0)
                    .unwrap_or_else(|| Stats.create_accumulator());
                model.insert(r.0.clone(), Stats.add(r, a));
            }
            assert_eq!(last_per_key(fin.clone()), model, "{what}");
            assert_eq!(last_per_key(rolling), last_per_key(fin), "{what}");
            assert_eq!(
                last_per_key(reduced),
                last_per_key(reduced_final.clone()),
                "{what}"
            );
            let sums: BTreeMap<String, i64> = model.iter().map(|(k, a)| (k.clone(), a.0)).collect();
            assert_eq!(last_per_key(reduced_final), sums, "{what}");
        }
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the LSM backend removes every operator's working directory"
    );
}

/// Every state type, every record: count (value), the last three values (list), a histogram of
/// value buckets (map, cleared every 10 records), a running sum (reducing) and running stats
/// (aggregating). The output depends only on each key's records in order.
#[derive(Clone)]
struct AllStates;

impl KeyedProcessFunction<String, (String, i64), String> for AllStates {
    fn process_element(
        &mut self,
        (k, v): (String, i64),
        ctx: &mut ProcessContext<'_, String>,
        out: &mut dyn Collector<String>,
    ) -> Result<(), OperatorError> {
        assert_eq!(ctx.current_key(), &k);
        let n = {
            let mut c = ctx.value_state::<u64>("count");
            let n = c.value()?.unwrap_or(0) + 1;
            c.update(n)?;
            n
        };
        let last = {
            let mut l = ctx.list_state::<i64>("last");
            l.add(v)?;
            let mut vs = l.get()?;
            if vs.len() > 3 {
                vs.remove(0);
                l.update(vs.clone())?;
            }
            vs
        };
        let hist = {
            let mut m = ctx.map_state::<i64, u32>("hist");
            let bucket = v.rem_euclid(5);
            let c = m.get(&bucket)?.unwrap_or(0) + 1;
            m.put(bucket, c)?;
            let mut e = m.entries()?;
            e.sort();
            if n % 10 == 0 {
                m.clear()?;
            }
            e
        };
        let sum = ctx
            .reducing_state("sum", |a: i64, b| a + b)
            .add_and_get(v)?;
        let stats = ctx
            .aggregating_state("stats", &Stats)
            .add_and_get((k.clone(), v))?;
        out.collect(format!(
            "{k} n={n} last={last:?} hist={hist:?} sum={sum} stats={stats:?}"
        ))
    }
}

#[test]
fn the_same_job_gives_identical_results_on_both_backends() {
    let dir = TempDir::new("identical");
    let mut results = Vec::new();
    for backend in backends(&dir) {
        for p in [1, 2] {
            let b = backend.clone();
            let out = guarded("all states", HANG_GUARD, move || {
                let env = StreamEnv::new();
                assert_eq!(env.state_backend(), StateBackendKind::Memory, "the default");
                env.set_parallelism(p).set_state_backend(b.clone());
                assert_eq!(env.state_backend(), b);
                // One source subtask, so each keyed subtask sees its keys in a fixed order.
                let keyed = env
                    .generate(2000, record)
                    .set_parallelism(1)
                    .key_by(|r: &(String, i64)| r.0.clone());
                let summaries = keyed.process(AllStates).set_parallelism(p).collect();
                let fin = keyed.aggregate_final(Stats).set_parallelism(p).collect();
                env.execute().unwrap();
                (
                    summaries.handle.take_by_subtask(),
                    fin.handle.take_by_subtask(),
                )
            });
            assert_eq!(out.0.len(), p);
            assert_eq!(out.0.iter().map(Vec::len).sum::<usize>(), 2000);
            results.push((backend.name(), p, out));
        }
    }
    // Memory vs LSM at the same parallelism: identical outputs, subtask by subtask, in order.
    for p in [1, 2] {
        let of = |name: &str| {
            results
                .iter()
                .find(|(n, q, _)| *n == name && *q == p)
                .map(|(_, _, o)| o.clone())
                .unwrap()
        };
        assert_eq!(of("memory"), of("lsm"), "p={p}");
    }
    // Across parallelisms, each key's summaries are the same sequence.
    let per_key = |subtasks: &Vec<Vec<String>>| {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in subtasks.iter().flatten() {
            let k = s.split(' ').next().unwrap().to_string();
            m.entry(k).or_default().push(s.clone());
        }
        m
    };
    assert_eq!(per_key(&results[0].2 .0), per_key(&results[1].2 .0));
    let example = &per_key(&results[0].2 .0)["k3"];
    assert_eq!(example.len(), (0..2000).filter(|i| i % 37 == 3).count());
    let v = record(3).1;
    assert!(
        example[0].starts_with(&format!(
            "k3 n=1 last=[{v}] hist=[({}, 1)] sum={v} stats=({v}, 1, {v})",
            v.rem_euclid(5)
        )),
        "{}",
        example[0]
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Emits `records`, ships them (flush), then waits until `done` reaches `until` (everything the
/// timers should report) before ending, so that the timers fire while the input is still open.
struct WaitingSource {
    records: Vec<(String, i64)>,
    done: Arc<AtomicU64>,
    until: u64,
}

impl SourceFunction<(String, i64)> for WaitingSource {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<(String, i64)>,
    ) -> Result<(), OperatorError> {
        for r in self.records.drain(..) {
            out.collect(r)?;
        }
        out.flush()?;
        while self.done.load(Ordering::SeqCst) < self.until {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }
}

/// Counts per key; the first record after an emission registers a timer 20 ms ahead, which
/// emits `(key, count)` and resets the count. `reported` adds up the emitted counts.
#[derive(Clone)]
struct CountAndReport {
    reported: Arc<AtomicU64>,
}

impl KeyedProcessFunction<String, (String, i64), (String, u64)> for CountAndReport {
    fn process_element(
        &mut self,
        _v: (String, i64),
        ctx: &mut ProcessContext<'_, String>,
        _out: &mut dyn Collector<(String, u64)>,
    ) -> Result<(), OperatorError> {
        let n = {
            let mut c = ctx.value_state::<u64>("count");
            let n = c.value()?.unwrap_or(0) + 1;
            c.update(n)?;
            n
        };
        if n == 1 {
            let mut t = ctx.timer_service();
            let at = t.current_processing_time() + 20;
            t.register_processing_time_timer(at);
            // Registering the same timer again is a no-op.
            t.register_processing_time_timer(at);
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp_ms: i64,
        ctx: &mut OnTimerContext<'_, String>,
        out: &mut dyn Collector<(String, u64)>,
    ) -> Result<(), OperatorError> {
        assert_eq!(ctx.timer_timestamp(), Some(timestamp_ms));
        assert!(ctx.timer_service().current_processing_time() >= timestamp_ms);
        let n = ctx.value_state::<u64>("count").value()?.unwrap_or(0);
        ctx.value_state::<u64>("count").clear()?;
        out.collect((ctx.current_key().clone(), n))?;
        self.reported.fetch_add(n, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn processing_time_timers_fire_while_the_input_is_open() {
    let dir = TempDir::new("timers");
    for backend in backends(&dir) {
        for p in [1, 2] {
            let b = backend.clone();
            let (emitted, access_ns) = guarded("timers", HANG_GUARD, move || {
                let env = StreamEnv::new();
                env.set_parallelism(p)
                    .set_buffer_timeout(Duration::from_millis(5))
                    .set_state_backend(b);
                let reported = Arc::new(AtomicU64::new(0));
                let r2 = reported.clone();
                let counts = env
                    .add_source("waiting", move |_, _| {
                        Ok(WaitingSource {
                            records: (0..500).map(record).collect(),
                            done: r2.clone(),
                            until: 500,
                        })
                    })
                    .set_parallelism(1)
                    .key_by(|r: &(String, i64)| r.0.clone())
                    .process(CountAndReport { reported })
                    .collect();
                let handle = env.launch().unwrap();
                let monitor = handle.monitor();
                handle.wait().unwrap();
                let v = monitor
                    .graph
                    .vertices
                    .iter()
                    .position(|v| v.name.contains("KeyedProcess"))
                    .unwrap();
                let ns: u64 = monitor.subtasks[v]
                    .iter()
                    .map(|m| m.state_access_ns.load(Ordering::Relaxed))
                    .sum();
                (counts.handle.take(), ns)
            });
            let what = format!("{} p={p}", backend.name());
            let mut per_key: BTreeMap<String, u64> = BTreeMap::new();
            for (k, n) in &emitted {
                assert!(*n > 0, "{what}: a timer fires only for a key with records");
                *per_key.entry(k.clone()).or_default() += n;
            }
            let mut want: BTreeMap<String, u64> = BTreeMap::new();
            for i in 0..500 {
                *want.entry(record(i).0).or_default() += 1;
            }
            assert_eq!(per_key, want, "{what}: every record reported by a timer");
            assert!(
                access_ns > 0,
                "{what}: time in state calls is counted per subtask"
            );
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Files under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        files_under(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A rolling `sum` keeps its per-key values on the job's backend: on the LSM backend its store
/// has files on disk while the job runs and its state calls are timed into
/// `stateAccessTimeMsPerSecond`; the store is removed when the job ends.
#[test]
fn rolling_sum_keeps_its_state_on_the_lsm_backend() {
    let dir = TempDir::new("sum-lsm");
    let d = dir.path().to_path_buf();
    guarded("sum on lsm", Duration::from_secs(120), move || {
        let env = StreamEnv::with_config(sluice_datastream::EnvConfig {
            metrics: sluice_runtime::telemetry::MetricsConfig {
                update_interval: Duration::from_millis(200),
                window_slots: 5,
            },
            ..sluice_datastream::EnvConfig::default()
        });
        env.set_parallelism(2)
            .set_state_backend(StateBackendKind::lsm(&d));
        env.generate(u64::MAX, |i| ((i % 1000) as i64, 1i64))
            .key_by(|r: &(i64, i64)| r.0)
            .sum(|r: &mut (i64, i64)| &mut r.1)
            .name("sum")
            .discard();
        let handle = env.launch().unwrap();
        let m = handle.monitor();
        let v = m
            .graph
            .vertices
            .iter()
            .position(|v| v.name.starts_with("sum"))
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let (mut on_disk, mut access) = (0, 0.0);
        while on_disk == 0 || access <= 0.0 {
            assert!(
                std::time::Instant::now() < deadline,
                "files {on_disk}, state access {access} ms/s"
            );
            std::thread::sleep(Duration::from_millis(50));
            on_disk = files_under(&d);
            access = m.vertex_metrics()[v]
                .subtasks
                .iter()
                .map(|s| s.state_access_ms_per_second)
                .fold(0.0, f64::max);
        }
        handle.cancel();
        let _ = handle.wait();
    });
    assert_eq!(
        files_under(dir.path()),
        0,
        "working state removed at the end"
    );
}
