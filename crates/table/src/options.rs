//! A table's `WITH` options, checked against what its connector knows (Flink's
//! `FactoryUtil.validateFactoryOptions`): an unknown key or a missing required one is refused
//! naming the key and the nearest known keys; a malformed value is refused saying what was
//! expected.
//!
//! Legacy keys (`connector.type`, `connector.path`, `format.type`, as Nexmark's q13 writes them)
//! are read as their current names.

use std::collections::BTreeSet;
use std::str::FromStr;

use sluice_sql::catalog::nearest;
use sluice_sql::{Result, SqlError};

/// Legacy option keys and the current keys they stand for.
const LEGACY: &[(&str, &str)] = &[
    ("connector.type", "connector"),
    ("connector.path", "path"),
    ("format.type", "format"),
];

/// The options of one table, read key by key.
#[derive(Clone, Debug)]
pub struct Options {
    table: String,
    given: Vec<(String, String)>,
}

impl Options {
    /// The options of table `table` as written (legacy keys renamed).
    pub fn new(table: &str, given: &[(String, String)]) -> Options {
        let given = given
            .iter()
            .map(|(k, v)| {
                let k = LEGACY
                    .iter()
                    .find(|(old, _)| old == k)
                    .map_or(k.as_str(), |(_, new)| new);
                (k.to_string(), v.clone())
            })
            .collect();
        Options {
            table: table.to_string(),
            given,
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// A `BadOption` error about `key`.
    pub fn bad(&self, key: &str, message: impl Into<String>) -> SqlError {
        SqlError::BadOption {
            table: self.table.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// Refuses any key that is not in `known` (where `#` in a known key stands for any one
    /// segment, as in `fields.#.kind`), naming the nearest known keys.
    pub fn check_known(&self, connector: &str, known: &[&str]) -> Result<()> {
        for (key, _) in &self.given {
            if known.iter().any(|k| pattern_matches(k, key)) {
                continue;
            }
            let close = nearest(key, known.iter().copied());
            let hint = if close.is_empty() {
                let all: Vec<String> = known.iter().map(|k| format!("'{k}'")).collect();
                format!(" Known options: {}.", all.join(", "))
            } else {
                let q: Vec<String> = close.iter().map(|k| format!("'{k}'")).collect();
                format!(" Did you mean {}?", q.join(", "))
            };
            return Err(self.bad(
                key,
                format!("Unsupported option for connector '{connector}'.{hint}"),
            ));
        }
        Ok(())
    }

    /// Every option as given (legacy keys renamed), in order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.given.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.given
            .iter()
            .rfind(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of a required `key`; missing → `BadOption` naming it and the given keys nearest
    /// to it (a misspelling).
    pub fn required(&self, key: &str) -> Result<&str> {
        self.get(key).ok_or_else(|| {
            let close = nearest(key, self.given.iter().map(|(k, _)| k.as_str()));
            let hint = if close.is_empty() {
                String::new()
            } else {
                let q: Vec<String> = close.iter().map(|k| format!("'{k}'")).collect();
                format!(" Nearest given keys: {}.", q.join(", "))
            };
            self.bad(key, format!("Missing required option '{key}'.{hint}"))
        })
    }

    /// `key` parsed as `T`, if given; a value that does not parse is refused, saying `expected`.
    pub fn parse<T: FromStr>(&self, key: &str, expected: &str) -> Result<Option<T>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<T>()
                .map(Some)
                .map_err(|_| self.bad(key, format!("expected {expected}, found '{v}'"))),
        }
    }

    /// A boolean option (`true` / `false`, any case), if given.
    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                _ => Err(self.bad(key, format!("expected 'true' or 'false', found '{v}'"))),
            },
        }
    }

    /// One of `choices` (case-insensitive), if given; returned as written in `choices`.
    pub fn one_of(&self, key: &str, choices: &[&'static str]) -> Result<Option<&'static str>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => choices
                .iter()
                .find(|c| c.eq_ignore_ascii_case(v.trim()))
                .copied()
                .map(Some)
                .ok_or_else(|| {
                    let q: Vec<String> = choices.iter().map(|c| format!("'{c}'")).collect();
                    self.bad(
                        key,
                        format!("expected one of {}, found '{v}'", q.join(", ")),
                    )
                }),
        }
    }

    /// The distinct middle segments of keys `prefix.<x>.<…>` (datagen's field names).
    pub fn segments_under(&self, prefix: &str) -> BTreeSet<String> {
        self.given
            .iter()
            .filter_map(|(k, _)| k.strip_prefix(prefix)?.strip_prefix('.'))
            .filter_map(|rest| rest.split_once('.').map(|(name, _)| name.to_string()))
            .collect()
    }
}

/// Whether `key` is `pattern`, `#` matching one segment; a pattern ending in `.*` matches any
/// key under its prefix (`properties.*`).
fn pattern_matches(pattern: &str, key: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(".*") {
        return key
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.') && rest.len() > 1);
    }
    let p: Vec<&str> = pattern.split('.').collect();
    let k: Vec<&str> = key.split('.').collect();
    p.len() == k.len() && p.iter().zip(&k).all(|(a, b)| *a == "#" || a == b)
}

/// Parses Flink's `MemorySize` text (`200b`, `1kb`, `2 mb`, a bare number is bytes).
pub fn parse_memory_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let factor: u64 = match unit.trim() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(factor)
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

    #[test]
    fn unknown_keys_name_the_nearest_known_ones() {
        let o = opts(&[("connector", "x"), ("pth", "/tmp")]);
        let e = o
            .check_known("filesystem", &["connector", "path", "format"])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid option 'pth' of table 't': Unsupported option for connector 'filesystem'. Did you mean 'path'?"
        );
        assert!(opts(&[("fields.a.kind", "random")])
            .check_known("datagen", &["fields.#.kind"])
            .is_ok());
    }

    #[test]
    fn legacy_keys_and_memory_sizes() {
        let o = opts(&[("connector.type", "filesystem"), ("format.type", "csv")]);
        assert_eq!(o.get("connector"), Some("filesystem"));
        assert_eq!(o.get("format"), Some("csv"));
        assert_eq!(parse_memory_size("200b"), Some(200));
        assert_eq!(parse_memory_size("1 kb"), Some(1024));
        assert_eq!(parse_memory_size("x"), None);
    }
}
