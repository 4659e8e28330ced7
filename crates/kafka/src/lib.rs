//! Kafka for Sluice: a source (partitions as splits, offsets in checkpoints) and a sink
//! (at-least-once or transactional exactly-once), on rdkafka.

pub mod sink;

pub use sink::{DeliveryGuarantee, KafkaSink, KafkaSinkError, KafkaSinkExt, Serializer};
