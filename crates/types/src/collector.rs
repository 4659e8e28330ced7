//! Output side of an operator.
//!
//! A collector receives records ([`Collector::collect`]) and control events
//! ([`Collector::emit_event`]: watermarks, idleness, checkpoint barriers, flushes, end of input).
//! `emit_event` has no default: a wrapper that forgot to forward it would swallow checkpoint
//! barriers silently, so every collector has to say what it does with each event, and the
//! natural wrapper (`self.inner.emit_event(event)`) forwards all of them. The named forms
//! (`finish`, `flush`, `emit_barrier`, ...) live in [`CollectorExt`], implemented for every
//! collector and for nothing else, so no collector can override one of them and disagree with
//! its own `emit_event`.
//!
//! A wrapper that handles records only does not compile:
//!
//! ```compile_fail,E0046
//! use sluice_types::{Collector, OperatorError};
//!
//! struct Counting<C> {
//!     inner: C,
//!     seen: u64,
//! }
//!
//! impl<T, C: Collector<T>> Collector<T> for Counting<C> {
//!     fn collect(&mut self, record: T) -> Result<(), OperatorError> {
//!         self.seen += 1;
//!         self.inner.collect(record)
//!     }
//!     // no `emit_event`: error[E0046], not a barrier lost at run time
//! }
//! ```
//!
//! nor does overriding one named event (the blanket impl already covers every collector):
//!
//! ```compile_fail,E0119
//! use sluice_types::{Barrier, Collector, CollectorExt, ControlEvent, OperatorError};
//!
//! struct Sink;
//!
//! impl Collector<u8> for Sink {
//!     fn collect(&mut self, _: u8) -> Result<(), OperatorError> {
//!         Ok(())
//!     }
//!     fn emit_event(&mut self, _: ControlEvent) -> Result<(), OperatorError> {
//!         Ok(())
//!     }
//! }
//!
//! impl CollectorExt<u8> for Sink {
//!     fn emit_barrier(&mut self, _: Barrier) -> Result<(), OperatorError> {
//!         Ok(())
//!     }
//! }
//! ```
//!
//! The wrapper that compiles forwards every event:
//!
//! ```
//! use sluice_types::{Collector, ControlEvent, OperatorError};
//!
//! struct Counting<C> {
//!     inner: C,
//!     seen: u64,
//! }
//!
//! impl<T, C: Collector<T>> Collector<T> for Counting<C> {
//!     fn collect(&mut self, record: T) -> Result<(), OperatorError> {
//!         self.seen += 1;
//!         self.inner.collect(record)
//!     }
//!     fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
//!         self.inner.emit_event(event)
//!     }
//! }
//! ```

use crate::{Barrier, OperatorError, Watermark};

/// Everything but a record that travels down a chain, in stream order with the records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlEvent {
    /// Event-time progress: no later record on this stream has a timestamp `<=` the watermark.
    /// Chains pass it to each operator's [`crate::Operator::on_watermark`], network writers
    /// broadcast it to every channel after the records written before it.
    Watermark(Watermark),
    /// The stream became idle (`true`: downstream must not wait for its watermark) or active
    /// again (`false`). Flink's `WatermarkStatus`.
    Idleness(bool),
    /// A checkpoint barrier: every record before it is part of checkpoint
    /// `barrier.checkpoint_id`, none after it. Chains snapshot each operator as the barrier
    /// passes ([`crate::Operator::snapshot_state`]); network writers send it on every channel
    /// behind the records written before it.
    Barrier(Barrier),
    /// The buffer timeout elapsed while the task had nothing to process: ship partial output
    /// buffers if credit allows. Never blocks.
    Flush,
    /// End of input: flush what is buffered and forward end-of-input downstream. Sent once.
    EndOfInput,
    /// Checkpoint `0` and every one before it completed and may be committed (Flink's
    /// `notifyCheckpointComplete`): transactional sinks publish what they pre-committed up to
    /// it. Sent by the task to its own chain between two records, never for a savepoint that
    /// does not stop the job, and once more before a task ends for a stop-with-savepoint (or any
    /// cancel) if a checkpoint completed meanwhile. Chains pass it to each operator's
    /// [`crate::Operator::notify_checkpoint_complete`]; it never crosses an exchange (every task
    /// is notified by its own loop), so network writers drop it.
    CheckpointComplete(u64),
}

/// Receives the records an operator emits. Chained operators are collectors of their upstream;
/// the last operator of a chain writes into a network writer or a sink, which are collectors too.
///
/// `collect` and `emit_event` return an error only when the record or event cannot be
/// delivered: the downstream failed or the job is cancelled. Operators propagate it with `?`.
pub trait Collector<T>: Send {
    /// Passes one record downstream; an error means it cannot be delivered (see above).
    fn collect(&mut self, record: T) -> Result<(), OperatorError>;

