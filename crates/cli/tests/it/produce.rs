//! `sluice produce skew` against a real (tansu) broker: every record once, keyed, on the
//! partition Kafka's default (murmur2) partitioner gives its key; clear errors.

use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Message, Offset, TopicPartitionList};

/// Kafka's `Utils.murmur2` (the Java client's default partitioner for keyed records), then
/// `toPositive(h) % partitions`.
fn kafka_partition(key: &[u8], partitions: i32) -> i32 {
    let (seed, m, r) = (0x9747_b28c_u32, 0x5bd1_e995_u32, 24);
    let len = key.len();
    let mut h = seed ^ len as u32;
    let chunks = len / 4;
    for i in 0..chunks {
        let b = &key[i * 4..i * 4 + 4];
        let mut k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        k = k.wrapping_mul(m);
        k ^= k >> r;
        k = k.wrapping_mul(m);
        h = h.wrapping_mul(m);
        h ^= k;
    }
    let tail = &key[chunks * 4..];
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(m);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(m);
    h ^= h >> 15;
    ((h & 0x7fff_ffff) % partitions as u32) as i32
}

#[test]
fn murmur2_matches_kafkas_known_values() {
    // From Kafka's UtilsTest.testMurmur2: "21" -> -973932308, "foobar" -> -790332482.
    let positive = |v: i32| (v as u32 & 0x7fff_ffff) as i32;
    assert_eq!(
        kafka_partition(b"21", i32::MAX),
        positive(-973_932_308) % i32::MAX
    );
    assert_eq!(
        kafka_partition(b"foobar", i32::MAX),
        positive(-790_332_482) % i32::MAX
    );
}

#[test]
fn produce_skew_writes_every_record_keyed_on_kafkas_partition() {
    let b = sluice_testkit::KafkaBroker::start().unwrap();
    let records = 20_000u64;
    let url = format!("kafka://{}/skew?partitions=4", b.bootstrap());
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "produce",
            "skew",
            "--records",
            &records.to_string(),
            "--keys",
            "100",
            "--to",
            &url,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("created topic 'skew' with 4 partitions"),
        "{stderr}"
    );
    assert!(stderr.contains("produced 20000 records"), "{stderr}");

    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", b.bootstrap())
        .set("group.id", "t")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..4 {
        tpl.add_partition_offset("skew", p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut got: Vec<(i64, i64)> = Vec::new();
    let mut eofs = std::collections::HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while eofs.len() < 4 && Instant::now() < deadline {
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let key = m.key().unwrap();
                assert_eq!(
                    m.partition(),
                    kafka_partition(key, 4),
                    "key {:?}",
                    std::str::from_utf8(key)
                );
                let line = std::str::from_utf8(m.payload().unwrap()).unwrap();
                let (k, v) = line.split_once(',').unwrap();
                assert_eq!(k.as_bytes(), key);
                got.push((k.parse().unwrap(), v.parse().unwrap()));
            }
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                eofs.insert(p);
            }
            _ => {}
        }
    }
    let cfg = sluice_jobs::skew::SkewConfig {
        keys: 100,
        ..Default::default()
    };
    let mut expected: Vec<(i64, i64)> = (0..records)
        .map(|i| sluice_jobs::skew::record(i, cfg.hot_limit(), 100))
        .collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
}

#[test]
fn produce_to_an_unreachable_broker_names_it_within_the_timeout() {
    let port = sluice_testkit::free_port().unwrap();
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "produce",
            "skew",
            "--records",
            "10",
            "--to",
            &format!("kafka://127.0.0.1:{port}/t?connect-timeout-ms=1000"),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("127.0.0.1:{port} unreachable")),
        "{stderr}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["produce", "skew", "--to", "kafka://h:1/t?partitons=2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown parameter 'partitons'"), "{stderr}");
}
