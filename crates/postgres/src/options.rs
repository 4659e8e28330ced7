//! The sink's options, under the names of Flink's JDBC connector where it has the same option.

use std::time::Duration;

use sluice_types::duration::parse_duration;

use crate::PostgresError;

/// How rows reach the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Binary `COPY … FROM STDIN (FORMAT binary)`; exactly once by two-phase commit when the
    /// job checkpoints periodically (see the crate docs).
    Append,
    /// `INSERT … ON CONFLICT (key) DO UPDATE SET …` by the named key columns (the table's
    /// primary key or a unique index on exactly them); idempotent, so a replay converges.
    Upsert {
        /// The key columns.
        key: Vec<String>,
    },
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

impl SinkOptions {
    /// Sets an option by its Flink name: `sink.buffer-flush.max-rows`,
    /// `sink.buffer-flush.interval`, `sink.max-retries`, plus `connection.connect-timeout`
    /// and `sink.retry-backoff`. An unknown name or a bad value is an error naming it.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), PostgresError> {
        let bad = |what: &str| PostgresError::Config(format!("{name} = '{value}': {what}"));
        let duration = || {
            parse_duration(value).map_err(|source| PostgresError::Duration {
                option: name.to_string(),
                source,
            })
        };
        match name {
            "sink.buffer-flush.max-rows" => {
                self.max_rows = value.trim().parse().map_err(|_| bad("not a row count"))?
            }
            "sink.buffer-flush.interval" => self.flush_interval = duration()?,
            "sink.max-retries" => {
                self.max_retries = value.trim().parse().map_err(|_| bad("not a count"))?
            }
            "sink.retry-backoff" => self.retry_backoff = duration()?,
            "connection.connect-timeout" => {
                let t = duration()?;
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
        o.set("sink.retry-backoff", "2min").unwrap();
        assert_eq!(o.retry_backoff, Duration::from_secs(120));
        let e = o
            .set("sink.buffer-flush.interval", "3 weeks")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sink.buffer-flush.interval") && e.contains("weeks"),
            "{e}"
        );
    }
}
