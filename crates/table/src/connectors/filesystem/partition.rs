//! `PARTITIONED BY` of a filesystem table: rows live in directories `k1=v1/k2=v2/` under the
//! path, the partition columns only in the directory names, never in the files (Flink's
//! `PartitionPathUtils`, `RowDataPartitionComputer`, `DefaultPartTimeExtractor`).
//!
//! A value's text is its csv text (a string as it is); a NULL or empty value is
//! `partition.default-name` (`__DEFAULT_PARTITION__`). Path characters are escaped as Flink
//! escapes them: control characters and `"#%'*/:=?\{}[]^` and DEL become `%XX` (upper-case
//! hex), so `12:00` is the directory `hm=12%3A00`; reading unescapes.

use sluice_sql::{DataType, Row, Value};

use super::scalar::{from_text, to_text};

/// Flink's default partition name for a NULL or empty value.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";

/// Whether Flink escapes `c` in a partition path.
fn needs_escaping(c: char) -> bool {
    (c as u32) < 0x20 || c == '\u{7f}' || "\"#%'*/:=?\\{}[]^".contains(c)
}

/// `text` escaped for a directory name (`:` → `%3A`).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if needs_escaping(c) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A directory name's text unescaped (a `%` not followed by two hex digits stays).
pub fn unescape(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The table's partitioning: which columns, and how their values read and print.
#[derive(Clone, Debug)]
pub struct Partitioning {
    /// The partition columns' names, in `PARTITIONED BY` order.
    pub keys: Vec<String>,
    /// Their positions among the table's columns.
    pub key_index: Vec<usize>,
    /// Their types.
    pub key_types: Vec<DataType>,
    /// The other columns' positions (what the files hold), in table order.
    pub data_index: Vec<usize>,
    /// `partition.default-name`.
    pub default_name: String,
}

impl Partitioning {
    /// The relative directory of `row` (a full table row): `k1=v1/k2=v2`.
    pub fn dir_of(&self, row: &Row, out: &mut String) {
        for (n, (key, (&i, ty))) in self
            .keys
            .iter()
            .zip(self.key_index.iter().zip(&self.key_types))
            .enumerate()
        {
            if n > 0 {
                out.push('/');
            }
            out.push_str(&escape(key));
            out.push('=');
            let text = match &row.0[i] {
                Value::Null => String::new(),
                v => to_text(v, ty),
            };
            if text.is_empty() {
                out.push_str(&escape(&self.default_name));
            } else {
                out.push_str(&escape(&text));
            }
        }
    }

    /// The partition values (unescaped text, `None` for the default name) of a relative
    /// path (directories `k=v`, in key order; other components are ignored), or why not.
    pub fn values_of(&self, rel: &str) -> Result<Vec<Option<String>>, String> {
        let mut found: Vec<Option<Option<String>>> = vec![None; self.keys.len()];
        for comp in rel.split('/') {
            let Some((k, v)) = comp.split_once('=') else {
                continue;
            };
            let k = unescape(k);
            if let Some(i) = self.keys.iter().position(|key| *key == k) {
                let v = unescape(v);
                found[i] = Some((v != self.default_name).then_some(v));
            }
        }
        found
            .into_iter()
            .zip(&self.keys)
            .map(|(v, k)| v.ok_or_else(|| format!("no directory '{k}=…' in its path")))
            .collect()
    }

    /// The partition columns' values of a relative path, typed.
    pub fn typed_values(&self, rel: &str) -> Result<Vec<Value>, String> {
        let texts = self.values_of(rel)?;
        texts
            .into_iter()
            .zip(&self.key_types)
            .zip(&self.keys)
            .map(|((t, ty), k)| match t {
                None => Ok(Value::Null),
                Some(t) if ty.is_string() => Ok(Value::Str(t.as_str().into())),
                Some(t) => from_text(&t, ty)
                    .map_err(|e| format!("partition '{k}={t}' does not read as {ty}: {e}")),
            })
            .collect()
    }

    /// A full table row from a file's row (data columns) and its partition's values.
    pub fn full_row(&self, data: Row, partition: &[Value]) -> Row {
        let width = self.data_index.len() + self.key_index.len();
        let mut values = vec![Value::Null; width];
        for (v, &i) in data.0.into_iter().zip(&self.data_index) {
            values[i] = v;
        }
        for (v, &i) in partition.iter().zip(&self.key_index) {
            values[i] = v.clone();
        }
        Row(values)
    }
}

/// Flink's `DefaultPartTimeExtractor`: the partition's time from its values through
/// `partition.time-extractor.timestamp-pattern` (`$key` replaced by the key's value; without
/// it, the first value) read with `partition.time-extractor.timestamp-formatter` (Java's
/// pattern letters; without it `yyyy-MM-dd HH:mm:ss`, or a date alone at midnight), in
/// `sink.partition-commit.watermark-time-zone` (UTC).
#[derive(Clone, Debug)]
pub struct TimeExtractor {
    /// The pattern, if given.
    pub pattern: Option<String>,
    /// The compiled formatter, if given.
    pub formatter: Option<(String, Vec<sluice_sql::datetime::FormatItem>)>,
}

impl TimeExtractor {
    /// The partition time (ms since the epoch) of partition `keys` = `values`.
    pub fn time_of(&self, keys: &[String], values: &[Option<String>]) -> Result<i64, String> {
        let value = |v: &Option<String>| v.clone().unwrap_or_default();
        let text = match &self.pattern {
            None => values.first().map(value).unwrap_or_default(),
            Some(p) => {
                let mut t = p.clone();
                for (k, v) in keys.iter().zip(values) {
                    t = t.replace(&format!("${k}"), &value(v));
                }
                t
            }
        };
        let parsed = match &self.formatter {
            Some((_, items)) => sluice_sql::datetime::parse_with(&text, items).map(|t| t.millis),
            None => sluice_sql::datetime::parse_timestamp(&text)
                .map(|t| t.millis)
                .or_else(|| sluice_sql::datetime::parse_date(&text).map(|d| d * 86_400_000)),
        };
        parsed.ok_or_else(|| {
            let how = match &self.formatter {
                Some((f, _)) => format!("'{f}'"),
                None => "'yyyy-MM-dd HH:mm:ss' (or 'yyyy-MM-dd')".to_string(),
            };
            format!("the partition time '{text}' does not read as {how}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_escapes_the_colon_and_reads_it_back() {
        assert_eq!(escape("12:00"), "12%3A00");
        assert_eq!(escape("a/b=c%"), "a%2Fb%3Dc%25");
        assert_eq!(escape("2015-07-15"), "2015-07-15");
        assert_eq!(unescape("12%3A00"), "12:00");
        assert_eq!(unescape("a%2Fb%3Dc%25"), "a/b=c%");
        assert_eq!(unescape("50%"), "50%");
        assert_eq!(unescape("%zz"), "%zz");
    }

    #[test]
    fn the_time_pattern_replaces_keys_by_values() {
        let x = TimeExtractor {
            pattern: Some("$dt $hm:00".into()),
            formatter: None,
        };
        let keys = ["dt".to_string(), "hm".to_string()];
        let t = x
            .time_of(&keys, &[Some("2015-07-15".into()), Some("12:01".into())])
            .unwrap();
        assert_eq!(t, 1_436_961_660_000);
        let day = TimeExtractor {
            pattern: None,
            formatter: None,
        };
        assert_eq!(
            day.time_of(&keys, &[Some("2015-07-15".into()), None]),
            Ok(1_436_918_400_000)
        );
        assert!(x.time_of(&keys, &[Some("x".into()), None]).is_err());
    }
}
