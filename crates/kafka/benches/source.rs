//! Kafka source throughput beside a bare rdkafka consumer loop on the same topic, same run.
//! `cargo bench -p sluice-kafka --bench source [-- RECORDS]` (default 2,000,000): starts a
//! tansu broker, writes RECORDS `key,value` lines to a one-partition topic, then reads them
//! all (a) with a bare `BaseConsumer` poll loop that UTF-8-decodes each value into a `String`
//! (what the source's `Lines` does) and (b) with a bounded `KafkaSource` at parallelism 1 into
//! a discarding sink. Prints records/s, CPU-ns per record (process CPU time, the broker is
//! another process), their ratio, and the peak RSS.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};
use sluice_graph::StreamEnv;
use sluice_kafka::admin::ensure_topic;
use sluice_kafka::source::{KafkaSource, Lines};
use sluice_kafka::ClientSettings;

fn cpu_ns() -> u64 {
    // utime + stime of the whole process, in clock ticks (100 Hz on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|s| s.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    ticks * 10_000_000
}

fn peak_rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn produce(bootstrap: &str, topic: &str, n: u64) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "500000")
        .create()
        .unwrap();
    for i in 0..n {
        let (k, v) = sluice_jobs_like(i);
        let line = format!("{k},{v}");
        let key = k.to_string();
        let mut r = BaseRecord::to(topic).key(&key).payload(&line).partition(0);
        loop {
            match p.send(r) {
                Ok(()) => break,
                Err((_, back)) => {
                    r = back;
                    p.poll(Duration::from_millis(5));
                }
            }
        }
        if i % 10_000 == 0 {
            p.poll(Duration::ZERO);
        }
    }
    p.flush(Duration::from_secs(120)).unwrap();
}

/// The skew workload's record shape (key, 16-bit value), cheap to compute.
fn sluice_jobs_like(i: u64) -> (u64, u64) {
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h % 10_001, (h >> 8) & 0xFFFF)
}

fn bare_loop(bootstrap: &str, topic: &str, n: u64) -> (f64, u64) {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "bench-bare")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let (t0, c0) = (Instant::now(), cpu_ns());
    let mut seen = 0u64;
    let mut bytes = 0usize;
    while seen < n {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            let s = std::str::from_utf8(m.payload().unwrap_or_default()).map(str::to_owned);
            bytes += s.map_or(0, |s| s.len());
            seen += 1;
        }
    }
    std::hint::black_box(bytes);
    (t0.elapsed().as_secs_f64(), cpu_ns() - c0)
}

fn sluice_source(bootstrap: &str, topic: &str, n: u64) -> (f64, u64) {
    let (t0, c0) = (Instant::now(), cpu_ns());
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let src = KafkaSource::builder()
        .bootstrap_servers(bootstrap)
        .topics([topic])
        .bounded()
        .build(Lines)
        .unwrap();
    assert_eq!(src.bounded_records(), Some(n));
    src.add_to(&env, "bench").discard();
    env.execute().unwrap();
    (t0.elapsed().as_secs_f64(), cpu_ns() - c0)
}

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let broker = sluice_testkit::KafkaBroker::start().expect("tansu (scripts/install-tansu.sh)");
    let bs = broker.bootstrap();
    ensure_topic(&ClientSettings::new(&bs), "bench", 1).unwrap();
    let t = Instant::now();
    produce(&bs, "bench", n);
    eprintln!("produced {n} records in {:.1} s", t.elapsed().as_secs_f64());
    // Alternate the two twice; report the better of each (warm caches, same broker state).
    let mut bare = (f64::MAX, u64::MAX);
    let mut ours = (f64::MAX, u64::MAX);
    for _ in 0..2 {
        let b = bare_loop(&bs, "bench", n);
        if b.1 < bare.1 {
            bare = b;
        }
        let s = sluice_source(&bs, "bench", n);
        if s.1 < ours.1 {
            ours = s;
        }
    }
    let per_core = |cpu: u64| n as f64 / (cpu as f64 / 1e9);
    println!("records: {n} (one partition, tansu memory broker, `key,value` lines)");
    println!(
        "bare rdkafka loop : {:>10.0} rec/s wall, {:>10.0} rec/s per core, {:>6.0} CPU-ns/record",
        n as f64 / bare.0,
        per_core(bare.1),
        bare.1 as f64 / n as f64
    );
    println!(
        "Sluice KafkaSource: {:>10.0} rec/s wall, {:>10.0} rec/s per core, {:>6.0} CPU-ns/record",
        n as f64 / ours.0,
        per_core(ours.1),
        ours.1 as f64 / n as f64
    );
    println!(
        "ratio (per core, Sluice / bare): {:.2}; peak RSS {:.0} MB",
        per_core(ours.1) / per_core(bare.1),
        peak_rss_mb()
    );
}
