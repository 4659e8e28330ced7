//! Job-wide control: cancellation, failure, flush clock, dead letters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_channel::GateCanceller;

use crate::JobError;

/// A record that could not be processed (malformed input), kept with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    /// The operator or source that rejected it, e.g. `Source: lines (1/2)`.
    pub origin: String,
    /// Where in the input: a file and byte offset, a line number.
    pub location: String,
    /// Why it was rejected, e.g. the parse error.
    pub reason: String,
}

/// At most this many dead letters are kept verbatim; all are counted.
pub const DEAD_LETTERS_KEPT: usize = 1000;

/// Shared by every task of one job.
pub struct JobControl {
    cancelled: AtomicBool,
    failure: Mutex<Option<JobError>>,
    cancellers: Mutex<Vec<GateCanceller>>,
    /// Incremented every buffer timeout by the flusher thread; writers compare it with the last
    /// value they saw (one relaxed load per record) to know when to flush partial buffers.
    flush_epoch: AtomicU64,
    buffer_timeout: Duration,
    dead_letters: Mutex<Vec<DeadLetter>>,
    dead_letter_count: AtomicU64,
    /// The job's checkpoints, when it takes any.
    checkpoints: std::sync::OnceLock<Arc<crate::checkpoint::CheckpointHub>>,
    /// Set when the user (not a failure) cancelled: no restart follows.
    user_cancelled: AtomicBool,
    /// The savepoint a stop-with-savepoint wrote, set just before it cancels the job (a plain
    /// cancel, even after a savepoint, leaves it unset).
    stopped_with_savepoint: std::sync::OnceLock<std::path::PathBuf>,
    /// The policy task threads take when they start ([`crate::sched`]); `Normal` unless set.
    task_scheduling: std::sync::OnceLock<crate::sched::TaskScheduling>,
    /// Whether a refused policy was reported already (once per job, not per thread).
    scheduling_refusal_reported: AtomicBool,
}

