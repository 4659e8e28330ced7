//! `'connector' = 'filesystem'`: files in `format` `csv` or `json` under `path` (a file or a
//! directory; `file://` URLs too). As a source it reads every file once, a bounded stream
//! (hidden files — starting with `.` or `_` — and in-progress `.pending` files are skipped, as
//! Flink skips them); a record that does not parse goes to the dead-letter output and is
//! counted. As a sink it writes part files into the directory exactly once: a part file is
//! published (renamed from `.pending`) when the checkpoint after it completes or the job ends
//! (Sluice's transactional file sink), as Flink's file sink commits on checkpoints.
//!
//! Options: `path`, `format` and the format's options ([`super::format`]: `csv.*`, `json.*`;
//! the sink writes Flink's csv text byte for byte, see [`csv`]); sink rolling policies are
//! accepted and have no effect (a part file per checkpoint). A file named `*.gz` is read through
//! gzip, as Flink picks decompression by extension.
//!
//! `'sluice.row-kind' = 'true'` (Sluice's own option, not Flink's; csv only) makes the sink take
//! a changelog: each line is led by its row kind (`+I,…`, `-U,…`, `+U,…`, `-D,…`). It is how
//! `--verify` captures an updating query's answer ([`crate::official::capture_sinks`]); Flink's
//! filesystem sink takes insertions only, and so does Sluice's without the option.

pub mod csv;
pub mod json;
pub mod legacy;
pub mod scalar;
mod source;

use std::path::PathBuf;

use sluice_datastream::{DataStream, Sink, StreamEnv};
use sluice_sql::plan::changelog_mode::ROW_KIND_OPTION;
use sluice_sql::{Change, Result, Row, RowKind};

use super::format::{format_options, Format, RowFormat};
use crate::options::Options;
use crate::schema::PhysicalSchema;

/// The connector's own options; the format's come from [`format_options`].
const KNOWN: &[&str] = &[
    "connector",
    "path",
    "format",
    "sink.rolling-policy.file-size",
    "sink.rolling-policy.rollover-interval",
    "sink.rolling-policy.check-interval",
    ROW_KIND_OPTION,
];

/// A `filesystem` table's settings.
#[derive(Clone, Debug)]
pub struct FilesystemSpec {
    /// The file or directory.
    pub path: PathBuf,
    /// How records are written and read.
    pub format: RowFormat,
    /// `sluice.row-kind`: each written line is led by its row kind, and changes are taken.
    pub row_kind: bool,
}

impl FilesystemSpec {
    /// Reads and checks the options against the table's columns.
    pub fn new(options: &Options, schema: &PhysicalSchema) -> Result<FilesystemSpec> {
        let mut known: Vec<String> = KNOWN.iter().map(|k| k.to_string()).collect();
        known.extend(format_options("format"));
        options.check_known(
            "filesystem",
            &known.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
        let path = options.required("path")?;
        let path = PathBuf::from(path.strip_prefix("file://").unwrap_or(path));
        let format = RowFormat::new(
            options,
            "format",
            schema.names.clone(),
            schema.types.clone(),
        )?;
        let row_kind = options.bool(ROW_KIND_OPTION)?.unwrap_or(false);
        if row_kind && !matches!(format.format, Format::Csv(_)) {
            return Err(options.bad(
                ROW_KIND_OPTION,
                "the row kind is written with 'format' = 'csv' only".to_string(),
            ));
        }
        Ok(FilesystemSpec {
            path,
            format,
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

    /// Writes rows as part files into the directory, exactly once.
    pub fn write(&self, rows: &DataStream<Row>) -> Sink<()> {
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
