//! Built-in sources. A source subtask runs one [`SourceFunction`] to completion (bounded input) or
//! until the job is cancelled. Each subtask's share of the input is a pure function of
//! `(subtask, parallelism)`, so reruns produce the same records in the same subtask.

mod collection;
pub mod dead_letter_count;
mod generator;
mod socket;
mod text_file;

pub use collection::{IterSource, VecSource};
pub use generator::{split_range, GeneratorSource};
pub use socket::{LineDecoder, SocketSourceConfig, SocketTextSource};
pub use text_file::{byte_split, TextFileSource};

use std::cell::Cell;
use std::ops::Range;
use std::sync::Arc;

use sluice_types::{Barrier, Collector, CollectorExt, OperatorContext, OperatorError};

use crate::{DeadLetter, JobControl, TaskMetrics};

/// What a source sees of the running job.
pub struct SourceContext {
    /// The source's operator identity (id, subtask, parallelism) and task services.
    pub op: OperatorContext,
    /// The job's cancel/fail switch.
    pub control: Arc<JobControl>,
    /// The source subtask's live counters.
    pub metrics: Arc<TaskMetrics>,
    /// Records this source subtask has emitted (published every [`SOURCE_BATCH`] records), read by
    /// progress displays.
    pub emitted: Arc<std::sync::atomic::AtomicU64>,
    /// The job's checkpoints, if it takes any.
    pub checkpoints: Option<Arc<crate::checkpoint::CheckpointHub>>,
    /// The id of the last barrier this source injected.
    pub last_barrier: Cell<u64>,
    /// Dead letters this subtask sent (with its share of the restored count), checkpointed
    /// with its position ([`dead_letter_count`]).
    pub dead_letters: Cell<u64>,
    /// The newest completed checkpoint this task's chain was told of
    /// ([`notify_completed`](Self::notify_completed)).
    pub notified: Cell<u64>,
}

/// How often a source at its end looks for the final checkpoint's barrier and completion.
const FINAL_CHECKPOINT_POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// Sources check for cancellation and publish progress once per this many records.
pub const SOURCE_BATCH: u64 = 1024;

/// Whether `ctx`'s job is in the stop-with-savepoint whose barrier is `id`.
fn hub_holds(ctx: &SourceContext, id: u64) -> bool {
    ctx.checkpoints
        .as_ref()
        .is_some_and(|h| h.is_stop_savepoint(id))
}

impl SourceContext {
    /// Whether the job is stopping; sources check it every [`SOURCE_BATCH`] records.
    #[inline]
    pub fn should_stop(&self) -> bool {
        self.control.is_cancelled()
    }

