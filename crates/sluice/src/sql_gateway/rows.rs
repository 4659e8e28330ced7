//! A query's rows on their way to the gateway's pages: its sink's subtasks append each row as it
//! comes (so an unbounded query's rows are fetched while it runs), and a full buffer holds the
//! sink back until a page takes rows — backpressure up to the sources, as Flink's collect sink
//! has, instead of unbounded memory.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use sluice_datastream::{DataStream, Sink};
use sluice_sql::Row;
use sluice_types::{Collector, ControlEvent, OperatorError};

/// Rows a query's sink may hold that no page took yet, before it waits.
pub const BUFFERED_ROWS: usize = 100_000;

/// The shared buffer of a query's rows.
#[derive(Clone, Default)]
pub struct LiveRows {
    inner: Arc<(Mutex<Buffer>, Condvar)>,
}

#[derive(Default)]
struct Buffer {
    rows: VecDeque<Row>,
    /// The operation is gone: drop rows, never wait.
    closed: bool,
}

impl LiveRows {
    /// Every row received so far, taken out of the buffer.
    pub fn take(&self) -> Vec<Row> {
        let (lock, room) = &*self.inner;
        let mut b = lock.lock().unwrap_or_else(|p| p.into_inner());
        let rows = b.rows.drain(..).collect();
        room.notify_all();
        rows
    }

    /// The operation was closed: the sink stops waiting and drops what comes.
    pub fn close(&self) {
        let (lock, room) = &*self.inner;
        let mut b = lock.lock().unwrap_or_else(|p| p.into_inner());
        b.closed = true;
        b.rows.clear();
        room.notify_all();
    }

    fn push(&self, batch: &mut Vec<Row>) {
        let (lock, room) = &*self.inner;
        let mut b = lock.lock().unwrap_or_else(|p| p.into_inner());
        while !b.closed && b.rows.len() >= BUFFERED_ROWS {
            // A timed wait: a cancelled job's task thread must not hang on a buffer nobody
            // reads (the job's cancellation is seen between records).
            b = room
                .wait_timeout(b, Duration::from_millis(100))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        if b.closed {
            batch.clear();
        } else {
            b.rows.extend(batch.drain(..));
        }
    }

    /// The sink that appends `rows`' records here (Flink's `collect` sink of a query).
    pub fn sink(&self, rows: &DataStream<Row>) -> Sink<LiveRows> {
        let (prepare, make) = (self.clone(), self.clone());
        rows.add_sink(
            "collect",
            self.clone(),
            move |_| {
                drop(prepare.take());
                Ok(())
            },
            move |_| {
                Ok(LiveSink {
                    rows: make.clone(),
                    batch: Vec::new(),
                })
            },
        )
    }
}

struct LiveSink {
    rows: LiveRows,
    batch: Vec<Row>,
}

impl Collector<Row> for LiveSink {
    fn collect(&mut self, record: Row) -> Result<(), OperatorError> {
        self.batch.push(record);
        self.rows.push(&mut self.batch);
        Ok(())
    }

    fn collect_batch(&mut self, batch: &mut Vec<Row>) -> Result<(), OperatorError> {
        self.rows.push(batch);
        Ok(())
    }

    fn emit_event(&mut self, _event: ControlEvent) -> Result<(), OperatorError> {
        // Rows are handed over as they come: no event changes what a page sees.
        Ok(())
    }
}
