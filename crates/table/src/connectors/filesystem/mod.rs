//! `'connector' = 'filesystem'`: files in `format` `csv` or `json` under `path` (a file or a
//! directory; `file://` URLs too). As a source it reads every file once, a bounded stream
//! (hidden files — starting with `.` or `_`, so in-progress `.part-…inprogress` files and
//! `_SUCCESS` — and `.pending` files are skipped, as Flink skips them); a record that does not
//! parse goes to the dead-letter output and is counted. As a sink it writes part files into
//! the directory exactly once: a part file is published when the checkpoint after it completes
//! or the job ends, as Flink's file sink commits on checkpoints.
//!
//! `PARTITIONED BY (k1, k2)` ([`partition`]): rows live in directories `k1=v1/k2=v2/`, the
//! partition columns only in the directory names; the source reads them back from the path.
//! The partitioned sink ([`sink`]) has Flink's rolling policy and partition commit (a
//! `_SUCCESS` file once the trigger — processing time or the watermark past the partition's
//! time + delay — says the partition is complete). An unpartitioned sink writes one part
//! file per checkpoint and subtask (Sluice's transactional file sink).
//!
//! Options: `path`, `format` and the format's options ([`super::format`]: `csv.*`, `json.*`;
//! the sink writes Flink's csv text byte for byte, see [`csv`]), the sink's ([`sink`]);
//! Flink's options Sluice does not build are refused naming why. A file named `*.gz` is read
//! through gzip, as Flink picks decompression by extension.
//!
//! `'sluice.row-kind' = 'true'` (Sluice's own option, not Flink's; csv only, unpartitioned) makes
//! the sink take a changelog: each line is led by its row kind (`+I,…`, `-U,…`, `+U,…`, `-D,…`).
//! It is how `--verify` captures an updating query's answer
//! ([`crate::official::capture_changelog_sinks`]); Flink's filesystem sink takes insertions only, and so
//! does Sluice's without the option.

pub mod csv;
pub mod json;
pub mod legacy;
pub mod partition;
pub mod scalar;
pub mod sink;
mod source;

use std::path::PathBuf;

use sluice_datastream::{DataStream, Sink, StreamEnv};
use sluice_sql::plan::changelog_mode::ROW_KIND_OPTION;
use sluice_sql::{Change, Result, Row, RowKind};

use super::format::{format_options, Format, RowFormat};
use crate::options::Options;
use crate::schema::PhysicalSchema;
use partition::Partitioning;
use sink::SinkSettings;

/// The connector's own options; the format's come from [`format_options`].
const KNOWN: &[&str] = &["connector", "path", "format", ROW_KIND_OPTION];

/// A `filesystem` table's settings.
#[derive(Clone, Debug)]
pub struct FilesystemSpec {
    /// The file or directory.
    pub path: PathBuf,
    /// How records are written and read (the data columns: without the partition columns).
    pub format: RowFormat,
    /// `PARTITIONED BY`, if any.
    pub partitioning: Option<Partitioning>,
    /// The sink options.
    pub sink: SinkSettings,
    /// `sluice.row-kind`: each written line is led by its row kind, and changes are taken.
    pub row_kind: bool,
}