    /// Publishes `n` more emitted records to [`SourceContext::emitted`].
    pub fn add_emitted(&self, n: u64) {
        self.emitted
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Injects a pending checkpoint barrier, if there is one: records the source's position
    /// (`position()`, called only then), sends the barrier behind the records emitted so far
    /// and acknowledges. Sources call it between records, at least every [`SOURCE_BATCH`].
    #[inline]
    pub fn checkpoint_if_due<T>(
        &self,
        out: &mut dyn Collector<T>,
        position: impl FnOnce() -> Result<Vec<u8>, OperatorError>,
    ) -> Result<(), OperatorError> {
        let Some(hub) = &self.checkpoints else {
            return Ok(());
        };
        self.notify_completed(out)?;
        let Some(barrier) = hub.barrier_after(self.last_barrier.get()) else {
            return Ok(());
        };
        self.inject(barrier, out, position()?)
    }

    /// Tells the chain of the newest completed checkpoint, if it did not hear of it yet
    /// ([`ControlEvent::CheckpointComplete`](sluice_types::ControlEvent::CheckpointComplete)):
    /// sources call it between records through [`checkpoint_if_due`](Self::checkpoint_if_due),
    /// and the task once more when its source ends cancelled (a stop-with-savepoint).
    pub fn notify_completed<T>(&self, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let Some(hub) = &self.checkpoints else {
            return Ok(());
        };
        let done = hub.completed_checkpoint();
        if done > self.notified.get() {
            self.notified.set(done);
            out.notify_checkpoint_complete(done)?;
        }
        Ok(())
    }

    /// After the barrier of a stop-with-savepoint: emit nothing more (what follows the barrier
    /// is the next plan's to read, from the savepoint's positions), idle until the job stops
    /// (`Cancelled`), or go on if the savepoint failed.
    #[cold]
    fn hold_after_stop_savepoint<T>(
        &self,
        id: u64,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        out.flush()?;
        let waits = self.metrics.waits.clone();
        while hub_holds(self, id) {
            // The stop-with-savepoint's completion reaches the chain before the job stops.
            self.notify_completed(out)?;
            if self.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            let started = waits.begin_idle();
            std::thread::sleep(FINAL_CHECKPOINT_POLL);
            waits.end_idle(started);
        }
        Ok(())
    }

    /// Whether a barrier is waiting to be injected, or a completed checkpoint to be told to the
    /// chain (cheap, two loads: ask it per record, so a source that is backpressured still
    /// injects barriers between two records, and a sink chained to it commits without waiting
    /// for the next barrier); [`checkpoint_if_due`](Self::checkpoint_if_due) does both.
    #[inline]
    pub fn barrier_pending(&self) -> bool {
        self.checkpoints.as_ref().is_some_and(|h| {
            h.barrier_pending(self.last_barrier.get())
                || h.completed_checkpoint() > self.notified.get()
        })
    }

    #[cold]
    fn inject<T>(
        &self,
        barrier: Barrier,
        out: &mut dyn Collector<T>,
        position: Vec<u8>,
    ) -> Result<(), OperatorError> {
        self.last_barrier.set(barrier.checkpoint_id);
        let services = crate::TaskServices::of(&self.op);
        if let Some(s) = services {
            s.begin_barrier(barrier.checkpoint_id);
            let framed = dead_letter_count::frame(self.dead_letters.get(), position);
            s.record(&self.op.operator_id, framed);
        }
        out.emit_barrier(barrier)?;
        if let Some(s) = services {
            s.ack(barrier.checkpoint_id, barrier.timestamp_ms, 0);
        }
        if hub_holds(self, barrier.checkpoint_id) {
            self.hold_after_stop_savepoint(barrier.checkpoint_id, out)?;
        }
        Ok(())
    }

    /// At the end of a bounded input, before returning from `run`: waits for the final
    /// checkpoint ([`CheckpointHub::source_at_end`](crate::checkpoint::CheckpointHub::source_at_end)),
    /// injecting barriers with `position` (the source's position at its end) meanwhile, so
    /// transactional sinks commit their last output under a checkpoint from which a restore
    /// reads nothing again. Returns at once when the job takes no periodic checkpoints, and
    /// once no checkpoint can complete any more (another task already finished).
    pub fn await_final_checkpoint<T>(
        &self,
        out: &mut dyn Collector<T>,
        mut position: impl FnMut() -> Result<Vec<u8>, OperatorError>,
    ) -> Result<(), OperatorError> {
        let Some(hub) = &self.checkpoints else {
            return Ok(());
        };
        if hub.config.interval.is_none() {
            return Ok(());
        }
        hub.source_at_end();
        // Records emitted before the end go downstream now, not at the barrier.
        out.flush()?;
        let waits = self.metrics.waits.clone();
        while !hub.final_checkpoint_done() {
            if self.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            self.checkpoint_if_due(out, &mut position)?;
            let started = waits.begin_idle();
            std::thread::sleep(FINAL_CHECKPOINT_POLL);
            waits.end_idle(started);
        }
        Ok(())
    }

    /// Sends a malformed record to the job's dead-letter output, with where it was found.
    pub fn dead_letter(&self, location: String, reason: String) {
        self.dead_letters.set(self.dead_letters.get() + 1);
        self.control.dead_letter(DeadLetter {
            origin: self.op.task_display_name(),
            location,
            reason,
        });
    }
}

impl SourceContext {
    /// Before `run`, after a restore: this subtask's share of the dead letters the checkpoint
    /// counted (see [`dead_letter_count`]), added to the job's count.
    pub fn restore_dead_letters(&self, n: u64) {
        self.dead_letters.set(n);
        self.control.restore_dead_letters(n);
    }
}

/// A source of records.
pub trait SourceFunction<T>: Send {
    /// Emits this subtask's share into `out`; returns at end of input. Must check
    /// [`SourceContext::should_stop`] and call [`SourceContext::checkpoint_if_due`] at least
    /// every [`SOURCE_BATCH`] records.
    fn run(&mut self, ctx: &SourceContext, out: &mut dyn Collector<T>)
        -> Result<(), OperatorError>;

    /// Rewinds to the positions a checkpoint recorded, before `run`: `parts` are the positions
    /// of every subtask of the run that took it, `(old subtask, bytes)`. The default refuses:
    /// a source that cannot rewind cannot give exactly-once results.
    fn restore_position(
        &mut self,
        _parts: &[(usize, Vec<u8>)],
        op: &OperatorContext,
    ) -> Result<(), OperatorError> {
        Err(OperatorError::failed(format!(
            "source '{}' cannot rewind to a checkpoint",
            op.operator_name
        )))
    }
}

/// The remaining work of a source that emits numbered records (a generator, a vector): a list
/// of index ranges. Its checkpoint position is the list; on restore, new subtask `j` of `q`
/// takes the remaining ranges of every old subtask `i ≡ j (mod q)`, so the union of the work is
/// unchanged at any parallelism.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeCursor {
    ranges: std::collections::VecDeque<Range<u64>>,
}

impl RangeCursor {
    /// All of `range` still to do.
    pub fn new(range: Range<u64>) -> RangeCursor {
        RangeCursor {
            ranges: [range].into_iter().filter(|r| !r.is_empty()).collect(),
        }
    }

