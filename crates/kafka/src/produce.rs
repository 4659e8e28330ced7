//! Writing records to a topic as fast as a producer can (`sluice produce`): UTF-8 lines keyed
//! by a key, placed by Kafka's default partitioner (murmur2, librdkafka's `murmur2_random`, as
//! Java clients place keyed records), so any Kafka client agrees on which partition holds a
//! key. A failed delivery (a broker gone mid-run) ends the run instead of waiting forever.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};

use crate::{ClientSettings, KafkaError, KafkaUrl};

/// Counts deliveries and keeps the first failure.
#[derive(Default)]
struct Deliveries {
    ok: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Deliveries {
    fn first_error(&self) -> Option<String> {
        self.first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// Writes `records` records to `url`'s topic: `fill(i, key, line)` writes record `i`'s key and
/// line into the (cleared) buffers. `progress(delivered)` is called every 4096 records. Returns
/// once every record was acknowledged (`acks=all`), with their number; a record not delivered
/// is an error naming the first failure.
pub fn produce_lines(
    settings: &ClientSettings,
    url: &KafkaUrl,
    records: u64,
    mut fill: impl FnMut(u64, &mut String, &mut String),
    mut progress: impl FnMut(u64),
) -> Result<u64, KafkaError> {
    let producer: BaseProducer<Deliveries> = settings
        .client_config(&[
            ("partitioner", "murmur2_random"),
            ("linger.ms", "5"),
            ("batch.num.messages", "10000"),
            ("queue.buffering.max.messages", "200000"),
            ("acks", "all"),
            ("message.timeout.ms", "30000"),
        ])
        .create_with_context(Deliveries::default())
        .map_err(|e| {
            KafkaError::Produce(format!(
                "creating a Kafka producer for {}: {e}",
                settings.bootstrap
            ))
        })?;
    let (mut key, mut line) = (String::new(), String::new());
    for i in 0..records {
        key.clear();
        line.clear();
        fill(i, &mut key, &mut line);
        let mut r = BaseRecord::to(&url.topic)
            .key(key.as_str())
            .payload(line.as_str());
        loop {
            match producer.send(r) {
                Ok(()) => break,
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    r = back;
                    producer.poll(Duration::from_millis(10));
                    fail_if_stuck(&producer, &settings.bootstrap)?;
                }
                Err((e, _)) => {
                    return Err(KafkaError::Produce(format!(
                        "producing record {i} to {url}: {e}"
                    )))
                }
            }
        }
        if i % 4096 == 0 {
            producer.poll(Duration::ZERO);
            progress(producer.context().ok.load(Ordering::Relaxed));
            fail_if_stuck(&producer, &settings.bootstrap)?;
        }
    }
    producer
        .flush(Duration::from_secs(60))
        .map_err(|e| KafkaError::Produce(format!("flushing records to {url}: {e}")))?;
    let ctx = producer.context();
    let (ok, failed) = (
        ctx.ok.load(Ordering::Relaxed),
        ctx.failed.load(Ordering::Relaxed),
    );
    if failed > 0 || ok != records {
        return Err(KafkaError::Produce(format!(
            "{failed} of {records} records were not delivered to {url} (first error: {})",
            ctx.first_error().unwrap_or_else(|| "none reported".into())
        )));
    }
    Ok(ok)
}

/// Deliveries that failed (broker gone mid-run) end the run instead of waiting forever.
fn fail_if_stuck(producer: &BaseProducer<Deliveries>, bootstrap: &str) -> Result<(), KafkaError> {
    let ctx = producer.context();
    if ctx.failed.load(Ordering::Relaxed) > 0 {
        return Err(KafkaError::Produce(format!(
            "records could not be delivered to {bootstrap}: {}",
            ctx.first_error().unwrap_or_default()
        )));
    }
    Ok(())
}
