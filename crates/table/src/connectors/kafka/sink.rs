//! [`KafkaSinkSpec`]: a `kafka` table written through `sluice-kafka`'s [`KafkaSink`]: rows become
//! key and value bytes by the table's formats; `sink.delivery-guarantee` and
//! `sink.partitioner` as Flink's. The broker and the topic are checked when the job starts.

use std::fmt;

use sluice_datastream::{DataStream, Sink};
use sluice_kafka::{DeliveryGuarantee, KafkaSink, Serializer, SinkPartitioner};
use sluice_sql::{Result, Row, SqlError, TableDef};

use super::{parallelism, KafkaTable};
use crate::options::Options;
use crate::schema::PhysicalSchema;

/// A `kafka` table's sink, its options checked.
#[derive(Clone)]
pub struct KafkaSinkSpec {
    /// What the table's source and sink share.
    pub table: KafkaTable,
    /// `sink.delivery-guarantee`.
    pub guarantee: DeliveryGuarantee,
    /// `sink.partitioner`.
    pub partitioner: SinkPartitioner,
    sink: KafkaSink<Row>,
    parallelism: Option<usize>,
}

impl fmt::Debug for KafkaSinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaSinkSpec")
            .field("table", &self.table)
            .field("guarantee", &self.guarantee)
            .field("partitioner", &self.partitioner)
            .field("parallelism", &self.parallelism)
            .finish()
    }
}

impl KafkaSinkSpec {
    /// Reads and checks the options (no broker is asked yet).
    pub fn new(
        def: &TableDef,
        options: &Options,
        schema: &PhysicalSchema,
    ) -> Result<KafkaSinkSpec> {
        let table = KafkaTable::new(def, options, schema)?;
        if table.topic_pattern.is_some() {
            return Err(options.bad(
                "topic-pattern",
                "a sink writes to one 'topic' (a pattern needs the 'topic' metadata column, which is not supported yet)",
            ));
        }
        let [topic] = table.topics.as_slice() else {
            return Err(options.bad(
                "topic",
                "a sink writes to one topic (a list needs the 'topic' metadata column, which is not supported yet)",
            ));
        };
        let guarantee = match options.one_of(
            "sink.delivery-guarantee",
            &["none", "at-least-once", "exactly-once"],
        )? {
            Some("none") => DeliveryGuarantee::None,
            Some("exactly-once") => DeliveryGuarantee::ExactlyOnce,
            _ => DeliveryGuarantee::AtLeastOnce,
        };
        let prefix = options.get("sink.transactional-id-prefix");
        if guarantee == DeliveryGuarantee::ExactlyOnce && prefix.is_none() {
            return Err(options.bad(
                "sink.transactional-id-prefix",
                "sink.transactional-id-prefix must be specified when using DeliveryGuarantee.EXACTLY_ONCE.",
            ));
        }
        let partitioner = match options.get("sink.partitioner").map(str::trim) {
            None | Some("default") => SinkPartitioner::Default,
            Some("fixed") => SinkPartitioner::Fixed,
            Some("round-robin") if table.codec.has_key() => {
                return Err(options.bad(
                    "sink.partitioner",
                    "Currently 'round-robin' partitioner only works when option 'key.fields' is not specified.",
                ))
            }
            Some("round-robin") => SinkPartitioner::RoundRobin,
            Some("") => {
                return Err(options.bad(
                    "sink.partitioner",
                    "Option 'sink.partitioner' should be a non-empty string.",
                ))
            }
            Some(other) => {
                return Err(options.bad(
                    "sink.partitioner",
                    format!("a partitioner class ('{other}') is Java code: expected 'default', 'fixed' or 'round-robin'"),
                ))
            }
        };
        let parallelism = parallelism(options, "sink.parallelism")?;
        let codec = table.codec.clone();
        let mut builder = KafkaSink::builder()
            .bootstrap(&table.settings.bootstrap)
            .topic(topic)
            .serializer(Serializer::new(move |r: &Row| Ok(codec.encode(r))))
            .guarantee(guarantee)
            .partitioner(partitioner);
        if let Some(p) = prefix {
            builder = builder.transactional_id_prefix(p);
        }
        for (k, v) in &table.settings.properties {
            builder = builder.property(k, v);
        }
        let sink = builder.build().map_err(|e| match &e {
            sluice_kafka::KafkaError::Invalid { what, .. }
                if *what == "transactional id prefix" =>
            {
                options.bad("sink.transactional-id-prefix", e.to_string())
            }
            _ => SqlError::validation(
                Some(def.pos),
                format!("the Kafka sink of table '{}': {e}", def.name),
            ),
        })?;
        Ok(KafkaSinkSpec {
            table,
            guarantee,
            partitioner,
            sink,
            parallelism,
        })
    }

    /// Writes `rows` (the physical columns) to the topic.
    pub fn write(&self, rows: &DataStream<Row>) -> Sink<()> {
        let sink = self.sink.clone().add_to(rows).map_handle(|_| ());
        match self.parallelism {
            Some(p) => sink.set_parallelism(p),
            None => sink,
        }
    }
}
