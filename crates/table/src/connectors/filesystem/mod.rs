//! `'connector' = 'filesystem'`: files in `format` `csv` or `json` under `path` (a file or a
//! directory; `file://` URLs too). As a source it reads every file once, a bounded stream
//! (hidden files — starting with `.` or `_` — and in-progress `.pending` files are skipped, as
//! Flink skips them); a record that does not parse goes to the dead-letter output and is
//! counted. As a sink it writes part files into the directory exactly once: a part file is
//! published (renamed from `.pending`) when the checkpoint after it completes or the job ends
//! (Sluice's transactional file sink), as Flink's file sink commits on checkpoints.
//!
//! Options: `path`, `format`; csv: `csv.field-delimiter` (`,`), `csv.ignore-parse-errors`;
//! json: `json.ignore-parse-errors`, `json.fail-on-missing-field` (only `false`),
//! `json.timestamp-format.standard` (only `SQL`); sink rolling policies are accepted and have no
//! effect (a part file per checkpoint). With `*.ignore-parse-errors` = `true` a field that does
//! not parse is read as NULL (Flink's behaviour); without it the record is a dead letter (where
//! Flink would fail the job).

pub mod csv;
pub mod json;
pub mod legacy;
pub mod scalar;
mod source;

use std::path::PathBuf;
use std::sync::Arc;

use sluice_datastream::{DataStream, Sink, StreamEnv};
use sluice_sql::{DataType, Result, Row, SqlError};

use crate::options::Options;
use crate::schema::PhysicalSchema;

const KNOWN: &[&str] = &[
    "connector",
    "path",
    "format",
    "csv.field-delimiter",
    "csv.ignore-parse-errors",
    "json.ignore-parse-errors",
    "json.fail-on-missing-field",
    "json.timestamp-format.standard",
    "sink.rolling-policy.file-size",
    "sink.rolling-policy.rollover-interval",
    "sink.rolling-policy.check-interval",
];

/// A file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Flink's `csv`, with its field delimiter.
    Csv {
        /// `csv.field-delimiter`.
        delimiter: char,
    },
    /// Flink's `json`.
    Json,
}

/// A `filesystem` table's settings.
#[derive(Clone, Debug)]
pub struct FilesystemSpec {
    /// The file or directory.
    pub path: PathBuf,
    /// How records are written.
    pub format: Format,
    /// Read a field that does not parse as NULL rather than dropping its record.
    pub ignore_parse_errors: bool,
    names: Arc<[String]>,
    types: Arc<[DataType]>,
}

impl FilesystemSpec {
    /// Reads and checks the options against the table's columns.
    pub fn new(options: &Options, schema: &PhysicalSchema) -> Result<FilesystemSpec> {
        options.check_known("filesystem", KNOWN)?;
        let path = options.required("path")?;
        let path = PathBuf::from(path.strip_prefix("file://").unwrap_or(path));
        options.required("format")?;
        let format = match options.one_of("format", &["csv", "json"])? {
            Some("json") => {
                if options.bool("json.fail-on-missing-field")? == Some(true) {
                    return Err(
                        options.bad("json.fail-on-missing-field", "only 'false' is supported")
                    );
                }
                if let Some(v) = options.get("json.timestamp-format.standard") {
                    if !v.eq_ignore_ascii_case("SQL") {
                        return Err(options.bad(
                            "json.timestamp-format.standard",
                            format!("only 'SQL' is supported, found '{v}'"),
                        ));
                    }
                }
                Format::Json
            }
            _ => {
                let delimiter = match options.get("csv.field-delimiter") {
                    None => ',',
                    Some(d) => {
                        let mut chars = d.chars();
                        match (chars.next(), chars.next()) {
                            (Some(c), None) if c != '"' && c != '\n' => c,
                            _ => return Err(options.bad("csv.field-delimiter", format!("expected one character (not a quote or line break), found '{d}'"))),
                        }
                    }
                };
                for (name, ty) in schema.names.iter().zip(&schema.types) {
                    if !scalar::is_scalar(ty) {
                        return Err(SqlError::unsupported(
                            None,
                            format!(
                                "column '{name}' of type {ty} in the csv format of table '{}'",
                                schema.table
                            ),
                        ));
                    }
                }
                Format::Csv { delimiter }
            }
        };
        let ignore_key = match format {
            Format::Csv { .. } => "csv.ignore-parse-errors",
            Format::Json => "json.ignore-parse-errors",
        };
        Ok(FilesystemSpec {
            path,
            format,
            ignore_parse_errors: options.bool(ignore_key)?.unwrap_or(false),
            names: schema.names.clone().into(),
            types: schema.types.clone().into(),
        })
    }

    /// One row as a line of the format (without the line end).
    pub fn format_row(&self, row: &Row, out: &mut String) {
        match self.format {
            Format::Csv { delimiter } => csv::write_row(out, row, &self.types, delimiter),
            Format::Json => json::write_row(out, row, &self.names, &self.types),
        }
    }

    /// One record of the format as a row; `Err` says why it is malformed.
    pub fn parse_record(&self, record: &str) -> Result<Row, String> {
        let strict = match self.format {
            Format::Csv { delimiter } => csv::read_row(record, &self.types, delimiter),
            Format::Json => json::read_row(record, &self.names, &self.types),
        };
        match strict {
            Err(_) if self.ignore_parse_errors => self.lenient(record),
            other => other,
        }
    }

    /// With `ignore-parse-errors`: each field on its own, NULL where it does not parse.
    fn lenient(&self, record: &str) -> Result<Row, String> {
        let one = |i: usize| -> Result<sluice_sql::Value, String> {
            let names = [self.names[i].clone()];
            let types = [self.types[i].clone()];
            match self.format {
                Format::Json => {
                    let parsed: serde_json::Value =
                        serde_json::from_str(record).map_err(|e| e.to_string())?;
                    let field = parsed
                        .get(&names[0])
                        .cloned()
                        .unwrap_or(serde_json::Value::Null);
                    Ok(json::from_json(&field, &types[0]).unwrap_or(sluice_sql::Value::Null))
                }
                Format::Csv { delimiter } => {
                    let texts = csv::read_row(
                        record,
                        &vec![DataType::string(); self.types.len()],
                        delimiter,
                    )?;
                    let text = texts.get(i).clone();
                    Ok(match text.as_str() {
                        None => sluice_sql::Value::Null,
                        Some(t) => {
                            scalar::from_text(t, &types[0]).unwrap_or(sluice_sql::Value::Null)
                        }
                    })
                }
            }
        };
        (0..self.types.len())
            .map(one)
            .collect::<Result<Vec<_>, _>>()
            .map(Row)
    }

    /// The rows of every file under the path (a bounded stream).
    pub fn stream(&self, env: &StreamEnv) -> DataStream<Row> {
        source::stream(self.clone(), env)
    }

    /// Writes rows as part files into the directory, exactly once.
    pub fn write(&self, rows: &DataStream<Row>) -> Sink<()> {
        let spec = self.clone();
        rows.write_text_exactly_once(self.path.clone(), move |r: &Row, out: &mut String| {
            spec.format_row(r, out)
        })
    }
}
