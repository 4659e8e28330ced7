//! The transactional file sink at the end of a job that does not reach the end of its input:
//! a stop-with-savepoint publishes the savepoint's files (Flink publishes on stop), a plain
//! cancel or a failure publishes only what completed checkpoints hold. Either way, resuming
//! from the savepoint or the latest checkpoint into the same directory completes the output
//! exactly once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sluice_datastream::{FaultSpec, JobHandle, RestartStrategy, StreamEnv};

use crate::common;
use common::latest_checkpoint;

const RECORDS: u64 = 40_000;

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-fs-eo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `0..RECORDS` from 2 source subtasks, slowed at the source (1 ms every 20 records: ~1 s per
/// subtask, so a savepoint or a cancel lands while every task runs; no backpressure holds the
/// barriers back), each number written as a line. The map is a vertex of its own: a failure
/// can be injected there, and records are in flight between tasks when the job ends.
fn job(env: &StreamEnv, out: &Path) {
    env.set_parallelism(2);
    env.generate(RECORDS, |i| {
        if i.is_multiple_of(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        i
    })
    .map(|i: u64| i)
    .disable_chaining()
    .write_text_exactly_once(out, |i: &u64, line: &mut String| {
        line.push_str(&i.to_string())
    });
}

/// Polls (up to a minute) until the sources emitted `n` records.
fn wait_for_records(h: &JobHandle, n: u64) {
    let m = h.monitor();
    let deadline = Instant::now() + Duration::from_secs(60);
    while m.records_emitted_by_sources() < n {
        assert!(Instant::now() < deadline, "the sources never emitted {n}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn pending_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".pending"))
        .collect()
}

/// The committed numbers, checked to be distinct.
fn committed_once(dir: &Path) -> Vec<u64> {
    let mut got: Vec<u64> = sluice_runtime::sinks::committed_lines(dir)
        .unwrap()
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    got.sort_unstable();
    let n = got.len();
    got.dedup();
    assert_eq!(got.len(), n, "{} lines committed twice", n - got.len());
    got
}

/// The whole input, each number once, and nothing left pending.
fn assert_exactly_once(dir: &Path) {
    let got = committed_once(dir);
    let missing = (0..RECORDS)
        .filter(|i| got.binary_search(i).is_err())
        .count();
    assert!(
        got.len() as u64 == RECORDS && missing == 0,
        "not exactly once: {} distinct lines for {RECORDS} records, {missing} missing",
        got.len()
    );
    assert_eq!(pending_files(dir), Vec::<String>::new(), "left pending");
}

/// Runs the job to its end into `out`, restored from `from` (from the start when `None`).
fn resume(out: &Path, from: Option<&Path>, tag: &str) {
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(50))
        .set_checkpoint_dir(tempdir(tag));
    if let Some(p) = from {
        env.restore_from(p);
    }
    job(&env, out);
    env.execute().unwrap();
}

#[test]
fn stop_with_savepoint_publishes_the_savepoints_files_and_a_resume_completes_exactly_once() {
    let out = tempdir("stop-out");
    let sp = tempdir("stop-sp");
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(50))
        .set_checkpoint_dir(tempdir("stop-chk"));
    job(&env, &out);
    let h = env.launch().unwrap();
    wait_for_records(&h, 2_000);
    // Returns once the job ended.
    let path = h.stop_with_savepoint(&sp).unwrap();

    // The sources emitted nothing after the savepoint's barrier, so every file is the
    // savepoint's or an earlier checkpoint's: all published.
    assert_eq!(
        pending_files(&out),
        Vec::<String>::new(),
        "the savepoint's files are left pending after the stop"
    );
    let at_stop = committed_once(&out);
    assert!(
        !at_stop.is_empty() && (at_stop.len() as u64) < RECORDS,
        "the stop came mid-input: {} lines published",
        at_stop.len()
    );

    // The resumed job reads exactly what comes after the savepoint's barrier: the union is the
    // input once only if the stop published exactly the records before it.
    resume(&out, Some(&path), "stop-chk-2");
    assert_exactly_once(&out);
}

/// A job that ends without a savepoint (`end` cancels it or lets its injected failure fail it)
/// publishes only files of completed checkpoints: the restore from the latest one then adds
/// exactly what is missing.
/// `published`: whether `end` waited for completed checkpoints, so some output must be
/// published when the job ended.
fn ends_and_resumes_exactly_once(
    tag: &str,
    published: bool,
    end: impl FnOnce(&StreamEnv) -> JobHandle,
) {
    let out = tempdir(&format!("{tag}-out"));
    let chk = tempdir(&format!("{tag}-chk"));
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_dir(&chk);
    job(&env, &out);
    let h = end(&env);
    let _ = h.wait();
    let at_end = committed_once(&out);
    assert!((at_end.len() as u64) < RECORDS, "ended mid-input");
    assert!(
        !published || !at_end.is_empty(),
        "completed checkpoints published nothing"
    );
    let latest = latest_checkpoint(&chk);
    if latest.is_none() {
        assert_eq!(at_end, Vec::<u64>::new(), "published without a checkpoint");
    }
    resume(&out, latest.as_deref(), &format!("{tag}-chk-2"));
    assert_exactly_once(&out);
}

#[test]
fn a_cancel_publishes_only_completed_checkpoints_files() {
    ends_and_resumes_exactly_once("cancel", true, |env| {
        let h = env.launch().unwrap();
        let hub = h.monitor().control.checkpoints().unwrap().clone();
        let deadline = Instant::now() + Duration::from_secs(60);
        while hub.stats().completed < 3 {
            assert!(
                Instant::now() < deadline && !h.is_finished(),
                "3 checkpoints did not complete while the job ran"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        h.cancel();
        h
    });
}

#[test]
fn a_failure_publishes_only_completed_checkpoints_files() {
    ends_and_resumes_exactly_once("failure", false, |env| {
        env.set_restart_strategy(RestartStrategy::NoRestart)
            .inject_faults(vec![FaultSpec {
                vertex: "Map".into(),
                subtask: 1,
                after_records: 6_000,
            }]);
        env.launch().unwrap()
    });
}
