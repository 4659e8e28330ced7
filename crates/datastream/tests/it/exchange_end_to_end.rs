//! Jobs through every ship strategy deliver exactly the right records to exactly the right
//! subtasks (docs/src/reference/flink-formats.md#partitioners): counts, no loss or duplication
//! (multiset equality), and per-strategy
//! placement — GLOBAL to subtask 0, BROADCAST to everyone, HASH to the key's Flink subtask,
//! RESCALE/FORWARD within the pointwise wiring, REBALANCE as a round robin per sender.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{guarded, HANG_GUARD};
use sluice_datastream::partition::{
    assign_key_to_subtask, default_max_parallelism, pointwise_targets,
};
use sluice_datastream::{
    Collector, CollectorExt, DataStream, GraphError, JobResult, Operator, OperatorContext,
    OperatorError, StreamEnv,
};
use sluice_runtime::sources::{split_range, SourceContext, SourceFunction};

/// Tags each record with the index of the subtask it is processed on, read from the
/// `OperatorContext` the runtime opens the operator with.
struct Tag {
    subtask: Option<usize>,
    made_for: usize,
}

impl<T: Send> Operator<T, (usize, T)> for Tag {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        assert_eq!(
            ctx.subtask_index, self.made_for,
            "open() on another subtask"
        );
        assert!(ctx.subtask_index < ctx.parallelism);
        self.subtask = Some(ctx.subtask_index);
        Ok(())
    }

    fn process(
        &mut self,
        record: T,
        out: &mut dyn Collector<(usize, T)>,
    ) -> Result<(), OperatorError> {
        let s = self.subtask.expect("process() before open()");
        out.collect((s, record))
    }
}

fn tag<T: sluice_datastream::Data>(s: &DataStream<T>) -> DataStream<(usize, T)> {
    s.transform("Tag", |ctx: &OperatorContext| Tag {
        subtask: None,
        made_for: ctx.subtask_index,
    })
}

/// What a tagged job delivered: records per collecting subtask, and the job's result.
struct Delivered<T> {
    by_subtask: Vec<Vec<(usize, T)>>,
    result: JobResult,
}

impl<T: Clone> Delivered<T> {
    /// Every record with the subtask that processed it, after checking the collect sink's
    /// subtask agrees with the tag (the collect sink is chained to the tagger).
    fn all(&self) -> Vec<(usize, T)> {
        for (j, part) in self.by_subtask.iter().enumerate() {
            for (t, _) in part {
                assert_eq!(*t, j, "record tagged {t} collected by subtask {j}");
            }
        }
        self.by_subtask.iter().flatten().cloned().collect()
    }
}

/// Runs `generate(n, |i| i)` at parallelism `pu` → `partition` → tag at `pd` → collect, guarded
/// against hangs. `configure` adjusts the environment first.
fn run_tagged<C, P>(pu: usize, pd: usize, n: u64, configure: C, partition: P) -> Delivered<u64>
where
    C: FnOnce(&StreamEnv) + Send + 'static,
    P: FnOnce(DataStream<u64>) -> DataStream<u64> + Send + 'static,
{
    guarded("tagged job", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(pd);
        configure(&env);
        let src = env.generate(n, |i| i).set_parallelism(pu);
        let sink = tag(&partition(src)).collect();
        let exec = env.execute().expect("job runs");
        Delivered {
            by_subtask: sink.handle.take_by_subtask(),
            result: exec.result,
        }
    })
}

/// The generator subtask that produced value `v` (subtask `k` of `p` generates a contiguous
/// share of `0..n`).
fn origin(v: u64, n: u64, p: usize) -> usize {
    (0..p)
        .find(|&k| split_range(n, k, p).contains(&v))
        .expect("value in range")
}

fn sorted_values(d: &[(usize, u64)]) -> Vec<u64> {
    let mut v: Vec<u64> = d.iter().map(|(_, x)| *x).collect();
    v.sort_unstable();
    v
}

fn expect_each_once(d: &[(usize, u64)], n: u64) {
    assert_eq!(d.len() as u64, n, "record count");
    assert_eq!(
        sorted_values(d),
        (0..n).collect::<Vec<_>>(),
        "multiset of records"
    );
}

/// `counts[(upstream, downstream)]`.
fn flow(d: &[(usize, u64)], n: u64, pu: usize) -> BTreeMap<(usize, usize), u64> {
    let mut m = BTreeMap::new();
    for &(j, v) in d {
        *m.entry((origin(v, n, pu), j)).or_insert(0) += 1;
    }
    m
}

