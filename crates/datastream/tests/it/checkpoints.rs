//! Checkpoints and recovery end to end: a keyed job writing through the transactional sink,
//! killed at many points, must publish exactly what a failure-free run publishes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common;
use common::latest_checkpoint;

use sluice_datastream::{
    Collector, FaultSpec, KeyedProcessFunction, OperatorError, ProcessContext, RestartStrategy,
    StreamEnv,
};

const KEYS: u64 = 40;

/// Per key, the running sum of the values seen: `key,i,sum` for every record.
#[derive(Clone)]
struct RunningSum;

impl KeyedProcessFunction<u64, (u64, u64), String> for RunningSum {
    fn process_element(
        &mut self,
        (key, i): (u64, u64),
        ctx: &mut ProcessContext<'_, u64>,
        out: &mut dyn Collector<String>,
    ) -> Result<(), OperatorError> {
        let mut st = ctx.value_state::<u64>("sum");
        let sum = st.value()?.unwrap_or(0).wrapping_add(i);
        st.update(sum)?;
        out.collect(format!("{key},{i},{sum}"))
    }
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-cp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Source (2 subtasks; each key comes from one of them, so per-key order is deterministic) →
/// a slowed map → keyed running sum (`p` subtasks) → transactional sink.
fn job(env: &StreamEnv, records: u64, p: usize, out: &Path) {
    env.set_parallelism(p);
    env.generate(records, move |i| (i * KEYS / records, i))
        .set_parallelism(2)
        .map(|r: (u64, u64)| {
            if r.1.is_multiple_of(1_000) {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        })
        .set_parallelism(2)
        .key_by(|r: &(u64, u64)| r.0)
        .process(RunningSum)
        .write_text_exactly_once(out, |s: &String, line: &mut String| line.push_str(s));
}

fn sorted_output(dir: &Path) -> Vec<String> {
    let mut lines = sluice_runtime::sinks::committed_lines(dir).unwrap();
    lines.sort();
    lines
}

#[test]
fn twenty_injected_failures_lose_and_duplicate_nothing() {
    let records = 300_000;
    let expected_dir = tempdir("expected");
    let env = StreamEnv::new();
    job(&env, records, 2, &expected_dir);
    env.execute().unwrap();
    let expected = sorted_output(&expected_dir);
    assert_eq!(expected.len() as u64, records);

    // 20 failures at pseudo-random points of random subtasks of the keyed vertex.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let faults: Vec<FaultSpec> = (0..20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            FaultSpec {
                vertex: "KeyedProcess".into(),
                subtask: (x % 2) as usize,
                after_records: 1_000 + (x >> 8) % 8_000,
            }
        })
        .collect();
    let out = tempdir("faulty");
    let checkpoints = tempdir("faulty-chk");
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(10))
        .set_checkpoint_dir(&checkpoints)
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 25,
            delay: Duration::ZERO,
        })
        .inject_faults(faults);
    job(&env, records, 2, &out);
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    let hub = monitor.control.checkpoints().unwrap();
    let stats = hub.stats();
    assert_eq!(hub.attempt(), 20, "one restart per injected failure");
    assert!(
        stats.restored >= 10,
        "most restarts restored a checkpoint (the others had none yet): {}",
        stats.restored
    );
    assert!(
        stats.completed >= 5,
        "checkpoints completed between failures: {}",
        stats.completed
    );
    let got = sorted_output(&out);
    if got != expected {
        let missing = expected
            .iter()
            .filter(|l| got.binary_search(l).is_err())
            .count();
        let extra = got
            .iter()
            .filter(|l| expected.binary_search(l).is_err())
            .count();
        panic!(
            "not exactly once: {} lines, expected {}; {missing} missing, {extra} unexpected",
            got.len(),
            expected.len()
        );
    }
    assert!(
        !std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".pending")),
        "nothing left pending"
    );
}

