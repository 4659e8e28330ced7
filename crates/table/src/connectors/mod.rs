//! Sources and sinks by a table's `'connector'` option, with Flink's option names.
//!
//! | connector    | source | sink | module |
//! |--------------|--------|------|--------|
//! | `nexmark`    | yes    |      | [`nexmark`] |
//! | `datagen`    | yes    |      | [`datagen`] |
//! | `filesystem` | yes    | yes  | [`filesystem`] (`format` = `csv` or `json`) |
//! | `kafka`      | yes    | yes  | [`kafka`] (`format` / `value.format`, `key.format` = `csv` or `json`) |
//! | `print`      |        | yes  | [`print`](mod@print) |
//! | `blackhole`  |        | yes  | (drops rows) |
//! | `jdbc`       | lookup | yes  | [`jdbc`] (PostgreSQL: upsert by primary key, else append; lookup joins) |
//!
//! `upsert-kafka` is refused as not supported yet. Sources produce rows in the table's physical
//! column order ([`PhysicalSchema`]); the csv and json formats are [`format`]'s, shared by the
//! connectors that read and write records. A lookup join's right side (`FOR SYSTEM_TIME AS
//! OF`) is read through [`lookup`]: `jdbc` tables and the legacy `'connector.type' =
//! 'filesystem'` csv table (Nexmark's q13).

pub mod datagen;
pub mod filesystem;
pub mod format;
pub mod jdbc;
pub mod kafka;
pub mod lookup;
pub mod nexmark;
pub mod print;
pub mod seeded;

use sluice_datastream::{DataStream, Sink, StreamEnv};
use sluice_sql::{Change, ChangelogMode, Result, Row, SqlError, TableDef};

use crate::options::Options;
use crate::schema::PhysicalSchema;

/// The connectors Sluice runs.
const KNOWN: &[&str] = &[
    "nexmark",
    "datagen",
    "filesystem",
    "kafka",
    "print",
    "blackhole",
    "jdbc",
];

/// Connectors Flink has that come later.
const LATER: &[&str] = &["upsert-kafka"];

/// A table's `'connector'`, checked.
fn connector_of(def: &TableDef, options: &Options) -> Result<String> {
    let name = options.required("connector")?.to_string();
    if LATER.contains(&name.as_str()) {
        return Err(SqlError::unsupported(
            Some(def.pos),
            format!(
                "connector '{name}' of table '{}' is not supported yet (supported: {})",
                def.name,
                KNOWN.join(", ")
            ),
        ));
    }
    if !KNOWN.contains(&name.as_str()) {
        let close = sluice_sql::catalog::nearest(&name, KNOWN.iter().copied());
        let hint = if close.is_empty() {
            format!(" Known connectors: {}.", KNOWN.join(", "))
        } else {
            let q: Vec<String> = close.iter().map(|k| format!("'{k}'")).collect();
            format!(" Did you mean {}?", q.join(", "))
        };
        return Err(options.bad("connector", format!("unknown connector '{name}'.{hint}")));
    }
    Ok(name)
}

/// A table's source, its options checked.
#[derive(Clone, Debug)]
pub enum SourceConnector {
    /// The Nexmark generator.
    Nexmark(nexmark::NexmarkSpec),
    /// Flink's `datagen`.
    Datagen(datagen::DatagenSpec),
    /// Files, read once (bounded).
    Filesystem(Box<filesystem::FilesystemSpec>),
    /// Kafka topics (bounded with `scan.bounded.mode`).
    Kafka(Box<kafka::KafkaSourceSpec>),
}

/// Whether `def`'s source generates the table's watermark itself, per split (Kafka: Flink
/// pushes the watermark into its Kafka source), known from its options alone.
pub fn takes_watermark(def: &TableDef) -> bool {
    def.option("connector") == Some("kafka")
}

impl SourceConnector {
    /// The source of `def` (refused, naming the option, if its options are not right).
    pub fn for_table(def: &TableDef) -> Result<SourceConnector> {
        let options = Options::new(&def.name.to_string(), &def.options);
        let schema = PhysicalSchema::of(def)?;
        match connector_of(def, &options)?.as_str() {
            "nexmark" => Ok(SourceConnector::Nexmark(nexmark::NexmarkSpec::new(
                &options, &schema,
            )?)),
            "datagen" => Ok(SourceConnector::Datagen(datagen::DatagenSpec::new(
                &options, &schema,
            )?)),
            "filesystem" => Ok(SourceConnector::Filesystem(Box::new(
                filesystem::FilesystemSpec::new(&options, &schema, &def.partition_keys)?,
            ))),
            "kafka" => Ok(SourceConnector::Kafka(Box::new(
                kafka::KafkaSourceSpec::new(def, &options, &schema)?,
            ))),
            "jdbc" => Err(SqlError::unsupported(
                Some(def.pos),
                format!(
                    "a scan of jdbc table '{}' is not supported yet: a jdbc table is read by lookup joins (JOIN … FOR SYSTEM_TIME AS OF) and written by INSERT",
                    def.name
                ),
            )),
            other => Err(SqlError::unsupported(
                Some(def.pos),
                format!(
                    "connector '{other}' of table '{}' is a sink only: it cannot be read",
                    def.name
                ),
            )),
        }
    }

