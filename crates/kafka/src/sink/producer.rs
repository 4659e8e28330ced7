//! librdkafka producers for the sink: their configuration, delivery accounting, the start-up
//! check of broker and topic, and a send that waits while librdkafka's queue is full.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};

use super::config::KafkaSinkConfig;
use super::metrics::{KafkaSinkMetrics, TaskGauges};
use crate::KafkaError;

/// The sink's producer type.
pub(crate) type SinkProducer = ThreadedProducer<DeliveryContext>;

/// Counts one producer's deliveries, keeps its first failure and, for a transactional
/// producer, the producer id and epoch librdkafka acquired (see [`producer_id_of`]).
pub(crate) struct DeliveryContext {
    metrics: Arc<KafkaSinkMetrics>,
    gauges: TaskGauges,
    failed: AtomicBool,
    first_failure: Mutex<Option<String>>,
    sent: AtomicU64,
    done: AtomicU64,
    producer_id: Mutex<Option<(i64, i16)>>,
}

impl ClientContext for DeliveryContext {
    /// librdkafka's log lines. With `debug=eos` (transactional producers) it logs
    /// `Acquired PID{Id:<id>,Epoch:<epoch>}` (facility `GETPID`) each time an
    /// `InitProducerId` answer gives it a producer id and epoch: the only place librdkafka
    /// tells them (it has no getter). The latest one is kept; the rest is passed on to
    /// `tracing` (librdkafka's debug lines at `trace`).
    fn log(&self, level: RDKafkaLogLevel, fac: &str, line: &str) {
        if fac == "GETPID" {
            if let Some(pid) = super::coordinator::parse_acquired_pid(line) {
                *self.producer_id.lock().unwrap_or_else(|p| p.into_inner()) = Some(pid);
            }
        }
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => tracing::error!(target: "librdkafka", "{fac} {line}"),
            RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", "{fac} {line}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", "{fac} {line}")
            }
            RDKafkaLogLevel::Debug => tracing::trace!(target: "librdkafka", "{fac} {line}"),
        }
    }
}

/// The producer id and epoch of transactional producer `p`, waiting up to `timeout` for
/// librdkafka's log line to be served (rdkafka routes logs through the client's main queue,
/// which `ThreadedProducer`'s polling thread serves: it usually arrived long before).
pub(crate) fn producer_id_of(p: &SinkProducer, timeout: Duration) -> Option<(i64, i16)> {
    let start = Instant::now();
    loop {
        let pid = *p
            .context()
            .producer_id
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if pid.is_some() || start.elapsed() > timeout {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        self.done.fetch_add(1, Relaxed);
        self.metrics.pending_deliveries.fetch_sub(1, Relaxed);
        self.gauges.add_pending(-1);
        if let Err((e, m)) = result {
            self.metrics.delivery_failures.fetch_add(1, Relaxed);
            if !self.failed.swap(true, Relaxed) {
                let mut f = self.first_failure.lock().unwrap_or_else(|p| p.into_inner());
                *f = Some(format!("{e} (partition {})", m.partition()));
            }
        }
    }
}

impl DeliveryContext {
    /// The first failed delivery, if any (checked per record and at every barrier).
    pub(crate) fn failure(&self) -> Option<String> {
        if !self.failed.load(Relaxed) {
            return None;
        }
        self.first_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
    /// Records sent and not yet acknowledged.
    pub(crate) fn in_flight(&self) -> u64 {
        self.sent
            .load(Relaxed)
            .saturating_sub(self.done.load(Relaxed))
    }
}

/// The client properties every producer and admin client of the sink shares.
fn base_config<T>(cfg: &KafkaSinkConfig<T>) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &cfg.bootstrap);
    // A missing topic is the start-up check's to report (or create); librdkafka's producer
    // would otherwise ask the broker to auto-create it with the broker's defaults.
    c.set("allow.auto.create.topics", "false");
    c.set(
        "socket.connection.setup.timeout.ms",
        cfg.connect_timeout.as_millis().max(1000).to_string(),
    );
    for (k, v) in &cfg.properties {
        c.set(k, v);
    }
    c
}

/// A producer (transactional when `transactional_id` is given). Keyed records are placed by
/// `murmur2_random`: Kafka's Java default partitioner (murmur2 of the key bytes, positive,
/// modulo the partition count), random for records without a key.
pub(crate) fn producer<T>(
    cfg: &KafkaSinkConfig<T>,
    metrics: &Arc<KafkaSinkMetrics>,
    gauges: &TaskGauges,
    transactional_id: Option<&str>,
) -> Result<SinkProducer, KafkaError> {
    let mut c = base_config(cfg);
    c.set("partitioner", "murmur2_random");
    if let Some(id) = transactional_id {
        c.set("transactional.id", id);
        // The producer id and epoch come from librdkafka's EOS debug log (DeliveryContext::log).
        let debug = match c.get("debug") {
            Some(d) if !d.split(',').any(|x| x.trim() == "eos" || x.trim() == "all") => {
                format!("{d},eos")
            }
            Some(d) => d.to_string(),
            None => "eos".to_string(),
        };
        c.set("debug", debug);
        c.set_log_level(RDKafkaLogLevel::Debug);
        // Unless the user set it: the flush timeout, at least 15 min (Kafka's default
        // `transaction.max.timeout.ms`, the most a default broker accepts; Flink sets 1 h). It
        // bounds how long a crashed process may stay down before the coordinator aborts the
        // transactions of its last checkpoint, which the restore would otherwise commit.
        if c.get("transaction.timeout.ms").is_none() {
            c.set(
                "transaction.timeout.ms",
                cfg.flush_timeout.as_millis().max(900_000).to_string(),
            );
        }
    }
    let ctx = DeliveryContext {
        metrics: metrics.clone(),
        gauges: gauges.clone(),
        failed: AtomicBool::new(false),
        first_failure: Mutex::new(None),
        sent: AtomicU64::new(0),
        done: AtomicU64::new(0),
        producer_id: Mutex::new(None),
    };
    c.create_with_context(ctx)
        .map_err(|e| KafkaError::sink(format!("creating a producer for {}", cfg.bootstrap), e))
}