impl std::fmt::Debug for JobControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobControl")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl JobControl {
    /// `buffer_timeout` zero means "flush after every record".
    pub fn new(buffer_timeout: Duration) -> Arc<JobControl> {
        Arc::new(JobControl {
            cancelled: AtomicBool::new(false),
            failure: Mutex::new(None),
            cancellers: Mutex::new(Vec::new()),
            flush_epoch: AtomicU64::new(0),
            buffer_timeout,
            dead_letters: Mutex::new(Vec::new()),
            dead_letter_count: AtomicU64::new(0),
            checkpoints: std::sync::OnceLock::new(),
            user_cancelled: AtomicBool::new(false),
            stopped_with_savepoint: std::sync::OnceLock::new(),
            task_scheduling: std::sync::OnceLock::new(),
            scheduling_refusal_reported: AtomicBool::new(false),
        })
    }

    /// Sets the scheduling policy of the job's task threads (once, before tasks start).
    pub fn set_task_scheduling(&self, scheduling: crate::sched::TaskScheduling) {
        let _ = self.task_scheduling.set(scheduling);
    }

    /// Applies the job's task scheduling policy to the calling task thread. A refusal is
    /// logged once per job; the thread runs on under the process's policy.
    pub fn apply_task_scheduling(&self) {
        let scheduling = self.task_scheduling.get().copied().unwrap_or_default();
        if let Err(why) = scheduling.apply_to_current_thread() {
            if !self
                .scheduling_refusal_reported
                .swap(true, Ordering::Relaxed)
            {
                tracing::warn!(
                    policy = scheduling.as_str(),
                    "task threads keep the process's scheduling policy: {why}"
                );
            }
        }
    }

    /// Attaches the job's checkpoint hub (once, before tasks start).
    pub fn set_checkpoints(&self, hub: Arc<crate::checkpoint::CheckpointHub>) {
        let _ = self.checkpoints.set(hub);
    }

    /// The job's checkpoint hub, once one is set (jobs without checkpointing have none).
    pub fn checkpoints(&self) -> Option<&Arc<crate::checkpoint::CheckpointHub>> {
        self.checkpoints.get()
    }

    /// Cancels on the user's request: unlike a failure, no restart follows.
    pub fn cancel_by_user(&self) {
        self.user_cancelled.store(true, Ordering::SeqCst);
        self.cancel();
    }

    /// Stop-with-savepoint: the savepoint at `path` completed, so the job stops (as a user
    /// cancel: no restart follows).
    pub fn stop_with_savepoint(&self, path: std::path::PathBuf) {
        let _ = self.stopped_with_savepoint.set(path);
        self.cancel_by_user();
    }

    /// Where the savepoint of a stop-with-savepoint went, if that is how the job stopped.
    pub fn stopped_with_savepoint(&self) -> Option<&std::path::Path> {
        self.stopped_with_savepoint.get().map(|p| p.as_path())
    }

    /// Whether the user (or a stop-with-savepoint) cancelled the job, so no restart follows.
    pub fn is_user_cancelled(&self) -> bool {
        self.user_cancelled.load(Ordering::SeqCst)
    }

    /// Makes the control usable for a new attempt after a failure: clears the cancellation,
    /// the failure and the registered gates (which belong to the failed attempt).
    pub fn reset_for_restart(&self) {
        self.cancellers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
        // The new attempt's sources start from the restored checkpoint (or from the
        // beginning): they add the count the checkpoint holds and recount what they re-read,
        // so a record counted before the failure is not counted twice.
        self.dead_letter_count.store(0, Ordering::Relaxed);
        self.cancelled.store(false, Ordering::SeqCst);
        // A user cancel that raced the reset wins.
        if self.is_user_cancelled() {
            self.cancel();
        }
    }

    /// How long a partly filled output buffer may wait before it is flushed.
    pub fn buffer_timeout(&self) -> Duration {
        self.buffer_timeout
    }

    /// The counter the flusher bumps every buffer timeout; a writer flushes when it moved.
    pub fn flush_epoch(&self) -> &AtomicU64 {
        &self.flush_epoch
    }

    pub(crate) fn tick_flush(&self) {
        self.flush_epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the job is stopping (failure or cancel); one relaxed load, cheap per record.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Registers an input gate to wake on cancel; cancelled at once if the job already is.
    pub fn register_gate(&self, c: GateCanceller) {
        let mut v = self.cancellers.lock().unwrap_or_else(|p| p.into_inner());
        v.push(c.clone());
        drop(v);
        if self.is_cancelled() {
            c.cancel();
        }
    }

    /// Stops the job: every blocked task wakes with `Cancelled`, sources stop at their next check.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let v = self.cancellers.lock().unwrap_or_else(|p| p.into_inner());
        for c in v.iter() {
            c.cancel();
        }
    }

    /// Records the first failure and cancels the job. Later failures are consequences and dropped.
    pub fn fail(&self, err: JobError) {
        {
            let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            if f.is_none() {
                *f = Some(err);
            }
        }
        self.cancel();
    }

    /// The first failure recorded by [`JobControl::fail`], leaving none behind.
    pub fn take_failure(&self) -> Option<JobError> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Counts a dead letter and keeps it (up to [`DEAD_LETTERS_KEPT`]). A replay after a
    /// restart sends the same letter again: it is kept once (same location and reason).
    pub fn dead_letter(&self, letter: DeadLetter) {
        self.dead_letter_count.fetch_add(1, Ordering::Relaxed);
        let mut v = self.dead_letters.lock().unwrap_or_else(|p| p.into_inner());
        if v.len() < DEAD_LETTERS_KEPT
            && !v
                .iter()
                .any(|d| d.location == letter.location && d.reason == letter.reason)
        {
            v.push(letter);
        }
    }

    /// Adds dead letters a restored checkpoint counted (its sources' share; see
    /// `sources::dead_letter_count`).
    pub fn restore_dead_letters(&self, n: u64) {
        self.dead_letter_count.fetch_add(n, Ordering::Relaxed);
    }

    /// Dead letters counted in all, including those not kept.
    pub fn dead_letter_count(&self) -> u64 {
        self.dead_letter_count.load(Ordering::Relaxed)
    }

    /// A copy of the dead letters kept (at most [`DEAD_LETTERS_KEPT`]).
    pub fn dead_letters(&self) -> Vec<DeadLetter> {
        self.dead_letters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A process link fails the job through its control (a peer lost, a message not sent).
impl sluice_checkpoint::JobFailer for JobControl {
    fn fail_job(&self, message: String) {
        self.fail(JobError::job(message));
    }
}

/// Operators waiting outside a gate (the async wait operator) stop when the job is torn down.
impl sluice_operators::services::JobCancellation for JobControl {
    fn is_cancelled(&self) -> bool {
        JobControl::is_cancelled(self)
    }
}
