//! `'connector' = 'kafka'`: Flink's Kafka SQL connector over `sluice-kafka`'s source (partitions
//! as splits, offsets in checkpoints, per-partition watermarks) and sink (none, at-least-once,
//! exactly-once transactions), with Flink's option names.
//!
//! Options (Flink's `KafkaConnectorOptions`):
//!
//! - `topic` (a topic, or for a source a `;`-separated list) or, for a source, `topic-pattern`
//!   (a regular expression the whole topic name matches, resolved at start);
//!   `properties.bootstrap.servers` (required), `properties.group.id`, and any other
//!   `properties.*` passed to librdkafka as it is (an unknown one is refused by librdkafka,
//!   naming it; the ones the connector sets itself are refused here);
//!   `properties.auto.offset.reset` (`earliest` / `latest` / `none`, Flink's default `none`)
//!   says where `group-offsets` starts a partition the group never committed.
//! - `format` or `value.format` (`csv`, `json`) with its options ([`super::format`]:
//!   `json.*` / `value.json.*`…); `key.format`, `key.fields` (`;`-separated physical columns),
//!   `key.fields-prefix`, `value.fields-include` (`ALL`, `EXCEPT_KEY`).
//! - Source: `scan.startup.mode` (`earliest-offset`, `latest-offset`, `group-offsets` — Flink's
//!   default, which needs `properties.group.id` —, `timestamp` with
//!   `scan.startup.timestamp-millis`, `specific-offsets` with `scan.startup.specific-offsets` =
//!   `partition:0,offset:42;partition:1,offset:300`); `scan.bounded.mode` (`unbounded`,
//!   `latest-offset`, `group-offsets`, `timestamp` with `scan.bounded.timestamp-millis`,
//!   `specific-offsets` with `scan.bounded.specific-offsets`), resolved when the job is built;
//!   `scan.parallelism`; `scan.topic-partition-discovery.interval` only `0` (partitions are
//!   those found at start).
//! - Sink: `sink.delivery-guarantee` (`none`, `at-least-once` — the default —, `exactly-once`,
//!   which needs `sink.transactional-id-prefix`), `sink.partitioner` (`default`, `fixed`,
//!   `round-robin` without key fields), `sink.parallelism`.
//!
//! Refused, naming them: metadata columns, `PRIMARY KEY` and `PARTITIONED BY` (as Flink's
//! `kafka` refuses them), a custom partitioner class, a topic list or pattern for a sink, the
//! `upsert-kafka` connector.
//!
//! A record is one row: its key (if key fields) and value decoded by their formats into the
//! physical columns (a column in both takes the value's, as Flink's projection does). A record
//! that does not decode — malformed, a tombstone, a missing key when key fields are declared —
//! goes to the job's dead-letter output with its topic, partition and offset, and is counted;
//! Flink skips the last two silently and fails the job on the first (unless
//! `*.ignore-parse-errors`, where it skips the record). The table's `WATERMARK` is generated in
//! the source, per partition ([`KafkaSourceSpec::stream`]), as Flink pushes it into its Kafka
//! source.
//!
//! Deviations from Flink, stated: the source reads with librdkafka, so `properties.*` are
//! librdkafka's names (most common ones are Java's too); the consumer's `isolation.level`
//! defaults to `read_uncommitted` as Java's does (librdkafka's own default is
//! `read_committed`); partitions added while a job runs are not discovered (Flink looks every
//! 5 minutes).

mod codec;
mod modes;
mod sink;
mod source;

pub use codec::RecordCodec;
pub use sink::KafkaSinkSpec;
pub use source::KafkaSourceSpec;

use sluice_kafka::ClientSettings;
use sluice_sql::{Result, SqlError, TableDef};

use super::format::format_options;
use crate::options::Options;
use crate::schema::PhysicalSchema;

/// The connector's own options (the formats' come from [`format_options`]).
const KNOWN: &[&str] = &[
    "connector",
    "topic",
    "topic-pattern",
    "properties.*",
    "format",
    "value.format",
    "key.format",
    "key.fields",
    "key.fields-prefix",
    "value.fields-include",
    "scan.startup.mode",
    "scan.startup.specific-offsets",
    "scan.startup.timestamp-millis",
    "scan.bounded.mode",
    "scan.bounded.specific-offsets",
    "scan.bounded.timestamp-millis",
    "scan.topic-partition-discovery.interval",
    "scan.parallelism",
    "sink.delivery-guarantee",
    "sink.transactional-id-prefix",
    "sink.partitioner",
    "sink.parallelism",
];