fn vertex_records_in(r: &JobResult, name_part: &str) -> u64 {
    r.vertices
        .iter()
        .find(|v| v.name.contains(name_part))
        .unwrap_or_else(|| panic!("no vertex with {name_part} in {:?}", r.vertices))
        .records_in
}

// ---------------------------------------------------------------------------------------------

#[test]
fn rebalance_delivers_everything_once_round_robin_per_sender() {
    for (pu, pd) in [(1, 3), (3, 2), (2, 4), (4, 4)] {
        let n = 3_001;
        let d = run_tagged(pu, pd, n, |_| {}, |s| s.rebalance());
        let all = d.all();
        expect_each_once(&all, n);
        assert_eq!(vertex_records_in(&d.result, "Tag"), n);
        let f = flow(&all, n, pu);
        for i in 0..pu {
            let sent = split_range(n, i, pu).count() as u64;
            let per: Vec<u64> = (0..pd).map(|j| *f.get(&(i, j)).unwrap_or(&0)).collect();
            assert_eq!(per.iter().sum::<u64>(), sent);
            let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
            assert!(
                hi - lo <= 1,
                "{pu}->{pd}: sender {i} not round robin: {per:?}"
            );
        }
    }
}

#[test]
fn default_edge_across_a_parallelism_change_rebalances() {
    let n = 1_000;
    let d = run_tagged(1, 3, n, |_| {}, |s| s);
    let all = d.all();
    expect_each_once(&all, n);
    let per: Vec<usize> = d.by_subtask.iter().map(Vec::len).collect();
    assert_eq!(per.iter().sum::<usize>(), 1_000);
    assert!(per.iter().all(|&c| (333..=334).contains(&c)), "{per:?}");
}

