//! Type erasure at the graph level.
//!
//! The DataStream API is fully typed, but a job graph holds nodes of many record types. Each node
//! and edge therefore keeps small factory objects, created where the types were still known, that
//! build the typed runtime pieces (operators bound in a chain, input gates, record writers) behind
//! `Box<dyn Any>`. Downcasts happen once per subtask at deployment, never per record.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use sluice_channel::{ChannelSender, ExchangeConfig, GateCanceller, InputGate, WaitTimes};
use sluice_runtime::chain::{Fanout, Link, TimedSink};
use sluice_runtime::sources::{SourceContext, SourceFunction};
use sluice_runtime::{JobControl, OperatorMetrics, TaskContext, TaskMetrics};
use sluice_types::{
    Collector, CollectorExt, Data, Operator, OperatorContext, OperatorError, ShipStrategy,
};

use crate::selectors;

pub(crate) type AnyBox = Box<dyn Any + Send>;

pub(crate) fn boxed_collector<T: Data>(c: Box<dyn Collector<T>>) -> AnyBox {
    Box::new(c)
}

/// Takes back the typed collector boxed by [`boxed_collector`]. Graph wiring connects collectors
/// of matching record types, so a mismatch is a wiring bug: reported as the subtask's failure.
pub(crate) fn unbox_collector<T: Data>(b: AnyBox) -> Result<Box<dyn Collector<T>>, OperatorError> {
    b.downcast::<Box<dyn Collector<T>>>()
        .map(|c| *c)
        .map_err(|_| wiring_mismatch::<T>("collector"))
}

/// The error for a type-erased value that is not of the record type `T` the wiring expected.
fn wiring_mismatch<T>(what: &str) -> OperatorError {
    OperatorError::failed(format!(
        "graph wiring bug: {what} is not of record type {}",
        std::any::type_name::<T>()
    ))
}

/// Typed operations on one record type.
pub(crate) trait TypeOps: Send + Sync {
    /// The record type: what finds its wire operations ([`crate::placement`]) and names it in
    /// errors.
    fn record_type(&self) -> (std::any::TypeId, &'static str);
    /// One collector feeding every collector in `outs` (chained successors and writers), or
    /// the only one itself.
    fn fanout(&self, outs: Vec<AnyBox>) -> Result<AnyBox, OperatorError>;
    /// Marks the channel of `sender` (a boxed `ChannelSender` of this type) as crossing to
    /// another process (`ChannelCounters::remote`).
    fn mark_remote(&self, sender: &AnyBox);
    fn make_gate(
        &self,
        channels: usize,
        cfg: &ExchangeConfig,
        waits: Arc<WaitTimes>,
    ) -> (AnyBox, GateCanceller, Vec<AnyBox>);
    fn run_input(&self, gate: AnyBox, head: AnyBox, ctx: &TaskContext)
        -> Result<(), OperatorError>;
}

pub(crate) struct TypeOpsImpl<T>(PhantomData<fn() -> T>);

pub(crate) fn type_ops<T: Data>() -> Arc<dyn TypeOps> {
    Arc::new(TypeOpsImpl::<T>(PhantomData))
}

impl<T: Data> TypeOps for TypeOpsImpl<T> {
    fn record_type(&self) -> (std::any::TypeId, &'static str) {
        (std::any::TypeId::of::<T>(), std::any::type_name::<T>())
    }

    fn fanout(&self, outs: Vec<AnyBox>) -> Result<AnyBox, OperatorError> {
        let outs = match <[AnyBox; 1]>::try_from(outs) {
            Ok([only]) => return Ok(only),
            Err(outs) => outs,
        };
        let outs = outs
            .into_iter()
            .map(unbox_collector::<T>)
            .collect::<Result<_, _>>()?;
        Ok(boxed_collector::<T>(Box::new(Fanout::new(outs))))
    }