/// A crash after a bounded job's input ended, before or while its sinks publish their last
/// transactions, restarts from the job's latest checkpoint on disk. That checkpoint must hold
/// every source at its end (the final checkpoint, taken before the sources finish): a restore
/// from it reads nothing again, so nothing the sinks published is published twice. Without it
/// the last transactions were committed after the job ended, beyond a latest checkpoint that
/// held the sources mid-input, and a restore from it published their records again (the
/// Kafka -> Kafka SIGKILL test: 20-29k duplicated lines when a kill hit the final commits).
#[test]
fn a_restore_from_the_latest_checkpoint_of_a_finished_job_publishes_nothing_again() {
    let records = 200_000;
    let out = tempdir("final-out");
    let checkpoints = tempdir("final-chk");
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(10))
        .set_checkpoint_dir(&checkpoints);
    job(&env, records, 2, &out);
    env.execute().unwrap();
    let first = sorted_output(&out);
    assert_eq!(first.len() as u64, records);
    let latest = latest_checkpoint(&checkpoints).expect("a completed checkpoint on disk");
    // The same job restored from it, into the same output (what a restart after the crash
    // runs): it has nothing left to read or publish.
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(10))
        .set_checkpoint_dir(tempdir("final-chk-2"));
    env.restore_from(&latest);
    job(&env, records, 2, &out);
    env.execute().unwrap();
    let again = sorted_output(&out);
    assert_eq!(
        again.len(),
        first.len(),
        "restored from {}: lines published again",
        latest.display()
    );
    assert_eq!(again, first);
}

#[test]
fn a_failure_without_restarts_fails_the_job_with_the_cause() {
    let env = StreamEnv::new();
    let out = tempdir("no-restart");
    env.enable_checkpointing(Duration::from_millis(50))
        .set_restart_strategy(RestartStrategy::NoRestart)
        .inject_faults(vec![FaultSpec {
            vertex: "KeyedProcess".into(),
            subtask: 0,
            after_records: 1_000,
        }]);
    job(&env, 50_000, 2, &out);
    let e = env.execute().unwrap_err().to_string();
    assert!(e.contains("injected failure"), "{e}");
}

/// Waits (polling, up to a minute) until the job's sources have emitted records, so a savepoint
/// comes mid-job rather than after a fixed sleep that a loaded machine may not honour.
fn wait_for_records(h: &sluice_datastream::JobHandle) {
    let m = h.monitor();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while m.records_emitted_by_sources() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `key,sum,count` rolling per key, through the transactional sink.
fn rescale_job(env: &StreamEnv, records: u64, p: usize, out: &Path) {
    env.set_parallelism(p);
    env.generate(records, |i| (i % 97, i, 1u64))
        .map(|r: (u64, u64, u64)| {
            if r.1.is_multiple_of(100) {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        })
        .key_by(|r: &(u64, u64, u64)| r.0)
        .reduce(|a: (u64, u64, u64), b: (u64, u64, u64)| (a.0, a.1 + b.1, a.2 + b.2))
        .write_text_exactly_once(out, |r: &(u64, u64, u64), line: &mut String| {
            line.push_str(&format!("{},{},{}", r.0, r.1, r.2))
        });
}

#[test]
fn savepoint_at_1_restore_at_2_savepoint_restore_at_3_equals_an_uninterrupted_run() {
    let records = 60_000u64;
    let out = tempdir("rescale-out");
    let sp1 = tempdir("rescale-sp1");
    let sp2 = tempdir("rescale-sp2");

    let env = StreamEnv::new();
    rescale_job(&env, records, 1, &out);
    let h = env.launch().unwrap();
    wait_for_records(&h);
    let p1 = h.stop_with_savepoint(&sp1).unwrap();

    let env = StreamEnv::new();
    env.restore_from(&p1);
    rescale_job(&env, records, 2, &out);
    let h = env.launch().unwrap();
    wait_for_records(&h);
    let p2 = h.stop_with_savepoint(&sp2).unwrap();

    let env = StreamEnv::new();
    env.restore_from(&p2);
    rescale_job(&env, records, 3, &out);
    env.execute().unwrap();

    // Every record produced exactly one rolling update, and the last one per key is the total.
    assert_one_update_per_record(&out, records, 97);
    // Both savepoints hold the keyed state and the source positions.
    let meta = std::fs::read_to_string(p2.join("_metadata")).unwrap();
    assert!(meta.contains("\"kind\":\"SAVEPOINT\""), "{meta}");
}

#[test]
fn unaligned_checkpoints_restore_in_flight_records_exactly_once() {
    let records = 200_000;
    let expected_dir = tempdir("u-expected");
    let env = StreamEnv::new();
    job(&env, records, 2, &expected_dir);
    env.execute().unwrap();
    let expected = sorted_output(&expected_dir);

    let faults: Vec<FaultSpec> = (0..8u64)
        .map(|k| FaultSpec {
            vertex: "KeyedProcess".into(),
            subtask: (k % 2) as usize,
            after_records: 3_000 + 1_700 * k,
        })
        .collect();
    let out = tempdir("u-faulty");
    let env = StreamEnv::new();
    // Small buffers so that some are always queued when a barrier overtakes them.
    env.set_buffer_size(16 * 64);
    env.enable_checkpointing(Duration::from_millis(10))
        .configure_checkpoints(|c| c.unaligned = true)
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 10,
            delay: Duration::ZERO,
        })
        .inject_faults(faults);
    job(&env, records, 2, &out);
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    let stats = monitor.control.checkpoints().unwrap().stats();
    assert!(stats.completed >= 3, "{}", stats.completed);
    assert!(stats
        .history
        .iter()
        .any(|r| r.kind == sluice_types::CheckpointKind::Unaligned));
    let got = sorted_output(&out);
    assert!(
        got == expected,
        "not exactly once: {} lines, expected {}",
        got.len(),
        expected.len()
    );
}

