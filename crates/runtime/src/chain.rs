//! Binding operators into a chain of collectors.

use std::marker::PhantomData;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use sluice_types::{Collector, Data, Operator, OperatorContext, OperatorError};

use crate::metrics::{OperatorMetrics, OPERATOR_SAMPLE_EVERY};

/// Per-link bookkeeping for operator metrics: a countdown to the next timed record and a local
/// record count published in batches, so the untimed path is a decrement and a branch.
struct OpTiming {
    metrics: Arc<OperatorMetrics>,
    countdown: u32,
    unpublished: u64,
}

impl OpTiming {
    fn publish(&mut self) {
        if self.unpublished > 0 {
            self.metrics.records_in.fetch_add(self.unpublished, Relaxed);
            self.unpublished = 0;
        }
    }
}

/// An operator bound to the collector its output goes to. Implements `Collector<In>`, so the
/// previous operator (or the source, or the input loop) pushes records straight into it.
pub struct Link<In, Out, Op> {
    op: Op,
    out: Box<dyn Collector<Out>>,
    timing: Option<OpTiming>,
    _types: PhantomData<fn(In) -> Out>,
}

impl<In, Out, Op> Link<In, Out, Op>
where
    In: Send + 'static,
    Out: Send + 'static,
    Op: Operator<In, Out> + 'static,
{
    /// Opens the operator (on the calling thread, which must be the task's thread) and binds it.
    pub fn open(
        mut op: Op,
        out: Box<dyn Collector<Out>>,
        ctx: &OperatorContext,
    ) -> Result<Self, OperatorError> {
        op.open(ctx)?;
        Ok(Link {
            op,
            out,
            timing: None,
            _types: PhantomData,
        })
    }

    /// Counts records and samples the time spent per record into `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<OperatorMetrics>) -> Self {
        self.timing = Some(OpTiming {
            metrics,
            countdown: OPERATOR_SAMPLE_EVERY,
            unpublished: 0,
        });
        self
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
        let Some(t) = &mut self.timing else {
            return self.op.process(record, &mut *self.out);
        };
        t.unpublished += 1;
        t.countdown -= 1;
        if t.countdown != 0 {
            return self.op.process(record, &mut *self.out);
        }
        t.countdown = OPERATOR_SAMPLE_EVERY;
        let started = Instant::now();
        let r = self.op.process(record, &mut *self.out);
        let ns = started.elapsed().as_nanos() as u64;
        let t = self.timing.as_mut().expect("checked above");
        t.metrics.sampled_ns.fetch_add(ns, Relaxed);
        t.metrics.sampled_records.fetch_add(1, Relaxed);
        t.publish();
        r
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        if let Some(t) = &mut self.timing {
            t.publish();
        }
        self.op.finish(&mut *self.out)?;
        self.out.finish()
    }

    fn flush(&mut self) -> Result<(), OperatorError> {
        if let Some(t) = &mut self.timing {
            t.publish();
        }
        self.out.flush()
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
}

/// Counts and samples the time of a sink (a collector at the end of a chain), like [`Link`] does
/// for operators.
pub struct TimedSink<T> {
    inner: Box<dyn Collector<T>>,
    timing: OpTiming,
}

impl<T> TimedSink<T> {
    pub fn new(inner: Box<dyn Collector<T>>, metrics: Arc<OperatorMetrics>) -> Self {
        TimedSink {
            inner,
            timing: OpTiming {
                metrics,
                countdown: OPERATOR_SAMPLE_EVERY,
                unpublished: 0,
            },
        }
    }
}

impl<T: Send> Collector<T> for TimedSink<T> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        let t = &mut self.timing;
        t.unpublished += 1;
        t.countdown -= 1;
        if t.countdown != 0 {
            return self.inner.collect(record);
        }
        t.countdown = OPERATOR_SAMPLE_EVERY;
        let started = Instant::now();
        let r = self.inner.collect(record);
        let ns = started.elapsed().as_nanos() as u64;
        self.timing.metrics.sampled_ns.fetch_add(ns, Relaxed);
        self.timing.metrics.sampled_records.fetch_add(1, Relaxed);
        self.timing.publish();
        r
    }
    fn finish(&mut self) -> Result<(), OperatorError> {
        self.timing.publish();
        self.inner.finish()
    }
    fn flush(&mut self) -> Result<(), OperatorError> {
        self.timing.publish();
        self.inner.flush()
    }
}
