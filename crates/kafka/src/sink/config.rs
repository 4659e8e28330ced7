//! The sink's configuration and its builder (validated before the job starts).

use std::time::Duration;

use super::serializer::Serializer;
use crate::KafkaError;

/// What the sink promises (Flink's `DeliveryGuarantee`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    /// Flink's `NONE`: records are sent as they come and flushed only at the end of the input;
    /// a checkpoint does not wait for them, so a failure can lose records sent before it.
    None,
    /// Every checkpoint barrier waits until the broker acknowledged every record sent before
    /// it (flush); a failed delivery fails the job. After a restore, records since the
    /// checkpoint are written again: duplicates, never loss.
    AtLeastOnce,
    /// A Kafka transaction per checkpoint interval: pre-committed (flushed) at the barrier,
    /// committed when the checkpoint completes; after a crash the restore commits them by
    /// producer id and epoch. `read_committed` consumers see each record once, except in the
    /// windows the sink docs list ("After a crash").
    ExactlyOnce,
}

/// Which partition a record goes to (Flink's `sink.partitioner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkPartitioner {
    /// Kafka's default partitioner: murmur2 of the key bytes for a keyed record, random for
    /// one without a key (librdkafka's `murmur2_random`).
    Default,
    /// Each sink subtask writes to one partition: `subtask % partitions` (Flink's
    /// `FlinkFixedPartitioner`).
    Fixed,
    /// Each sink subtask writes to the partitions in turn, record by record, whatever the key
    /// (Kafka's `RoundRobinPartitioner`).
    RoundRobin,
}

/// A Kafka sink's settings (build one with [`KafkaSink::builder`](super::KafkaSink::builder)).
pub struct KafkaSinkConfig<T> {
    pub(crate) bootstrap: String,
    pub(crate) topic: String,
    pub(crate) serializer: Serializer<T>,
    pub(crate) guarantee: DeliveryGuarantee,
    pub(crate) partitioner: SinkPartitioner,
    pub(crate) transactional_id_prefix: String,
    pub(crate) create_topic: Option<i32>,
    pub(crate) connect_timeout: Duration,
    pub(crate) flush_timeout: Duration,
    pub(crate) abort_probe: u64,
    pub(crate) properties: Vec<(String, String)>,
}

/// Builds a [`KafkaSink`](super::KafkaSink); [`build`](Self::build) checks the settings.
pub struct KafkaSinkBuilder<T> {
    bootstrap: Option<String>,
    topic: Option<String>,
    serializer: Option<Serializer<T>>,
    guarantee: DeliveryGuarantee,
    partitioner: SinkPartitioner,
    prefix: Option<String>,
    create_topic: Option<i32>,
    connect_timeout: Duration,
    flush_timeout: Duration,
    abort_probe: u64,
    properties: Vec<(String, String)>,
}

/// Properties the sink sets itself (a user value would break its guarantees or placement).
const RESERVED: &[&str] = &["bootstrap.servers", "transactional.id", "partitioner"];

