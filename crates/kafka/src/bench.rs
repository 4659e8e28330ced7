//! The Kafka source benchmark, shared by `cargo bench -p sluice-kafka --bench source` (on a
//! throwaway tansu broker) and `sluice bench kafka-source --url kafka://HOST:PORT/TOPIC` (on
//! any broker): Sluice's bounded [`KafkaSource`] at parallelism 1 into a discarding sink,
//! beside a bare rdkafka `BaseConsumer` poll loop that UTF-8-decodes each value into a
//! `String` (what the source's `Lines` does), on the same topic in the same run, alternated.
//!
//! Main items: [`fill_topic`] (the topic holds at least N `key,value` lines), [`compare`]
//! (the two readers, best of each over the rounds) and its [`Comparison`] with
//! [`Comparison::report`]. CPU time is this process's (the broker is another process).

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};
use sluice_datastream::StreamEnv;

use crate::admin::ensure_topic;
use crate::source::{KafkaSource, Lines, PartitionPlan};
use crate::{ClientSettings, KafkaError};

/// A bare loop that receives nothing for this long has lost records: an error, not a hang.
const STALL: Duration = Duration::from_secs(30);

/// CPU time (user + system) of this process so far, ns (0 off Linux).
pub fn process_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|s| s.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    // USER_HZ is 100 on Linux.
    ticks * 10_000_000
}

/// This process's peak resident set size (VmHWM), MiB (NaN off Linux).
pub fn peak_rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// One reader's run over the records.
#[derive(Debug, Clone, Copy)]
pub struct Measurement {
    /// Wall-clock time of the run.
    pub wall: Duration,
    /// CPU time of the process during the run, ns.
    pub cpu_ns: u64,
}

impl Measurement {
    fn better(self, other: Measurement) -> Measurement {
        if other.cpu_ns < self.cpu_ns {
            other
        } else {
            self
        }
    }
}

/// The skew workload's record shape (key, 16-bit value), cheap to compute.
fn line(i: u64) -> (String, String) {
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let (k, v) = (h % 10_001, (h >> 8) & 0xFFFF);
    (k.to_string(), format!("{k},{v}"))
}

/// The topic's records as a bounded source sees them (start to end offsets, every partition).
fn bounded_source(
    settings: &ClientSettings,
    topic: &str,
) -> Result<KafkaSource<String>, KafkaError> {
    KafkaSource::builder()
        .client_settings(settings.clone())
        .topics([topic.to_string()])
        .group_id("sluice-bench")
        .bounded()
        .build(Lines)
}

/// Makes `topic` hold at least `records` records: creates it with one partition if missing
/// and appends `key,value` lines (keyed, to partition 0) up to the count. Returns how many
/// it wrote.
pub fn fill_topic(settings: &ClientSettings, topic: &str, records: u64) -> Result<u64, KafkaError> {
    ensure_topic(settings, topic, 1)?;
    let have = bounded_source(settings, topic)?
        .bounded_records()
        .unwrap_or(0);
    let missing = records.saturating_sub(have);
    if missing == 0 {
        return Ok(0);
    }
    let p: BaseProducer = settings
        .client_config(&[
            ("linger.ms", "20"),
            ("batch.num.messages", "10000"),
            ("queue.buffering.max.messages", "500000"),
        ])
        .create()
        .map_err(|e| {
            KafkaError::client("creating the benchmark producer", &settings.bootstrap, e)
        })?;
    for i in have..have + missing {
        let (key, payload) = line(i);
        let mut r = BaseRecord::to(topic)
            .key(&key)
            .payload(&payload)
            .partition(0);
        loop {
            match p.send(r) {
                Ok(()) => break,
                Err((
                    rdkafka::error::KafkaError::MessageProduction(
                        rdkafka::types::RDKafkaErrorCode::QueueFull,
                    ),
                    back,
                )) => {
                    r = back;
                    p.poll(Duration::from_millis(5));
                }
                Err((e, _)) => {
                    return Err(KafkaError::client(
                        format!("producing to {topic}"),
                        &settings.bootstrap,
                        e,
                    ))
                }
            }
        }
        if i % 10_000 == 0 {
            p.poll(Duration::ZERO);
        }
    }
    p.flush(Duration::from_secs(120))
        .map_err(|e| KafkaError::client(format!("flushing to {topic}"), &settings.bootstrap, e))?;
    Ok(missing)
}

