//! Test helpers: a tansu broker, topics, and a producer writing known records.
#![allow(dead_code)]

use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use sluice_kafka::admin::{ensure_topic, TopicStatus};
use sluice_kafka::ClientSettings;
use sluice_testkit::KafkaBroker;

pub fn broker() -> KafkaBroker {
    KafkaBroker::start().expect("tansu broker (scripts/install-tansu.sh)")
}

pub fn topic(b: &KafkaBroker, name: &str, partitions: i32) {
    let st = ensure_topic(&ClientSettings::new(b.bootstrap()), name, partitions).unwrap();
    assert_eq!(st, TopicStatus::Created { partitions });
}

pub fn producer(b: &KafkaBroker, linger_ms: u32) -> ThreadedProducer<DefaultProducerContext> {
    ClientConfig::new()
        .set("bootstrap.servers", b.bootstrap())
        .set("linger.ms", linger_ms.to_string())
        .set("partitioner", "murmur2_random")
        .create()
        .unwrap()
}

/// Writes `values` to `partition` of `topic` (batched: linger 20 ms, so batches of many
/// records, which is what trips tansu's high watermark), then flushes.
pub fn produce(b: &KafkaBroker, topic: &str, partition: i32, values: &[String]) {
    let p = producer(b, 20);
    for v in values {
        let mut r = BaseRecord::<(), String>::to(topic)
            .payload(v)
            .partition(partition);
        loop {
            match p.send(r) {
                Ok(()) => break,
                Err((e, back)) => {
                    assert!(
                        matches!(
                            e,
                            rdkafka::error::KafkaError::MessageProduction(
                                rdkafka::types::RDKafkaErrorCode::QueueFull
                            )
                        ),
                        "{e}"
                    );
                    r = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
    p.flush(Duration::from_secs(30)).unwrap();
}

pub fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-kafka-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
