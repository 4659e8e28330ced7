//! [`RowFormat`]: Flink's `csv` and `json` formats as a connector's options configure them, one
//! record (a file line, a Kafka key or value) to one row of named columns and back. The
//! `filesystem` and `kafka` connectors share it; the codecs themselves are
//! [`super::filesystem::csv`] and [`super::filesystem::json`].
//!
//! A format is named by an option key (`format`, or Kafka's `key.format` / `value.format`), and
//! its own options sit under that key's prefix, Flink's `FactoryUtil` rule: `format` = `json`
//! reads `json.*`, `value.format` = `json` reads `value.json.*`, `key.format` = `csv` reads
//! `key.csv.*`. Options of the format not chosen are refused (Flink: "Unsupported options").
//!
//! Options: csv: `csv.field-delimiter` (`,`), `csv.null-literal`,
//! `csv.write-bigdecimal-in-scientific-notation`, `csv.ignore-parse-errors` (the record's text
//! is Flink's byte for byte, [`csv`]'s doc); json: `json.ignore-parse-errors`,
//! `json.fail-on-missing-field`, `json.timestamp-format.standard` (only `SQL`). With `*.ignore-parse-errors` = `true` a field that does not parse is read as
//! NULL and a record that does not parse at all is skipped — Flink's behaviour — and Sluice
//! counts the skipped record as a dead letter; without it a malformed record is a dead letter
//! (where Flink would fail the job). `json.fail-on-missing-field` = `true` makes a record with a
//! missing field (at any depth) malformed; it cannot be combined with `json.ignore-parse-errors`
//! (Flink refuses the pair too).

use std::sync::Arc;

use sluice_sql::{DataType, Result, Row, SqlError, Value};

use super::filesystem::{csv, json, scalar};
use crate::options::Options;

/// The options of each format, without the format's prefix.
const CSV_OPTIONS: &[&str] = &[
    "csv.field-delimiter",
    "csv.ignore-parse-errors",
    "csv.null-literal",
    "csv.write-bigdecimal-in-scientific-notation",
];
const JSON_OPTIONS: &[&str] = &[
    "json.ignore-parse-errors",
    "json.fail-on-missing-field",
    "json.timestamp-format.standard",
];

/// A record format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// Flink's `csv`, with its `csv.*` options.
    Csv(csv::CsvOptions),
    /// Flink's `json`.
    Json,
}

/// The prefix of the options of the format named by `format_key` (`""` for `format`,
/// `"value."` for `value.format`).
fn prefix(format_key: &str) -> &str {
    format_key.strip_suffix("format").unwrap_or("")
}

/// Every option key the format named by `format_key` may bring (both formats' options).
pub fn format_options(format_key: &str) -> Vec<String> {
    let p = prefix(format_key);
    CSV_OPTIONS
        .iter()
        .chain(JSON_OPTIONS)
        .map(|o| format!("{p}{o}"))
        .collect()
}

/// A format over named columns, its options read and checked.
#[derive(Clone, Debug)]
pub struct RowFormat {
    /// csv or json.
    pub format: Format,
    /// Read a field that does not parse as NULL (and skip, counted, a record that does not
    /// parse at all).
    pub ignore_parse_errors: bool,
    /// json: a record missing a field is malformed.
    pub fail_on_missing_field: bool,
    names: Arc<[String]>,
    types: Arc<[DataType]>,
}

