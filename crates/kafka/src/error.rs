//! The one error type of `sluice-kafka` (source, sink, admin, the transaction-coordinator
//! client).

use std::time::Duration;

/// What can go wrong talking to Kafka, each naming what and where.
#[derive(Debug, thiserror::Error)]
pub enum KafkaError {
    /// A `kafka://` URL that does not parse.
    #[error("invalid Kafka URL '{url}': {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// Why it is refused.
        reason: String,
    },
    /// A source or producer configuration that cannot work (checked before the job starts).
    #[error("invalid Kafka configuration: {0}")]
    Config(String),
    /// A setting a builder needs and was not given.
    #[error("Kafka sink: {0} is required")]
    Missing(&'static str),
    /// A builder setting with a value that cannot work.
    #[error("Kafka sink: invalid {what} '{value}': {reason}")]
    Invalid {
        /// The setting.
        what: &'static str,
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// No broker answered a metadata request within the connect timeout.
    #[error("Kafka broker {bootstrap} unreachable: no metadata within {} ms ({detail})", timeout.as_millis())]
    Unreachable {
        /// The bootstrap servers asked.
        bootstrap: String,
        /// How long the client waited.
        timeout: Duration,
        /// What the client or the broker said.
        detail: String,
    },
    /// A topic that does not exist (`hint`: what to do about it, may be empty).
    #[error("Kafka topic '{topic}' does not exist on {bootstrap}{hint}")]
    MissingTopic {
        /// The topic.
        topic: String,
        /// The bootstrap servers asked.
        bootstrap: String,
        /// What to do about it (may be empty).
        hint: &'static str,
    },
    /// A topic pattern that matched no topic of the cluster.
    #[error("no Kafka topic on {bootstrap} matches the pattern '{pattern}'")]
    NoTopicMatches {
        /// The pattern.
        pattern: String,
        /// The bootstrap servers asked.
        bootstrap: String,
    },
    /// The sink could not create its topic.
    #[error("Kafka sink: creating topic '{topic}' on {bootstrap}: {detail}")]
    CreateTopic {
        /// The topic.
        topic: String,
        /// The bootstrap servers asked.
        bootstrap: String,
        /// What the client or the broker said.
        detail: String,
    },
    /// A client call that failed (librdkafka's error kept).
    #[error("Kafka {what} failed on {bootstrap}: {source}")]
    Client {
        /// The client call.
        what: String,
        /// The bootstrap servers asked.
        bootstrap: String,
        /// librdkafka's error.
        #[source]
        source: Box<rdkafka::error::KafkaError>,
    },
    /// A step of the sink that failed, with what librdkafka or the broker said.
    #[error("Kafka sink: {what}: {detail}")]
    Sink {
        /// The step that failed.
        what: String,
        /// What the client or the broker said.
        detail: String,
    },
    /// A record the broker did not acknowledge.
    #[error("Kafka sink: delivery to topic '{topic}' failed: {detail}")]
    Delivery {
        /// The topic.
        topic: String,
        /// What the client or the broker said.
        detail: String,
    },
    /// A record the sink's serializer refused.
    #[error("Kafka sink: serializing a record for topic '{topic}': {detail}")]
    Serialize {
        /// The topic.
        topic: String,
        /// What the client or the broker said.
        detail: String,
    },
    /// [`crate::produce`] could not write every record (the message names the URL and the
    /// first failure).
    #[error("{0}")]
    Produce(String),
    /// A request of the transaction-coordinator client ([`crate::sink::coordinator`]) that
    /// failed on the wire (connection, framing, decoding) or that the broker cannot serve.
    #[error("Kafka {api} request to {broker}: {detail}")]
    Protocol {
        /// The Kafka API (`InitProducerId`, `EndTxn`, ...).
        api: &'static str,
        /// The broker asked.
        broker: String,
        /// What the client or the broker said.
        detail: String,
    },
}

impl KafkaError {
    pub(crate) fn client(
        what: impl Into<String>,
        bootstrap: &str,
        source: rdkafka::error::KafkaError,
    ) -> KafkaError {
        KafkaError::Client {
            what: what.into(),
            bootstrap: bootstrap.to_string(),
            source: Box::new(source),
        }
    }

    /// A failed step of the sink (`e`: librdkafka's or another error, as text).
    pub(crate) fn sink(what: impl Into<String>, e: impl std::fmt::Display) -> KafkaError {
        KafkaError::Sink {
            what: what.into(),
            detail: e.to_string(),
        }
    }
}

impl From<KafkaError> for sluice_types::OperatorError {
    fn from(e: KafkaError) -> Self {
        sluice_types::OperatorError::failed(e.to_string())
    }
}