/// A source as fast as it can go into a sink far slower (5 ms per record), through small
/// buffers (32 records): an aligned barrier queues behind ~1.6 s of records.
fn backpressured(env: &StreamEnv) {
    env.set_parallelism(1);
    env.set_buffer_size(8 * 32);
    env.generate(u64::MAX, |i| i)
        .map(|i: u64| i)
        .disable_chaining()
        .sink_fn("slow-sink", |_: u64| {
            std::thread::sleep(Duration::from_millis(5));
            Ok(())
        });
}

/// Runs the job, polling its checkpoint statistics every 50 ms until `enough` accepts them or a
/// minute passed (a loaded machine completes checkpoints later, not differently); cancels it
/// and returns the last statistics.
fn checkpoint_stats_until(
    env: &StreamEnv,
    enough: impl Fn(&sluice_runtime::checkpoint::StatsView) -> bool,
) -> sluice_runtime::checkpoint::StatsView {
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    let hub = monitor.control.checkpoints().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let stats = loop {
        let stats = hub.stats();
        if enough(&stats) || std::time::Instant::now() > deadline {
            break stats;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    handle.cancel();
    let _ = handle.wait();
    stats
}

#[test]
fn under_backpressure_aligned_checkpoints_time_out_and_unaligned_ones_complete() {
    use sluice_types::CheckpointKind;
    let tolerant = |c: &mut sluice_datastream::CheckpointConfig| {
        c.timeout = Duration::from_millis(1_000);
        c.tolerable_failures = 1_000;
    };
    // Aligned: the barrier waits behind ~1.6 s of queued records; every checkpoint expires.
    let env = StreamEnv::new();
    backpressured(&env);
    env.enable_checkpointing(Duration::from_millis(100))
        .configure_checkpoints(tolerant);
    let expired = |s: &sluice_runtime::checkpoint::StatsView| {
        s.history
            .iter()
            .any(|r| r.failure.as_deref().is_some_and(|f| f.contains("expired")))
    };
    let aligned = checkpoint_stats_until(&env, |s| s.failed >= 2 && expired(s));
    assert_eq!(
        aligned.completed, 0,
        "aligned under backpressure: {aligned:?}"
    );
    assert!(aligned.failed >= 2 && expired(&aligned), "{aligned:?}");

    // Unaligned: the barrier overtakes the queue and completes within a buffer's time.
    let env = StreamEnv::new();
    backpressured(&env);
    env.enable_checkpointing(Duration::from_millis(100))
        .configure_checkpoints(|c| {
            tolerant(c);
            c.unaligned = true;
        });
    let unaligned = checkpoint_stats_until(&env, |s| s.completed >= 3);
    assert!(unaligned.completed >= 3, "{unaligned:?}");
    assert_eq!(unaligned.failed, 0, "{unaligned:?}");

    // Aligned with an alignment timeout: slow aligned checkpoints are retried unaligned.
    let env = StreamEnv::new();
    backpressured(&env);
    env.enable_checkpointing(Duration::from_millis(100))
        .configure_checkpoints(|c| {
            tolerant(c);
            c.aligned_timeout = Duration::from_millis(100);
        });
    let retried = |s: &sluice_runtime::checkpoint::StatsView| {
        s.latest_completed.as_ref().map(|r| r.kind) == Some(CheckpointKind::Unaligned)
    };
    let switched = checkpoint_stats_until(&env, |s| s.completed >= 2 && retried(s));
    assert!(switched.completed >= 2, "{switched:?}");
    assert_eq!(
        switched.latest_completed.as_ref().map(|r| r.kind),
        Some(CheckpointKind::Unaligned)
    );
}

#[test]
fn recovery_is_exactly_once_on_the_lsm_backend_too() {
    let records = 60_000;
    let expected_dir = tempdir("lsm-expected");
    let env = StreamEnv::new();
    job(&env, records, 2, &expected_dir);
    env.execute().unwrap();
    let expected = sorted_output(&expected_dir);

    let out = tempdir("lsm-faulty");
    let env = StreamEnv::new();
    env.set_state_backend(sluice_datastream::StateBackendKind::Lsm {
        dir: tempdir("lsm-state"),
    });
    env.enable_checkpointing(Duration::from_millis(10))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 5,
            delay: Duration::ZERO,
        })
        .inject_faults(
            (0..4u64)
                .map(|k| FaultSpec {
                    vertex: "KeyedProcess".into(),
                    subtask: (k % 2) as usize,
                    after_records: 2_000 + 1_500 * k,
                })
                .collect(),
        );
    job(&env, records, 2, &out);
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    assert_eq!(monitor.control.checkpoints().unwrap().attempt(), 4);
    let got = sorted_output(&out);
    assert!(
        got == expected,
        "not exactly once: {} lines, expected {}",
        got.len(),
        expected.len()
    );
}