impl FilesystemSpec {
    /// Reads and checks the options against the table's columns, partitioned by
    /// `partition_keys` (`PARTITIONED BY`, empty if none).
    pub fn new(
        options: &Options,
        schema: &PhysicalSchema,
        partition_keys: &[String],
    ) -> Result<FilesystemSpec> {
        sink::refuse_unbuilt(options)?;
        let mut known: Vec<String> = KNOWN.iter().map(|k| k.to_string()).collect();
        known.extend(sink::SINK_OPTIONS.iter().map(|k| k.to_string()));
        known.extend(format_options("format"));
        options.check_known(
            "filesystem",
            &known.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
        let path = options.required("path")?;
        let path = PathBuf::from(path.strip_prefix("file://").unwrap_or(path));
        let partitioning = partitioning(options, schema, partition_keys)?;
        let (names, types) = match &partitioning {
            None => (schema.names.clone(), schema.types.clone()),
            Some(p) => (
                p.data_index
                    .iter()
                    .map(|&i| schema.names[i].clone())
                    .collect(),
                p.data_index
                    .iter()
                    .map(|&i| schema.types[i].clone())
                    .collect(),
            ),
        };
        let format = RowFormat::new(options, "format", names, types)?;
        let sink = sink::settings(options, partitioning.as_ref())?;
        let row_kind = options.bool(ROW_KIND_OPTION)?.unwrap_or(false);
        if row_kind && (!matches!(format.format, Format::Csv(_)) || partitioning.is_some()) {
            return Err(options.bad(
                ROW_KIND_OPTION,
                "the row kind is written with 'format' = 'csv' into an unpartitioned table only"
                    .to_string(),
            ));
        }
        Ok(FilesystemSpec {
            path,
            format,
            partitioning,
            sink,
            row_kind,
        })
    }

    /// One row as a line of the format (without the line end).
    pub fn format_row(&self, row: &Row, out: &mut String) {
        self.format.format_row(row, out)
    }

    /// One record of the format as a row; `Err` says why it is malformed.
    pub fn parse_record(&self, record: &str) -> Result<Row, String> {
        self.format.parse_record(record)
    }

    /// The rows of every file under the path (a bounded stream).
    pub fn stream(&self, env: &StreamEnv) -> DataStream<Row> {
        source::stream(self.clone(), env)
    }

    /// Writes rows as part files into the directory (into its partitions' directories if
    /// partitioned), exactly once.
    pub fn write(&self, rows: &DataStream<Row>) -> Sink<()> {
        if let Some(p) = &self.partitioning {
            return sink::write_partitioned(self, p, &self.sink, rows);
        }
        let spec = self.clone();
        rows.write_text_exactly_once(self.path.clone(), move |r: &Row, out: &mut String| {
            if spec.row_kind {
                out.push_str(RowKind::Insert.short_string());
                out.push(',');
            }
            spec.format_row(r, out)
        })
    }

    /// Writes a changelog as part files, each line led by its row kind (`sluice.row-kind`).
    pub fn write_changes(&self, changes: &DataStream<Change>) -> Sink<()> {
        let spec = self.clone();
        changes.write_text_exactly_once(self.path.clone(), move |c: &Change, out: &mut String| {
            out.push_str(c.kind.short_string());
            out.push(',');
            spec.format_row(&c.row, out)
        })
    }
}

/// The partitioning of a table by `keys` (`None` when there are none): each a scalar column.
fn partitioning(
    options: &Options,
    schema: &PhysicalSchema,
    keys: &[String],
) -> Result<Option<Partitioning>> {
    if keys.is_empty() {
        if options.get("partition.default-name").is_some() {
            return Err(options.bad(
                "partition.default-name",
                "'partition.default-name' on a table without PARTITIONED BY",
            ));
        }
        return Ok(None);
    }
    let mut key_index = Vec::new();
    for k in keys {
        let Some(i) = schema.names.iter().position(|n| n == k) else {
            return Err(options.bad(
                "connector",
                format!("partition column '{k}' is not a physical column of the table"),
            ));
        };
        if !scalar::is_scalar(&schema.types[i]) {
            return Err(options.bad(
                "connector",
                format!(
                    "partition column '{k}' is {}: a partition column holds a scalar value",
                    schema.types[i]
                ),
            ));
        }
        key_index.push(i);
    }
    if key_index.len() == schema.len() {
        return Err(options.bad(
            "connector",
            "every column is a partition column: the files would hold nothing",
        ));
    }
    let default_name = options
        .get("partition.default-name")
        .unwrap_or(partition::DEFAULT_PARTITION_NAME)
        .to_string();
    if default_name.is_empty() {
        return Err(options.bad("partition.default-name", "an empty name"));
    }
    Ok(Some(Partitioning {
        keys: keys.to_vec(),
        key_types: key_index.iter().map(|&i| schema.types[i].clone()).collect(),
        data_index: (0..schema.len())
            .filter(|i| !key_index.contains(i))
            .collect(),
        key_index,
        default_name,
    }))
}
