//! The Kafka source against a real (tansu) broker.

use crate::common;

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use sluice_datastream::StreamEnv;
use sluice_kafka::source::{Json, KafkaSource, Lines, StartingOffsets};
use sluice_kafka::KafkaError;

fn values(partition: i32, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("p{partition}-{i}")).collect()
}

#[test]
fn tansu_reports_a_short_high_watermark_and_the_bounded_end_probe_corrects_it() {
    let b = common::broker();
    common::topic(&b, "hw", 1);
    // One batch of 10 records, then one of 3 (flushed in between).
    common::produce(&b, "hw", 0, &values(0, 10));
    common::produce(&b, "hw", 0, &values(1, 3));
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", b.bootstrap())
        .create()
        .unwrap();
    let (low, high) = c.fetch_watermarks("hw", 0, Duration::from_secs(5)).unwrap();
    // tansu 0.6: the base offset of the last batch + 1 (a correct broker says 13).
    assert_eq!(
        (low, high),
        (0, 11),
        "tansu's high watermark changed: revisit offsets.rs"
    );
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["hw"])
        .bounded()
        .build(Lines)
        .unwrap();
    assert_eq!(src.partitions()[0].end, Some(13));
    assert_eq!(src.bounded_records(), Some(13));
    // `latest` starts after all 13 records, not at the reported 11.
    let latest = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["hw"])
        .starting_offsets(StartingOffsets::Latest)
        .build(Lines)
        .unwrap();
    assert_eq!(latest.partitions()[0].start, 13);
}

#[test]
fn bounded_read_gives_exactly_the_produced_records() {
    let b = common::broker();
    common::topic(&b, "bounded", 3);
    let mut expected = Vec::new();
    for p in 0..3 {
        let v = values(p, 500 + 200 * p as usize);
        common::produce(&b, "bounded", p, &v);
        expected.extend(v);
    }
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["bounded"])
        .bounded()
        .build(Lines)
        .unwrap();
    assert_eq!(src.bounded_records(), Some(expected.len() as u64));
    let out = src.add_to(&env, "bounded").collect();
    env.execute().unwrap();
    let mut got = out.handle.take();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
}

#[test]
fn four_subtasks_on_two_partitions_leave_two_idle_and_unbounded_idle_ones_end_on_cancel() {
    let b = common::broker();
    common::topic(&b, "two", 2);
    for p in 0..2 {
        common::produce(&b, "two", p, &values(p, 300));
    }
    let env = StreamEnv::new();
    env.set_parallelism(4);
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["two"])
        .build(Lines)
        .unwrap();
    let out = src.add_to(&env, "two").collect();
    let h = env.launch().unwrap();
    let m = h.monitor();
    let deadline = Instant::now() + Duration::from_secs(60);
    while m.records_emitted_by_sources() < 600 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(m.records_emitted_by_sources(), 600);
    let per_subtask: Vec<u64> = m
        .source_emitted
        .iter()
        .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    assert_eq!(
        per_subtask.iter().filter(|&&n| n == 0).count(),
        2,
        "{per_subtask:?}"
    );
    assert_eq!(
        per_subtask.iter().filter(|&&n| n == 300).count(),
        2,
        "{per_subtask:?}"
    );
    // Flink's owner formula: "two".hashCode() = 115276, * 31 % 4 = 0 -> partitions on 0 and 1.
    assert_eq!(per_subtask, vec![300, 300, 0, 0]);
    // The idle subtasks show no partitions; the busy ones their per-partition gauges (the
    // FLIP-33 set, `assignedSplits`, and offset/committed/lag for their partition).
    let gauges: Vec<usize> = m.subtasks[0].iter().map(|t| t.gauges().len()).collect();
    assert_eq!(gauges, vec![10, 10, 7, 7]);
    // Unbounded: nothing ends by itself; a cancel ends the busy and the parked subtasks.
    assert!(!h.is_finished());
    let t0 = Instant::now();
    h.cancel();
    let _ = h.wait();
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    drop(out);
}

#[derive(serde::Deserialize, Clone, Debug, PartialEq)]
struct Event {
    id: u64,
    user: String,
}

#[test]
fn malformed_json_goes_to_dead_letters_counted_and_the_job_goes_on() {
    let b = common::broker();
    common::topic(&b, "json", 1);
    let mut v = Vec::new();
    for i in 0..100u64 {
        if i % 10 == 3 {
            v.push(format!("{{\"id\": {i}, \"user\": "));
        } else {
            v.push(format!("{{\"id\": {i}, \"user\": \"u{i}\"}}"));
        }
    }
    common::produce(&b, "json", 0, &v);
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["json"])
        .bounded()
        .build(Json::<Event>::new())
        .unwrap();
    let out = src.add_to(&env, "events").collect();
    let h = env.launch().unwrap();
    let m = h.monitor();
    h.wait().unwrap();
    let got = out.handle.take();
    assert_eq!(got.len(), 90);
    assert!(got
        .iter()
        .all(|e| e.id % 10 != 3 && e.user == format!("u{}", e.id)));
    assert_eq!(m.control.dead_letter_count(), 10);
    let letters = m.control.dead_letters();
    assert_eq!(letters[0].location, "json/0 at offset 3");
    assert!(
        letters[0].reason.contains("invalid JSON"),
        "{}",
        letters[0].reason
    );
    assert!(
        letters[0].origin.starts_with("Source: events"),
        "{}",
        letters[0].origin
    );
}

#[test]
fn unreachable_broker_missing_topic_and_empty_pattern_are_named_errors() {
    let port = sluice_testkit::free_port().unwrap();
    let addr = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    let e = KafkaSource::builder()
        .bootstrap_servers(&addr)
        .topics(["x"])
        .connect_timeout(Duration::from_millis(1500))
        .build(Lines)
        .err()
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(matches!(e, KafkaError::Unreachable { .. }), "{e}");
    assert!(
        e.to_string().contains(&addr) && e.to_string().contains("1500 ms"),
        "{e}"
    );

    let b = common::broker();
    common::topic(&b, "present", 1);
    let e = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["present", "absent"])
        .build(Lines)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        format!("Kafka topic 'absent' does not exist on {}", b.bootstrap())
    );
    let e = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topic_pattern("nothing-.*")
        .build(Lines)
        .err()
        .unwrap();
    assert!(matches!(e, KafkaError::NoTopicMatches { .. }), "{e}");
    let ok = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topic_pattern("pres.*")
        .build(Lines)
        .unwrap();
    assert_eq!(ok.partition_count(), 1);
}