#[test]
fn rescale_stays_within_the_pointwise_targets_starting_at_local_channel_zero() {
    for (pu, pd) in [(2, 4), (4, 2), (3, 2), (2, 3), (1, 3), (4, 4)] {
        let n = 1_001;
        let d = run_tagged(pu, pd, n, |_| {}, |s| s.rescale());
        let all = d.all();
        expect_each_once(&all, n);
        let f = flow(&all, n, pu);
        for i in 0..pu {
            let targets = pointwise_targets(pu, pd, i);
            let k = targets.len() as u64;
            let sent = split_range(n, i, pu).count() as u64;
            for j in 0..pd {
                let got = *f.get(&(i, j)).unwrap_or(&0);
                if targets.contains(&j) {
                    // Local channel c receives the records m with m % k == c.
                    let c = (j - targets.start) as u64;
                    let want = sent / k + u64::from(c < sent % k);
                    assert_eq!(got, want, "{pu}->{pd}: sender {i} to {j}");
                } else {
                    assert_eq!(
                        got, 0,
                        "{pu}->{pd}: sender {i} reached {j} outside {targets:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn shuffle_delivers_everything_once_to_every_subtask() {
    for (pu, pd) in [(1, 3), (3, 2), (2, 4)] {
        let n = 3_000;
        let d = run_tagged(pu, pd, n, |_| {}, |s| s.shuffle());
        expect_each_once(&d.all(), n);
        for (j, part) in d.by_subtask.iter().enumerate() {
            // Uniformly random: each subtask's share is far from empty at these sizes.
            assert!(
                part.len() as u64 > n / pd as u64 / 2,
                "{pu}->{pd}: subtask {j} got {}",
                part.len()
            );
        }
    }
}

#[test]
fn global_sends_everything_to_subtask_zero() {
    for (pu, pd) in [(3, 2), (2, 4), (1, 1)] {
        let n = 2_000;
        let d = run_tagged(pu, pd, n, |_| {}, |s| s.global());
        let all = d.all();
        expect_each_once(&all, n);
        assert!(all.iter().all(|(j, _)| *j == 0));
        assert_eq!(d.by_subtask[0].len() as u64, n);
        assert_eq!(
            d.result
                .vertices
                .iter()
                .find(|v| v.name.contains("Tag"))
                .unwrap()
                .subtask_records_in[0],
            n
        );
    }
}

#[test]
fn broadcast_gives_every_subtask_every_record() {
    for (pu, pd) in [(2, 3), (3, 2), (1, 4)] {
        let n = 1_500;
        let d = run_tagged(pu, pd, n, |_| {}, |s| s.broadcast());
        assert_eq!(d.by_subtask.len(), pd);
        for (j, part) in d.by_subtask.iter().enumerate() {
            assert!(part.iter().all(|(t, _)| *t == j));
            expect_each_once(part, n);
        }
        assert_eq!(vertex_records_in(&d.result, "Tag"), n * pd as u64);
    }
}

#[test]
fn forward_connects_subtask_i_to_subtask_i() {
    // Chained (same vertex) and as a network edge (chaining disabled on the tagger).
    for network in [false, true] {
        let n = 2_000;
        let pu = 4;
        let d = guarded("forward", HANG_GUARD, move || {
            let env = StreamEnv::new();
            env.set_parallelism(pu);
            let src = env.generate(n, |i| i);
            let mut t = tag(&src.forward());
            if network {
                t = t.disable_chaining();
            }
            let sink = t.collect();
            let exec = env.execute().unwrap();
            let edges = exec.graph.edges.len();
            (sink.handle.take_by_subtask(), edges)
        });
        assert_eq!(d.1, usize::from(network) * 2, "network edges");
        let all: Vec<(usize, u64)> = d.0.iter().flatten().copied().collect();
        expect_each_once(&all, n);
        for (j, v) in all {
            assert_eq!(origin(v, n, pu), j, "value {v} left its subtask");
        }
    }
}

#[test]
fn hash_puts_each_key_on_exactly_its_flink_subtask() {
    for (pu, pd, maxp) in [
        (2, 4, None),
        (3, 2, None),
        (4, 4, Some(7u32)),
        (1, 3, Some(32768)),
    ] {
        let n = 4_000u64;
        let d = guarded("hash", HANG_GUARD, move || {
            let env = StreamEnv::new();
            env.set_parallelism(pd);
            if let Some(m) = maxp {
                env.set_max_parallelism(m);
            }
            let src = env.generate(n, |i| i).set_parallelism(pu);
            let keyed = src.key_by(|v: &u64| (*v % 97) as i64 - 40);
            let sink = tag(keyed.as_stream()).collect();
            env.execute().unwrap();
            sink.handle.take_by_subtask()
        });
        let all: Vec<(usize, u64)> = d.iter().flatten().copied().collect();
        expect_each_once(&all, n);
        let m = maxp.unwrap_or_else(|| default_max_parallelism(pd as u32));
        let mut seen: HashMap<i64, usize> = HashMap::new();
        for (j, v) in all {
            let key = (v % 97) as i64 - 40;
            let prev = *seen.entry(key).or_insert(j);
            assert_eq!(prev, j, "key {key} on subtasks {prev} and {j}");
            assert_eq!(
                assign_key_to_subtask(&key, m, pd as u32) as usize,
                j,
                "key {key} (max parallelism {m}, parallelism {pd})"
            );
        }
        assert_eq!(seen.len(), 97);
    }
}

#[test]
fn hash_with_string_keys_matches_flink_placement() {
    let n = 3_000u64;
    let d = guarded("hash strings", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        let words = env
            .generate(n, |i| format!("word-{}", i % 50))
            .set_parallelism(2);
        let sink = tag(words.key_by(|w: &String| w.clone()).as_stream()).collect();
        env.execute().unwrap();
        sink.handle.take_by_subtask()
    });
    let mut count = 0;
    for (j, part) in d.iter().enumerate() {
        for (t, w) in part {
            assert_eq!(*t, j);
            assert_eq!(assign_key_to_subtask(w.as_str(), 128, 3) as usize, j, "{w}");
            count += 1;
        }
    }
    assert_eq!(count, n);
}

#[test]
fn union_of_differently_partitioned_streams_delivers_both() {
    let d = guarded("union", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        let a = env.generate(1_000, |i| i).set_parallelism(2);
        let b = env.generate(500, |i| 10_000 + i).set_parallelism(3);
        let c = env
            .from_vec((0..7u64).map(|i| 20_000 + i).collect())
            .set_parallelism(1);
        let u = a.rebalance().union(&[&b, &c.broadcast()]);
        let sink = tag(&u).collect();
        env.execute().unwrap();
        sink.handle.take_by_subtask()
    });
    let mut got: Vec<u64> = d.iter().flatten().map(|(_, v)| *v).collect();
    got.sort_unstable();
    let mut want: Vec<u64> = (0..1_000).chain(10_000..10_500).collect();
    for _ in 0..3 {
        want.extend(20_000..20_007);
    }
    want.sort_unstable();
    assert_eq!(got, want);
    // b is FORWARD (equal parallelism): value 10_000 + i stays on its generator subtask.
    for (j, part) in d.iter().enumerate() {
        for &(_, v) in part {
            if (10_000..10_500).contains(&v) {
                assert_eq!(origin(v - 10_000, 500, 3), j);
            }
        }
    }
}

#[test]
fn flat_map_and_filter_transform_across_exchanges() {
    let got = guarded("flat_map/filter", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        let sink = env
            .generate(500, |i| i)
            .set_parallelism(3)
            .flat_map(|x| (0..(x % 4)).map(move |k| x * 10 + k))
            .rebalance()
            .filter(|v| v % 3 != 0)
            .set_parallelism(4)
            .map(|v| v + 1)
            .set_parallelism(4)
            .collect();
        let exec = env.execute().unwrap();
        (sink.handle.take(), exec.result)
    });
    let (mut got, result) = got;
    got.sort_unstable();
    let mut want: Vec<u64> = (0..500u64)
        .flat_map(|x| (0..(x % 4)).map(move |k| x * 10 + k))
        .filter(|v| v % 3 != 0)
        .map(|v| v + 1)
        .collect();
    want.sort_unstable();
    assert_eq!(got, want);
    let flat_out: u64 = (0..500u64).map(|x| x % 4).sum();
    assert_eq!(vertex_records_in(&result, "Filter"), flat_out);
}

#[test]
fn from_vec_splits_across_subtasks_and_from_iter_runs_at_parallelism_one() {
    let (v, it) = guarded("collections", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        let data: Vec<String> = (0..1_000).map(|i| format!("r{i}")).collect();
        let v = tag(&env.from_vec(data)).collect();
        let i = tag(&env.from_iter((0..777u64).map(|x| x * 2))).collect();
        let exec = env.execute().unwrap();
        let iter_vertex = exec
            .graph
            .vertices
            .iter()
            .find(|v| v.name.starts_with("Source: Iterator Source"))
            .unwrap()
            .clone();
        assert_eq!(iter_vertex.parallelism, 1);
        (v.handle.take_by_subtask(), i.handle.take_by_subtask())
    });
    // from_vec: contiguous shares, each element exactly once.
    assert_eq!(v.len(), 3);
    let mut all: Vec<String> = v.iter().flatten().map(|(_, s)| s.clone()).collect();
    all.sort();
    let mut want: Vec<String> = (0..1_000).map(|i| format!("r{i}")).collect();
    want.sort();
    assert_eq!(all, want);
    for (j, part) in v.iter().enumerate() {
        let r = split_range(1_000, j, 3);
        let expect: Vec<String> = r.map(|i| format!("r{i}")).collect();
        let got: Vec<String> = part.iter().map(|(_, s)| s.clone()).collect();
        assert_eq!(got, expect, "subtask {j} share, in order");
    }
    // from_iter: one subtask (the iterator source is non-parallel); the tagger at parallelism 3
    // then gets it rebalanced.
    let mut vals: Vec<u64> = it.iter().flatten().map(|(_, x)| *x).collect();
    vals.sort_unstable();
    assert_eq!(vals, (0..777u64).map(|x| x * 2).collect::<Vec<_>>());
}

#[test]
fn from_iter_at_parallelism_two_is_rejected_at_build_time() {
    let env = StreamEnv::new();
    env.set_parallelism(2);
    env.from_iter(0..10u64).set_parallelism(2).discard();
    let err = env.job_graph().unwrap_err();
    assert!(
        matches!(err, GraphError::Plan(sluice_plan::PlanError::InvalidJob(_))),
        "{err:?}"
    );
    assert!(err.to_string().contains("parallelism must be 1"), "{err}");
    assert!(matches!(
        env.execute(),
        Err(GraphError::Plan(sluice_plan::PlanError::InvalidJob(_)))
    ));
}

#[test]
fn an_iterator_source_job_runs_once() {
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let sink = env.from_iter(0..10u64).collect();
    env.execute().unwrap();
    assert_eq!(sink.handle.take(), (0..10).collect::<Vec<_>>());
    let err = env.execute().unwrap_err();
    assert!(err.to_string().contains("only once"), "{err}");
}

#[test]
fn buffer_timeout_zero_flushes_every_record_and_completes() {
    for (pu, pd) in [(1, 3), (3, 2)] {
        let n = 2_000;
        let d = run_tagged(
            pu,
            pd,
            n,
            |env| {
                env.set_buffer_timeout(Duration::ZERO);
            },
            |s| {
                s.rebalance()
                    .map(|x| x)
                    .key_by(|x: &u64| *x as i64)
                    .as_stream()
                    .clone()
            },
        );
        let all = d.all();
        expect_each_once(&all, n);
    }
}

#[test]
fn tiny_buffers_and_minimal_credits_still_deliver_everything() {
    for (bytes, exclusive, floating) in [(16, 1, 0), (1, 1, 0), (16, 0, 1), (64, 2, 1)] {
        for timeout in [Duration::ZERO, Duration::from_millis(5)] {
            let n = 3_000;
            let d = run_tagged(
                3,
                2,
                n,
                move |env| {
                    env.set_buffer_size(bytes)
                        .set_credits(exclusive, floating)
                        .set_buffer_timeout(timeout);
                },
                |s| s.rebalance().map(|x| x).set_parallelism(4).shuffle(),
            );
            let all = d.all();
            expect_each_once(&all, n);
            assert_eq!(vertex_records_in(&d.result, "Tag"), n);
        }
    }
}

#[test]
fn zero_credits_are_rejected_before_running() {
    let env = StreamEnv::new();
    env.set_credits(0, 0);
    env.generate(10, |i| i).discard();
    assert!(matches!(
        env.execute(),
        Err(GraphError::Plan(sluice_plan::PlanError::InvalidConfig(_)))
    ));
    let env = StreamEnv::new();
    env.set_buffer_size(0);
    env.generate(10, |i| i).discard();
    assert!(matches!(
        env.execute(),
        Err(GraphError::Plan(sluice_plan::PlanError::InvalidConfig(_)))
    ));
}

// ---------------------------------------------------------------------------------------------
// Buffer timeout: a record in a partly filled buffer leaves within the timeout even when no
// further record follows it. Both tests would hang (caught by the guard) if it stayed.

/// Emits until `stop` is set, as fast as it can.
struct UntilStopped {
    stop: Arc<AtomicBool>,
}

impl SourceFunction<u64> for UntilStopped {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<u64>,
    ) -> Result<(), OperatorError> {
        let mut i = 0;
        while !self.stop.load(Ordering::SeqCst) {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            out.collect(i)?;
            i += 1;
        }
        Ok(())
    }
}