/// Sends one record, waiting while librdkafka's local queue is full (counted as busy time:
/// the sink is working off its backlog). A delivery that already failed fails the send.
pub(crate) fn send(
    p: &SinkProducer,
    topic: &str,
    key: Option<&[u8]>,
    value: &[u8],
    partition: Option<i32>,
    timeout: Duration,
) -> Result<(), KafkaError> {
    if let Some(f) = p.context().failure() {
        return Err(KafkaError::Delivery {
            topic: topic.to_string(),
            detail: f,
        });
    }
    let mut rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(topic).payload(value);
    if let Some(k) = key {
        rec = rec.key(k);
    }
    if let Some(p) = partition {
        rec = rec.partition(p);
    }
    let start = Instant::now();
    loop {
        match p.send(rec) {
            Ok(()) => {
                p.context().sent.fetch_add(1, Relaxed);
                p.context().metrics.pending_deliveries.fetch_add(1, Relaxed);
                p.context().gauges.add_pending(1);
                return Ok(());
            }
            Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), r))
                if start.elapsed() < timeout =>
            {
                rec = r;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => {
                return Err(KafkaError::Delivery {
                    topic: topic.to_string(),
                    detail: e.to_string(),
                })
            }
        }
    }
}

/// Waits until every record sent so far is acknowledged, then reports the first failure.
/// (Not `Producer::flush`: beside `ThreadedProducer`'s own polling thread it wakes in steps of
/// up to 100 ms; this waits for the delivery callbacks in 1 ms steps.)
pub(crate) fn flush(p: &SinkProducer, topic: &str, timeout: Duration) -> Result<(), KafkaError> {
    let start = Instant::now();
    while p.context().in_flight() > 0 || p.in_flight_count() > 0 {
        if start.elapsed() > timeout {
            return Err(KafkaError::Delivery {
                topic: topic.to_string(),
                detail: format!(
                    "flush: {} records unacknowledged after {} ms",
                    p.context().in_flight(),
                    timeout.as_millis()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    match p.context().failure() {
        Some(f) => Err(KafkaError::Delivery {
            topic: topic.to_string(),
            detail: f,
        }),
        None => Ok(()),
    }
}

/// Before the job starts: the broker answers within the connect timeout and the topic
/// exists (or is created, when configured). Returns the topic's partition count.
pub(crate) fn check_topic<T>(cfg: &KafkaSinkConfig<T>) -> Result<usize, KafkaError> {
    let c = base_config(cfg);
    let probe: rdkafka::producer::BaseProducer = c
        .create()
        .map_err(|e| KafkaError::sink(format!("connecting to {}", cfg.bootstrap), e))?;
    let unreachable = |detail: String| KafkaError::Unreachable {
        bootstrap: cfg.bootstrap.clone(),
        timeout: cfg.connect_timeout,
        detail,
    };
    let md = probe
        .client()
        .fetch_metadata(Some(&cfg.topic), cfg.connect_timeout)
        .map_err(|e| unreachable(e.to_string()))?;
    let t = md.topics().iter().find(|t| t.name() == cfg.topic);
    let missing = t.is_none_or(|t| t.error().is_some() || t.partitions().is_empty());
    if !missing {
        return Ok(t.map_or(0, |t| t.partitions().len()));
    }
    let Some(partitions) = cfg.create_topic else {
        return Err(KafkaError::MissingTopic {
            topic: cfg.topic.clone(),
            bootstrap: cfg.bootstrap.clone(),
            hint: " (create it first, or let the sink create it: KafkaSinkBuilder::create_topic)",
        });
    };
    create_topic(cfg, partitions)?;
    Ok(partitions as usize)
}

fn create_topic<T>(cfg: &KafkaSinkConfig<T>, partitions: i32) -> Result<(), KafkaError> {
    let err = |detail: String| KafkaError::CreateTopic {
        topic: cfg.topic.clone(),
        bootstrap: cfg.bootstrap.clone(),
        detail,
    };
    let admin: AdminClient<DefaultClientContext> =
        base_config(cfg).create().map_err(|e| err(e.to_string()))?;
    let topic = NewTopic::new(&cfg.topic, partitions, TopicReplication::Fixed(1));
    let opts = AdminOptions::new().operation_timeout(Some(cfg.connect_timeout));
    let results = block_on(
        admin.create_topics([&topic], &opts),
        cfg.connect_timeout * 2,
    )
    .ok_or_else(|| err("no answer".into()))?
    .map_err(|e| err(e.to_string()))?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((_, code)) => return Err(err(code.to_string())),
        }
    }
    Ok(())
}

/// Runs a future of rdkafka's admin API to completion on this thread (its futures complete
/// from librdkafka's own threads; polling every few ms is enough for a one-off call).
fn block_on<F: Future>(f: F, timeout: Duration) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let start = Instant::now();
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return Some(v);
        }
        if start.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
