//! [`KafkaSourceSpec`]: a `kafka` table read through `sluice-kafka`'s [`KafkaSource`], built (the
//! cluster asked for its partitions and their start and stop offsets) when the table is planned
//! into a job, so an unreachable broker, a missing topic or a group without committed offsets is
//! refused before the job starts.

use std::fmt;

use sluice_datastream::{DataStream, StreamEnv};
use sluice_kafka::source::{KafkaRecord, KafkaSource, KafkaWatermarks};
use sluice_kafka::KafkaError;
use sluice_sql::{Result, Row, SqlError, TableDef};

use super::{modes, parallelism, KafkaTable};
use crate::options::Options;
use crate::scan::SourceWatermark;
use crate::schema::PhysicalSchema;

/// A `kafka` table's source, its options checked and its partitions resolved.
#[derive(Clone)]
pub struct KafkaSourceSpec {
    /// What the table's source and sink share.
    pub table: KafkaTable,
    source: KafkaSource<Row>,
    parallelism: Option<usize>,
}

impl fmt::Debug for KafkaSourceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaSourceSpec")
            .field("table", &self.table)
            .field("partitions", &self.source.partitions())
            .field("parallelism", &self.parallelism)
            .finish()
    }
}

impl KafkaSourceSpec {
    /// Reads and checks the options, then asks the cluster for the partitions and offsets.
    pub fn new(
        def: &TableDef,
        options: &Options,
        schema: &PhysicalSchema,
    ) -> Result<KafkaSourceSpec> {
        let table = KafkaTable::new(def, options, schema)?;
        let starting = modes::starting(options, &table)?;
        let stopping = modes::stopping(options, &table)?;
        if let Some(v) = options.get("scan.topic-partition-discovery.interval") {
            let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() || digits.chars().any(|c| c != '0') {
                return Err(options.bad(
                    "scan.topic-partition-discovery.interval",
                    format!("partition discovery is not supported: the source reads the partitions found when the job is built ('0' disables discovery, found '{v}')"),
                ));
            }
        }
        let parallelism = parallelism(options, "scan.parallelism")?;
        let mut settings = table.settings.clone();
        if !settings
            .properties
            .iter()
            .any(|(k, _)| k == "isolation.level")
        {
            // Java's default, which Flink's source has (librdkafka's is read_committed).
            settings = settings.property("isolation.level", "read_uncommitted");
        }
        let mut builder = KafkaSource::builder()
            .client_settings(settings)
            .starting_offsets(starting);
        builder = match &table.topic_pattern {
            Some(p) => builder.topic_pattern(p.clone()),
            None => builder.topics(table.topics.clone()),
        };
        if let Some(g) = &table.group_id {
            builder = builder.group_id(g.clone());
        }
        if let Some(s) = stopping {
            builder = builder.stopping_offsets(s);
        }
        let codec = table.codec.clone();
        let source = builder
            .build(move |r: &KafkaRecord<'_>| codec.decode(r))
            .map_err(|e| cluster_error(options, def, e))?;
        Ok(KafkaSourceSpec {
            table,
            source,
            parallelism,
        })
    }

    /// The source's rows (physical columns). With `watermark`, each partition generates the
    /// table's watermark from its own rows and the subtask emits the smallest over its
    /// partitions (Flink's watermark push-down into the Kafka source), so a partition read
    /// ahead of another does not make the other's rows late.
    pub fn stream(&self, env: &StreamEnv, watermark: Option<&SourceWatermark>) -> DataStream<Row> {
        let mut source = self.source.clone();
        if let Some(w) = watermark {
            let value = w.value.clone();
            // The generator's watermark is `max - 0 - 1`: fed `value + 1` it emits max(value),
            // Flink SQL's watermark.
            let mut strategy = KafkaWatermarks::from_record(0, move |r: &Row| {
                value(r).map_or(i64::MIN, |ms| ms.saturating_add(1))
            })
            .with_interval(w.settings.watermark_interval);
            if let Some(idle) = w.settings.idle_timeout {
                strategy = strategy.with_idleness(idle.as_millis() as u64);
            }
            source = source.with_watermarks(strategy);
        }
        let rows = source.add_to(env, "kafka");
        match self.parallelism {
            Some(p) => rows.set_parallelism(p),
            None => rows,
        }
    }
}

/// A cluster's refusal at build, as the option it is about where there is one.
fn cluster_error(options: &Options, def: &TableDef, e: KafkaError) -> SqlError {
    match &e {
        KafkaError::Unreachable { .. } => {
            options.bad("properties.bootstrap.servers", e.to_string())
        }
        KafkaError::MissingTopic { .. } => options.bad("topic", e.to_string()),
        KafkaError::NoTopicMatches { .. } => options.bad("topic-pattern", e.to_string()),
        _ => SqlError::validation(
            Some(def.pos),
            format!("the Kafka source of table '{}': {e}", def.name),
        ),
    }
}