#[test]
fn rare_output_of_an_operator_with_busy_input_is_flushed_on_the_buffer_timeout() {
    // The filter's input never pauses: the source emits until the sink has seen a record, and the
    // filter is slower than the source, so buffers are always queued for it. Exactly one record
    // passes the filter: only the buffer timeout can ship it.
    guarded("rare output", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1)
            .set_buffer_size(8 * 256)
            .set_buffer_timeout(Duration::from_millis(5));
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let sink = env
            .add_source("until", move |_, _| Ok(UntilStopped { stop: s2.clone() }))
            .rebalance()
            .filter(|v| {
                common::spin_for(Duration::from_micros(2));
                *v == 1_000
            })
            .rebalance()
            .map(move |v| {
                stop.store(true, Ordering::SeqCst);
                v
            })
            .collect();
        env.execute().unwrap();
        assert_eq!(sink.handle.take(), vec![1_000]);
    });
}

/// Emits `n` records one at a time, each only after the sink saw the previous one; flushes its
/// output (the `Collector::flush` contract) before waiting.
struct PingSource {
    seen: Arc<AtomicU64>,
    n: u64,
}

impl SourceFunction<u64> for PingSource {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<u64>,
    ) -> Result<(), OperatorError> {
        for i in 0..self.n {
            out.collect(i)?;
            let mut flushed = false;
            while self.seen.load(Ordering::SeqCst) <= i {
                if ctx.should_stop() {
                    return Err(OperatorError::Cancelled);
                }
                if !flushed {
                    out.flush()?;
                    flushed = true;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(())
    }
}

#[test]
fn a_source_flushing_before_it_waits_gets_each_record_through_a_chain_of_exchanges() {
    // Source -> map (network) -> sink (network): the map's partial buffer is shipped on the
    // buffer timeout while its input is idle.
    let got = guarded("ping", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2)
            .set_buffer_timeout(Duration::from_millis(2));
        let seen = Arc::new(AtomicU64::new(0));
        let s2 = seen.clone();
        let sink = env
            .add_source("ping", move |_, _| {
                Ok(PingSource {
                    seen: s2.clone(),
                    n: 20,
                })
            })
            .set_parallelism(1)
            .rebalance()
            .map(|v| v * 2)
            .set_parallelism(2)
            .global()
            .sink_fn("pong", move |_v: u64| {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .set_parallelism(1);
        let _ = sink;
        env.execute().unwrap().result
    });
    assert_eq!(got.vertices.last().unwrap().records_in, 20);
}

#[test]
fn a_mid_chain_operator_feeds_both_its_chained_successor_and_a_network_edge() {
    let (chained, remote, graph_edges) = guarded("mixed fan-out", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        let a = env.generate(1_000, |i| i).map(|x| x * 3).name("a");
        let chained = a.map(|x| x + 1).name("b").collect();
        let c = a.map(|x| x + 2).name("c").set_parallelism(3);
        let remote = tag(&c).set_parallelism(3).collect().set_parallelism(3);
        let exec = env.execute().unwrap();
        let edges: Vec<_> = exec
            .graph
            .edges
            .iter()
            .map(|e| (exec.graph.vertices[e.from_vertex].name.clone(), e.strategy))
            .collect();
        (
            chained.handle.take(),
            remote.handle.take_by_subtask(),
            edges,
        )
    });
    assert_eq!(
        graph_edges,
        vec![(
            "Source: Generator Source -> a -> b -> Sink: Collect".to_string(),
            sluice_datastream::ShipStrategy::Rebalance
        )]
    );
    let mut c = chained;
    c.sort_unstable();
    assert_eq!(c, (0..1_000).map(|x| x * 3 + 1).collect::<Vec<_>>());
    assert_eq!(remote.len(), 3);
    let mut r: Vec<u64> = remote.iter().flatten().map(|(_, v)| *v).collect();
    r.sort_unstable();
    assert_eq!(r, (0..1_000).map(|x| x * 3 + 2).collect::<Vec<_>>());
}

#[test]
fn a_stream_unioned_with_itself_delivers_every_record_twice() {
    let got = guarded("self union", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        let s = env.generate(500, |i| i);
        let sink = s.union(&[&s.rebalance()]).map(|x| x).collect();
        env.execute().unwrap();
        sink.handle.take()
    });
    let mut got = got;
    got.sort_unstable();
    let want: Vec<u64> = (0..500).flat_map(|x| [x, x]).collect();
    assert_eq!(got, want);
}

