//! Binding operators into a chain of collectors.

use std::marker::PhantomData;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use sluice_types::{Barrier, Collector, Data, Operator, OperatorContext, OperatorError, Watermark};

use crate::metrics::{OperatorMetrics, OPERATOR_SAMPLE_EVERY};

/// Per-link bookkeeping for operator metrics. The untimed path is one decrement and a branch:
/// records are counted in whole sampling periods when the countdown wraps (the remainder is
/// published on flush and finish), and one record per period is timed.
struct OpTiming {
    metrics: Arc<OperatorMetrics>,
    countdown: u32,
}

impl OpTiming {
    fn new(metrics: Arc<OperatorMetrics>) -> Self {
        OpTiming {
            metrics,
            countdown: OPERATOR_SAMPLE_EVERY,
        }
    }

    /// Publishes the records of the current, incomplete period.
    fn publish(&mut self) {
        let partial = (OPERATOR_SAMPLE_EVERY - self.countdown) as u64;
        if partial > 0 {
            self.metrics.records_in.fetch_add(partial, Relaxed);
            self.countdown = OPERATOR_SAMPLE_EVERY;
        }
    }

    /// Called with the timed record's duration when a period completes.
    #[cold]
    fn period_done(&mut self, ns: u64) {
        self.countdown = OPERATOR_SAMPLE_EVERY;
        self.metrics
            .records_in
            .fetch_add(OPERATOR_SAMPLE_EVERY as u64, Relaxed);
        self.metrics.sampled_ns.fetch_add(ns, Relaxed);
        self.metrics.sampled_records.fetch_add(1, Relaxed);
    }
}

/// An operator bound to the collector its output goes to. Implements `Collector<In>`, so the
/// previous operator (or the source, or the input loop) pushes records straight into it.
pub struct Link<In, Out, Op> {
    op: Op,
    out: Box<dyn Collector<Out>>,
    /// The operator's id in checkpoints.
    operator_id: String,
    _types: PhantomData<fn(In) -> Out>,
}

impl<In, Out, Op> Link<In, Out, Op>
where
    In: Send + 'static,
    Out: Send + 'static,
    Op: Operator<In, Out> + 'static,
{
    /// Opens the operator (on the calling thread, which must be the task's thread), restores
    /// its state when the job restores from a checkpoint, and binds it.
    pub fn open(
        mut op: Op,
        out: Box<dyn Collector<Out>>,
        ctx: &OperatorContext,
    ) -> Result<Self, OperatorError> {
        op.open(ctx)?;
        if let Some(restored) = crate::checkpoint::task::restored_parts(&ctx.operator_id) {
            op.restore_state(&restored.parts)?;
        }
        Ok(Link {
            op,
            out,
            operator_id: ctx.operator_id.clone(),
            _types: PhantomData,
        })
    }

    /// Counts records and samples the time spent per record into `metrics`. A separate type,
    /// not a flag, so neither variant pays a per-record branch for the other.
    pub fn with_metrics(self, metrics: Arc<OperatorMetrics>) -> TimedLink<In, Out, Op> {
        TimedLink {
            link: self,
            timing: OpTiming::new(metrics),
        }
    }
}

/// A [`Link`] that counts records and times one record per sampling period.
pub struct TimedLink<In, Out, Op> {
    link: Link<In, Out, Op>,
    timing: OpTiming,
}

impl<In, Out, Op: Operator<In, Out>> TimedLink<In, Out, Op> {
    /// The sampled path, out of line so the per-record path stays small enough to inline the
    /// operator's `process` (keeping two inlined copies of it measurably slowed keyed operators).
    #[cold]
    #[inline(never)]
    fn timed(&mut self, record: In) -> Result<(), OperatorError> {
        let started = Instant::now();
        let r = self.link.op.process(record, &mut *self.link.out);
        self.timing.period_done(started.elapsed().as_nanos() as u64);
        r
    }
}

impl<In, Out, Op> Collector<In> for TimedLink<In, Out, Op>
where
    In: Send,
    Out: Send,
    Op: Operator<In, Out>,
{
    #[inline]
    fn collect(&mut self, record: In) -> Result<(), OperatorError> {
        self.timing.countdown -= 1;
        if self.timing.countdown != 0 {
            return self.link.op.process(record, &mut *self.link.out);
        }
        self.timed(record)
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        self.timing.publish();
        self.link.finish()
    }

    fn flush(&mut self) -> Result<(), OperatorError> {
        self.timing.publish();
        self.link.flush()
    }

    fn emit_watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        self.link.emit_watermark(watermark)
    }

    fn emit_idleness(&mut self, idle: bool) -> Result<(), OperatorError> {
        self.link.emit_idleness(idle)
    }

    fn emit_barrier(&mut self, barrier: Barrier) -> Result<(), OperatorError> {
        self.link.emit_barrier(barrier)
    }
}