#[test]
fn two_phase_aggregation_recovers_its_partials() {
    // key,sum rolling through salt -> pre-aggregate -> combine; the last update per key is the
    // total, with or without failures (intermediate updates depend on timing).
    fn run(faults: Vec<FaultSpec>, tag: &str) -> std::collections::BTreeMap<u64, u64> {
        let out = tempdir(tag);
        let env = StreamEnv::new();
        env.set_parallelism(2);
        if !faults.is_empty() {
            env.enable_checkpointing(Duration::from_millis(10))
                .set_restart_strategy(RestartStrategy::FixedDelay {
                    attempts: faults.len() as u32,
                    delay: Duration::ZERO,
                })
                .inject_faults(faults);
        }
        env.generate(200_000, |i| (if i % 3 == 0 { 0 } else { i % 41 }, i))
            .map(|r: (u64, u64)| {
                if r.1.is_multiple_of(1_000) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                r
            })
            .key_by(|r: &(u64, u64)| r.0)
            .two_phase_with(4, 64, |a: (u64, u64), b: (u64, u64)| (a.0, a.1 + b.1))
            .write_text_exactly_once(&out, |r: &(u64, u64), line: &mut String| {
                line.push_str(&format!("{},{}", r.0, r.1))
            });
        env.execute().unwrap();
        let mut last = std::collections::BTreeMap::new();
        for l in sluice_runtime::sinks::committed_lines(&out).unwrap() {
            let (k, v) = l.split_once(',').unwrap();
            last.insert(k.parse().unwrap(), v.parse().unwrap());
        }
        last
    }
    let expected = run(Vec::new(), "tp-ok");
    let faults = vec![
        FaultSpec {
            vertex: "pre-aggregate".into(),
            subtask: 0,
            after_records: 30_000,
        },
        FaultSpec {
            vertex: "combine".into(),
            subtask: 1,
            after_records: 200,
        },
    ];
    assert_eq!(run(faults, "tp-faulty"), expected);
}