#[test]
fn keyed_rolling_sum_ends_at_each_keys_total() {
    let got = guarded("keyed sum", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        let sink = env
            .generate(9_999, |i| ((i % 11) as i64, i))
            .set_parallelism(2)
            .key_by(|r: &(i64, u64)| r.0)
            .sum(|r: &mut (i64, u64)| &mut r.1)
            .collect();
        env.execute().unwrap();
        sink.handle.take_by_subtask()
    });
    let mut last: HashMap<i64, u64> = HashMap::new();
    let mut count = 0;
    for (j, part) in got.iter().enumerate() {
        for &(k, s) in part {
            assert_eq!(assign_key_to_subtask(&k, 128, 3) as usize, j);
            // Rolling: per key the running sum only grows (records are non-negative).
            let prev = last.insert(k, s).unwrap_or(0);
            assert!(s >= prev);
            count += 1;
        }
    }
    assert_eq!(count, 9_999);
    for k in 0..11i64 {
        let want: u64 = (0..9_999u64).filter(|i| (i % 11) as i64 == k).sum();
        assert_eq!(last[&k], want, "key {k}");
    }
}

#[test]
fn the_same_environment_executes_twice_with_the_same_results() {
    let (a, b) = guarded("twice", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        let sink = env
            .generate(3_000, |i| i)
            .rebalance()
            .map(|x| x + 1)
            .collect();
        env.execute().unwrap();
        let a = sink.handle.take_by_subtask();
        env.execute().unwrap();
        (a, sink.handle.take_by_subtask())
    });
    // Placement is a function of the job (seeded round robin); the arrival order at a subtask
    // with several input channels is not, so compare each subtask's records as a multiset.
    let sorted = |v: Vec<Vec<u64>>| -> Vec<Vec<u64>> {
        v.into_iter()
            .map(|mut p| {
                p.sort_unstable();
                p
            })
            .collect()
    };
    let (a, b) = (sorted(a), sorted(b));
    assert_eq!(a, b);
    assert_eq!(a.len(), 2);
    assert_eq!(a.iter().map(Vec::len).sum::<usize>(), 3_000);
}
