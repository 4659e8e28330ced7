//! A table behind a network round trip, for the `slow-sink` scenario: an upsert sink that pays
//! a fixed wait per write request, as a database client does, and batches rows per request by
//! the connector options of Flink's JDBC sink (`sink.buffer-flush.max-rows`,
//! `sink.buffer-flush.interval`), read from the operator's context so a plan change can set
//! them. It flushes at every checkpoint barrier and at end of input, so what the table holds
//! after a run does not depend on the batch size — the doctor's "batch the writes" is proven by
//! equal table contents.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_datastream::{Collector, OperatorError};
use sluice_types::duration::{parse_duration, DurationError};
use sluice_types::{ControlEvent, OperatorContext};

/// Rows per write request (Flink JDBC: `sink.buffer-flush.max-rows`).
pub const MAX_ROWS: &str = "sink.buffer-flush.max-rows";
/// Longest a row waits in the buffer (Flink JDBC: `sink.buffer-flush.interval`; `0` = no
/// interval flush).
pub const FLUSH_INTERVAL: &str = "sink.buffer-flush.interval";
/// The wait per write request: a loopback database round trip.
pub const ROUND_TRIP: Duration = Duration::from_micros(300);

/// The table and its write count, shared by the sink's subtasks.
#[derive(Clone, Default)]
pub struct TableHandle {
    rows: Arc<Mutex<BTreeMap<i64, i64>>>,
    requests: Arc<AtomicU64>,
}

impl TableHandle {
    /// The table's contents: key → the last value upserted.
    pub fn contents(&self) -> BTreeMap<i64, i64> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Write requests made (round trips).
    pub fn requests(&self) -> u64 {
        self.requests.load(Relaxed)
    }

    /// One subtask's writer, configured from the options in `ctx`; `sunk` counts the rows
    /// written.
    pub fn writer(
        &self,
        ctx: &OperatorContext,
        sunk: Arc<AtomicU64>,
    ) -> Result<TableWriter, OperatorError> {
        let max_rows = match ctx.option(MAX_ROWS) {
            None => 1,
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| {
                    OperatorError::failed(format!(
                        "{}: option {MAX_ROWS} must be a whole number ≥ 1, got '{v}'",
                        ctx.operator_name
                    ))
                })?,
        };
        let interval = match ctx.option(FLUSH_INTERVAL) {
            None => None,
            Some(v) => flush_interval(v).map_err(|e| {
                OperatorError::failed(format!(
                    "{}: option {FLUSH_INTERVAL} must be a duration like 1s or 200ms: {e}",
                    ctx.operator_name
                ))
            })?,
        };
        Ok(TableWriter {
            table: self.clone(),
            buffer: Vec::with_capacity(max_rows.min(4096)),
            max_rows,
            interval,
            oldest: None,
            sunk,
        })
    }
}

/// The flush interval a duration option names; `0` turns the interval flush off (`None`).
fn flush_interval(v: &str) -> Result<Option<Duration>, DurationError> {
    parse_duration(v).map(|d| (!d.is_zero()).then_some(d))
}

/// One subtask's buffered writer.
pub struct TableWriter {
    table: TableHandle,
    buffer: Vec<(i64, i64)>,
    max_rows: usize,
    interval: Option<Duration>,
    oldest: Option<Instant>,
    sunk: Arc<AtomicU64>,
}

impl TableWriter {
    /// One write request: the round trip, then the rows upserted in order.
    fn flush(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        std::thread::sleep(ROUND_TRIP);
        let n = self.buffer.len() as u64;
        {
            let mut rows = self.table.rows.lock().unwrap_or_else(|p| p.into_inner());
            for (k, v) in self.buffer.drain(..) {
                rows.insert(k, v);
            }
        }
        self.table.requests.fetch_add(1, Relaxed);
        self.sunk.fetch_add(n, Relaxed);
        self.oldest = None;
    }

    fn interval_due(&self) -> bool {
        matches!((self.interval, self.oldest), (Some(i), Some(t)) if t.elapsed() >= i)
    }
}

impl Collector<(i64, i64)> for TableWriter {
    fn collect(&mut self, record: (i64, i64)) -> Result<(), OperatorError> {
        if self.buffer.is_empty() {
            self.oldest = Some(Instant::now());
        }
        self.buffer.push(record);
        if self.buffer.len() >= self.max_rows || self.interval_due() {
            self.flush();
        }
        Ok(())
    }

    /// Barriers and end of input flush (a checkpoint covers every row before it); an idle
    /// task's flush tick flushes when the interval is due.
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            ControlEvent::Barrier(_) | ControlEvent::EndOfInput => self.flush(),
            ControlEvent::Flush => {
                if self.interval_due() {
                    self.flush()
                }
            }
            ControlEvent::Watermark(_)
            | ControlEvent::Idleness(_)
            | ControlEvent::CheckpointComplete(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse_as_flink_writes_them() {
        assert_eq!(flush_interval("1s"), Ok(Some(Duration::from_secs(1))));
        assert_eq!(
            flush_interval("200ms"),
            Ok(Some(Duration::from_millis(200)))
        );
        assert_eq!(flush_interval("250"), Ok(Some(Duration::from_millis(250))));
        assert_eq!(flush_interval("0"), Ok(None));
        assert!(flush_interval("soon").is_err());
    }
}
