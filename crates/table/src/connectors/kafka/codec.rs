//! [`RecordCodec`]: a Kafka record's key and value bytes to a row of the table's physical columns
//! and back, Flink's `key.format` / `key.fields` / `value.fields-include` projection
//! (`KafkaConnectorOptionsUtil.createKeyFormatProjection` / `createValueFormatProjection`).

use sluice_kafka::source::KafkaRecord;
use sluice_sql::{Result, Row, Value};

use crate::connectors::format::{format_options, RowFormat};
use crate::options::Options;
use crate::schema::PhysicalSchema;

/// The key format over some physical columns (by index), and the value format over others.
#[derive(Clone, Debug)]
pub struct RecordCodec {
    /// The key format and the physical columns it holds, in `key.fields` order.
    key: Option<(RowFormat, Vec<usize>)>,
    /// The value format and the physical columns it holds.
    value: (RowFormat, Vec<usize>),
    /// How many physical columns a row has.
    arity: usize,
}

impl RecordCodec {
    /// Reads `format` / `value.format`, `key.format`, `key.fields`, `key.fields-prefix` and
    /// `value.fields-include` against the physical columns.
    pub fn new(options: &Options, schema: &PhysicalSchema) -> Result<RecordCodec> {
        let value_key = match (options.get("format"), options.get("value.format")) {
            (Some(_), Some(_)) => {
                return Err(options.bad(
                    "value.format",
                    "give the value's format once: 'format' or 'value.format', not both",
                ))
            }
            (None, Some(_)) => "value.format",
            _ => "format",
        };
        // A format's options under a format key that is not in use would be ignored: refused.
        for (format_key, used) in [
            ("format", value_key == "format"),
            ("value.format", value_key == "value.format"),
            ("key.format", options.get("key.format").is_some()),
        ] {
            if used {
                continue;
            }
            if let Some(k) = format_options(format_key)
                .into_iter()
                .find(|k| options.get(k).is_some())
            {
                return Err(
                    options.bad(&k, format!("an option of '{format_key}', which is not set"))
                );
            }
        }
        let prefix = options.get("key.fields-prefix").unwrap_or("");
        let key_fields: Vec<String> = options
            .get("key.fields")
            .map(|f| {
                f.split(';')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let key_idx = match (options.get("key.format"), key_fields.is_empty()) {
            (None, false) => {
                return Err(options.bad(
                    "key.fields",
                    "The option 'key.fields' can only be declared if a key format is defined using 'key.format'.",
                ))
            }
            (Some(_), true) => {
                return Err(options.bad(
                    "key.format",
                    "A key format 'key.format' requires the declaration of one or more of key fields using 'key.fields'.",
                ))
            }
            (None, true) => None,
            (Some(_), false) => {
                let mut idx = Vec::with_capacity(key_fields.len());
                for f in &key_fields {
                    let Some(i) = schema.names.iter().position(|n| n == f) else {
                        let near = sluice_sql::catalog::nearest(
                            f,
                            schema.names.iter().map(String::as_str),
                        );
                        let hint = if near.is_empty() {
                            String::new()
                        } else {
                            format!(" Did you mean {}?", quoted(&near))
                        };
                        return Err(options.bad(
                            "key.fields",
                            format!(
                                "Could not find the field '{f}' in the table schema for usage in the key format. A key field must be a regular, physical column. The following columns can be selected: {}.{hint}",
                                quoted(&schema.names)
                            ),
                        ));
                    };
                    if !f.starts_with(prefix) {
                        return Err(options.bad(
                            "key.fields",
                            format!("All fields in 'key.fields' must be prefixed with '{prefix}' when option 'key.fields-prefix' is set but field '{f}' is not prefixed."),
                        ));
                    }
                    idx.push(i);
                }
                Some(idx)
            }
        };
        let except_key = match options.one_of("value.fields-include", &["ALL", "EXCEPT_KEY"])? {
            Some("EXCEPT_KEY") => true,
            _ => {
                if !prefix.is_empty() {
                    return Err(options.bad(
                        "key.fields-prefix",
                        "A key prefix is not allowed when option 'value.fields-include' is set to 'ALL'. Set it to 'EXCEPT_KEY' instead to avoid field overlaps.",
                    ));
                }
                false
            }
        };
        let key = match key_idx {
            None => None,
            Some(idx) => {
                let names = idx
                    .iter()
                    .map(|&i| schema.names[i][prefix.len()..].to_string())
                    .collect();
                let types = idx.iter().map(|&i| schema.types[i].clone()).collect();
                Some((RowFormat::new(options, "key.format", names, types)?, idx))
            }
        };
        let value_idx: Vec<usize> = (0..schema.len())
            .filter(|i| {
                !except_key
                    || !key
                        .as_ref()
                        .is_some_and(|(_, k): &(RowFormat, Vec<usize>)| k.contains(i))
            })
            .collect();
        let names = value_idx.iter().map(|&i| schema.names[i].clone()).collect();
        let types = value_idx.iter().map(|&i| schema.types[i].clone()).collect();
        let value = (RowFormat::new(options, value_key, names, types)?, value_idx);
        Ok(RecordCodec {
            key,
            value,
            arity: schema.len(),
        })
    }

    /// Whether the table declares key fields.
    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// A record as a row of the physical columns; `Err` says why it is a dead letter.
    pub fn decode(&self, record: &KafkaRecord<'_>) -> std::result::Result<Row, String> {
        let mut row = vec![Value::Null; self.arity];
        if let Some((format, idx)) = &self.key {
            let bytes = record.key.ok_or(
                "the record has no key, but the table declares key fields (Flink drops such a record)",
            )?;
            let key = format
                .parse_record(text(bytes, "key")?)
                .map_err(|e| format!("key: {e}"))?;
            for (v, &i) in key.0.into_iter().zip(idx) {
                row[i] = v;
            }
        }
        let bytes = record
            .payload
            .ok_or("the record has no value: a tombstone (Flink skips it)")?;
        let (format, idx) = &self.value;
        let value = format.parse_record(text(bytes, "value")?)?;
        for (v, &i) in value.0.into_iter().zip(idx) {
            row[i] = v;
        }
        Ok(Row(row))
    }

    /// A row of the physical columns as the record's key (if key fields) and value bytes.
    pub fn encode(&self, row: &Row) -> (Option<Vec<u8>>, Vec<u8>) {
        let project = |idx: &[usize]| Row(idx.iter().map(|&i| row.get(i).clone()).collect());
        let mut out = String::new();
        let key = self.key.as_ref().map(|(format, idx)| {
            format.format_row(&project(idx), &mut out);
            std::mem::take(&mut out).into_bytes()
        });
        let (format, idx) = &self.value;
        format.format_row(&project(idx), &mut out);
        (key, out.into_bytes())
    }
}

/// A key's or value's bytes as text (one record: a trailing line end is not part of it).
fn text<'a>(bytes: &'a [u8], what: &str) -> std::result::Result<&'a str, String> {
    let s = std::str::from_utf8(bytes).map_err(|e| format!("the {what} is not UTF-8 ({e})"))?;
    let s = s.strip_suffix('\n').unwrap_or(s);
    Ok(s.strip_suffix('\r').unwrap_or(s))
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::DataType;

