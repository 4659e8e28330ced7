//! Overdraft buffers (Flink's `taskmanager.network.memory.max-overdraft-buffers-per-gate`, 5): a
//! task in the middle of one input record's outputs (a `flat_map` fanning out) ships a full
//! buffer without a credit rather than block mid-record, at most `limit` such buffers per output
//! gate (one record writer) at a time. "In the middle" means the writer already shipped a buffer
//! during this input record: the first buffer a record fills waits for credit as usual (Flink
//! checks output availability before each record, which is the same wait), later ones of the
//! same record take overdraft. (Per task: any of its writers having shipped during the record
//! counts, which keeps the per-record check to one load.) The channel goes into credit *debt*: its exclusive credit
//! count drops below zero and the next releases of its buffers pay the debt back before they
//! free a credit. Before the next input record the task waits until every debt of its writers is
//! paid ([`OutputDebt::wait_clear`]), so the overdraft never grows from record to record.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

// The crate's (see `crate::sync`): the task debt parks through `WaitStacks::park`, which takes
// them. Overdraft itself is not in the loom model (`gate_loom_tests.rs` says why).
use crate::sync::{Condvar, Mutex};
use crate::wait_stacks::{WaitPoint, WakeForStacks};
use crate::{Cancelled, WaitTimes};

/// The debts of one task's output gates, waited on between input records.
///
/// One word holds both what the input loop must look at per record: bit 0 = "a writer of the
/// task shipped a buffer during the current record" (so another full buffer is mid-record), the
/// rest = overdraft buffers owed × 2. When it is 0 — the steady state — a record costs one relaxed
/// load.
#[derive(Debug, Default)]
pub struct OutputDebt {
    state: AtomicUsize,
    /// Output gates of the task that may take overdraft (a budget above 0 was created).
    budgets: AtomicUsize,
    cancelled: Mutex<bool>,
    cv: Condvar,
}

const SHIPPED: usize = 1;
const ONE_OWED: usize = 2;

impl OutputDebt {
    /// A fresh debt, shared by the output budgets of one task.
    pub fn new() -> Arc<OutputDebt> {
        Arc::new(OutputDebt::default())
    }

    /// Whether any writer of the task may take overdraft. Without one, the task has no record
    /// boundary to keep: its input loop may hand a whole buffer to the chain at once.
    #[inline]
    pub fn may_overdraft(&self) -> bool {
        self.budgets.load(Ordering::Relaxed) != 0
    }

    /// Overdraft buffers not yet paid back, over all the task's writers.
    #[inline]
    pub fn outstanding(&self) -> usize {
        self.state.load(Ordering::Acquire) / ONE_OWED
    }

    /// Called by the task loop before each input record: waits until nothing is owed, then
    /// starts the record. One relaxed load when nothing happened since the last record.
    #[inline]
    pub fn begin_record(&self, waits: &WaitTimes) -> Result<(), Cancelled> {
        if self.state.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        self.begin_record_slow(waits)
    }

    #[cold]
    fn begin_record_slow(&self, waits: &WaitTimes) -> Result<(), Cancelled> {
        self.wait_clear(waits)?;
        self.state.fetch_and(!SHIPPED, Ordering::AcqRel);
        Ok(())
    }

    /// Whether a writer of the task already shipped a buffer during the current record.
    #[inline]
    pub(crate) fn mid_record(&self) -> bool {
        self.state.load(Ordering::Relaxed) & SHIPPED != 0
    }

    /// A writer of the task shipped a buffer during the current record.
    #[inline]
    pub(crate) fn shipped(&self) {
        if self.state.load(Ordering::Relaxed) & SHIPPED == 0 {
            self.state.fetch_or(SHIPPED, Ordering::AcqRel);
        }
    }

    /// Parks until every overdraft is paid back (time counted as backpressure: the task waits
    /// for output credit). Returns at once when nothing is owed.
    pub fn wait_clear(&self, waits: &WaitTimes) -> Result<(), Cancelled> {
        if self.outstanding() == 0 {
            return Ok(());
        }
        let mut cancelled = self.cancelled.lock().unwrap_or_else(|p| p.into_inner());
        // Under the lock, as every park of an engine wait (see `WaitStacks::park`).
        let started = waits.begin_backpressure();
        let mut first = true;
        let result = loop {
            if *cancelled {
                break Err(Cancelled);
            }
            if self.outstanding() == 0 {
                break Ok(());
            }
            if !std::mem::take(&mut first) {
                waits.stacks.rewait(WaitPoint::Credit);
            }
            cancelled = waits.stacks.park(&self.cv, cancelled, None).0;
        };
        drop(cancelled);
        waits.end_backpressure(started);
        result
    }

    /// Wakes a waiting task for good (the job is being torn down).
    pub fn cancel(&self) {
        *self.cancelled.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }

    fn owe(&self) {
        self.state.fetch_add(ONE_OWED, Ordering::AcqRel);
    }

    fn repaid(&self) {
        if self.state.fetch_sub(ONE_OWED, Ordering::AcqRel) / ONE_OWED == 1 {
            // Taking the lock orders this wake-up after a waiter's check (no lost wake-up).
            let _g = self.cancelled.lock().unwrap_or_else(|p| p.into_inner());
            self.cv.notify_all();
        }
    }
}

impl WakeForStacks for OutputDebt {
    fn wake_for_stacks(&self) {
        let _g = self.cancelled.lock().unwrap_or_else(|p| p.into_inner());
        self.cv.notify_all();
    }
}

/// The overdraft allowance of one output gate (one record writer, all its channels).
#[derive(Debug)]
pub struct OverdraftBudget {
    limit: usize,
    in_use: AtomicUsize,
    task: Arc<OutputDebt>,
}

impl OverdraftBudget {
    /// A budget of `limit` buffers beyond credit for one output gate of `task`.
    pub fn new(limit: usize, task: Arc<OutputDebt>) -> Arc<OverdraftBudget> {
        if limit > 0 {
            task.budgets.fetch_add(1, Ordering::Relaxed);
        }
        Arc::new(OverdraftBudget {
            limit,
            in_use: AtomicUsize::new(0),
            task,
        })
    }

    /// Whether the task already shipped a buffer during its current input record (so another
    /// full buffer may take overdraft).
    #[inline]
    pub fn mid_record(&self) -> bool {
        self.task.mid_record()
    }

    /// A buffer was shipped during the current record.
    #[inline]
    pub fn shipped(&self) {
        self.task.shipped()
    }

    /// How many buffers may go out beyond credit at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Overdraft buffers of this gate not yet paid back.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Acquire)
    }

    pub(crate) fn task(&self) -> &OutputDebt {
        &self.task
    }

    /// What the task's record loop parks on for this budget's debt, to be woken when a
    /// profiler run starts.
    pub(crate) fn task_parked_on(&self) -> std::sync::Weak<dyn WakeForStacks> {
        let task: Arc<dyn WakeForStacks> = self.task.clone();
        Arc::downgrade(&task)
    }

    /// The task debt this budget charges (what the task's record loop waits on).
    pub fn task_debt(&self) -> Arc<OutputDebt> {
        self.task.clone()
    }

    /// Takes one overdraft buffer if the allowance has one left.
    pub(crate) fn try_take(&self) -> bool {
        let took = self
            .in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok();
        if took {
            self.task.owe();
        }
        took
    }

    /// A released buffer paid one overdraft back.
    pub(crate) fn repay(&self) {
        self.in_use.fetch_sub(1, Ordering::AcqRel);
        self.task.repaid();
    }
}