impl<T: 'static> KafkaSinkBuilder<T> {
    pub(crate) fn new() -> Self {
        KafkaSinkBuilder {
            bootstrap: None,
            topic: None,
            serializer: None,
            guarantee: DeliveryGuarantee::AtLeastOnce,
            partitioner: SinkPartitioner::Default,
            prefix: None,
            create_topic: None,
            connect_timeout: Duration::from_secs(10),
            flush_timeout: Duration::from_secs(60),
            abort_probe: 5,
            properties: Vec::new(),
        }
    }
    /// `bootstrap.servers`, e.g. `127.0.0.1:9092` (comma-separated for several).
    pub fn bootstrap(mut self, servers: &str) -> Self {
        self.bootstrap = Some(servers.to_string());
        self
    }
    /// The topic records go to.
    pub fn topic(mut self, topic: &str) -> Self {
        self.topic = Some(topic.to_string());
        self
    }
    /// How a record becomes a Kafka key and value.
    pub fn serializer(mut self, s: Serializer<T>) -> Self {
        self.serializer = Some(s);
        self
    }
    /// Default: at-least-once (as Flink's `KafkaSink`).
    pub fn guarantee(mut self, g: DeliveryGuarantee) -> Self {
        self.guarantee = g;
        self
    }
    /// Which partition a record goes to (default: Kafka's default partitioner).
    pub fn partitioner(mut self, p: SinkPartitioner) -> Self {
        self.partitioner = p;
        self
    }
    /// Flink's `sink.transactional-id-prefix`: transactional ids are
    /// `<prefix>-<subtask>-<checkpoint offset>`. It must be unique per job among every
    /// producer of the cluster (two jobs with one prefix fence each other). Default:
    /// `sluice-<topic>`.
    pub fn transactional_id_prefix(mut self, prefix: &str) -> Self {
        self.prefix = Some(prefix.to_string());
        self
    }
    /// Creates the topic with `partitions` partitions (replication 1) when it is missing.
    /// Without this a missing topic is an error naming it, before the job starts.
    pub fn create_topic(mut self, partitions: i32) -> Self {
        self.create_topic = Some(partitions);
        self
    }
    /// How long the start-up check waits for the broker's metadata (default 10 s); also
    /// librdkafka's `socket.connection.setup.timeout.ms`.
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }
    /// How long a barrier waits for deliveries, and a commit for the broker (default 60 s);
    /// beyond it the job fails.
    pub fn flush_timeout(mut self, t: Duration) -> Self {
        self.flush_timeout = t;
        self
    }
    /// Exactly-once: how many checkpoint offsets past the last one this process knows of are
    /// aborted at start-up (default 5). A crashed process may have opened transactions for
    /// checkpoints the new one never heard of; Flink probes until a never-used id (epoch 0),
    /// which librdkafka does not expose, so the probe has this fixed depth.
    pub fn abort_probe(mut self, n: u64) -> Self {
        self.abort_probe = n;
        self
    }
    /// Any other librdkafka producer property (e.g. `linger.ms`, `compression.type`).
    pub fn property(mut self, key: &str, value: &str) -> Self {
        self.properties.push((key.to_string(), value.to_string()));
        self
    }

    /// Checks the settings; the broker itself is checked when the job starts.
    pub fn build(self) -> Result<super::KafkaSink<T>, KafkaError> {
        let bootstrap = self
            .bootstrap
            .filter(|b| !b.trim().is_empty())
            .ok_or(KafkaError::Missing("bootstrap servers"))?;
        let topic = self.topic.ok_or(KafkaError::Missing("topic"))?;
        check_name("topic", &topic)?;
        let serializer = self.serializer.ok_or(KafkaError::Missing("serializer"))?;
        let prefix = self.prefix.unwrap_or_else(|| format!("sluice-{topic}"));
        check_name("transactional id prefix", &prefix)?;
        if let Some(p) = self.create_topic {
            if !(1..=10_000).contains(&p) {
                return Err(KafkaError::Invalid {
                    what: "partition count",
                    value: p.to_string(),
                    reason: "must be 1..=10000".into(),
                });
            }
        }
        for (k, _) in &self.properties {
            if RESERVED.contains(&k.as_str()) {
                return Err(KafkaError::Invalid {
                    what: "property",
                    value: k.clone(),
                    reason: "set by the sink itself".into(),
                });
            }
        }
        Ok(super::KafkaSink {
            config: std::sync::Arc::new(KafkaSinkConfig {
                bootstrap,
                topic,
                serializer,
                guarantee: self.guarantee,
                partitioner: self.partitioner,
                transactional_id_prefix: prefix,
                create_topic: self.create_topic,
                connect_timeout: self.connect_timeout,
                flush_timeout: self.flush_timeout,
                abort_probe: self.abort_probe,
                properties: self.properties,
            }),
        })
    }
}

/// Kafka's topic-name rule (also used for the prefix): 1..=249 of `[a-zA-Z0-9._-]`.
fn check_name(what: &'static str, name: &str) -> Result<(), KafkaError> {
    let ok = !name.is_empty()
        && name.len() <= 249
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(KafkaError::Invalid {
            what,
            value: name.to_string(),
            reason: "1 to 249 characters of a-z A-Z 0-9 . _ -".into(),
        })
    }
}
