//! What every stateful SQL operator is given besides its spec: its name and uid
//! ([`OperatorIds`]), and where it counts the records it drops as late ([`LateRecords`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sluice_runtime::services::task_metrics;
use sluice_runtime::TaskMetrics;
use sluice_types::OperatorContext;

/// The name (Flink's plan text, e.g. `WindowAggregate(groupBy=[auction], …)`) and the stable
/// uid (Flink's `table.exec.uid.generation`: one per plan node) of an operator the translator
/// adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorIds {
    /// The operator's name, shown in plans, metrics and the dashboard.
    pub name: String,
    /// The operator's uid, which matches its state across job versions.
    pub uid: String,
}

impl OperatorIds {
    /// Ids of this name and uid.
    pub fn new(name: impl Into<String>, uid: impl Into<String>) -> OperatorIds {
        OperatorIds {
            name: name.into(),
            uid: uid.into(),
        }
    }
}

/// Per (operator id, subtask index): its rows in processing-time windows not fired yet.
type OpenWindowSlots = BTreeMap<(String, usize), Arc<AtomicU64>>;

/// The records event-time SQL operators dropped because the watermark had passed them (Flink's
/// `numLateRecordsDropped`), shared by every subtask of a job (cheap to clone): the job's total,
/// which the run summary reports, and once an operator's copy is [opened](LateRecords::open) on
/// its subtask, that subtask's `numLateRecordsDropped` too (the task metric REST and Prometheus
/// serve, which Flink counts per window operator).
///
/// It also counts the other rows time keeps from the output: those in processing-time windows
/// still open when the input ended ([`LateRecords::open_at_end`]). Flink quiesces
/// processing-time timers at the end of input, so such a window is never emitted, by Flink or by
/// Sluice; the count says how many rows that left out, so none goes missing without a word.
#[derive(Clone, Debug, Default)]
pub struct LateRecords {
    count: Arc<AtomicU64>,
    /// The subtask's metrics, in an opened operator's copy (`None` outside a task).
    task: Option<Arc<TaskMetrics>>,
    /// Rows in processing-time windows not fired yet, per (operator id, subtask): a subtask's
    /// count is replaced when it opens again after a restart.
    open_windows: Arc<Mutex<OpenWindowSlots>>,
}

impl LateRecords {
    /// A counter at zero.
    pub fn new() -> LateRecords {
        LateRecords::default()
    }

    /// Counts into the metrics of the task running the operator that owns this copy (call it
    /// from the operator's `open`).
    pub fn open(&mut self, ctx: &OperatorContext) {
        self.task = task_metrics(ctx);
    }

    /// Counts `n` dropped records.
    pub fn add(&self, n: u64) {
        self.count.fetch_add(n, Ordering::Relaxed);
        if let Some(t) = &self.task {
            t.late_records_dropped.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// How many records were dropped as late, over the job.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The counter of rows in the not yet fired processing-time windows of the operator
    /// subtask `ctx` opens, at zero (a restarted subtask's rows are its new run's).
    pub fn open_windows_slot(&self, ctx: &OperatorContext) -> Arc<AtomicU64> {
        let slot = Arc::new(AtomicU64::new(0));
        if let Ok(mut slots) = self.open_windows.lock() {
            slots.insert((ctx.operator_id.clone(), ctx.subtask_index), slot.clone());
        }
        slot
    }

    /// Rows in processing-time windows that had not fired when the job's input ended (never
    /// emitted, as in Flink): rows of windows restored from a checkpoint are not among them.
    pub fn open_at_end(&self) -> u64 {
        self.open_windows.lock().map_or(0, |slots| {
            slots.values().map(|s| s.load(Ordering::Relaxed)).sum()
        })
    }
}