/// librdkafka properties the connector sets itself, and why a user may not.
const RESERVED: &[(&str, &str)] = &[
    ("key.deserializer", "the key format decodes keys"),
    ("value.deserializer", "the value format decodes values"),
    ("key.serializer", "the key format encodes keys"),
    ("value.serializer", "the value format encodes values"),
    (
        "enable.auto.commit",
        "offsets are committed when checkpoints complete",
    ),
    (
        "enable.auto.offset.store",
        "offsets are committed when checkpoints complete",
    ),
    (
        "enable.partition.eof",
        "the source needs it to find the end of bounded partitions",
    ),
    (
        "transactional.id",
        "exactly-once names its transactions from 'sink.transactional-id-prefix'",
    ),
    ("partitioner", "use 'sink.partitioner'"),
    ("partitioner.class", "use 'sink.partitioner'"),
];

/// What a `kafka` table's source and sink share: brokers, properties, topics, the record codec.
#[derive(Clone, Debug)]
pub struct KafkaTable {
    /// The table's name.
    pub table: String,
    /// `topic`, split at `;` (empty with a pattern).
    pub topics: Vec<String>,
    /// `topic-pattern`.
    pub topic_pattern: Option<String>,
    /// `properties.group.id`.
    pub group_id: Option<String>,
    /// `properties.auto.offset.reset`, lowercased.
    pub auto_offset_reset: Option<String>,
    /// Brokers and the other `properties.*`.
    pub settings: ClientSettings,
    /// Key and value formats over the physical columns.
    pub codec: RecordCodec,
}

impl KafkaTable {
    /// Reads and checks the options every `kafka` table has.
    fn new(def: &TableDef, options: &Options, schema: &PhysicalSchema) -> Result<KafkaTable> {
        let mut known: Vec<String> = KNOWN.iter().map(|k| k.to_string()).collect();
        for key in ["format", "value.format", "key.format"] {
            known.extend(format_options(key));
        }
        options.check_known(
            "kafka",
            &known.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
        if !def.primary_key.is_empty() {
            return Err(SqlError::unsupported(
                Some(def.pos),
                format!(
                    "The Kafka table '{}' doesn't support defining PRIMARY KEY constraint on the table, because it can't guarantee the semantic of primary key (Flink's rule; 'upsert-kafka' is not supported yet)",
                    def.name
                ),
            ));
        }
        if !def.partition_keys.is_empty() {
            return Err(SqlError::unsupported(
                Some(def.pos),
                format!("PARTITIONED BY on the Kafka table '{}'", def.name),
            ));
        }
        let (topics, topic_pattern) = match (options.get("topic"), options.get("topic-pattern")) {
            (Some(_), Some(_)) => {
                return Err(options.bad(
                    "topic-pattern",
                    "Option 'topic' and 'topic-pattern' shouldn't be set together.",
                ))
            }
            (None, None) => {
                return Err(options.bad("topic", "Either 'topic' or 'topic-pattern' must be set."))
            }
            (Some(t), None) => {
                let topics: Vec<String> = t
                    .split(';')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                for t in &topics {
                    sluice_kafka::config::check_topic(t).map_err(|e| options.bad("topic", e))?;
                }
                if topics.is_empty() {
                    return Err(options.bad("topic", "no topic name given"));
                }
                (topics, None)
            }
            (None, Some(p)) => (Vec::new(), Some(p.to_string())),
        };
        let bootstrap = options.required("properties.bootstrap.servers")?;
        let mut settings = ClientSettings::new(bootstrap);
        let mut group_id = None;
        let mut auto_offset_reset = None;
        for (key, value) in properties(options) {
            if let Some((_, why)) = RESERVED.iter().find(|(k, _)| *k == key) {
                return Err(options.bad(
                    &format!("properties.{key}"),
                    format!("set by the connector: {why}"),
                ));
            }
            match key.as_str() {
                "bootstrap.servers" => {}
                "group.id" => group_id = Some(value),
                "auto.offset.reset" => {
                    let v = value.to_ascii_lowercase();
                    if !["earliest", "latest", "none"].contains(&v.as_str()) {
                        return Err(options.bad(
                            "properties.auto.offset.reset",
                            format!("expected 'earliest', 'latest' or 'none', found '{value}'"),
                        ));
                    }
                    auto_offset_reset = Some(v);
                }
                _ => settings = settings.property(key, value),
            }
        }
        let codec = RecordCodec::new(options, schema)?;
        Ok(KafkaTable {
            table: options.table().to_string(),
            topics,
            topic_pattern,
            group_id,
            auto_offset_reset,
            settings,
            codec,
        })
    }
}

/// The `properties.*` options, without the prefix, in the order given (the last of a key wins).
fn properties(options: &Options) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in options.entries() {
        if let Some(key) = k.strip_prefix("properties.") {
            out.retain(|(o, _)| o != key);
            out.push((key.to_string(), v.to_string()));
        }
    }
    out
}

/// A positive parallelism option, if given.
fn parallelism(options: &Options, key: &str) -> Result<Option<usize>> {
    match options.parse::<usize>(key, "a positive whole number")? {
        Some(0) => Err(options.bad(key, "expected a positive whole number, found '0'")),
        other => Ok(other),
    }
}