impl<In, Out, Op> Collector<In> for Link<In, Out, Op>
where
    In: Send,
    Out: Send,
    Op: Operator<In, Out>,
{
    #[inline]
    fn collect(&mut self, record: In) -> Result<(), OperatorError> {
        self.op.process(record, &mut *self.out)
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        self.op.finish(&mut *self.out)?;
        self.out.finish()
    }

    fn flush(&mut self) -> Result<(), OperatorError> {
        self.op.tick(&mut *self.out)?;
        self.out.flush()
    }

    fn emit_watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        self.op.on_watermark(watermark, &mut *self.out)
    }

    fn emit_idleness(&mut self, idle: bool) -> Result<(), OperatorError> {
        self.op.on_idleness(idle, &mut *self.out)
    }

    fn emit_barrier(&mut self, barrier: Barrier) -> Result<(), OperatorError> {
        self.op.prepare_snapshot_pre_barrier(&mut *self.out)?;
        match self.op.snapshot_state(barrier.checkpoint_id) {
            Ok(Some(bytes)) => crate::checkpoint::task::record(&self.operator_id, bytes),
            Ok(None) => {}
            // The checkpoint fails, not the job (the coordinator decides about the job).
            Err(e) => crate::checkpoint::task::decline(&self.operator_id, e.to_string()),
        }
        self.out.emit_barrier(barrier)
    }
}

/// Several consumers of one output (chained successors and network edges): each gets a clone,
/// the last one gets the original.
pub struct Fanout<T> {
    outs: Vec<Box<dyn Collector<T>>>,
}

impl<T: Data> Fanout<T> {
    pub fn new(outs: Vec<Box<dyn Collector<T>>>) -> Self {
        Fanout { outs }
    }
}

impl<T: Data> Collector<T> for Fanout<T> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        if let Some((last, rest)) = self.outs.split_last_mut() {
            for o in rest {
                o.collect(record.clone())?;
            }
            last.collect(record)?;
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.finish()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.flush()?;
        }
        Ok(())
    }
    fn emit_watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.emit_watermark(watermark)?;
        }
        Ok(())
    }
    fn emit_idleness(&mut self, idle: bool) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.emit_idleness(idle)?;
        }
        Ok(())
    }
    fn emit_barrier(&mut self, barrier: Barrier) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.emit_barrier(barrier)?;
        }
        Ok(())
    }
}

/// Counts and samples the time of a sink (a collector at the end of a chain), like [`Link`] does
/// for operators.
///
/// Generic over the sink so that, for a concrete sink type, the wrapped call is inlined and the
/// wrapper costs one decrement per record.
pub struct TimedSink<C> {
    inner: C,
    timing: OpTiming,
}

impl<C> TimedSink<C> {
    #[cold]
    #[inline(never)]
    fn timed<T>(&mut self, record: T) -> Result<(), OperatorError>
    where
        C: Collector<T>,
    {
        let started = Instant::now();
        let r = self.inner.collect(record);
        self.timing.period_done(started.elapsed().as_nanos() as u64);
        r
    }

    pub fn new(inner: C, metrics: Arc<OperatorMetrics>) -> Self {
        TimedSink {
            inner,
            timing: OpTiming::new(metrics),
        }
    }
}

impl<T, C: Collector<T>> Collector<T> for TimedSink<C> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        self.timing.countdown -= 1;
        if self.timing.countdown != 0 {
            return self.inner.collect(record);
        }
        self.timed(record)
    }
    fn finish(&mut self) -> Result<(), OperatorError> {
        self.timing.publish();
        self.inner.finish()
    }
    fn flush(&mut self) -> Result<(), OperatorError> {
        self.timing.publish();
        self.inner.flush()
    }
    fn emit_watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        self.inner.emit_watermark(watermark)
    }
    fn emit_idleness(&mut self, idle: bool) -> Result<(), OperatorError> {
        self.inner.emit_idleness(idle)
    }
    fn emit_barrier(&mut self, barrier: Barrier) -> Result<(), OperatorError> {
        self.inner.emit_barrier(barrier)
    }
}
