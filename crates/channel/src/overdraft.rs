//! Overdraft buffers (Flink's `taskmanager.network.memory.max-overdraft-buffers-per-gate`, 5): a
//! task in the middle of one input record's outputs (a `flat_map` fanning out) ships a full
//! buffer without a credit rather than block mid-record, at most `limit` such buffers per output
//! gate (one record writer) at a time. "In the middle" means the writer already shipped a buffer
//! during this input record: the first buffer a record fills waits for credit as usual (Flink
//! checks output availability before each record, which is the same wait), later ones of the
//! same record take overdraft. The channel goes into credit *debt*: its exclusive credit
//! count drops below zero and the next releases of its buffers pay the debt back before they
//! free a credit. Before the next input record the task waits until every debt of its writers is
//! paid ([`OutputDebt::wait_clear`]), so the overdraft never grows from record to record.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::{Cancelled, WaitTimes};

/// The debts of one task's output gates, waited on between input records.
#[derive(Debug, Default)]
pub struct OutputDebt {
    outstanding: AtomicUsize,
    /// Input records the task started (written by the task thread only).
    record: AtomicU64,
    cancelled: Mutex<bool>,
    cv: Condvar,
}

impl OutputDebt {
    pub fn new() -> Arc<OutputDebt> {
        Arc::new(OutputDebt::default())
    }

    /// Overdraft buffers not yet paid back, over all the task's writers.
    #[inline]
    pub fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Acquire)
    }

    /// Called by the task loop before each input record: waits until nothing is owed, then
    /// starts the record. Two relaxed loads and one store when nothing is owed.
    #[inline]
    pub fn begin_record(&self, waits: &WaitTimes) -> Result<(), Cancelled> {
        if self.outstanding.load(Ordering::Relaxed) > 0 {
            self.wait_clear(waits)?;
        }
        // Only the task thread writes it: no read-modify-write needed.
        let r = self.record.load(Ordering::Relaxed);
        self.record.store(r.wrapping_add(1), Ordering::Relaxed);
        Ok(())
    }

    /// Parks until every overdraft is paid back (time counted as backpressure: the task waits
    /// for output credit). Returns at once when nothing is owed.
    pub fn wait_clear(&self, waits: &WaitTimes) -> Result<(), Cancelled> {
        if self.outstanding() == 0 {
            return Ok(());
        }
        let started = waits.begin_backpressure();
        let mut cancelled = self.cancelled.lock().unwrap_or_else(|p| p.into_inner());
        let result = loop {
            if *cancelled {
                break Err(Cancelled);
            }
            if self.outstanding() == 0 {
                break Ok(());
            }
            cancelled = self.cv.wait(cancelled).unwrap_or_else(|p| p.into_inner());
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

    fn repaid(&self) {
        if self.outstanding.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Taking the lock orders this wake-up after a waiter's check (no lost wake-up).
            let _g = self.cancelled.lock().unwrap_or_else(|p| p.into_inner());
            self.cv.notify_all();
        }
    }
}

/// The overdraft allowance of one output gate (one record writer, all its channels).
#[derive(Debug)]
pub struct OverdraftBudget {
    limit: usize,
    in_use: AtomicUsize,
    task: Arc<OutputDebt>,
    /// The task's record during which this writer last shipped a buffer.
    last_ship: AtomicU64,
}

impl OverdraftBudget {
    pub fn new(limit: usize, task: Arc<OutputDebt>) -> Arc<OverdraftBudget> {
        Arc::new(OverdraftBudget {
            limit,
            in_use: AtomicUsize::new(0),
            task,
            last_ship: AtomicU64::new(u64::MAX),
        })
    }

    /// Whether the writer already shipped a buffer during the task's current input record (so
    /// another full buffer may take overdraft).
    #[inline]
    pub fn mid_record(&self) -> bool {
        self.last_ship.load(Ordering::Relaxed) == self.task.record.load(Ordering::Relaxed)
    }

    /// The writer shipped a buffer during the current record.
    #[inline]
    pub fn shipped(&self) {
        self.last_ship
            .store(self.task.record.load(Ordering::Relaxed), Ordering::Relaxed);
    }

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
            self.task.outstanding.fetch_add(1, Ordering::AcqRel);
        }
        took
    }

    /// A released buffer paid one overdraft back.
    pub(crate) fn repay(&self) {
        self.in_use.fetch_sub(1, Ordering::AcqRel);
        self.task.repaid();
    }
}
