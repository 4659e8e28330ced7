//! Binding operators into a chain of collectors.

use std::marker::PhantomData;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use sluice_types::{
    Collector, CollectorExt, ControlEvent, Data, Operator, OperatorContext, OperatorError,
    OutputBatch,
};

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

    /// Counts `n` records of a batch against the countdown; `true` when the period completes
    /// within this batch, which the caller then times ([`OpTiming::batch_done`]).
    #[inline]
    fn batch_due(&mut self, n: usize) -> bool {
        if (n as u64) < u64::from(self.countdown) {
            self.countdown -= n as u32;
            return false;
        }
        true
    }

    /// A timed batch of `n` records took `ns` (inclusive of the chained successors it fed, as
    /// a timed single record is): the period's records are counted and the batch's mean time
    /// per record is the period's sample.
    #[cold]
    fn batch_done(&mut self, n: usize, ns: u64) {
        let counted = u64::from(OPERATOR_SAMPLE_EVERY - self.countdown) + n as u64;
        self.countdown = OPERATOR_SAMPLE_EVERY;
        self.metrics.records_in.fetch_add(counted, Relaxed);
        self.metrics
            .sampled_ns
            .fetch_add(ns / (n.max(1) as u64), Relaxed);
        self.metrics.sampled_records.fetch_add(1, Relaxed);
    }
}

/// The largest batch a [`Link`] gathers of its operator's output before passing it on (and so
/// the most records a link holds between two calls: none).
pub const LINK_BATCH: usize = 256;