impl RowFormat {
    /// The format option `format_key` names (it must be given) over columns `names` of
    /// `types`, with its options from under the key's prefix.
    pub fn new(
        options: &Options,
        format_key: &str,
        names: Vec<String>,
        types: Vec<DataType>,
    ) -> Result<RowFormat> {
        options.required(format_key)?;
        let p = prefix(format_key);
        let key = |o: &str| format!("{p}{o}");
        let chosen = options.one_of(format_key, &["csv", "json"])?;
        let (own, other, other_name) = match chosen {
            Some("json") => (JSON_OPTIONS, CSV_OPTIONS, "csv"),
            _ => (CSV_OPTIONS, JSON_OPTIONS, "json"),
        };
        for o in other {
            let k = key(o);
            if options.get(&k).is_some() && !own.contains(o) {
                return Err(options.bad(
                    &k,
                    format!(
                        "option of format '{other_name}', but '{format_key}' is '{}'",
                        chosen.unwrap_or("csv")
                    ),
                ));
            }
        }
        let (format, ignore_key) = match chosen {
            Some("json") => {
                if let Some(v) = options.get(&key("json.timestamp-format.standard")) {
                    if !v.eq_ignore_ascii_case("SQL") {
                        return Err(options.bad(
                            &key("json.timestamp-format.standard"),
                            format!("only 'SQL' is supported, found '{v}'"),
                        ));
                    }
                }
                (Format::Json, key("json.ignore-parse-errors"))
            }
            _ => {
                let delimiter = match options.get(&key("csv.field-delimiter")) {
                    None => ',',
                    Some(d) => {
                        let mut chars = d.chars();
                        match (chars.next(), chars.next()) {
                            (Some(c), None) if c != '"' && c != '\n' => c,
                            _ => {
                                return Err(options.bad(
                                    &key("csv.field-delimiter"),
                                    format!("expected one character (not a quote or line break), found '{d}'"),
                                ))
                            }
                        }
                    }
                };
                for (name, ty) in names.iter().zip(&types) {
                    if !scalar::is_scalar(ty) {
                        return Err(SqlError::unsupported(
                            None,
                            format!(
                                "column '{name}' of type {ty} in the csv format of table '{}'",
                                options.table()
                            ),
                        ));
                    }
                }
                let csv_options = csv::CsvOptions {
                    delimiter,
                    null_literal: options.get(&key("csv.null-literal")).map(str::to_string),
                    decimal_scientific: options
                        .bool(&key("csv.write-bigdecimal-in-scientific-notation"))?
                        .unwrap_or(true),
                };
                (Format::Csv(csv_options), key("csv.ignore-parse-errors"))
            }
        };
        let ignore_parse_errors = options.bool(&ignore_key)?.unwrap_or(false);
        let missing_key = key("json.fail-on-missing-field");
        let fail_on_missing_field = options.bool(&missing_key)?.unwrap_or(false);
        if fail_on_missing_field && ignore_parse_errors {
            return Err(options.bad(
                &missing_key,
                format!("'{missing_key}' and '{ignore_key}' shouldn't both be true"),
            ));
        }
        Ok(RowFormat {
            format,
            ignore_parse_errors,
            fail_on_missing_field,
            names: names.into(),
            types: types.into(),
        })
    }

    /// The columns' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// One row as a record of the format (without a line end).
    pub fn format_row(&self, row: &Row, out: &mut String) {
        match &self.format {
            Format::Csv(o) => csv::write_row(out, row, &self.types, o),
            Format::Json => json::write_row(out, row, &self.names, &self.types),
        }
    }

    /// One record of the format as a row; `Err` says why it is malformed.
    pub fn parse_record(&self, record: &str) -> Result<Row, String> {
        let strict = match &self.format {
            Format::Csv(o) => csv::read_row(record, &self.types, o),
            Format::Json => {
                json::read_row(record, &self.names, &self.types, self.fail_on_missing_field)
            }
        };
        match strict {
            Err(_) if self.ignore_parse_errors => self.lenient(record),
            other => other,
        }
    }

