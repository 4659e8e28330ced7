//! The exactly-once Kafka sink's former crash window, closed: the whole process is SIGKILLed
//! after a checkpoint is complete and durable on disk and before its transaction's commit is
//! sent (`SLUICE_KAFKA_SINK_KILL_BEFORE_COMMIT`), then a new process restores that checkpoint
//! from disk and commits the dead producer's transaction through the transaction coordinator
//! by the producer id and epoch the checkpoint recorded (`EndTxn`): nothing is lost, nothing
//! is duplicated, and the restore counts the transaction and its records as recovered.
//!
//! The job runs in a child process: this test binary itself, `child_job` with
//! `SLUICE_KAFKA_CHILD=1` (a no-op test otherwise).

use crate::sink_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sink_common::*;
use sluice_datastream::StreamEnv;
use sluice_kafka::sink::{KILL_BEFORE_COMMIT_ENV, KILL_LINE};
use sluice_kafka::DeliveryGuarantee;
use sluice_testkit::KafkaBroker;

const RECORDS: u64 = 20_000;
const REPORT: &str = "CRASH-WINDOW-CHILD-REPORT";

/// The child: the keyed job, exactly-once sink at parallelism 1 (one transaction per
/// checkpoint, so what the kill loses is exactly one transaction), checkpoints every 50 ms
/// into `SLUICE_CHK`, restored from `SLUICE_RESTORE` when set.
#[test]
fn child_job() {
    if std::env::var_os("SLUICE_KAFKA_CHILD").is_none() {
        return;
    }
    let var = |k: &str| std::env::var(k).unwrap();
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(50))
        .set_checkpoint_dir(var("SLUICE_CHK"));
    if let Ok(r) = std::env::var("SLUICE_RESTORE") {
        env.restore_from(r);
    }
    env.set_parallelism(2);
    let keyed = env
        .generate(RECORDS, move |i| (i * KEYS / RECORDS, i))
        .set_parallelism(2)
        .map(|r: (u64, u64)| {
            // ~2 s per source subtask: many checkpoints complete before the end.
            if r.1.is_multiple_of(5) {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        })
        .key_by(|r: &(u64, u64)| r.0)
        .process(RunningSum)
        .uid("running-sum");
    let s = sink(
        &var("SLUICE_BOOTSTRAP"),
        "crash",
        DeliveryGuarantee::ExactlyOnce,
        "crash",
    );
    let m = s.add_to(&keyed).uid("kafka-sink").set_parallelism(1).handle;
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    let stats = monitor.control.checkpoints().unwrap().stats();
    eprintln!("child: {} checkpoints completed", stats.completed);
    use std::sync::atomic::Ordering::Relaxed;
    println!(
        "{REPORT} unresumable_transactions={} unresumable_records={} recovered_transactions={} \
         recovered_records={} committed={}",
        m.unresumable_transactions.load(Relaxed),
        m.unresumable_records(),
        m.transactions_recovered.load(Relaxed),
        m.recovered_records.load(Relaxed),
        m.transactions_committed()
    );
}

fn run_child(
    bootstrap: &str,
    chk: &Path,
    restore: Option<&Path>,
    kill_at: Option<u64>,
) -> std::process::Output {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "sink_crash_window::child_job",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env("SLUICE_KAFKA_CHILD", "1")
    .env("SLUICE_BOOTSTRAP", bootstrap)
    .env("SLUICE_CHK", chk)
    .env_remove(KILL_BEFORE_COMMIT_ENV);
    if let Some(r) = restore {
        c.env("SLUICE_RESTORE", r);
    }
    if let Some(n) = kill_at {
        c.env(KILL_BEFORE_COMMIT_ENV, n.to_string());
    }
    c.output().unwrap()
}

/// `key=value` from a line of `text` that starts with `prefix`.
fn field(text: &str, prefix: &str, key: &str) -> Option<String> {
    // (libtest may print "test child_job ... " before it on the same line.)
    let line = text.lines().find_map(|l| l.find(prefix).map(|i| &l[i..]))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
}

/// The job directory (`<chk>/<job id>`) and the newest `chk-<n>` in it.
fn latest_checkpoint(chk: &Path) -> (PathBuf, u64) {
    let job = std::fs::read_dir(chk)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let n = std::fs::read_dir(&job)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("chk-")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap();
    (job, n)
}

#[test]
fn sigkill_between_durable_checkpoint_and_commit_loses_nothing_the_restore_commits_it() {
    if std::env::var_os("SLUICE_KAFKA_CHILD").is_some() {
        return;
    }
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let chk = tempdir("crash-chk");

    // 1. Killed just before the third commit.
    let out = run_child(&b, &chk, None, Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(9),
        "the child SIGKILLed itself: {stderr}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let kill = stderr
        .lines()
        .find(|l| l.starts_with(KILL_LINE))
        .expect("kill line");
    let id = kill[KILL_LINE.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let ckpt: u64 = field(&stderr, KILL_LINE, "checkpoint")
        .unwrap()
        .parse()
        .unwrap();
    let in_txn: usize = field(&stderr, KILL_LINE, "records")
        .unwrap()
        .parse()
        .unwrap();
    assert!(in_txn > 0, "{kill}");
    // The checkpoint is complete and durable: it is the newest on disk.
    let (job_dir, on_disk) = latest_checkpoint(&chk);
    assert_eq!(
        on_disk, ckpt,
        "the killed commit belongs to the newest durable checkpoint"
    );

    // 2. A new process restores it from disk and runs to the end.
    let out = run_child(&b, &chk, Some(&job_dir), None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let num = |key: &str| -> usize { field(&stdout, REPORT, key).unwrap().parse().unwrap() };
    let (unresumable, recovered, recovered_records) = (
        num("unresumable_transactions"),
        num("recovered_transactions"),
        num("recovered_records"),
    );

    // 3. What a read_committed consumer sees.
    let back = read_back(&b, "crash", RECORDS as usize);
    let mut got = values(&back);
    got.sort();
    let (lost, dup) = compare(&expected_lines(RECORDS), &got);
    eprintln!(
        "crash window: SIGKILL before committing {id} (checkpoint {ckpt}, durable on disk, {in_txn} records); \
         the restart restored chk-{on_disk} and committed {recovered} transaction(s) of the dead process \
         ({recovered_records} records) by producer id and epoch, {unresumable} unresumable; read_committed: \
         {} records of {RECORDS}: {lost} lost, {dup} duplicated, {} aborted (invisible), {} pending",
        got.len(),
        back.aborted,
        back.pending
    );
    assert_eq!((lost, dup), (0, 0), "nothing lost, nothing duplicated");
    assert_eq!(got.len(), RECORDS as usize);
    assert_eq!(unresumable, 0, "no transaction given up");
    assert!(
        recovered >= 1 && recovered_records >= in_txn,
        "the killed transaction ({in_txn} records) was committed by the restore: {recovered} \
         transactions, {recovered_records} records"
    );
    assert_eq!(back.pending, 0, "no transaction left open");
}