    fn mark_remote(&self, sender: &AnyBox) {
        if let Some(s) = sender.downcast_ref::<sluice_channel::ChannelSender<T>>() {
            s.counters()
                .remote
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn make_gate(
        &self,
        channels: usize,
        cfg: &ExchangeConfig,
        waits: Arc<WaitTimes>,
    ) -> (AnyBox, GateCanceller, Vec<AnyBox>) {
        let (gate, senders) = InputGate::<T>::new(channels, cfg, waits);
        let canceller = gate.canceller();
        let senders = senders.into_iter().map(|s| Box::new(s) as AnyBox).collect();
        (Box::new(gate), canceller, senders)
    }

    fn run_input(
        &self,
        gate: AnyBox,
        head: AnyBox,
        ctx: &TaskContext,
    ) -> Result<(), OperatorError> {
        let gate = *gate
            .downcast::<InputGate<T>>()
            .map_err(|_| wiring_mismatch::<T>("the input gate"))?;
        let mut head = unbox_collector::<T>(head)?;
        sluice_runtime::input::run_one_input(gate, &mut *head, ctx)
    }
}

/// Everything a record writer needs besides its channels.
pub(crate) struct WriterArgs {
    pub strategy: ShipStrategy,
    pub downstream_parallelism: usize,
    pub downstream_max_parallelism: u32,
    /// Seeds REBALANCE's random start and SHUFFLE: derived from the edge and subtask so runs repeat.
    pub seed: u64,
    pub cfg: ExchangeConfig,
    pub control: Arc<JobControl>,
    pub metrics: Arc<TaskMetrics>,
    /// The output gate's overdraft allowance (tasks with an input only).
    pub overdraft: Option<Arc<sluice_channel::OverdraftBudget>>,
}

/// Builds the writer for one edge of a stream of `T` (captures the key function of a HASH edge).
pub(crate) trait WriterFactory: Send + Sync {
    /// The record writer over `senders` (boxed `ChannelSender`s of the edge's record type).
    fn make_writer(&self, senders: Vec<AnyBox>, args: WriterArgs) -> Result<AnyBox, OperatorError>;
}

/// The key hash of a HASH edge when it has none: never called (edges of other strategies).
pub(crate) type NoKeyHash<T> = fn(&T) -> i32;

/// Builds the writers of one edge; `H` is the HASH edge's key hash (`key.hashCode()` of the
/// key selector) as its concrete closure type, so the selector calls it statically per record.
pub(crate) struct TypedWriterFactory<T, H = NoKeyHash<T>> {
    pub key_hash: Option<H>,
    pub _t: PhantomData<fn(&T)>,
}

impl<T> TypedWriterFactory<T> {
    /// A writer factory for an edge without a key.
    pub(crate) fn unkeyed() -> Self {
        TypedWriterFactory {
            key_hash: None,
            _t: PhantomData,
        }
    }
}

impl<T: Data, H> WriterFactory for TypedWriterFactory<T, H>
where
    H: Fn(&T) -> i32 + Clone + Send + Sync + 'static,
{
    fn make_writer(&self, senders: Vec<AnyBox>, a: WriterArgs) -> Result<AnyBox, OperatorError> {
        let writers: Vec<_> = senders
            .into_iter()
            .map(|s| {
                let s = *s
                    .downcast::<ChannelSender<T>>()
                    .map_err(|_| wiring_mismatch::<T>("a channel sender"))?;
                let w = s.into_writer(&a.cfg, a.metrics.waits.clone());
                Ok(match &a.overdraft {
                    Some(b) => w.with_overdraft(b.clone()),
                    None => w,
                })
            })
            .collect::<Result<_, OperatorError>>()?;
        let key_hash = self.key_hash.clone();
        let c: Box<dyn Collector<T>> = selectors::record_writer(writers, a, key_hash)?;
        Ok(boxed_collector(c))
    }
}

/// A source node: creates the subtask's source function and returns the closure that runs it
/// into the chain.
pub(crate) trait SourceFactory: Send + Sync {
    fn runner(&self, op: &OperatorContext, out: AnyBox) -> Result<SourceRunner, OperatorError>;
}

pub(crate) type SourceRunner = Box<dyn FnOnce(&SourceContext) -> Result<(), OperatorError> + Send>;

pub(crate) struct TypedSourceFactory<T, F> {
    pub make: F,
    pub _t: PhantomData<fn() -> T>,
}

impl<T, F, S> SourceFactory for TypedSourceFactory<T, F>
where
    T: Data,
    S: SourceFunction<T> + 'static,
    F: Fn(usize, usize) -> Result<S, OperatorError> + Send + Sync,
{
    fn runner(&self, op: &OperatorContext, out: AnyBox) -> Result<SourceRunner, OperatorError> {
        let mut src = (self.make)(op.subtask_index, op.parallelism)?;
        let mut restored_dead_letters = 0;
        if let Some(restored) = sluice_runtime::services::restored_parts(op) {
            let (positions, dead_letters) =
                sluice_runtime::sources::dead_letter_count::unframe(&restored.parts)?;
            src.restore_position(&positions, op)?;
            // Every new subtask sees every old position: the operator's count is taken once.
            if op.subtask_index == 0 {
                restored_dead_letters = dead_letters;
            }
        }
        let mut out = unbox_collector::<T>(out)?;
        Ok(Box::new(move |ctx: &SourceContext| {
            ctx.restore_dead_letters(restored_dead_letters);
            let ran = src.run(ctx, &mut *out);
            if matches!(ran, Err(OperatorError::Cancelled)) {
                // Cancelled (a stop-with-savepoint, or a failure elsewhere): a checkpoint that
                // completed meanwhile is the chain's to commit before the task ends.
                let _ = ctx.notify_completed(&mut *out);
            }
            ran?;
            // Flink: a bounded source ends with the maximal watermark, so every event-time
            // timer and window downstream fires.
            out.emit_watermark(sluice_types::Watermark::MAX)?;
            out.finish()
        }))
    }
}

/// A one-input operator node: binds a fresh operator instance to its output collector.
pub(crate) trait OperatorFactory: Send + Sync {
    fn bind(
        &self,
        out: AnyBox,
        ctx: &OperatorContext,
        metrics: Option<Arc<OperatorMetrics>>,
    ) -> Result<AnyBox, OperatorError>;
}

pub(crate) struct TypedOperatorFactory<In, Out, F> {
    pub make: F,
    pub _t: PhantomData<fn(In) -> Out>,
}

impl<In, Out, F, Op> OperatorFactory for TypedOperatorFactory<In, Out, F>
where
    In: Data,
    Out: Data,
    Op: Operator<In, Out> + 'static,
    F: Fn(&OperatorContext) -> Op + Send + Sync,
{
    fn bind(
        &self,
        out: AnyBox,
        ctx: &OperatorContext,
        metrics: Option<Arc<OperatorMetrics>>,
    ) -> Result<AnyBox, OperatorError> {
        let op = (self.make)(ctx);
        let link = Link::open(op, unbox_collector::<Out>(out)?, ctx)?;
        Ok(match metrics {
            Some(m) => boxed_collector::<In>(Box::new(link.with_metrics(m))),
            None => boxed_collector::<In>(Box::new(link)),
        })
    }
}

/// A sink node: creates the subtask's sink collector.
pub(crate) trait SinkFactory: Send + Sync {
    /// Called once per deployment, before any subtask starts (e.g. to size a collect handle).
    fn prepare(&self, _deployment: &crate::SinkDeployment) -> Result<(), OperatorError> {
        Ok(())
    }
    fn create(
        &self,
        ctx: &OperatorContext,
        metrics: Option<Arc<OperatorMetrics>>,
    ) -> Result<AnyBox, OperatorError>;
}

pub(crate) struct TypedSinkFactory<T, C, P, F> {
    pub prepare: P,
    pub make: F,
    pub _t: PhantomData<fn(T) -> C>,
}

impl<T, C, P, F> SinkFactory for TypedSinkFactory<T, C, P, F>
where
    T: Data,
    C: Collector<T> + 'static,
    P: Fn(&crate::SinkDeployment) -> Result<(), OperatorError> + Send + Sync,
    F: Fn(&OperatorContext) -> Result<C, OperatorError> + Send + Sync,
{
    fn prepare(&self, deployment: &crate::SinkDeployment) -> Result<(), OperatorError> {
        (self.prepare)(deployment)
    }
    fn create(
        &self,
        ctx: &OperatorContext,
        metrics: Option<Arc<OperatorMetrics>>,
    ) -> Result<AnyBox, OperatorError> {
        let sink = (self.make)(ctx)?;
        Ok(match metrics {
            Some(m) => boxed_collector::<T>(Box::new(TimedSink::new(sink, m))),
            None => boxed_collector::<T>(Box::new(sink)),
        })
    }
}
