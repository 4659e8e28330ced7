//! The legacy `'connector.type' = 'filesystem'` + `'format.type' = 'csv'` table (Flink's
//! `CsvTableSource`, what Nexmark's q13 declares its `side_input` with) as a lookup table:
//! Flink's `CsvLookupFunction` reads the whole file into a map from key to rows when it opens
//! and answers every lookup from it. Sluice reads the file while the job is built (so a missing
//! or malformed file is refused before the job starts) into a sluice-lookup
//! [`MemoryLookup`] that every subtask shares; a lookup is a map access on the task thread.
//!
//! The format is the legacy csv's defaults: fields split at `,` (`format.field-delimiter`),
//! no quoting, every line a row (`format.ignore-first-line` skips a header); a field reads as
//! its column's type as the csv format reads it, an empty string field is the empty string,
//! an empty field of another type or one that does not parse fails (Flink's reader throws).

use std::path::PathBuf;

use sluice_lookup::{LookupOptions, LookupSource, MemoryLookup};
use sluice_sql::{Result, SqlError, TableDef, Value};

use super::scalar::{from_text, is_scalar};
use crate::connectors::lookup::{key_of, to_json, LookupTable};
use crate::options::Options;
use crate::schema::PhysicalSchema;

const KNOWN: &[&str] = &[
    "connector",
    "path",
    "format",
    "format.field-delimiter",
    "format.ignore-first-line",
    "connector.property-version",
    "format.property-version",
];

/// `def` (a legacy csv table) as a lookup table by its column `key`: its file read now.
pub fn lookup_table(
    options: &Options,
    schema: &PhysicalSchema,
    def: &TableDef,
    key: usize,
) -> Result<LookupTable> {
    options.check_known("filesystem (legacy connector.type)", KNOWN)?;
    match options.get("format") {
        Some(f) if f.trim().eq_ignore_ascii_case("csv") => {}
        other => {
            return Err(options.bad(
                "format.type",
                format!(
                    "the legacy filesystem table reads 'csv' only, found {}",
                    other.map_or("none".to_string(), |f| format!("'{f}'"))
                ),
            ))
        }
    }
    let path_text = options.required("path")?;
    let path = PathBuf::from(path_text.strip_prefix("file://").unwrap_or(path_text));
    let delimiter = match options.get("format.field-delimiter") {
        None => ",".to_string(),
        Some("") => return Err(options.bad("format.field-delimiter", "an empty delimiter")),
        Some(d) => d.to_string(),
    };
    let skip_first = options.bool("format.ignore-first-line")?.unwrap_or(false);
    for (name, ty) in schema.names.iter().zip(&schema.types) {
        if !is_scalar(ty) {
            return Err(SqlError::unsupported(
                Some(def.column(name).map(|c| c.pos).unwrap_or(def.pos)),
                format!("column '{name}' {ty} of csv table '{}': the legacy csv format reads scalar columns", def.name),
            ));
        }
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        options.bad(
            "connector.path",
            format!("reading {} for the lookup table: {e}", path.display()),
        )
    })?;
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate().skip(usize::from(skip_first)) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let fields: Vec<&str> = line.split(delimiter.as_str()).collect();
        let at = || format!("{} line {}", path.display(), n + 1);
        if fields.len() != schema.len() {
            return Err(options.bad(
                "connector.path",
                format!(
                    "{}: {} fields, the table has {} columns",
                    at(),
                    fields.len(),
                    schema.len()
                ),
            ));
        }
        let mut values = Vec::with_capacity(fields.len());
        for ((field, ty), name) in fields.iter().zip(&schema.types).zip(&schema.names) {
            let v = if ty.is_string() {
                Value::Str((*field).into())
            } else {
                from_text(field, ty).map_err(|e| {
                    options.bad(
                        "connector.path",
                        format!(
                            "{}, column '{name}': '{field}' does not read as {ty}: {e}",
                            at()
                        ),
                    )
                })?
            };
            values.push(v);
        }
        let k = key_of(&values[key]);
        rows.push((
            k,
            serde_json::Value::Array(values.iter().map(to_json).collect()),
        ));
    }
    let memory = MemoryLookup::new(&format!("{} ({})", def.name, path.display()), rows);
    Ok(LookupTable::by_position(
        LookupSource::from(memory),
        LookupOptions::default(),
        schema.types.clone(),
    ))
}
