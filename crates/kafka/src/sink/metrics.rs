//! The Kafka sink's figures, shared by its subtasks: the sink's handle.
//!
//! Records and bytes out also go to each task's `TaskMetrics` (`numRecordsOut`,
//! `numBytesOut` on REST and Prometheus, as Flink's FLIP-33 sinks report what they wrote).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Names of the gauges each sink subtask adds to its task's metrics (REST:
/// `/jobs/:id/vertices/:vid/metrics`, Prometheus: `sluice_task_<snake_case>`).
pub const PENDING_DELIVERIES: &str = "pendingDeliveries";
/// Deliveries sent and not yet acknowledged.
pub const COMMIT_LATENCY_MS: &str = "transactionCommitLatencyMs";
/// The last transaction commit's latency, ms.
pub const TRANSACTIONS_COMMITTED: &str = "transactionsCommitted";

/// One subtask's gauges on its task (none outside a task).
#[derive(Clone, Default)]
pub(crate) struct TaskGauges {
    /// Records sent by this subtask and not yet acknowledged.
    pub pending: Option<Arc<AtomicI64>>,
    /// The latest commit's `commit_transaction` time, ms.
    pub commit_latency_ms: Option<Arc<AtomicI64>>,
    pub committed: Option<Arc<AtomicI64>>,
}

impl TaskGauges {
    pub(crate) fn of(m: Option<&sluice_runtime::TaskMetrics>) -> TaskGauges {
        match m {
            None => TaskGauges::default(),
            Some(m) => TaskGauges {
                pending: Some(m.connector_gauge(PENDING_DELIVERIES)),
                commit_latency_ms: Some(m.connector_gauge(COMMIT_LATENCY_MS)),
                committed: Some(m.connector_gauge(TRANSACTIONS_COMMITTED)),
            },
        }
    }
    pub(crate) fn add_pending(&self, d: i64) {
        if let Some(g) = &self.pending {
            g.fetch_add(d, Relaxed);
        }
    }
    pub(crate) fn committed(&self, ns: u64) {
        if let Some(g) = &self.commit_latency_ms {
            g.store((ns / 1_000_000) as i64, Relaxed);
        }
        if let Some(g) = &self.committed {
            g.fetch_add(1, Relaxed);
        }
    }
}

/// Counters of one Kafka sink (all subtasks, all attempts of the job).
#[derive(Debug, Default)]
pub struct KafkaSinkMetrics {
    /// Records handed to the producer.
    pub records_out: AtomicU64,
    /// Key + value bytes handed to the producer.
    pub bytes_out: AtomicU64,
    /// Records sent and not yet acknowledged by the broker (now).
    pub pending_deliveries: AtomicI64,
    /// Deliveries the broker refused or that timed out.
    pub delivery_failures: AtomicU64,
    /// Transactions committed (exactly-once).
    pub transactions_committed: AtomicU64,
    /// Sum and maximum of the time `commit_transaction` took (checkpoint completion seen →
    /// commit acknowledged), in ns.
    pub commit_latency_ns_total: AtomicU64,
    /// The longest commit, ns.
    pub commit_latency_ns_max: AtomicU64,
    /// Transactional ids aborted (fenced) at start-up: lingering transactions of earlier
    /// attempts that no checkpoint holds, probed as Flink's `TransactionAborter` does.
    pub transactional_ids_aborted: AtomicU64,
    /// Transactions named by the restored checkpoint that were committed on restore (the
    /// process still held their producer: an in-process restart).
    pub transactions_resumed: AtomicU64,
    /// Transactions named by the restored checkpoint that a new process committed through
    /// their coordinator by producer id and epoch (`EndTxn`, [`super::coordinator`]): their
    /// commit had not reached the broker before the crash, or had (committing again is
    /// harmless), and the records in them.
    pub transactions_recovered: AtomicU64,
    /// Records in the transactions recovered.
    pub recovered_records: AtomicU64,
    /// Transactions named by the restored checkpoint whose commit the coordinator refused
    /// (fenced, aborted, unknown: see [`super::coordinator::EndTxnOutcome`]; or a checkpoint
    /// written without their producer id), and the records in them: lost, each reported by
    /// an `error` event.
    pub unresumable_transactions: AtomicU64,
    /// Records in the unresumable transactions.
    pub unresumable_records: AtomicU64,
}

impl KafkaSinkMetrics {
    /// Records sent so far.
    pub fn records_out(&self) -> u64 {
        self.records_out.load(Relaxed)
    }
    /// Transactions committed so far.
    pub fn transactions_committed(&self) -> u64 {
        self.transactions_committed.load(Relaxed)
    }
    /// Records lost in transactions that could not be committed on restore.
    pub fn unresumable_records(&self) -> u64 {
        self.unresumable_records.load(Relaxed)
    }
    /// Mean commit latency in ms (0 before the first commit).
    pub fn mean_commit_latency_ms(&self) -> f64 {
        let n = self.transactions_committed.load(Relaxed);
        if n == 0 {
            return 0.0;
        }
        self.commit_latency_ns_total.load(Relaxed) as f64 / n as f64 / 1e6
    }
    pub(crate) fn commit_took(&self, ns: u64) {
        self.transactions_committed.fetch_add(1, Relaxed);
        self.commit_latency_ns_total.fetch_add(ns, Relaxed);
        self.commit_latency_ns_max.fetch_max(ns, Relaxed);
    }
}