/// A bare `BaseConsumer` reading `plan` until it received `records` messages.
fn bare_loop(
    settings: &ClientSettings,
    plan: &[PartitionPlan],
    records: u64,
) -> Result<Measurement, KafkaError> {
    let c: BaseConsumer = settings
        .client_config(&[
            ("group.id", "sluice-bench-bare"),
            ("enable.auto.commit", "false"),
        ])
        .create()
        .map_err(|e| KafkaError::client("creating the bare consumer", &settings.bootstrap, e))?;
    let mut tpl = TopicPartitionList::new();
    for p in plan {
        tpl.add_partition_offset(&p.topic, p.partition, Offset::Offset(p.start))
            .map_err(|e| KafkaError::client("assigning partitions", &settings.bootstrap, e))?;
    }
    c.assign(&tpl)
        .map_err(|e| KafkaError::client("assigning partitions", &settings.bootstrap, e))?;
    let (t0, c0) = (Instant::now(), process_cpu_ns());
    let mut seen = 0u64;
    let mut bytes = 0usize;
    let mut last = Instant::now();
    while seen < records {
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let s = std::str::from_utf8(m.payload().unwrap_or_default()).map(str::to_owned);
                bytes += s.map_or(0, |s| s.len());
                seen += 1;
                last = Instant::now();
            }
            _ if last.elapsed() > STALL => {
                return Err(KafkaError::Config(format!(
                    "the bare consumer received {seen} of {records} records and then nothing \
                     for {} s",
                    STALL.as_secs()
                )))
            }
            _ => {}
        }
    }
    std::hint::black_box(bytes);
    Ok(Measurement {
        wall: t0.elapsed(),
        cpu_ns: process_cpu_ns() - c0,
    })
}

/// Sluice's bounded source at parallelism 1 into a discarding sink; the records it read.
fn sluice_source(settings: &ClientSettings, topic: &str) -> Result<(Measurement, u64), KafkaError> {
    let (t0, c0) = (Instant::now(), process_cpu_ns());
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let src = bounded_source(settings, topic)?;
    let n = src.bounded_records().unwrap_or(0);
    src.add_to(&env, "bench").discard();
    env.execute()
        .map_err(|e| KafkaError::Config(format!("the benchmark job failed: {e}")))?;
    Ok((
        Measurement {
            wall: t0.elapsed(),
            cpu_ns: process_cpu_ns() - c0,
        },
        n,
    ))
}

/// Both readers over the same records.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The topic read.
    pub topic: String,
    /// How many partitions it has.
    pub partitions: usize,
    /// Records read by each reader.
    pub records: u64,
    /// A bare librdkafka consumer loop over the same records: the floor.
    pub bare: Measurement,
    /// Sluice's Kafka source in a job.
    pub sluice: Measurement,
}

impl Comparison {
    fn per_core(&self, m: Measurement) -> f64 {
        self.records as f64 / (m.cpu_ns.max(1) as f64 / 1e9)
    }

    /// Sluice's records/s per core over the bare loop's.
    pub fn ratio(&self) -> f64 {
        self.per_core(self.sluice) / self.per_core(self.bare)
    }

    /// The figures: records/s (wall and per core), CPU-ns per record, the ratio, peak RSS.
    pub fn report(&self) -> String {
        let line = |name: &str, m: Measurement| {
            format!(
                "{name}: {:>10.0} rec/s wall, {:>10.0} rec/s per core, {:>6.0} CPU-ns/record\n",
                self.records as f64 / m.wall.as_secs_f64(),
                self.per_core(m),
                m.cpu_ns as f64 / self.records.max(1) as f64
            )
        };
        format!(
            "records: {} on {} partition(s) of {} (`key,value` lines)\n{}{}ratio (per core, \
             Sluice / bare): {:.2}; peak RSS of this process {:.0} MiB\n",
            self.records,
            self.partitions,
            self.topic,
            line("bare rdkafka loop ", self.bare),
            line("Sluice KafkaSource", self.sluice),
            self.ratio(),
            peak_rss_mib()
        )
    }
}

/// Reads all of `topic` with both readers, alternating `rounds` times (at least once), and
/// keeps the run of each that took the least CPU (warm caches, same broker state).
pub fn compare(
    settings: &ClientSettings,
    topic: &str,
    rounds: usize,
) -> Result<Comparison, KafkaError> {
    let source = bounded_source(settings, topic)?;
    let plan = source.partitions().to_vec();
    let records = source.bounded_records().unwrap_or(0);
    if records == 0 {
        return Err(KafkaError::Config(format!(
            "topic {topic} on {} holds no records to read",
            settings.bootstrap
        )));
    }
    let mut best: Option<(Measurement, Measurement)> = None;
    for _ in 0..rounds.max(1) {
        let b = bare_loop(settings, &plan, records)?;
        let (s, n) = sluice_source(settings, topic)?;
        if n != records {
            return Err(KafkaError::Config(format!(
                "topic {topic} changed during the benchmark: {n} records, {records} before"
            )));
        }
        best = Some(match best {
            None => (b, s),
            Some((bb, sb)) => (bb.better(b), sb.better(s)),
        });
    }
    let (bare, sluice) =
        best.ok_or_else(|| KafkaError::Config("the benchmark ran no round".to_string()))?;
    Ok(Comparison {
        topic: topic.to_string(),
        partitions: plan.len(),
        records,
        bare,
        sluice,
    })
}
