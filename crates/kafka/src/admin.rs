//! Cluster look-ups and topic creation: metadata within the connect timeout (so an unreachable
//! broker is an error naming it, not a hang), topic/pattern resolution to partitions, and
//! `ensure_topic` for `sluice produce`.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::metadata::Metadata;

use crate::config::{check_topic, ClientSettings};
use crate::KafkaError;

/// Which topics a source reads.
#[derive(Debug, Clone)]
pub enum Subscription {
    /// These topics, each of which must exist.
    Topics(Vec<String>),
    /// Every topic whose whole name matches this regular expression (resolved once, when the
    /// source is built; at least one must match).
    Pattern(String),
}

/// A topic and how many partitions it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitions {
    /// The topic's name.
    pub topic: String,
    /// How many partitions it has.
    pub partitions: i32,
}

/// The cluster's metadata (all topics), or [`KafkaError::Unreachable`] within the connect
/// timeout. Asking for all topics (not one by name) never auto-creates a topic.
pub fn fetch_metadata(settings: &ClientSettings) -> Result<Metadata, KafkaError> {
    settings.validate()?;
    let consumer: BaseConsumer = settings
        .client_config(&[])
        .create()
        .map_err(|e| KafkaError::client("creating a client", &settings.bootstrap, e))?;
    metadata_of(&consumer, settings)
}

pub(crate) fn metadata_of(
    consumer: &BaseConsumer,
    settings: &ClientSettings,
) -> Result<Metadata, KafkaError> {
    consumer
        .fetch_metadata(None, settings.connect_timeout)
        .map_err(|e| KafkaError::Unreachable {
            bootstrap: settings.bootstrap.clone(),
            timeout: settings.connect_timeout,
            detail: e.to_string(),
        })
}

/// The topics of `subscription` with their partition counts, sorted by topic name.
pub fn resolve(
    metadata: &Metadata,
    subscription: &Subscription,
    bootstrap: &str,
) -> Result<Vec<TopicPartitions>, KafkaError> {
    let existing = |name: &str| {
        metadata
            .topics()
            .iter()
            .find(|t| t.name() == name && t.error().is_none())
            .map(|t| t.partitions().len() as i32)
    };
    let mut out = Vec::new();
    match subscription {
        Subscription::Topics(topics) => {
            if topics.is_empty() {
                return Err(KafkaError::Config("no topic to read".into()));
            }
            for topic in topics {
                check_topic(topic).map_err(KafkaError::Config)?;
                match existing(topic) {
                    Some(n) if n > 0 => out.push(TopicPartitions {
                        topic: topic.clone(),
                        partitions: n,
                    }),
                    _ => {
                        return Err(KafkaError::MissingTopic {
                            hint: "",
                            topic: topic.clone(),
                            bootstrap: bootstrap.to_string(),
                        })
                    }
                }
            }
        }
        Subscription::Pattern(pattern) => {
            let re = regex_lite::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
                KafkaError::Config(format!("topic pattern '{pattern}' is not a regex: {e}"))
            })?;
            for t in metadata.topics() {
                if t.error().is_none() && re.is_match(t.name()) && !t.partitions().is_empty() {
                    out.push(TopicPartitions {
                        topic: t.name().to_string(),
                        partitions: t.partitions().len() as i32,
                    });
                }
            }
            if out.is_empty() {
                return Err(KafkaError::NoTopicMatches {
                    pattern: pattern.clone(),
                    bootstrap: bootstrap.to_string(),
                });
            }
        }
    }
    out.sort_by(|a, b| a.topic.cmp(&b.topic));
    out.dedup();
    Ok(out)
}

/// What [`ensure_topic`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicStatus {
    /// The topic was created.
    Created {
        /// Its partitions, as asked.
        partitions: i32,
    },
    /// The topic existed already.
    Existed {
        /// Its partitions, as found.
        partitions: i32,
    },
}

/// Creates `topic` with `partitions` partitions (replication 1) unless it exists; an existing
/// topic is left as it is (its partition count reported).
pub fn ensure_topic(
    settings: &ClientSettings,
    topic: &str,
    partitions: i32,
) -> Result<TopicStatus, KafkaError> {
    check_topic(topic).map_err(KafkaError::Config)?;
    if partitions < 1 {
        return Err(KafkaError::Config(format!(
            "a topic needs at least 1 partition, not {partitions}"
        )));
    }
    let metadata = fetch_metadata(settings)?;
    if let Some(t) = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
    {
        return Ok(TopicStatus::Existed {
            partitions: t.partitions().len() as i32,
        });
    }
    let admin: AdminClient<DefaultClientContext> = settings
        .client_config(&[])
        .create()
        .map_err(|e| KafkaError::client("creating an admin client", &settings.bootstrap, e))?;
    let options = AdminOptions::new().operation_timeout(Some(settings.connect_timeout));
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    let results = block_on(admin.create_topics(&[new], &options)).map_err(|e| {
        KafkaError::client(format!("creating topic '{topic}'"), &settings.bootstrap, e)
    })?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, code)) => {
                return Err(KafkaError::Config(format!(
                    "creating topic '{t}' on {}: {code}",
                    settings.bootstrap
                )))
            }
        }
    }
    // The broker may answer metadata for the new topic a moment later.
    let deadline = std::time::Instant::now() + settings.connect_timeout;
    loop {
        let md = fetch_metadata(settings)?;
        let found = md
            .topics()
            .iter()
            .find(|t| t.name() == topic && t.error().is_none())
            .map(|t| t.partitions().len() as i32);
        match found {
            Some(n) if n == partitions => return Ok(TopicStatus::Created { partitions }),
            _ if std::time::Instant::now() >= deadline => {
                return Err(KafkaError::Config(format!(
                    "topic '{topic}' was created on {} but its {partitions} partitions are not in the metadata after {} ms",
                    settings.bootstrap,
                    settings.connect_timeout.as_millis()
                )))
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Runs a future of rdkafka's admin client (completed by librdkafka's own thread) on this one.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(50));
    }
}