    /// With `ignore-parse-errors`: each field on its own, NULL where it does not parse.
    fn lenient(&self, record: &str) -> Result<Row, String> {
        let fields = match &self.format {
            Format::Json => {
                let parsed: serde_json::Value =
                    serde_json::from_str(record).map_err(|e| format!("not JSON: {e}"))?;
                if !parsed.is_object() {
                    return Err("not a JSON object".into());
                }
                self.names
                    .iter()
                    .zip(self.types.iter())
                    .map(|(n, t)| {
                        let field = parsed.get(n).unwrap_or(&serde_json::Value::Null);
                        json::from_json(field, t).unwrap_or(Value::Null)
                    })
                    .collect()
            }
            Format::Csv(o) => {
                let texts = csv::read_texts(record, o)?;
                if texts.len() != self.types.len() {
                    return Err(format!(
                        "expected {} fields, found {}",
                        self.types.len(),
                        texts.len()
                    ));
                }
                texts
                    .iter()
                    .zip(self.types.iter())
                    .map(|(text, t)| csv::lenient_field(text.as_deref(), t, o))
                    .collect()
            }
        };
        Ok(Row(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> Options {
        let given: Vec<(String, String)> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Options::new("t", &given)
    }

    fn cols() -> (Vec<String>, Vec<DataType>) {
        (
            vec!["a".into(), "b".into()],
            vec![DataType::bigint(), DataType::string()],
        )
    }

    #[test]
    fn options_sit_under_the_format_keys_prefix() {
        let (n, t) = cols();
        let f = RowFormat::new(
            &opts(&[
                ("value.format", "json"),
                ("value.json.ignore-parse-errors", "true"),
            ]),
            "value.format",
            n.clone(),
            t.clone(),
        )
        .unwrap();
        assert!(f.ignore_parse_errors);
        assert_eq!(
            f.parse_record(r#"{"a": "x", "b": "y"}"#).unwrap(),
            Row(vec![Value::Null, Value::str("y")])
        );
        assert!(
            f.parse_record("{broken").is_err(),
            "a whole record is skipped"
        );
        let e = RowFormat::new(
            &opts(&[("format", "csv"), ("json.ignore-parse-errors", "true")]),
            "format",
            n.clone(),
            t.clone(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("option of format 'json'"), "{e}");
        let e = RowFormat::new(
            &opts(&[
                ("format", "json"),
                ("json.ignore-parse-errors", "true"),
                ("json.fail-on-missing-field", "true"),
            ]),
            "format",
            n,
            t,
        )
        .unwrap_err();
        assert!(e.to_string().contains("shouldn't both be true"), "{e}");
        assert!(format_options("key.format").contains(&"key.csv.field-delimiter".to_string()));
    }

    #[test]
    fn csv_options_sit_under_the_prefix_and_write_flinks_text() {
        let (n, t) = cols();
        let f = RowFormat::new(
            &opts(&[
                ("key.format", "csv"),
                ("key.csv.null-literal", "NULL"),
                ("key.csv.field-delimiter", ";"),
            ]),
            "key.format",
            n.clone(),
            t.clone(),
        )
        .unwrap();
        let row = Row(vec![Value::Null, Value::str("a b")]);
        let mut out = String::new();
        f.format_row(&row, &mut out);
        assert_eq!(out, r#"NULL;"a b""#);
        assert_eq!(f.parse_record(&out).unwrap(), row);
        assert!(format_options("key.format").contains(&"key.csv.null-literal".to_string()));
        let e = RowFormat::new(
            &opts(&[
                ("format", "json"),
                ("csv.write-bigdecimal-in-scientific-notation", "false"),
            ]),
            "format",
            n,
            t,
        )
        .unwrap_err();
        assert!(e.to_string().contains("option of format 'csv'"), "{e}");
    }

    #[test]
    fn fail_on_missing_field_makes_a_missing_field_malformed() {
        let (n, t) = cols();
        let strict = RowFormat::new(
            &opts(&[("format", "json"), ("json.fail-on-missing-field", "true")]),
            "format",
            n.clone(),
            t.clone(),
        )
        .unwrap();
        let e = strict.parse_record(r#"{"a": 1}"#).unwrap_err();
        assert!(e.contains("'b'"), "{e}");
        let loose = RowFormat::new(&opts(&[("format", "json")]), "format", n, t).unwrap();
        assert_eq!(
            loose.parse_record(r#"{"a": 1}"#).unwrap(),
            Row(vec![Value::Int(1), Value::Null])
        );
    }
}
