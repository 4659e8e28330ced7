//! [`SessionConfig`]: what `SET 'key' = 'value'` and `RESET` change, with Flink's keys checked.
//!
//! A key Sluice knows (the table below) must have a value of its kind, or `SET` is refused
//! naming the key. An unknown key under `table.` is refused with the nearest known keys: such
//! keys configure the SQL planner, and a typo there would silently plan differently. Any other
//! unknown key (`restart-strategy.type`, `state.backend.type`, a connector's own key…) is kept
//! as given, as Flink forwards the session configuration to the job's configuration; whoever
//! runs the job decides what it means.

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_types::duration::parse_duration;

use crate::catalog::nearest;
use crate::error::{Position, Result, SqlError};

/// The kinds of values keys take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// An integer at least this.
    IntAtLeast(i64),
    /// `true` or `false`.
    Bool,
    /// A Flink duration (`10 s`, `1 min`, `500`).
    Duration,
    /// One of these words (any case).
    OneOf(&'static [&'static str]),
    /// Any text.
    Text,
}

/// The keys Sluice knows, with their kinds (Flink's names).
const KNOWN: &[(&str, Kind)] = &[
    ("parallelism.default", Kind::IntAtLeast(1)),
    ("pipeline.name", Kind::Text),
    ("pipeline.max-parallelism", Kind::IntAtLeast(1)),
    (
        "execution.runtime-mode",
        Kind::OneOf(&["STREAMING", "BATCH", "AUTOMATIC"]),
    ),
    ("execution.checkpointing.interval", Kind::Duration),
    (
        "execution.checkpointing.mode",
        Kind::OneOf(&["EXACTLY_ONCE", "AT_LEAST_ONCE"]),
    ),
    ("execution.checkpointing.timeout", Kind::Duration),
    ("execution.checkpointing.min-pause", Kind::Duration),
    ("table.local-time-zone", Kind::Text),
    ("table.dml-sync", Kind::Bool),
    ("table.sql-dialect", Kind::OneOf(&["DEFAULT"])),
    ("table.exec.source.idle-timeout", Kind::Duration),
    ("table.exec.state.ttl", Kind::Duration),
    ("table.exec.mini-batch.enabled", Kind::Bool),
    ("table.exec.mini-batch.allow-latency", Kind::Duration),
    ("table.exec.mini-batch.size", Kind::IntAtLeast(-1)),
    (
        "table.exec.resource.default-parallelism",
        Kind::IntAtLeast(-1),
    ),
    (
        "table.exec.sink.not-null-enforcer",
        Kind::OneOf(&["ERROR", "DROP"]),
    ),
    (
        "table.exec.sink.upsert-materialize",
        Kind::OneOf(&["NONE", "AUTO", "FORCE"]),
    ),
    (
        "table.exec.async-lookup.buffer-capacity",
        Kind::IntAtLeast(1),
    ),
    ("table.exec.async-lookup.timeout", Kind::Duration),
    (
        "table.exec.uid.generation",
        Kind::OneOf(&["PLAN_ONLY", "ALWAYS", "DISABLED"]),
    ),
    ("table.exec.uid.format", Kind::Text),
    (
        "table.exec.window-agg.buffer-size-limit",
        Kind::IntAtLeast(1),
    ),
    (
        "table.optimizer.agg-phase-strategy",
        Kind::OneOf(&["AUTO", "ONE_PHASE", "TWO_PHASE"]),
    ),
    ("table.optimizer.distinct-agg.split.enabled", Kind::Bool),
];

/// The session's configuration: the keys `SET` gave, in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionConfig {
    values: BTreeMap<String, String>,
}

impl SessionConfig {
    /// An empty configuration (every key at Flink's default).
    pub fn new() -> SessionConfig {
        SessionConfig::default()
    }

    /// `SET 'key' = 'value'`: checks a known key's value; refuses an unknown `table.*` key.
    pub fn set(&mut self, key: &str, value: &str, pos: Position) -> Result<()> {
        match KNOWN.iter().find(|(k, _)| *k == key) {
            Some((_, kind)) => check(key, value, *kind, pos)?,
            None if key.starts_with("table.") => {
                return Err(SqlError::UnknownName {
                    pos: Some(pos),
                    kind: "Configuration key",
                    name: key.to_string(),
                    nearest_names: nearest_key(key),
                })
            }
            None => {}
        }
        self.values.insert(key.to_string(), value.to_string());
        Ok(())
    }

    /// `RESET 'key'` (back to the default) or `RESET` (every key).
    pub fn reset(&mut self, key: Option<&str>) {
        match key {
            Some(k) => {
                self.values.remove(k);
            }
            None => self.values.clear(),
        }
    }