    /// A control event (see [`ControlEvent`]). Required: wrappers forward it to what they wrap
    /// (after their own bookkeeping), terminal collectors (sinks, writers) handle each kind
    /// explicitly.
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError>;

    /// Every record of `batch`, in order, as if by `collect` one by one; leaves `batch` empty
    /// (its capacity kept for the caller to refill). Chains are built of `Box<dyn Collector>` at
    /// deployment, so a record costs a dynamic call per chained operator; a batch costs one per
    /// operator per batch, and inside it each collector calls its own, statically known code.
    /// Collectors that wrap another pass the batch on as a batch.
    #[inline]
    fn collect_batch(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError> {
        for r in batch.drain(..) {
            self.collect(r)?;
        }
        Ok(())
    }
}

/// The control events by name, for callers. Implemented for every [`Collector`] by the blanket
/// impl below and for nothing else, so the named forms always mean exactly `emit_event`.
pub trait CollectorExt<T>: Collector<T> {
    /// [`ControlEvent::EndOfInput`].
    fn finish(&mut self) -> Result<(), OperatorError> {
        self.emit_event(ControlEvent::EndOfInput)
    }

    /// [`ControlEvent::Flush`].
    fn flush(&mut self) -> Result<(), OperatorError> {
        self.emit_event(ControlEvent::Flush)
    }

    /// [`ControlEvent::Watermark`].
    fn emit_watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        self.emit_event(ControlEvent::Watermark(watermark))
    }

    /// [`ControlEvent::Idleness`].
    fn emit_idleness(&mut self, idle: bool) -> Result<(), OperatorError> {
        self.emit_event(ControlEvent::Idleness(idle))
    }

    /// [`ControlEvent::Barrier`].
    fn emit_barrier(&mut self, barrier: Barrier) -> Result<(), OperatorError> {
        self.emit_event(ControlEvent::Barrier(barrier))
    }

    /// [`ControlEvent::CheckpointComplete`].
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), OperatorError> {
        self.emit_event(ControlEvent::CheckpointComplete(checkpoint_id))
    }
}

impl<T, C: Collector<T> + ?Sized> CollectorExt<T> for C {}

/// Collects into vectors: the records and every control event. For unit tests of operators and
/// for embedding.
#[derive(Debug)]
pub struct VecCollector<T> {
    /// Records received, in order.
    pub records: Vec<T>,
    /// Whether end of input was signalled.
    pub finished: bool,
    /// Watermarks received, in order.
    pub watermarks: Vec<Watermark>,
    /// Idleness changes received, in order (`true` = became idle).
    pub idleness: Vec<bool>,
    /// Checkpoint barriers received, in order.
    pub barriers: Vec<Barrier>,
    /// Flushes received.
    pub flushes: usize,
    /// Checkpoint completions received, in order.
    pub completed: Vec<u64>,
}

impl<T> Default for VecCollector<T> {
    fn default() -> Self {
        VecCollector {
            records: Vec::new(),
            finished: false,
            watermarks: Vec::new(),
            idleness: Vec::new(),
            barriers: Vec::new(),
            flushes: 0,
            completed: Vec::new(),
        }
    }
}

impl<T: Send> Collector<T> for VecCollector<T> {
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        self.records.push(record);
        Ok(())
    }

    fn collect_batch(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError> {
        self.records.append(batch);
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            ControlEvent::Watermark(w) => self.watermarks.push(w),
            ControlEvent::Idleness(idle) => self.idleness.push(idle),
            ControlEvent::Barrier(b) => self.barriers.push(b),
            ControlEvent::Flush => self.flushes += 1,
            ControlEvent::EndOfInput => self.finished = true,
            ControlEvent::CheckpointComplete(id) => self.completed.push(id),
        }
        Ok(())
    }
}

impl<T, C: Collector<T> + ?Sized> Collector<T> for Box<C> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        (**self).collect(record)
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        (**self).emit_event(event)
    }

    #[inline]
    fn collect_batch(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError> {
        (**self).collect_batch(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckpointKind;

    #[test]
    fn named_events_are_emit_event_and_boxes_forward_them() {
        let mut c = Box::new(VecCollector::<u8>::default());
        let barrier = Barrier {
            checkpoint_id: 7,
            timestamp_ms: 1,
            kind: CheckpointKind::Aligned,
        };
        c.collect(1).unwrap();
        c.emit_watermark(Watermark(5)).unwrap();
        c.emit_idleness(true).unwrap();
        c.emit_barrier(barrier).unwrap();
        c.flush().unwrap();
        c.emit_event(ControlEvent::Flush).unwrap();
        c.finish().unwrap();
        assert_eq!(c.records, vec![1]);
        assert_eq!(c.watermarks, vec![Watermark(5)]);
        assert_eq!(c.idleness, vec![true]);
        assert_eq!(c.barriers, vec![barrier]);
        assert_eq!(c.flushes, 2);
        assert!(c.finished);
    }
}
