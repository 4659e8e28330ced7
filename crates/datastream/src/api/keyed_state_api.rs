//! Keyed state in the DataStream API: [`KeyedStream::process`] (a [`KeyedProcessFunction`] with
//! state and processing-time timers), [`KeyedStream::aggregate`] /
//! [`KeyedStream::aggregate_final`] (an [`AggregateFunction`] per key) and
//! [`KeyedStream::reduce_final`]; and the job's state backend ([`StreamEnv::set_state_backend`]).
//!
//! The operators run in `sluice-runtime` (`operators::{KeyedProcessOp, AggregateOp,
//! ReduceFinalOp}` over `state::KeyedStateStore`); this file gives them what only the graph layer
//! knows: Flink's key → key group assignment and the subtask's key-group range.

use std::sync::Arc;

use sluice_runtime::operators::{AggregateEmit, AggregateOp, KeyedProcessOp, ReduceFinalOp};
use sluice_runtime::state::{KeyedStateConfig, StateKey, StateValue};
use sluice_types::{Data, OperatorContext};

pub use sluice_runtime::operators::{
    KeyedProcessFunction, OnTimerContext, ProcessContext, TimerServiceRef,
};
pub use sluice_runtime::state::{AggregateFunction, StateBackendKind};

use crate::partition::{assign_to_key_group, key_group_range_for_subtask, JavaHash};
use crate::{DataStream, KeySelector, KeyedStream, StreamEnv};

impl StreamEnv {
    /// Where keyed state lives (Flink's `state.backend.type`): [`StateBackendKind::Memory`] (the
    /// default) or [`StateBackendKind::Lsm`]. Applies to the stateful keyed operators added after
    /// this call, so set it before building the job.
    pub fn set_state_backend(&self, backend: StateBackendKind) -> &Self {
        self.inner.borrow_mut().config.state_backend = backend;
        self
    }

    /// The state backend stateful keyed operators added now will use.
    pub fn state_backend(&self) -> StateBackendKind {
        self.inner.borrow().config.state_backend.clone()
    }
}

/// The state setup of one keyed operator subtask: Flink's key group of a key (Java `hashCode`,
/// murmur, modulo the operator's max parallelism) and the subtask's key-group range.
pub(crate) fn state_config<K: JavaHash + 'static>(
    backend: &StateBackendKind,
    ctx: &OperatorContext,
) -> KeyedStateConfig<K> {
    let max_parallelism = ctx.max_parallelism;
    let range = key_group_range_for_subtask(
        max_parallelism,
        ctx.parallelism as u32,
        ctx.subtask_index as u32,
    );
    KeyedStateConfig {
        backend: backend.clone(),
        key_group_of: Arc::new(move |k: &K| {
            assign_to_key_group(k.java_hash_code(), max_parallelism)
        }),
        key_groups: range.start..=range.end,
    }
}

impl<K, T, KS> KeyedStream<K, T, KS>
where
    K: JavaHash + StateKey + Sync,
    T: Data,
    KS: KeySelector<T, K>,
{
    /// Applies a [`KeyedProcessFunction`] (operator name `KeyedProcess`): per record, with the
    /// record's key as the current key, the function reads and writes keyed state and registers
    /// processing-time timers; `on_timer` runs when they fire. Each subtask gets a clone of `f`.
    ///
    /// Processing-time timers fire at most about one buffer timeout late (never while the buffer
    /// timeout is 0 and no record arrives); at end of input only timers already due fire, later
    /// ones are dropped, as in Flink.
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Data,
        F: KeyedProcessFunction<K, T, O> + Clone + Sync + 'static,
    {
        self.process_with_timestamps(f, None)
    }

    /// `process`, giving the function each element's timestamp when `timestamps` is set.
    pub(crate) fn process_with_timestamps<O, F>(
        &self,
        f: F,
        timestamps: Option<sluice_runtime::operators::TimestampFn<T>>,
    ) -> DataStream<O>
    where
        O: Data,
        F: KeyedProcessFunction<K, T, O> + Clone + Sync + 'static,
    {
        let key = self.key.clone();
        let backend = self.stream.env.state_backend();
        self.stream.transform("KeyedProcess", move |ctx| {
            let key = key.clone();
            KeyedProcessOp::new(
                move |r: &T| key.key_of(r),
                state_config::<K>(&backend, ctx),
                f.clone(),
            )
            .with_timestamps(timestamps.clone())
        })
    }

    fn aggregate_with<ACC, OUT, A>(
        &self,
        name: &str,
        agg: A,
        emit: AggregateEmit,
    ) -> DataStream<(K, OUT)>
    where
        ACC: StateValue,
        OUT: Data,
        A: AggregateFunction<T, ACC, OUT> + 'static,
    {
        let key = self.key.clone();
        let agg = Arc::new(agg);
        let backend = self.stream.env.state_backend();
        self.stream.transform(name, move |ctx| {
            let key = key.clone();
            AggregateOp::new(
                move |r: &T| key.key_of(r),
                state_config::<K>(&backend, ctx),
                agg.clone(),
                emit,
            )
        })
    }

    /// Rolling aggregation (operator name `Aggregate`): per key, each record is added to the
    /// key's accumulator (kept in keyed state) and `(key, result)` is emitted, one output per
    /// input.
    pub fn aggregate<ACC, OUT, A>(&self, agg: A) -> DataStream<(K, OUT)>
    where
        ACC: StateValue,
        OUT: Data,
        A: AggregateFunction<T, ACC, OUT> + 'static,
    {
        self.aggregate_with("Aggregate", agg, AggregateEmit::Rolling)
    }

    /// Final aggregation of a bounded input (operator name `Final Aggregate`): like
    /// [`aggregate`](Self::aggregate), but emits only once per key, `(key, final result)`, at end
    /// of input; equal to the last value `aggregate` emits for the key. Per subtask, keys come out
    /// by key group and then serialized key, on either state backend.
    pub fn aggregate_final<ACC, OUT, A>(&self, agg: A) -> DataStream<(K, OUT)>
    where
        ACC: StateValue,
        OUT: Data,
        A: AggregateFunction<T, ACC, OUT> + 'static,
    {
        self.aggregate_with("Final Aggregate", agg, AggregateEmit::Final)
    }

    /// Final reduce of a bounded input (operator name `Final Reduce`): per key,
    /// `reduce(current, record)` is kept in keyed state and the reduced value is emitted once, at
    /// end of input; equal to the last value the rolling [`reduce`](Self::reduce) emits for the
    /// key.
    pub fn reduce_final<R>(&self, reduce: R) -> DataStream<T>
    where
        T: StateValue,
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        let key = self.key.clone();
        let backend = self.stream.env.state_backend();
        self.stream.transform("Final Reduce", move |ctx| {
            let key = key.clone();
            ReduceFinalOp::new(
                move |r: &T| key.key_of(r),
                state_config::<K>(&backend, ctx),
                reduce.clone(),
            )
        })
    }
}
