//! The Kafka sink's error type (the sink's own, beside the source's: see `lib.rs`).

use sluice_types::OperatorError;

/// Why the Kafka sink refused a configuration or failed.
#[derive(Debug, thiserror::Error)]
pub enum KafkaSinkError {
    #[error("Kafka sink: {0} is required")]
    Missing(&'static str),
    #[error("Kafka sink: invalid {what} '{value}': {reason}")]
    Invalid {
        what: &'static str,
        value: String,
        reason: String,
    },
    #[error(
        "Kafka broker {bootstrap} unreachable: no metadata within the connect timeout of {timeout_ms} ms ({detail})"
    )]
    Unreachable {
        bootstrap: String,
        timeout_ms: u128,
        detail: String,
    },
    #[error(
        "Kafka topic '{topic}' does not exist on {bootstrap} (create it first, or let the sink create it: KafkaSinkBuilder::create_topic)"
    )]
    MissingTopic { topic: String, bootstrap: String },
    #[error("Kafka sink: creating topic '{topic}' on {bootstrap}: {detail}")]
    CreateTopic {
        topic: String,
        bootstrap: String,
        detail: String,
    },
    #[error("Kafka sink: {what}: {detail}")]
    Client { what: String, detail: String },
    #[error("Kafka sink: delivery to topic '{topic}' failed: {detail}")]
    Delivery { topic: String, detail: String },
    #[error("Kafka sink: serializing a record for topic '{topic}': {detail}")]
    Serialize { topic: String, detail: String },
}

impl KafkaSinkError {
    pub(crate) fn client(what: impl Into<String>, e: impl std::fmt::Display) -> Self {
        KafkaSinkError::Client {
            what: what.into(),
            detail: e.to_string(),
        }
    }
}

impl From<KafkaSinkError> for OperatorError {
    fn from(e: KafkaSinkError) -> Self {
        OperatorError::failed(e.to_string())
    }
}