    fn codec(kv: &[(&str, &str)]) -> Result<RecordCodec> {
        let given: Vec<(String, String)> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let schema = PhysicalSchema::new(
            "t",
            vec![
                ("k_id".into(), DataType::bigint()),
                ("name".into(), DataType::string()),
                ("n".into(), DataType::int()),
            ],
        );
        RecordCodec::new(&Options::new("t", &given), &schema)
    }

    fn record<'a>(key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> KafkaRecord<'a> {
        KafkaRecord {
            topic: "t",
            partition: 0,
            offset: 3,
            key,
            payload: value,
            timestamp_ms: None,
        }
    }

    #[test]
    fn key_and_value_formats_project_the_physical_columns() {
        let c = codec(&[
            ("value.format", "json"),
            ("key.format", "csv"),
            ("key.fields", "k_id"),
            ("key.fields-prefix", "k_"),
            ("value.fields-include", "EXCEPT_KEY"),
        ])
        .unwrap();
        let row = Row(vec![Value::Int(7), Value::str("x"), Value::Null]);
        let (key, value) = c.encode(&row);
        assert_eq!(key.as_deref(), Some(&b"7"[..]));
        assert_eq!(value, br#"{"name":"x","n":null}"#);
        assert_eq!(
            c.decode(&record(key.as_deref(), Some(&value))).unwrap(),
            row
        );
        let e = c.decode(&record(None, Some(&value))).unwrap_err();
        assert!(e.contains("no key"), "{e}");
        let e = c.decode(&record(Some(b"7"), None)).unwrap_err();
        assert!(e.contains("tombstone"), "{e}");
        let e = c.decode(&record(Some(b"x"), Some(&value))).unwrap_err();
        assert!(e.starts_with("key:"), "{e}");
    }

    #[test]
    fn flinks_key_rules_are_enforced() {
        for (kv, what) in [
            (
                vec![("format", "json"), ("key.fields", "name")],
                "can only be declared if a key format",
            ),
            (
                vec![("format", "json"), ("key.format", "json")],
                "requires the declaration of one or more",
            ),
            (
                vec![
                    ("format", "json"),
                    ("key.format", "json"),
                    ("key.fields", "nme"),
                ],
                "Did you mean 'name'",
            ),
            (
                vec![
                    ("format", "json"),
                    ("key.format", "json"),
                    ("key.fields", "k_id"),
                    ("key.fields-prefix", "k_"),
                ],
                "A key prefix is not allowed",
            ),
            (
                vec![("format", "json"), ("value.format", "json")],
                "not both",
            ),
            (
                vec![
                    ("format", "json"),
                    ("value.json.ignore-parse-errors", "true"),
                ],
                "an option of 'value.format', which is not set",
            ),
            (
                vec![("format", "json"), ("key.json.ignore-parse-errors", "true")],
                "an option of 'key.format', which is not set",
            ),
        ] {
            let e = codec(&kv).unwrap_err().to_string();
            assert!(e.contains(what), "{kv:?}: {e}");
        }
        // ALL: the key column is in the value too, and the value's copy wins.
        let c = codec(&[
            ("format", "json"),
            ("key.format", "json"),
            ("key.fields", "name"),
        ])
        .unwrap();
        let row = c
            .decode(&record(
                Some(br#"{"name":"from-key"}"#),
                Some(br#"{"k_id":1,"name":"from-value","n":2}"#),
            ))
            .unwrap();
        assert_eq!(row.get(1), &Value::str("from-value"));
    }
}
