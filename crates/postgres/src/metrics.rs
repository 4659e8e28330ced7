//! The sink's counters, shared by its subtasks (summed) and read by the job's front ends, tests
//! and the benchmark through [`PostgresSinkHandle`](crate::PostgresSinkHandle).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use sluice_types::OperatorContext;

/// Counters of one sink (all subtasks, all attempts).
#[derive(Debug, Default)]
pub struct SinkMetrics {
    /// Rows sent to PostgreSQL (an upsert batch counts its distinct keys; rows replayed after a
    /// lost connection count again).
    pub rows_written: AtomicU64,
    /// Batches written (`COPY` or upsert statements).
    pub batches: AtomicU64,
    /// Time spent writing batches, ns (sum; latency = this / batches).
    pub flush_ns: AtomicU64,
    /// The longest single batch write, ns.
    pub max_flush_ns: AtomicU64,
    /// Reconnections after a lost connection.
    pub retries: AtomicU64,
    /// Transactions prepared at barriers (`PREPARE TRANSACTION`).
    pub prepared: AtomicU64,
    /// Prepared transactions committed (`COMMIT PREPARED`), on completion or restore.
    pub committed: AtomicU64,
    /// Stray prepared transactions rolled back on restore (`ROLLBACK PREPARED`).
    pub rolled_back: AtomicU64,
}

/// A point-in-time copy of [`SinkMetrics`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkMetricsSnapshot {
    /// Rows written.
    pub rows_written: u64,
    /// Batches written.
    pub batches: u64,
    /// Time spent writing batches, ns.
    pub flush_ns: u64,
    /// The longest single batch write, ns.
    pub max_flush_ns: u64,
    /// Reconnections after a lost connection.
    pub retries: u64,
    /// Transactions prepared at barriers.
    pub prepared: u64,
    /// Prepared transactions committed.
    pub committed: u64,
    /// Stray prepared transactions rolled back on restore.
    pub rolled_back: u64,
}

impl SinkMetrics {
    pub(crate) fn batch(&self, rows: u64, took: Duration) {
        let ns = took.as_nanos() as u64;
        self.rows_written.fetch_add(rows, Relaxed);
        self.batches.fetch_add(1, Relaxed);
        self.flush_ns.fetch_add(ns, Relaxed);
        self.max_flush_ns.fetch_max(ns, Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> SinkMetricsSnapshot {
        SinkMetricsSnapshot {
            rows_written: self.rows_written.load(Relaxed),
            batches: self.batches.load(Relaxed),
            flush_ns: self.flush_ns.load(Relaxed),
            max_flush_ns: self.max_flush_ns.load(Relaxed),
            retries: self.retries.load(Relaxed),
            prepared: self.prepared.load(Relaxed),
            committed: self.committed.load(Relaxed),
            rolled_back: self.rolled_back.load(Relaxed),
        }
    }
}

impl SinkMetricsSnapshot {
    /// Mean batch write latency.
    pub fn mean_flush(&self) -> Duration {
        Duration::from_nanos(self.flush_ns.checked_div(self.batches).unwrap_or(0))
    }
}

/// One subtask's figures on its task's metrics (connector gauges: REST lists them after the
/// task metrics, Prometheus exports them), beside the sink-wide [`SinkMetrics`]: FLIP-33's
/// `numRecordsSend` and `currentSendTime` (the last batch's write time, ms), and
/// `numBatchesSend`, `sendTimeMsTotal`, `numRetries`.
pub(crate) struct TaskCounters {
    shared: Arc<SinkMetrics>,
    rows: Arc<AtomicI64>,
    batches: Arc<AtomicI64>,
    send_ms_total: Arc<AtomicI64>,
    current_send_ms: Arc<AtomicI64>,
    pub retries: Arc<AtomicI64>,
}

impl TaskCounters {
    pub fn new(shared: Arc<SinkMetrics>, ctx: &OperatorContext) -> TaskCounters {
        let task = sluice_runtime::services::task_metrics(ctx);
        let reg = |name: &str| match &task {
            Some(t) => t.connector_gauge(name),
            None => Arc::new(AtomicI64::new(0)),
        };
        TaskCounters {
            rows: reg("numRecordsSend"),
            batches: reg("numBatchesSend"),
            send_ms_total: reg("sendTimeMsTotal"),
            current_send_ms: reg("currentSendTime"),
            retries: reg("numRetries"),
            shared,
        }
    }

    pub fn batch(&self, rows: u64, took: Duration) {
        self.shared.batch(rows, took);
        let ms = took.as_millis() as i64;
        self.rows.fetch_add(rows as i64, Relaxed);
        self.batches.fetch_add(1, Relaxed);
        self.send_ms_total.fetch_add(ms, Relaxed);
        self.current_send_ms.store(ms, Relaxed);
    }
}