    /// The position as if the batch being emitted had stopped before index `next` (which ends
    /// the batch at `batch_end`): used to inject a barrier in the middle of a batch.
    pub fn position_within(&self, next: u64, batch_end: u64) -> Result<Vec<u8>, OperatorError> {
        let mut v: Vec<(u64, u64)> = Vec::with_capacity(self.ranges.len() + 1);
        if next < batch_end {
            v.push((next, batch_end));
        }
        v.extend(self.ranges.iter().map(|r| (r.start, r.end)));
        crate::state::layout::encode(&v)
    }

    /// The next batch of at most `max` indices, advancing past it.
    pub fn next_batch(&mut self, max: u64) -> Option<Range<u64>> {
        let r = self.ranges.front_mut()?;
        let end = r.start.saturating_add(max).min(r.end);
        let batch = r.start..end;
        r.start = end;
        if r.is_empty() {
            self.ranges.pop_front();
        }
        Some(batch)
    }

    /// The remaining ranges, encoded as the source's checkpoint position.
    pub fn position(&self) -> Result<Vec<u8>, OperatorError> {
        let v: Vec<(u64, u64)> = self.ranges.iter().map(|r| (r.start, r.end)).collect();
        crate::state::layout::encode(&v)
    }

    /// This subtask's share of the work left at a checkpoint. At the same parallelism each
    /// subtask takes back exactly its own remaining ranges (so per-subtask record order is
    /// unchanged). Otherwise the remaining ranges of every old subtask, concatenated in
    /// subtask order, are cut into `parallelism` contiguous shares of (almost) equal size, so
    /// every new subtask gets work.
    pub fn restore(
        parts: &[(usize, Vec<u8>)],
        subtask: usize,
        parallelism: usize,
    ) -> Result<RangeCursor, OperatorError> {
        let old_parallelism = parts.iter().map(|(i, _)| i + 1).max().unwrap_or(0);
        let mut all: Vec<Range<u64>> = Vec::new();
        let mut sorted: Vec<&(usize, Vec<u8>)> = parts
            .iter()
            .filter(|(i, _)| old_parallelism != parallelism || *i == subtask)
            .collect();
        sorted.sort_by_key(|(i, _)| *i);
        if old_parallelism == parallelism {
            let mut ranges = std::collections::VecDeque::new();
            for (_, bytes) in sorted {
                let v: Vec<(u64, u64)> = crate::state::layout::decode(bytes)?;
                ranges.extend(v.into_iter().map(|(a, b)| a..b).filter(|r| !r.is_empty()));
            }
            return Ok(RangeCursor { ranges });
        }
        for (_, bytes) in sorted {
            let v: Vec<(u64, u64)> = crate::state::layout::decode(bytes)?;
            all.extend(v.into_iter().map(|(a, b)| a..b).filter(|r| !r.is_empty()));
        }
        let total: u64 = all.iter().map(|r| r.end - r.start).sum();
        let share = split_range(total, subtask, parallelism.max(1));
        // Walk the concatenation, keeping what falls into [share.start, share.end).
        let mut ranges = std::collections::VecDeque::new();
        let mut offset = 0u64;
        for r in all {
            let len = r.end - r.start;
            let (lo, hi) = (offset, offset + len);
            let from = share.start.max(lo);
            let to = share.end.min(hi);
            if from < to {
                ranges.push_back((r.start + (from - lo))..(r.start + (to - lo)));
            }
            offset = hi;
        }
        Ok(RangeCursor { ranges })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sluice_types::{CheckpointKind, OperatorContext, ServicesHandle, VecCollector};

    use super::SourceContext;
    use crate::checkpoint::{CheckpointConfig, CheckpointHub};
    use crate::{JobControl, TaskMetrics};

    #[test]
    fn a_completed_checkpoint_is_pending_work_for_a_source_that_asks_before_checkpointing() {
        // Sources that call `checkpoint_if_due` only when `barrier_pending` says so (the Kafka
        // reader, the text file and socket sources) must tell a chained sink of a completion
        // without waiting for the next barrier.
        let hub = CheckpointHub::new(CheckpointConfig::default(), std::env::temp_dir());
        let ctx = SourceContext {
            op: OperatorContext {
                operator_name: "source".into(),
                task_name: "source".into(),
                subtask_index: 0,
                parallelism: 1,
                max_parallelism: 128,
                operator_id: "source".into(),
                services: ServicesHandle::none(),
                options: Vec::new(),
            },
            control: JobControl::new(std::time::Duration::ZERO),
            metrics: Arc::new(TaskMetrics::default()),
            emitted: Arc::default(),
            checkpoints: Some(hub.clone()),
            last_barrier: std::cell::Cell::new(0),
            dead_letters: std::cell::Cell::new(0),
            notified: std::cell::Cell::new(0),
        };
        assert!(!ctx.barrier_pending());
        hub.complete(1, CheckpointKind::Aligned, Vec::new(), 0, None);
        assert!(ctx.barrier_pending());
        let mut out = VecCollector::<u64>::default();
        ctx.checkpoint_if_due(&mut out, || Ok(Vec::new())).unwrap();
        assert_eq!(out.completed, vec![1]);
        assert!(out.barriers.is_empty());
        assert!(!ctx.barrier_pending(), "told once");
    }
}
