//! The sink's options, under the names of Flink's JDBC connector where it has the same option.

use std::time::Duration;

use crate::PostgresError;

/// How rows reach the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Binary `COPY … FROM STDIN (FORMAT binary)`; exactly once by two-phase commit when the
    /// job checkpoints periodically (see the crate docs).
    Append,
    /// `INSERT … ON CONFLICT (key) DO UPDATE SET …` by the named key columns (the table's
    /// primary key or a unique index on exactly them); idempotent, so a replay converges.
    Upsert { key: Vec<String> },
}

/// How an upsert batch is sent (both are one statement per batch; see the benchmark).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpsertStatement {
    /// `INSERT … SELECT * FROM UNNEST($1::int8[], …)`: one array parameter per column, one
    /// prepared statement for every batch size.
    #[default]
    Unnest,
    /// `INSERT … VALUES ($1, $2), ($3, $4), …`: one parameter per value (at most 65,535 per
    /// statement, so large batches are split), one prepared statement per batch size.
    MultiRow,
}

/// Batching, retries and timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkOptions {
    /// `sink.buffer-flush.max-rows` (Flink's default 100): rows buffered before a write; 0
    /// disables the size trigger.
    pub max_rows: usize,
    /// `sink.buffer-flush.interval` (default 1 s): the longest a buffered row waits; zero
    /// disables the timer.
    pub flush_interval: Duration,
    /// `sink.max-retries` (default 3): retries of a write whose connection was lost, each on a
    /// new connection after a backoff; then the task fails and the job restarts from its
    /// checkpoint.
    pub max_retries: u32,
    /// The first retry's backoff; it doubles on each further retry (Flink's JDBC sink sleeps
    /// 1 s × attempt; shorter here so a restarted server is picked up quickly).
    pub retry_backoff: Duration,
    /// `connection.connect-timeout`-like limit for each connection attempt (default 10 s).
    pub connect_timeout: Duration,
    /// How upsert batches are sent.
    pub upsert_statement: UpsertStatement,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            max_rows: 100,
            flush_interval: Duration::from_secs(1),
            max_retries: 3,
            retry_backoff: Duration::from_millis(200),
            connect_timeout: Duration::from_secs(10),
            upsert_statement: UpsertStatement::Unnest,
        }
    }
}

/// A duration as Flink writes them: `1s`, `500ms`, `2min`, `0` (a bare number is ms).
pub fn parse_duration(s: &str) -> Result<Duration, PostgresError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| PostgresError::Config(format!("'{s}' is not a duration (e.g. 1s, 500ms)")))?;
    let ms = match unit.trim() {
        "" | "ms" | "milli" | "millis" => n,
        "s" | "sec" | "second" | "seconds" => n.saturating_mul(1000),
        "min" | "m" | "minute" | "minutes" => n.saturating_mul(60_000),
        other => {
            return Err(PostgresError::Config(format!(
                "'{s}': unknown duration unit '{other}' (ms, s, min)"
            )))
        }
    };
    Ok(Duration::from_millis(ms))
}

impl SinkOptions {
    /// Sets an option by its Flink name: `sink.buffer-flush.max-rows`,
    /// `sink.buffer-flush.interval`, `sink.max-retries`, plus `connection.connect-timeout`
    /// and `sink.retry-backoff`. An unknown name or a bad value is an error naming it.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), PostgresError> {
        let bad = |what: &str| PostgresError::Config(format!("{name} = '{value}': {what}"));
        match name {
            "sink.buffer-flush.max-rows" => {
                self.max_rows = value.trim().parse().map_err(|_| bad("not a row count"))?
            }
            "sink.buffer-flush.interval" => self.flush_interval = parse_duration(value)?,
            "sink.max-retries" => {
                self.max_retries = value.trim().parse().map_err(|_| bad("not a count"))?
            }
            "sink.retry-backoff" => self.retry_backoff = parse_duration(value)?,
            "connection.connect-timeout" => {
                let t = parse_duration(value)?;
                if t.is_zero() {
                    return Err(bad("must be positive"));
                }
                self.connect_timeout = t;
            }
            "sink.upsert-statement" => {
                self.upsert_statement = match value.trim() {
                    "unnest" => UpsertStatement::Unnest,
                    "multi-row" => UpsertStatement::MultiRow,
                    _ => return Err(bad("expected 'unnest' or 'multi-row'")),
                }
            }
            _ => {
                return Err(PostgresError::Config(format!(
                    "unknown option '{name}' (known: sink.buffer-flush.max-rows, \
                     sink.buffer-flush.interval, sink.max-retries, sink.retry-backoff, \
                     connection.connect-timeout, sink.upsert-statement)"
                )))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_option_names_and_defaults() {
        let mut o = SinkOptions::default();
        assert_eq!(
            (o.max_rows, o.flush_interval, o.max_retries),
            (100, Duration::from_secs(1), 3)
        );
        o.set("sink.buffer-flush.max-rows", "1000").unwrap();
        o.set("sink.buffer-flush.interval", "250ms").unwrap();
        o.set("sink.max-retries", "5").unwrap();
        assert_eq!(
            (o.max_rows, o.flush_interval, o.max_retries),
            (1000, Duration::from_millis(250), 5)
        );
        assert!(o.set("sink.buffer-flush.max-rows", "-1").is_err());
        assert!(o
            .set("sink.nope", "1")
            .unwrap_err()
            .to_string()
            .contains("sink.nope"));
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("3 weeks").is_err());
    }
}
