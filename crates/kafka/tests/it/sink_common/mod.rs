//! What the Kafka sink tests share: the keyed job, the broker, the read-back and its counts.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_datastream::{
    Collector, KeyedProcessFunction, OperatorError, ProcessContext, StreamEnv,
};
use sluice_kafka::sink::KafkaSinkMetrics;
use sluice_kafka::{DeliveryGuarantee, KafkaSink, Serializer};
use sluice_testkit::kafka_read::{read_committed, ReadUntil, TopicContents};

pub const KEYS: u64 = 40;

/// Per key, the running sum of the values seen: `key,i,sum` for every record.
#[derive(Clone)]
pub struct RunningSum;

impl KeyedProcessFunction<u64, (u64, u64), (u64, String)> for RunningSum {
    fn process_element(
        &mut self,
        (key, i): (u64, u64),
        ctx: &mut ProcessContext<'_, u64>,
        out: &mut dyn Collector<(u64, String)>,
    ) -> Result<(), OperatorError> {
        let mut st = ctx.value_state::<u64>("sum");
        let sum = st.value()?.unwrap_or(0).wrapping_add(i);
        st.update(sum)?;
        out.collect((key, format!("{key},{i},{sum}")))
    }
}

/// Generator (2 subtasks, each key from one of them) → slowed map → keyed running sum (2) →
/// Kafka sink (parallelism `sink_p`), records keyed by their key.
pub fn job(
    env: &StreamEnv,
    records: u64,
    sink: KafkaSink<(u64, String)>,
    sink_p: usize,
) -> sluice_datastream::Sink<std::sync::Arc<KafkaSinkMetrics>> {
    slow_job(env, records, 500, sink, sink_p)
}

/// [`job`] with a 1 ms pause every `pause_every` records of each source subtask.
pub fn slow_job(
    env: &StreamEnv,
    records: u64,
    pause_every: u64,
    sink: KafkaSink<(u64, String)>,
    sink_p: usize,
) -> sluice_datastream::Sink<std::sync::Arc<KafkaSinkMetrics>> {
    env.set_parallelism(2);
    let keyed = env
        .generate(records, move |i| (i * KEYS / records, i))
        .set_parallelism(2)
        .map(move |r: (u64, u64)| {
            if r.1.is_multiple_of(pause_every) {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        })
        .set_parallelism(2)
        .key_by(|r: &(u64, u64)| r.0)
        .process(RunningSum)
        .uid("running-sum");
    sink.add_to(&keyed)
        .uid("kafka-sink")
        .set_parallelism(sink_p)
}

pub fn sink(
    bootstrap: &str,
    topic: &str,
    guarantee: DeliveryGuarantee,
    prefix: &str,
) -> KafkaSink<(u64, String)> {
    KafkaSink::builder()
        .bootstrap(bootstrap)
        .topic(topic)
        .serializer(Serializer::utf8(|(k, line): &(u64, String)| {
            (Some(k.to_string()), line.clone())
        }))
        .guarantee(guarantee)
        .transactional_id_prefix(prefix)
        .create_topic(3)
        .build()
        .unwrap()
}

/// Reads the topic back (committed records only) until `expect` records and a 1 s settle.
pub fn read_back(bootstrap: &str, topic: &str, expect: usize) -> TopicContents {
    read_committed(
        bootstrap,
        topic,
        ReadUntil {
            expect,
            settle: Duration::from_millis(1000),
            deadline: Duration::from_secs(60),
        },
    )
    .unwrap()
}

pub fn values(c: &TopicContents) -> Vec<String> {
    c.records
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap_or_default()).unwrap())
        .collect()
}

/// `(lost, duplicated)` of `got` against `expected` (each line counted with multiplicity).
pub fn compare(expected: &[String], got: &[String]) -> (usize, usize) {
    let mut count: BTreeMap<&str, i64> = BTreeMap::new();
    for e in expected {
        *count.entry(e).or_default() += 1;
    }
    for g in got {
        *count.entry(g).or_default() -= 1;
    }
    let lost = count
        .values()
        .filter(|&&c| c > 0)
        .map(|&c| c as usize)
        .sum();
    let dup = count
        .values()
        .filter(|&&c| c < 0)
        .map(|&c| (-c) as usize)
        .sum();
    (lost, dup)
}

/// The failure-free output of `job` with `records` records, computed directly.
pub fn expected_lines(records: u64) -> Vec<String> {
    let mut sums = BTreeMap::<u64, u64>::new();
    let mut out = Vec::new();
    for i in 0..records {
        let key = i * KEYS / records;
        let s = sums.entry(key).or_default();
        *s = s.wrapping_add(i);
        out.push(format!("{key},{i},{s}"));
    }
    out.sort();
    out
}

pub fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-kafka-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