    /// The source's rows, in the table's physical column order.
    pub fn stream(&self, env: &StreamEnv) -> DataStream<Row> {
        match self {
            SourceConnector::Nexmark(s) => s.stream(env),
            SourceConnector::Datagen(s) => s.stream(env),
            SourceConnector::Filesystem(s) => s.stream(env),
            SourceConnector::Kafka(s) => s.stream(env, None),
        }
    }

    /// The same source building only what `read` says the operators above read of each column
    /// ([`crate::demand`]); a source without that ability is returned as it is.
    pub fn pruned(self, read: &[crate::demand::Demand]) -> SourceConnector {
        match self {
            SourceConnector::Nexmark(s) => SourceConnector::Nexmark(s.pruned(read)),
            other => other,
        }
    }

    /// The same source emitting its rows in a flat `layout` ([`crate::layout`]), each row
    /// allocated with room for `width` columns; only `nexmark` can (the translator flattens no
    /// other: [`crate::layout::choose`]), another source is returned as it is.
    pub fn flattened(self, layout: &crate::layout::Layout, width: usize) -> SourceConnector {
        match self {
            SourceConnector::Nexmark(s) => {
                SourceConnector::Nexmark(s.flattened(layout).with_capacity(width))
            }
            other => other,
        }
    }

    /// Whether the source generates the table's watermark itself
    /// ([`stream_with_watermark`](Self::stream_with_watermark)).
    pub fn takes_watermark(&self) -> bool {
        matches!(self, SourceConnector::Kafka(_))
    }

    /// The source's rows with `watermark` generated per split, for a source that
    /// [takes it](Self::takes_watermark) (others give their rows without it).
    pub fn stream_with_watermark(
        &self,
        env: &StreamEnv,
        watermark: &crate::scan::SourceWatermark,
    ) -> DataStream<Row> {
        match self {
            SourceConnector::Kafka(s) => s.stream(env, Some(watermark)),
            other => other.stream(env),
        }
    }
}

/// A table's sink, its options checked.
#[derive(Clone, Debug)]
pub enum SinkConnector {
    /// Part files under a directory.
    Filesystem(Box<filesystem::FilesystemSpec>),
    /// A Kafka topic.
    Kafka(Box<kafka::KafkaSinkSpec>),
    /// Flink's print sink.
    Print(print::PrintSpec),
    /// Drops every row.
    Blackhole,
    /// PostgreSQL through `jdbc`.
    Jdbc(Box<jdbc::JdbcSink>),
}

impl SinkConnector {
    /// The sink of `def` (refused, naming the option, if its options are not right).
    pub fn for_table(def: &TableDef) -> Result<SinkConnector> {
        let options = Options::new(&def.name.to_string(), &def.options);
        let schema = PhysicalSchema::of(def)?;
        match connector_of(def, &options)?.as_str() {
            "filesystem" => Ok(SinkConnector::Filesystem(Box::new(
                filesystem::FilesystemSpec::new(&options, &schema, &def.partition_keys)?,
            ))),
            "kafka" => Ok(SinkConnector::Kafka(Box::new(kafka::KafkaSinkSpec::new(
                def, &options, &schema,
            )?))),
            "print" => Ok(SinkConnector::Print(print::PrintSpec::new(
                &options, &schema,
            )?)),
            "blackhole" => {
                options.check_known("blackhole", &["connector"])?;
                Ok(SinkConnector::Blackhole)
            }
            "jdbc" => Ok(SinkConnector::Jdbc(Box::new(jdbc::JdbcSink::new(
                &options, &schema, def,
            )?))),
            other => Err(SqlError::unsupported(
                Some(def.pos),
                format!(
                    "connector '{other}' of table '{}' is a source only: it cannot be written",
                    def.name
                ),
            )),
        }
    }

    /// Writes a changelog (already cast to the table's physical columns) of `mode` through a
    /// connector that takes changes; the planner refused the others (`changelog_mode`).
    pub fn write_changes(
        &self,
        changes: &DataStream<Change>,
        _mode: ChangelogMode,
        def: &TableDef,
    ) -> Result<Sink<()>> {
        match self {
            SinkConnector::Print(s) => Ok(s.write_changes(changes)),
            SinkConnector::Filesystem(s) if s.row_kind => Ok(s.write_changes(changes)),
            SinkConnector::Blackhole => Ok(changes.sink_fn("BlackHole", |_| Ok(()))),
            SinkConnector::Jdbc(s) => s.write_changes(changes),
            _ => Err(SqlError::unsupported(
                Some(def.pos),
                format!("table '{}' cannot take a changelog", def.name),
            )),
        }
    }

    /// Writes `rows` (already cast to the table's physical columns) through the connector.
    pub fn write(&self, rows: &DataStream<Row>) -> Result<Sink<()>> {
        Ok(match self {
            SinkConnector::Filesystem(s) => s.write(rows),
            SinkConnector::Kafka(s) => s.write(rows),
            SinkConnector::Print(s) => s.write(rows),
            SinkConnector::Blackhole => rows.sink_fn("BlackHole", |_| Ok(())),
            SinkConnector::Jdbc(s) => s.write(rows)?,
        })
    }
}