    /// The value `SET` gave a key, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Every key `SET` gave, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `parallelism.default`, if set.
    pub fn parallelism(&self) -> Option<u32> {
        self.get("parallelism.default")
            .and_then(|v| v.trim().parse().ok())
    }

    /// `execution.checkpointing.interval`, if set.
    pub fn checkpoint_interval(&self) -> Option<Duration> {
        self.duration("execution.checkpointing.interval")
    }

    /// `table.exec.source.idle-timeout`, if set.
    pub fn source_idle_timeout(&self) -> Option<Duration> {
        self.duration("table.exec.source.idle-timeout")
    }

    /// `table.exec.state.ttl`, if set.
    pub fn state_ttl(&self) -> Option<Duration> {
        self.duration("table.exec.state.ttl")
    }

    /// `pipeline.name`, if set.
    pub fn pipeline_name(&self) -> Option<&str> {
        self.get("pipeline.name")
    }

    /// `table.local-time-zone`, if set (Flink's default is the system zone, `default`).
    pub fn local_time_zone(&self) -> Option<&str> {
        self.get("table.local-time-zone")
    }

    /// A duration-valued key, if set (values were checked when set).
    pub fn duration(&self, key: &str) -> Option<Duration> {
        self.get(key).and_then(|v| parse_duration(v).ok())
    }
}

/// A duration as Flink writes one (`1d`, `12 h`, `500 ms`, a bare number of ms).
pub fn parse_flink_duration(text: &str) -> Option<Duration> {
    parse_duration(text).ok()
}

/// The known keys nearest to an unknown one.
fn nearest_key(key: &str) -> Vec<String> {
    let close = nearest(key, KNOWN.iter().map(|(k, _)| *k));
    if !close.is_empty() {
        return close;
    }
    // Long keys differ by more than two edits from most typos' neighbours; fall back on the keys
    // sharing the most leading segments (`table.exec.mini-batch.enable` → its siblings).
    let segments: Vec<&str> = key.split('.').collect();
    let shared = |k: &str| {
        k.split('.')
            .zip(&segments)
            .take_while(|(a, b)| a == *b)
            .count()
    };
    let best = KNOWN.iter().map(|(k, _)| shared(k)).max().unwrap_or(0);
    if best < 3 {
        return Vec::new();
    }
    KNOWN
        .iter()
        .filter(|(k, _)| shared(k) == best)
        .take(3)
        .map(|(k, _)| k.to_string())
        .collect()
}

/// Whether `value` is of `kind`, as an error naming the key if not.
fn check(key: &str, value: &str, kind: Kind, pos: Position) -> Result<()> {
    let v = value.trim();
    let problem = match kind {
        Kind::IntAtLeast(min) => match v.parse::<i64>() {
            Ok(n) if n >= min => None,
            Ok(_) => Some(format!("must be at least {min}")),
            Err(_) => Some("is not an integer".to_string()),
        },
        Kind::Bool => (!v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false"))
            .then(|| "is not a boolean (true or false)".to_string()),
        Kind::Duration => parse_duration(v)
            .err()
            .map(|e| format!("is not a duration: {e}")),
        Kind::OneOf(words) => (!words.iter().any(|w| w.eq_ignore_ascii_case(v)))
            .then(|| format!("is not one of {}", words.join(", "))),
        Kind::Text => None,
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(SqlError::validation(
            Some(pos),
            format!("Invalid value '{value}' for configuration key '{key}': it {p}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Position = Position { line: 1, column: 1 };

    #[test]
    fn known_keys_are_checked_and_typed() {
        let mut c = SessionConfig::new();
        c.set("parallelism.default", "4", AT).unwrap();
        c.set("execution.checkpointing.interval", "10 s", AT)
            .unwrap();
        assert_eq!(c.parallelism(), Some(4));
        assert_eq!(c.checkpoint_interval(), Some(Duration::from_secs(10)));
        let e = c.set("parallelism.default", "0", AT).unwrap_err();
        assert!(e.to_string().contains("must be at least 1"), "{e}");
        let e = c
            .set("execution.checkpointing.interval", "soon", AT)
            .unwrap_err();
        assert!(
            e.to_string().contains("execution.checkpointing.interval"),
            "{e}"
        );
        c.set("restart-strategy.type", "fixed-delay", AT).unwrap();
        assert_eq!(c.get("restart-strategy.type"), Some("fixed-delay"));
        c.reset(Some("parallelism.default"));
        assert_eq!(c.parallelism(), None);
        c.reset(None);
        assert_eq!(c.entries().count(), 0);
    }

    #[test]
    fn an_unknown_table_key_names_the_nearest_known_ones() {
        let e = SessionConfig::new()
            .set("table.exec.state.tll", "1 h", AT)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Configuration key 'table.exec.state.tll' not found at line 1, column 1. Did you mean 'table.exec.state.ttl'?"
        );
    }
}
