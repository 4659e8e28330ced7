//! Committed offsets (on checkpoint completion, for monitoring), starting offsets from them and
//! from a timestamp, and per-partition watermarks with idle subtasks, against tansu.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use sluice_datastream::{StreamEnv, WindowAssigner};
use sluice_kafka::source::{
    KafkaRecord, KafkaSource, KafkaWatermarks, Lines, OffsetFallback, StartingOffsets,
};

fn committed(bootstrap: &str, group: &str, topic: &str, partitions: i32) -> Vec<Offset> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = c.committed_offsets(tpl, Duration::from_secs(5)).unwrap();
    got.elements().iter().map(|e| e.offset()).collect()
}

#[test]
fn checkpoints_commit_offsets_to_the_group_and_committed_start_resumes_there() {
    let b = common::broker();
    common::topic(&b, "commits", 2);
    for p in 0..2 {
        let v: Vec<String> = (0..100).map(|i| format!("{p}-{i}")).collect();
        common::produce(&b, "commits", p, &v);
    }
    let chk = common::tempdir("commits-chk");
    let env = StreamEnv::new();
    env.set_parallelism(2);
    env.enable_checkpointing(Duration::from_millis(50))
        .set_checkpoint_dir(&chk);
    KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["commits"])
        .group_id("g1")
        .build(Lines)
        .unwrap()
        .add_to(&env, "c")
        .discard();
    let h = env.launch().unwrap();
    // Unbounded: once a checkpoint after the last record completed, the group holds 100/100.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Vec::new();
    while Instant::now() < deadline {
        last = committed(&b.bootstrap(), "g1", "commits", 2);
        if last == vec![Offset::Offset(100), Offset::Offset(100)] {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    h.cancel();
    let _ = h.wait();
    assert_eq!(last, vec![Offset::Offset(100), Offset::Offset(100)]);

    // More records; a committed start reads only those.
    common::produce(
        &b,
        "commits",
        0,
        &["new-0".to_string(), "new-1".to_string()],
    );
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["commits"])
        .group_id("g1")
        .starting_offsets(StartingOffsets::Committed {
            fallback: OffsetFallback::Fail,
        })
        .bounded()
        .build(Lines)
        .unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let out = src.add_to(&env, "c").collect();
    env.execute().unwrap();
    let mut got = out.handle.take();
    got.sort();
    assert_eq!(got, vec!["new-0", "new-1"]);
    // A group that never committed, with fallback 'fail': refused, naming the partition.
    let e = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["commits"])
        .group_id("never")
        .starting_offsets(StartingOffsets::Committed {
            fallback: OffsetFallback::Fail,
        })
        .build(Lines)
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("commits/0 has no committed offset"),
        "{e}"
    );
}

#[test]
fn a_timestamp_start_skips_older_records() {
    let b = common::broker();
    common::topic(&b, "times", 1);
    common::produce(&b, "times", 0, &["old".to_string()]);
    std::thread::sleep(Duration::from_millis(30));
    let cut = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    std::thread::sleep(Duration::from_millis(30));
    common::produce(&b, "times", 0, &["new".to_string()]);
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["times"])
        .starting_offsets(StartingOffsets::Timestamp(cut))
        .bounded()
        .build(Lines)
        .unwrap();
    assert_eq!(src.partitions()[0].start, 1);
    let env = StreamEnv::new();
    let out = src.add_to(&env, "t").collect();
    env.execute().unwrap();
    assert_eq!(out.handle.take(), vec!["new"]);
}

/// `partition,time` lines.
fn event(r: &KafkaRecord<'_>) -> Result<(i32, i64), String> {
    let s = std::str::from_utf8(r.payload.unwrap_or_default()).map_err(|e| e.to_string())?;
    let (p, t) = s.split_once(',').ok_or("no comma")?;
    Ok((
        p.parse().map_err(|_| "bad partition")?,
        t.parse().map_err(|_| "bad time")?,
    ))
}

#[test]
fn per_partition_watermarks_fire_windows_while_idle_subtasks_run_unbounded() {
    let b = common::broker();
    common::topic(&b, "wm", 2);
    // Partition 0 reaches t = 25 s, partition 1 only t = 12 s: the source's watermark is their
    // minimum (12 s - 1), so window [0, 10 s) fires and [10 s, 20 s) must not.
    common::produce(
        &b,
        "wm",
        0,
        &(0..26)
            .map(|s| format!("0,{}", s * 1000))
            .collect::<Vec<_>>(),
    );
    common::produce(
        &b,
        "wm",
        1,
        &(0..13)
            .map(|s| format!("1,{}", s * 1000))
            .collect::<Vec<_>>(),
    );
    // Parallelism 1: both partitions in one subtask (the split-level minimum decides);
    // parallelism 4: one partition per busy subtask, 2 subtasks idle that must not hold the
    // watermark back.
    for parallelism in [1, 4] {
        windows_fire_at_the_slowest_partition(&b, parallelism);
    }
}

fn windows_fire_at_the_slowest_partition(b: &sluice_testkit::KafkaBroker, parallelism: usize) {
    let fired: Arc<Mutex<Vec<(i32, i64, u64)>>> = Arc::default();
    let env = StreamEnv::new();
    env.set_parallelism(parallelism);
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["wm"])
        .build(event)
        .unwrap()
        .with_watermarks(
            KafkaWatermarks::from_record(0, |e: &(i32, i64)| e.1)
                .with_interval(Duration::from_millis(20)),
        );
    let f = fired.clone();
    src.add_to(&env, "wm")
        .key_by(|e: &(i32, i64)| e.0)
        .window(WindowAssigner::tumbling(10_000).unwrap())
        .count()
        .map(move |r| {
            f.lock().unwrap().push((r.key, r.window.start, r.value));
            r.value
        })
        .discard();
    let h = env.launch().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while fired.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Give a wrong early firing of [10 s, 20 s) the chance to show up.
    std::thread::sleep(Duration::from_millis(300));
    let mut got = fired.lock().unwrap().clone();
    h.cancel();
    let _ = h.wait();
    got.sort();
    assert_eq!(
        got,
        vec![(0, 0, 10), (1, 0, 10)],
        "parallelism {parallelism}"
    );
}