#[test]
fn the_text_file_source_resumes_from_a_savepoint_at_another_parallelism() {
    let dir = tempdir("text-src");
    let input = dir.join("lines.txt");
    let n = 40_000u64;
    let text: String = (0..n).map(|i| format!("{i}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let out = tempdir("text-out");
    let sp = tempdir("text-sp");
    let build = |env: &StreamEnv, p: usize| {
        env.set_parallelism(p);
        env.read_text_file(&input)
            .map(|l: String| {
                let i: u64 = l.parse().unwrap();
                // ~1 s per source subtask: the savepoint comes while every task runs, even on
                // a loaded machine.
                if i.is_multiple_of(20) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                (i % 7, i, 1u64)
            })
            .key_by(|r: &(u64, u64, u64)| r.0)
            .reduce(|a: (u64, u64, u64), b: (u64, u64, u64)| (a.0, a.1 + b.1, a.2 + b.2))
            .write_text_exactly_once(&out, |r: &(u64, u64, u64), line: &mut String| {
                line.push_str(&format!("{},{},{}", r.0, r.1, r.2))
            });
    };
    let env = StreamEnv::new();
    build(&env, 2);
    let h = env.launch().unwrap();
    wait_for_records(&h);
    let p = h.stop_with_savepoint(&sp).unwrap();
    let env = StreamEnv::new();
    env.restore_from(&p);
    build(&env, 3);
    env.execute().unwrap();
    assert_one_update_per_record(&out, n, 7);
}

/// The committed `key,sum,count` lines of a rolling (sum, count) over records `0..n` keyed by
/// `i % keys`: every record made exactly one update (counts 1..=n_k) and the last is the total.
fn assert_one_update_per_record(out: &Path, n: u64, keys: u64) {
    let mut per_key: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = Default::default();
    for line in sluice_runtime::sinks::committed_lines(out).unwrap() {
        let f: Vec<u64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        per_key.entry(f[0]).or_default().push((f[2], f[1]));
    }
    assert_eq!(per_key.len() as u64, keys.min(n));
    for (k, mut updates) in per_key {
        updates.sort();
        let count = (n - k).div_ceil(keys);
        let counts: Vec<u64> = updates.iter().map(|u| u.0).collect();
        assert_eq!(
            counts,
            (1..=count).collect::<Vec<_>>(),
            "key {k}: one update per record"
        );
        let total: u64 = (0..count).map(|j| k + keys * j).sum();
        assert_eq!(updates.last().unwrap().1, total, "key {k}: final sum");
    }
}

/// A stop-with-savepoint whose wait times out is withdrawn: the caller is told it failed, so it
/// must not stop the job later (it used to: the request went on and stopped the job once its
/// slow aligned savepoint completed), and the sources it held go on.
#[test]
fn a_stop_with_savepoint_whose_wait_timed_out_does_not_stop_the_job_later() {
    use sluice_runtime::JobOutcome;
    let env = StreamEnv::new();
    backpressured(&env);
    // Checkpoints on (for the hub) but never periodic within the test.
    env.enable_checkpointing(Duration::from_secs(3_600));
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    let hub = monitor.control.checkpoints().unwrap().clone();
    // The first periodic checkpoint is triggered at the start: the savepoint would queue
    // behind it. Once it completed, the savepoint is triggered at once.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while hub.stats().completed == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint completed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let dir = tempdir("withdrawn-savepoint");
    // Under backpressure the aligned savepoint takes far longer than 50 ms.
    let e = monitor
        .savepoint_within(dir.clone(), true, Duration::from_millis(50))
        .unwrap_err()
        .to_string();
    assert!(e.contains("timed out"), "{e}");
    let emitted = monitor.records_emitted_by_sources();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert_eq!(
            monitor.outcome(),
            JobOutcome::Running,
            "the withdrawn stop-with-savepoint stopped the job"
        );
        let stats = hub.stats();
        let aborted = stats.failed >= 1 && stats.completed == 1;
        // The sources held after the savepoint's barrier were released: they emit again.
        if aborted && monitor.records_emitted_by_sources() > emitted + 100 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the savepoint was not aborted, or the sources stayed held: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(hub.stats().completed, 1, "no savepoint completed");
    handle.cancel();
    let _ = handle.wait();
}