/// An operator bound to the collector its output goes to. Implements `Collector<In>`, so the
/// previous operator (or the source, or the input loop) pushes records straight into it.
pub struct Link<In, Out, Op> {
    op: Op,
    out: Box<dyn Collector<Out>>,
    /// The output of the batch being processed ([`Collector::collect_batch`]); empty between
    /// calls.
    out_batch: Vec<Out>,
    /// The operator's id in checkpoints.
    operator_id: String,
    /// The task's services (where snapshots are recorded at a barrier).
    services: sluice_types::ServicesHandle,
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
        if let Some(restored) = crate::services::restored_parts(ctx) {
            op.restore_state(&restored.parts)?;
        }
        Ok(Link {
            op,
            out,
            out_batch: Vec::new(),
            operator_id: ctx.operator_id.clone(),
            services: ctx.services.clone(),
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

impl<In: Send, Out: Send, Op: Operator<In, Out>> Link<In, Out, Op> {
    /// The operator processes `records` into the link's output batch (its calls of `collect`
    /// are static, so they inline), which then goes on with one call.
    #[inline]
    fn process_all(&mut self, records: impl Iterator<Item = In>) -> Result<(), OperatorError> {
        let mut out = OutputBatch::new(&mut self.out_batch, &mut *self.out, LINK_BATCH);
        for r in records {
            self.op.process_into(r, &mut out)?;
        }
        out.ship()
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

    #[cold]
    #[inline(never)]
    fn timed_batch(&mut self, batch: &mut Vec<In>) -> Result<(), OperatorError>
    where
        In: Send,
        Out: Send,
    {
        // The period ends at record `countdown - 1` of this batch: the records before it go
        // on as a batch, that one record is timed alone (inclusive of what it triggers
        // downstream, as on the per-record path), and the rest is a batch again. Timing the
        // whole batch instead would publish a slow operator's sample only when the batch is
        // done (seconds for a blocking call over a full buffer) while its chained successors,
        // fed at the end of each batch, report theirs: the time would look like theirs.
        // The records are moved out once, in order (splitting the batch copied its rest at
        // every period: quadratic in the batch, and an allocation the size of a buffer each).
        let mut records = batch.drain(..);
        loop {
            let left = records.len();
            if left < self.timing.countdown as usize {
                self.timing.countdown -= left as u32;
                return self.link.process_all(records);
            }
            // `countdown >= 1` always: a period that completes resets it.
            let due = self.timing.countdown as usize - 1;
            self.link.process_all(records.by_ref().take(due))?;
            match records.next() {
                Some(record) => self.timed(record)?,
                None => return Ok(()),
            }
        }
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

    #[inline]
    fn collect_batch(&mut self, batch: &mut Vec<In>) -> Result<(), OperatorError> {
        if !self.timing.batch_due(batch.len()) {
            return self.link.collect_batch(batch);
        }
        self.timed_batch(batch)
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        if matches!(event, ControlEvent::Flush | ControlEvent::EndOfInput) {
            self.timing.publish();
        }
        self.link.emit_event(event)
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

    /// The operator processes the whole batch into the link's output batch (its calls of
    /// `collect` are static, so they inline), which then goes on with one call.
    #[inline]
    fn collect_batch(&mut self, batch: &mut Vec<In>) -> Result<(), OperatorError> {
        self.process_all(batch.drain(..))
    }

    /// Each event goes to the operator's hook for it, which forwards it (the operator may emit
    /// records first); a barrier snapshots the operator on its way through.
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            ControlEvent::EndOfInput => {
                self.op.finish(&mut *self.out)?;
                self.out.finish()
            }
            ControlEvent::Flush => {
                self.op.tick(&mut *self.out)?;
                self.out.flush()
            }
            ControlEvent::Watermark(w) => self.op.on_watermark(w, &mut *self.out),
            ControlEvent::Idleness(idle) => self.op.on_idleness(idle, &mut *self.out),
            ControlEvent::CheckpointComplete(id) => {
                self.op.notify_checkpoint_complete(id, &mut *self.out)?;
                self.out.notify_checkpoint_complete(id)
            }
            ControlEvent::Barrier(barrier) => {
                self.op.prepare_snapshot_pre_barrier(&mut *self.out)?;
                let services = self.services.get::<crate::TaskServices>();
                match self.op.snapshot_state(barrier.checkpoint_id) {
                    Ok(Some(bytes)) => {
                        if let Some(s) = services {
                            s.record(&self.operator_id, bytes);
                        }
                    }
                    Ok(None) => {}
                    // The checkpoint fails, not the job (the coordinator decides about the job).
                    Err(e) => {
                        if let Some(s) = services {
                            s.decline(&self.operator_id, e.to_string());
                        }
                    }
                }
                self.out.emit_barrier(barrier)
            }
        }
    }
}

/// Several consumers of one output (chained successors and network edges): each gets a clone,
/// the last one gets the original.
pub struct Fanout<T> {
    outs: Vec<Box<dyn Collector<T>>>,
    /// The clone of a batch for each consumer but the last; empty between calls.
    copy: Vec<T>,
}

impl<T: Data> Fanout<T> {
    /// Fans out to `outs`, in order.
    pub fn new(outs: Vec<Box<dyn Collector<T>>>) -> Self {
        Fanout {
            outs,
            copy: Vec::new(),
        }
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
    fn collect_batch(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError> {
        if let Some((last, rest)) = self.outs.split_last_mut() {
            for o in rest {
                self.copy.extend(batch.iter().cloned());
                o.collect_batch(&mut self.copy)?;
            }
            last.collect_batch(batch)?;
        }
        batch.clear();
        Ok(())
    }
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.emit_event(event)?;
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

    #[cold]
    #[inline(never)]
    fn timed_batch<T>(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError>
    where
        C: Collector<T>,
    {
        let n = batch.len();
        let started = Instant::now();
        let r = self.inner.collect_batch(batch);
        self.timing
            .batch_done(n, started.elapsed().as_nanos() as u64);
        r
    }

    /// Wraps `inner`, sampling its record count and time into `metrics`.
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
    #[inline]
    fn collect_batch(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError> {
        if !self.timing.batch_due(batch.len()) {
            return self.inner.collect_batch(batch);
        }
        self.timed_batch(batch)
    }
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        if matches!(event, ControlEvent::Flush | ControlEvent::EndOfInput) {
            self.timing.publish();
        }
        self.inner.emit_event(event)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use sluice_types::{Barrier, CheckpointKind, VecCollector, Watermark};

    use super::*;
    use crate::operators::{FilterOp, FlatMapOp, MapOp};

    /// A leaf that records into a vector the test keeps a handle on.
    struct Shared(Arc<Mutex<VecCollector<i64>>>);

    impl Collector<i64> for Shared {
        fn collect(&mut self, r: i64) -> Result<(), OperatorError> {
            self.0.lock().unwrap().collect(r)
        }
        fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
            self.0.lock().unwrap().emit_event(event)
        }
    }

    fn ctx(name: &str) -> OperatorContext {
        OperatorContext {
            operator_name: name.into(),
            task_name: "chain".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 128,
            operator_id: name.into(),
            services: sluice_types::ServicesHandle::none(),
            options: Vec::new(),
        }
    }

    /// Emits each record and, after every third, a watermark from inside `process` (as a
    /// punctuated watermark assigner does): a batch must not let it overtake earlier records.
    struct PunctuatedOp(i64);

    impl Operator<i64, i64> for PunctuatedOp {
        fn process(&mut self, r: i64, out: &mut dyn Collector<i64>) -> Result<(), OperatorError> {
            out.collect(r)?;
            self.0 += 1;
            if self.0 % 3 == 0 {
                out.emit_watermark(Watermark(r))?;
            }
            Ok(())
        }
    }

    /// A leaf logging records and watermarks in one sequence (`Ok` record, `Err` watermark),
    /// so their interleaving is compared.
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<Result<i64, i64>>>>);

    impl Collector<i64> for Log {
        fn collect(&mut self, r: i64) -> Result<(), OperatorError> {
            self.0.lock().unwrap().push(Ok(r));
            Ok(())
        }
        fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
            if let ControlEvent::Watermark(w) = event {
                self.0.lock().unwrap().push(Err(w.0));
            }
            Ok(())
        }
    }

    /// The chain the batch test drives: timed punctuated link → flat_map link → fan-out into
    /// a timed sink and a map link over a second leaf.
    fn batch_test_chain() -> (Box<dyn Collector<i64>>, [Log; 2]) {
        let (a, b) = (Log::default(), Log::default());
        let leaf_a = TimedSink::new(a.clone(), OperatorMetrics::new("sink a"));
        let to_b =
            Link::open(MapOp(|x: i64| x + 1000), Box::new(b.clone()), &ctx("map b")).unwrap();
        let fanout = Fanout::new(vec![Box::new(leaf_a), Box::new(to_b)]);
        let flat_map = Link::open(
            FlatMapOp(|x: i64| [x, -x]),
            Box::new(fanout),
            &ctx("flat_map"),
        )
        .unwrap();
        let head = Link::open(PunctuatedOp(0), Box::new(flat_map), &ctx("punctuated"))
            .unwrap()
            .with_metrics(OperatorMetrics::new("punctuated"));
        (Box::new(head), [a, b])
    }

    /// A batch through every wrapper gives exactly the stream of the same records one by one:
    /// same records in the same order, events (from outside and from inside `process`) in the
    /// same places.
    #[test]
    fn batches_give_the_same_stream_as_single_records() {
        let (mut single, single_leaves) = batch_test_chain();
        let (mut batched, batched_leaves) = batch_test_chain();
        let mut next = 0i64;
        // Batch sizes around the link's own batch limit and the timing period.
        for size in [1usize, 5, 0, 300, 17, 700, 2] {
            let batch: Vec<i64> = (next..next + size as i64).collect();
            next += size as i64;
            for r in batch.clone() {
                single.collect(r).unwrap();
            }
            let mut b = batch;
            batched.collect_batch(&mut b).unwrap();
            assert!(b.is_empty(), "the batch is taken");
            single.emit_watermark(Watermark(-next)).unwrap();
            batched.emit_watermark(Watermark(-next)).unwrap();
        }
        single.finish().unwrap();
        batched.finish().unwrap();
        for (s, b) in single_leaves.iter().zip(&batched_leaves) {
            let (s, b) = (s.0.lock().unwrap(), b.0.lock().unwrap());
            assert_eq!(s.iter().filter(|x| x.is_ok()).count(), 2 * next as usize);
            assert!(s.iter().filter(|x| x.is_err()).count() > 7);
            assert_eq!(*s, *b);
        }
    }

    /// Every wrapper a chain is built from passes every control event on, in order with the
    /// records: a timed map link → filter link → flat_map link → fan-out into a timed sink and
    /// a boxed map link over a second leaf.
    #[test]
    fn control_events_pass_through_every_wrapper() {
        let (a, b) = (Arc::default(), Arc::default());
        let leaf_a = TimedSink::new(Shared(Arc::clone(&a)), OperatorMetrics::new("sink a"));
        let to_b = Link::open(
            MapOp(|x: i64| x + 1000),
            Box::new(Shared(Arc::clone(&b))),
            &ctx("map b"),
        )
        .unwrap();
        let fanout = Fanout::new(vec![Box::new(leaf_a), Box::new(to_b)]);
        let flat_map = Link::open(
            FlatMapOp(|x: i64| [x, -x]),
            Box::new(fanout),
            &ctx("flat_map"),
        )
        .unwrap();
        let filter = Link::open(
            FilterOp(|x: &i64| x % 2 == 0),
            Box::new(flat_map),
            &ctx("filter"),
        )
        .unwrap();
        let mut head: Box<dyn Collector<i64>> = Box::new(
            Link::open(MapOp(|x: i64| x * 2), Box::new(filter), &ctx("map"))
                .unwrap()
                .with_metrics(OperatorMetrics::new("map")),
        );
        let barrier = |id| Barrier {
            checkpoint_id: id,
            timestamp_ms: 0,
            kind: CheckpointKind::Aligned,
        };
        head.collect(1).unwrap();
        head.emit_barrier(barrier(1)).unwrap();
        head.collect(2).unwrap();
        head.emit_watermark(Watermark(7)).unwrap();
        head.emit_idleness(true).unwrap();
        head.emit_barrier(barrier(2)).unwrap();
        head.flush().unwrap();
        head.finish().unwrap();
        for (leaf, offset) in [(a, 0), (b, 1000)] {
            let leaf = leaf.lock().unwrap();
            let expected: Vec<i64> = [2, -2, 4, -4].iter().map(|x| x + offset).collect();
            assert_eq!(leaf.records, expected);
            assert_eq!(leaf.barriers, vec![barrier(1), barrier(2)]);
            assert_eq!(leaf.watermarks, vec![Watermark(7)]);
            assert_eq!(leaf.idleness, vec![true]);
            assert_eq!(leaf.flushes, 1);
            assert!(leaf.finished);
        }
    }

    /// Counts the completions it is told of.
    struct Committer(Arc<Mutex<Vec<u64>>>);

    impl Operator<i64, i64> for Committer {
        fn process(&mut self, r: i64, out: &mut dyn Collector<i64>) -> Result<(), OperatorError> {
            out.collect(r)
        }
        fn notify_checkpoint_complete(
            &mut self,
            id: u64,
            _out: &mut dyn Collector<i64>,
        ) -> Result<(), OperatorError> {
            self.0.lock().unwrap().push(id);
            Ok(())
        }
    }

    #[test]
    fn a_checkpoint_completion_reaches_every_operator_of_the_chain_and_its_sink() {
        let (first, second) = (Arc::default(), Arc::default());
        let leaf = Arc::new(Mutex::new(VecCollector::default()));
        let tail = Link::open(
            Committer(Arc::clone(&second)),
            Box::new(Shared(leaf.clone())),
            &ctx("second"),
        )
        .unwrap();
        let mut head =
            Link::open(Committer(Arc::clone(&first)), Box::new(tail), &ctx("first")).unwrap();
        head.collect(1).unwrap();
        head.notify_checkpoint_complete(7).unwrap();
        assert_eq!(*first.lock().unwrap(), vec![7]);
        assert_eq!(*second.lock().unwrap(), vec![7]);
        assert_eq!(leaf.lock().unwrap().completed, vec![7]);
    }
}
