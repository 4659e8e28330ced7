//! Kafka for Sluice, on rdkafka (bundled librdkafka).
//!
//! - [`source::KafkaSource`]: partitions as splits assigned to source subtasks by Flink's
//!   `KafkaSourceEnumerator` owner formula ([`source::assign`]), offsets in checkpoints
//!   (restorable at any parallelism), committed to the group on checkpoint completion for
//!   monitoring only, starting offsets (earliest, latest, committed, timestamp, specific), a
//!   bounded mode stopping at offsets of the same kinds ([`source::StoppingOffsets`]),
//!   per-partition watermarks with idleness, deserialisers ([`source::Lines`],
//!   [`source::RawBytes`], [`source::Json`]) with dead letters, FLIP-33 metrics.
//! - [`KafkaSink`]: none, at-least-once or transactional exactly-once (see [`sink`]), placed by
//!   Kafka's default partitioner or a [`SinkPartitioner`]; after a crash
//!   the restore commits the checkpoint's transactions by producer id and epoch through
//!   [`sink::coordinator`], a minimal client of Kafka's transaction coordinator.
//! - [`config::KafkaUrl`]: the `kafka://HOST:PORT/TOPIC?k=v` URL of the command line;
//!   [`config::ClientSettings`]: brokers, connect timeout, passthrough properties.
//! - [`admin`]: metadata within the connect timeout, topic resolution, [`admin::ensure_topic`].
//! - [`produce`]: keyed UTF-8 lines written as fast as a producer can, placed by Kafka's default
//!   partitioner (`sluice produce`).
//! - [`bench`]: the source benchmark beside a bare rdkafka loop (`cargo bench`, `sluice bench
//!   kafka-source`).
//! - [`KafkaError`]: the crate's one error type (source, sink, admin, coordinator client).

#![warn(missing_docs)]

pub mod admin;
pub mod bench;
pub mod config;
mod error;
pub mod produce;
pub mod sink;
pub mod source;

pub use config::{ClientSettings, KafkaUrl};
pub use error::KafkaError;
pub use sink::{DeliveryGuarantee, KafkaSink, KafkaSinkExt, Serializer, SinkPartitioner};
pub use source::KafkaSource;
