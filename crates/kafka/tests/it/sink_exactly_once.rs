//! The Kafka sink against a real broker (tansu): exactly-once under 20 injected subtask
//! failures, at-least-once under failures, and the failure-free run.

use crate::sink_common;

use std::time::Duration;

use sink_common::*;
use sluice_datastream::{FaultSpec, RestartStrategy, StreamEnv};
use sluice_kafka::DeliveryGuarantee;
use sluice_testkit::KafkaBroker;

#[test]
fn failure_free_exactly_once_run_writes_every_record_once() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let records = 20_000;
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(100));
    let sink = job(
        &env,
        records,
        sink(&b, "clean", DeliveryGuarantee::ExactlyOnce, "clean"),
        2,
    );
    let metrics = sink.handle.clone();
    let t0 = std::time::Instant::now();
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    eprintln!(
        "job took {:?}, {} commits, mean commit {:.1} ms",
        t0.elapsed(),
        metrics.transactions_committed(),
        metrics.mean_commit_latency_ms()
    );
    let back = read_back(&b, "clean", records as usize);
    let mut got = values(&back);
    got.sort();
    let (lost, dup) = compare(&expected_lines(records), &got);
    eprintln!(
        "read back {} records, {} aborted, {} pending, markers {}+{}",
        back.records.len(),
        back.aborted,
        back.pending,
        back.commit_markers,
        back.abort_markers
    );
    assert_eq!((lost, dup), (0, 0));

    // The figures on the sink's task (what REST and Prometheus serve).
    let v = monitor
        .graph
        .vertices
        .iter()
        .position(|v| v.name.contains("Sink: Kafka"))
        .unwrap();
    let mut committed = 0;
    let mut out = 0;
    for t in &monitor.subtasks[v] {
        let g: std::collections::BTreeMap<String, i64> =
            t.connector_gauge_values().into_iter().collect();
        assert_eq!(
            g[sluice_kafka::sink::PENDING_DELIVERIES],
            0,
            "all delivered"
        );
        assert!(g.contains_key(sluice_kafka::sink::COMMIT_LATENCY_MS));
        committed += g[sluice_kafka::sink::TRANSACTIONS_COMMITTED];
        out += t.records_out();
        assert!(t.bytes_out.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }
    assert_eq!(out, records, "numRecordsOut of the sink tasks");
    assert_eq!(committed as u64, metrics.transactions_committed());
}

/// `n` failures at pseudo-random points of random subtasks of the keyed vertex (chained with
/// the sink, so the sink subtask fails with it).
fn faults(n: usize, seed: u64) -> Vec<FaultSpec> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            FaultSpec {
                vertex: "KeyedProcess".into(),
                subtask: (x % 2) as usize,
                after_records: 1_000 + (x >> 8) % 4_000,
            }
        })
        .collect()
}

fn faulty_env(n: usize, seed: u64, name: &str) -> StreamEnv {
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_dir(tempdir(name))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: n as u32 + 5,
            delay: Duration::ZERO,
        })
        .inject_faults(faults(n, seed));
    env
}

#[test]
fn exactly_once_under_twenty_injected_failures_loses_and_duplicates_nothing() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let records = 100_000;
    let env = faulty_env(20, 0x2545_F491_4F6C_DD1D, "eo-chk");
    let sink = job(
        &env,
        records,
        sink(&b, "eo", DeliveryGuarantee::ExactlyOnce, "eo"),
        2,
    );
    let metrics = sink.handle.clone();
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    let hub = monitor.control.checkpoints().unwrap();
    let stats = hub.stats();
    assert_eq!(hub.attempt(), 20, "one restart per injected failure");
    assert!(
        stats.restored >= 10,
        "most restarts restored a checkpoint: {}",
        stats.restored
    );
    let back = read_back(&b, "eo", records as usize);
    let mut got = values(&back);
    got.sort();
    let (lost, dup) = compare(&expected_lines(records), &got);
    let m = &metrics;
    eprintln!(
        "exactly-once, 20 failures: {} restores, {} checkpoints; read back {} committed, {lost} lost, \
         {dup} duplicated; {} aborted records (invisible), {} pending; {} commits (mean {:.1} ms), \
         {} resumed after a failure, {} ids fenced, {} unresumable",
        stats.restored,
        stats.completed,
        back.records.len(),
        back.aborted,
        back.pending,
        m.transactions_committed(),
        m.mean_commit_latency_ms(),
        m.transactions_resumed.load(std::sync::atomic::Ordering::Relaxed),
        m.transactional_ids_aborted.load(std::sync::atomic::Ordering::Relaxed),
        m.unresumable_transactions.load(std::sync::atomic::Ordering::Relaxed),
    );
    assert_eq!((lost, dup), (0, 0), "exactly once");
    assert!(
        back.aborted > 0,
        "the failed attempts' transactions were aborted, not committed"
    );
    assert_eq!(
        back.pending, 0,
        "no transaction left open (read_committed would stall on it)"
    );
    assert_eq!(
        m.unresumable_records(),
        0,
        "in-process restarts resume every transaction"
    );
}

#[test]
fn at_least_once_under_failures_loses_nothing_and_counts_duplicates() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let records = 40_000;
    let env = faulty_env(5, 0x9E37_79B9_7F4A_7C15, "alo-chk");
    job(
        &env,
        records,
        sink(&b, "alo", DeliveryGuarantee::AtLeastOnce, "alo"),
        2,
    );
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    assert_eq!(monitor.control.checkpoints().unwrap().attempt(), 5);
    let back = read_back(&b, "alo", records as usize);
    let mut got = values(&back);
    got.sort();
    let (lost, dup) = compare(&expected_lines(records), &got);
    eprintln!(
        "at-least-once, 5 failures: read back {} records for {records}: {lost} lost, {dup} duplicates",
        got.len()
    );
    assert_eq!(lost, 0, "at least once");
    assert_eq!(got.len(), records as usize + dup);
}

#[test]
fn stop_with_savepoint_commits_the_savepoints_transactions_and_a_resume_completes_exactly_once() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let records = 40_000;
    let sp = tempdir("eo-sp");
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_secs(3600)); // only the savepoint
                                                         // ~1 s per source subtask: the savepoint lands while every task runs.
    let first = slow_job(
        &env,
        records,
        20,
        sink(&b, "sp", DeliveryGuarantee::ExactlyOnce, "sp"),
        2,
    );
    let metrics = first.handle.clone();
    let handle = env.launch().unwrap();
    let t0 = std::time::Instant::now();
    while metrics.records_out() < 2_000 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the job never wrote"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let path = handle.stop_with_savepoint(&sp).unwrap();
    // The savepoint's transactions are committed when the job stops (a restore in another
    // process could not commit them).
    let at_stop = read_back(&b, "sp", 1).records.len();
    assert!(
        at_stop > 0,
        "the savepoint's records are visible after the stop"
    );
    assert!(
        metrics.transactions_committed() >= 2,
        "at least the savepoint's, one per subtask"
    );

    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(100))
        .restore_from(path);
    let resumed = job(
        &env,
        records,
        sink(&b, "sp", DeliveryGuarantee::ExactlyOnce, "sp"),
        2,
    );
    env.execute().unwrap();
    let back = read_back(&b, "sp", records as usize);
    let mut got = values(&back);
    got.sort();
    assert_eq!(compare(&expected_lines(records), &got), (0, 0));
    let r = &resumed.handle;
    assert_eq!(r.unresumable_records(), 0);
    assert_eq!(
        r.transactions_resumed
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "nothing was left to resume"
    );
}
