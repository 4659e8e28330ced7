//! The one error type of `sluice-kafka`.

use std::time::Duration;

/// What can go wrong talking to Kafka, each naming what and where.
#[derive(Debug, thiserror::Error)]
pub enum KafkaError {
    /// A `kafka://` URL that does not parse.
    #[error("invalid Kafka URL '{url}': {reason}")]
    Url { url: String, reason: String },
    /// A source or producer configuration that cannot work (checked before the job starts).
    #[error("invalid Kafka configuration: {0}")]
    Config(String),
    /// No broker answered a metadata request within the connect timeout.
    #[error("Kafka broker {bootstrap} unreachable: no metadata within {} ms ({detail})", timeout.as_millis())]
    Unreachable {
        bootstrap: String,
        timeout: Duration,
        detail: String,
    },
    /// A topic the source was asked to read does not exist.
    #[error("Kafka topic '{topic}' does not exist on {bootstrap}")]
    MissingTopic { topic: String, bootstrap: String },
    /// A topic pattern that matched no topic of the cluster.
    #[error("no Kafka topic on {bootstrap} matches the pattern '{pattern}'")]
    NoTopicMatches { pattern: String, bootstrap: String },
    /// A client call that failed (librdkafka's error kept).
    #[error("Kafka {what} failed on {bootstrap}: {source}")]
    Client {
        what: String,
        bootstrap: String,
        #[source]
        source: Box<rdkafka::error::KafkaError>,
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
}

impl From<KafkaError> for sluice_types::OperatorError {
    fn from(e: KafkaError) -> Self {
        sluice_types::OperatorError::failed(e.to_string())
    }
}
