//! Offsets in checkpoints: a job reading Kafka (no generator) with injected failures publishes
//! every record exactly once through the transactional file sink, and a savepoint taken at one
//! source parallelism restores at another.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use sluice_datastream::{FaultSpec, RestartStrategy, StreamEnv};
use sluice_kafka::source::{KafkaSource, Lines};

const PARTITIONS: i32 = 4;
const PER_PARTITION: usize = 6_000;

fn fill(b: &sluice_testkit::KafkaBroker, topic: &str) -> Vec<String> {
    common::topic(b, topic, PARTITIONS);
    let mut all = Vec::new();
    for p in 0..PARTITIONS {
        let v: Vec<String> = (0..PER_PARTITION).map(|i| format!("{p},{i}")).collect();
        common::produce(b, topic, p, &v);
        all.extend(v);
    }
    all.sort();
    all
}

/// Kafka (bounded) → a slowed map → transactional text sink: each record once as its line.
fn job(env: &StreamEnv, bootstrap: &str, topic: &str, source_p: usize, out: &Path) {
    let src = KafkaSource::builder()
        .bootstrap_servers(bootstrap)
        .topics([topic])
        .group_id("checkpoint-test")
        .bounded()
        .build(Lines)
        .unwrap();
    // Small buffers and a slowed map keep the source backpressured (running) for ~1 s.
    env.set_buffer_size(1024).set_credits(2, 2);
    src.add_to(env, "in")
        .set_parallelism(source_p)
        .rebalance()
        .map(|l: String| {
            if l.ends_with('0') {
                std::thread::sleep(Duration::from_micros(500));
            }
            l
        })
        .set_parallelism(2)
        .write_text_exactly_once(out, |s: &String, line: &mut String| line.push_str(s));
}

fn committed(dir: &Path) -> Vec<String> {
    let mut lines = sluice_runtime::sinks::committed_lines(dir).unwrap();
    lines.sort();
    lines
}

fn assert_exactly(got: &[String], expected: &[String]) {
    if got != expected {
        let missing = expected
            .iter()
            .filter(|l| got.binary_search(l).is_err())
            .count();
        let mut dup = got.to_vec();
        dup.dedup();
        panic!(
            "not exactly once: {} lines, expected {}; {missing} missing, {} duplicated",
            got.len(),
            expected.len(),
            got.len() - dup.len()
        );
    }
}

#[test]
fn injected_failures_lose_and_duplicate_nothing() {
    let b = common::broker();
    let expected = fill(&b, "cp");
    let faults: Vec<FaultSpec> = (0..8)
        .map(|k| FaultSpec {
            vertex: "Map".into(),
            subtask: k % 2,
            after_records: 200 + 150 * k as u64,
        })
        .collect();
    let out = common::tempdir("cp-out");
    let chk = common::tempdir("cp-chk");
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_dir(&chk)
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 10,
            delay: Duration::ZERO,
        })
        .inject_faults(faults);
    job(&env, &b.bootstrap(), "cp", 2, &out);
    let h = env.launch().unwrap();
    let m = h.monitor();
    h.wait().unwrap();
    let hub = m.control.checkpoints().unwrap();
    assert_eq!(hub.attempt(), 8, "one restart per injected failure");
    assert!(
        hub.stats().restored >= 4,
        "restarts restored checkpoints: {}",
        hub.stats().restored
    );
    assert_exactly(&committed(&out), &expected);
}

#[test]
fn a_savepoint_at_source_parallelism_1_restores_at_3() {
    let b = common::broker();
    let expected = fill(&b, "rescale");
    let out = common::tempdir("rescale-out");
    let sp = common::tempdir("rescale-sp");
    let env = StreamEnv::new();
    job(&env, &b.bootstrap(), "rescale", 1, &out);
    let h = env.launch().unwrap();
    let m = h.monitor();
    let deadline = Instant::now() + Duration::from_secs(60);
    while m.records_emitted_by_sources() < 2_048 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let p = h.stop_with_savepoint(&sp).unwrap();
    let read = m.records_emitted_by_sources();
    assert!(
        read < expected.len() as u64,
        "the savepoint came mid-job: {read} read"
    );

    let env = StreamEnv::new();
    env.restore_from(&p);
    job(&env, &b.bootstrap(), "rescale", 3, &out);
    env.execute().unwrap();
    assert_exactly(&committed(&out), &expected);
}

#[test]
fn dead_letters_are_counted_once_across_restores_from_checkpoints() {
    let b = common::broker();
    common::topic(&b, "dl", 2);
    // Every 50th line is malformed: 2 × 3000 lines, 120 dead letters.
    let mut good = Vec::new();
    let mut malformed = 0u64;
    for p in 0..2 {
        let v: Vec<String> = (0..3_000)
            .map(|i| {
                if i % 50 == 7 {
                    format!("bad-{p}-{i}")
                } else {
                    format!("{p},{i}")
                }
            })
            .collect();
        common::produce(&b, "dl", p, &v);
        malformed += v.iter().filter(|l| l.starts_with("bad")).count() as u64;
        good.extend(v.into_iter().filter(|l| !l.starts_with("bad")));
    }
    good.sort();
    let out = common::tempdir("dl-out");
    let chk = common::tempdir("dl-chk");
    let env = StreamEnv::new();
    let faults: Vec<FaultSpec> = (0..4)
        .map(|k| FaultSpec {
            vertex: "Map".into(),
            subtask: k % 2,
            after_records: 300 + 200 * k as u64,
        })
        .collect();
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_dir(&chk)
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 10,
            delay: Duration::ZERO,
        })
        .inject_faults(faults);
    let decode = |r: &sluice_kafka::source::KafkaRecord<'_>| -> Result<String, String> {
        let line = sluice_kafka::source::KafkaDeserializer::deserialize(&Lines, r)?;
        if line.starts_with("bad") {
            return Err(format!("malformed line {line:?}"));
        }
        Ok(line)
    };
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["dl"])
        .group_id("dead-letter-test")
        .bounded()
        .build(decode)
        .unwrap();
    env.set_buffer_size(1024).set_credits(2, 2);
    src.add_to(&env, "in")
        .set_parallelism(2)
        .rebalance()
        .map(|l: String| {
            if l.ends_with('0') {
                std::thread::sleep(Duration::from_micros(500));
            }
            l
        })
        .set_parallelism(2)
        .write_text_exactly_once(&out, |s: &String, line: &mut String| line.push_str(s));
    let h = env.launch().unwrap();
    let m = h.monitor();
    h.wait().unwrap();
    let hub = m.control.checkpoints().unwrap();
    assert_eq!(hub.attempt(), 4, "one restart per injected failure");
    assert!(
        hub.stats().restored >= 2,
        "restarts restored checkpoints: {}",
        hub.stats().restored
    );
    assert_exactly(&committed(&out), &good);
    // Each malformed record once, although restores replayed some of them.
    assert_eq!(m.control.dead_letter_count(), malformed);
    let mut locations: Vec<String> = m
        .control
        .dead_letters()
        .into_iter()
        .map(|d| d.location)
        .collect();
    locations.sort();
    locations.dedup();
    assert_eq!(locations.len() as u64, malformed, "each kept once");
}
