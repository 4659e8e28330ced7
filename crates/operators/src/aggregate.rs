//! Keyed aggregations on keyed state: `aggregate` (rolling or final) and `reduce_final`.

use std::marker::PhantomData;

use sluice_types::{Collector, Operator, OperatorContext, OperatorError};

use sluice_state::{
    instance_dir_name, AggregateFunction, KeyedStateConfig, KeyedStateStore, StateKey, StateValue,
};

/// When a keyed aggregation emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggregateEmit {
    /// After every record: the key's updated result (like Flink's rolling `reduce`/`sum`).
    Rolling,
    /// Only at end of input: one final result per key (bounded inputs). Keys are emitted by key
    /// group, then by serialized key, the same order on both state backends.
    Final,
}

/// The state name the aggregation operators keep their accumulators under.
pub const AGGREGATE_STATE: &str = "aggregate";
/// The state name of [`ReduceFinalOp`].
pub const REDUCE_STATE: &str = "reduce";

pub(crate) fn open_store<K: StateKey>(
    config: &KeyedStateConfig<K>,
    ctx: &OperatorContext,
) -> Result<KeyedStateStore<K>, OperatorError> {
    let mut store = KeyedStateStore::open(
        &config.backend,
        &instance_dir_name(&ctx.operator_name, ctx.subtask_index),
        config.key_groups.clone(),
    )?;
    store.attach_metrics(crate::services::task_metrics(ctx));
    Ok(store)
}

pub(crate) fn not_open() -> OperatorError {
    OperatorError::failed("keyed operator used before open()")
}

/// The store lost the key it was just given (a store bug): fails the task.
pub(crate) fn no_current_key() -> OperatorError {
    OperatorError::failed("keyed state has no current key right after setting it")
}

/// The checkpoint of an operator whose only state is its keyed store (no timers).
pub(crate) fn snapshot_store<K: StateKey>(
    store: &Option<KeyedStateStore<K>>,
) -> Result<Option<Vec<u8>>, OperatorError> {
    let store = store.as_ref().ok_or_else(not_open)?;
    sluice_state::snapshot::snapshot_keyed(store, &[]).map(Some)
}

pub(crate) fn restore_store<K: StateKey>(
    store: &mut Option<KeyedStateStore<K>>,
    parts: &[(usize, Vec<u8>)],
) -> Result<(), OperatorError> {
    let store = store.as_mut().ok_or_else(not_open)?;
    sluice_state::snapshot::restore_keyed(store, &mut [], parts)
}

/// `KeyedStream::aggregate`: per key, an accumulator in an `AggregatingState`; emits
/// `(key, result)` per record ([`AggregateEmit::Rolling`]) or per key at end of input
/// ([`AggregateEmit::Final`]).
pub struct AggregateOp<K, IN, ACC, OUT, KS, A> {
    key_of: KS,
    config: KeyedStateConfig<K>,
    agg: A,
    emit: AggregateEmit,
    store: Option<KeyedStateStore<K>>,
    _t: PhantomData<fn(IN) -> (ACC, OUT)>,
}

impl<K, IN, ACC, OUT, KS, A> AggregateOp<K, IN, ACC, OUT, KS, A> {
    /// Keys records by `key_of` and aggregates each key's records with `agg`; the store opens
    /// with the operator.
    pub fn new(key_of: KS, config: KeyedStateConfig<K>, agg: A, emit: AggregateEmit) -> Self {
        AggregateOp {
            key_of,
            config,
            agg,
            emit,
            store: None,
            _t: PhantomData,
        }
    }

    /// The subtask's state (after `open`).
    pub fn state(&self) -> Option<&KeyedStateStore<K>> {
        self.store.as_ref()
    }
}

impl<K, IN, ACC, OUT, KS, A> Operator<IN, (K, OUT)> for AggregateOp<K, IN, ACC, OUT, KS, A>
where
    K: StateKey,
    IN: Send,
    ACC: StateValue,
    OUT: Send,
    KS: Fn(&IN) -> K + Send,
    A: AggregateFunction<IN, ACC, OUT>,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.store = Some(open_store(&self.config, ctx)?);
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        snapshot_store(&self.store)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        restore_store(&mut self.store, parts)
    }

    #[inline]
    fn process(&mut self, r: IN, out: &mut dyn Collector<(K, OUT)>) -> Result<(), OperatorError> {
        let key = (self.key_of)(&r);
        let kg = (self.config.key_group_of)(&key);
        let store = self.store.as_mut().ok_or_else(not_open)?;
        store.set_current_key(key, kg)?;
        match self.emit {
            AggregateEmit::Rolling => {
                let result = store
                    .aggregating_state(AGGREGATE_STATE, &self.agg)
                    .add_and_get(r)?;
                let key = store.current_key().ok_or_else(no_current_key)?.clone();
                out.collect((key, result))
            }
            AggregateEmit::Final => store.aggregating_state(AGGREGATE_STATE, &self.agg).add(r),
        }
    }

    fn finish(&mut self, out: &mut dyn Collector<(K, OUT)>) -> Result<(), OperatorError> {
        if self.emit != AggregateEmit::Final {
            return Ok(());
        }
        let store = self.store.as_mut().ok_or_else(not_open)?;
        for (kg, key) in store.keys(AGGREGATE_STATE)? {
            store.set_current_key(key, kg)?;
            if let Some(result) = store.aggregating_state(AGGREGATE_STATE, &self.agg).get()? {
                let key = store.current_key().ok_or_else(no_current_key)?.clone();
                out.collect((key, result))?;
            }
        }
        Ok(())
    }
}

/// `KeyedStream::reduce_final`: per key, a `ReducingState`; emits each key's reduced value once,
/// at end of input (by key group, then serialized key).
pub struct ReduceFinalOp<K, T, KS, R> {
    key_of: KS,
    config: KeyedStateConfig<K>,
    reduce: R,
    store: Option<KeyedStateStore<K>>,
    _t: PhantomData<fn(T) -> T>,
}

impl<K, T, KS, R> ReduceFinalOp<K, T, KS, R> {
    /// Keys records by `key_of` and folds each key's records with `reduce`.
    pub fn new(key_of: KS, config: KeyedStateConfig<K>, reduce: R) -> Self {
        ReduceFinalOp {
            key_of,
            config,
            reduce,
            store: None,
            _t: PhantomData,
        }
    }

    /// The subtask's state (after `open`).
    pub fn state(&self) -> Option<&KeyedStateStore<K>> {
        self.store.as_ref()
    }
}

impl<K, T, KS, R> Operator<T, T> for ReduceFinalOp<K, T, KS, R>
where
    K: StateKey,
    T: StateValue,
    KS: Fn(&T) -> K + Send,
    R: Fn(T, T) -> T + Send,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.store = Some(open_store(&self.config, ctx)?);
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        snapshot_store(&self.store)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        restore_store(&mut self.store, parts)
    }

    #[inline]
    fn process(&mut self, r: T, _out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let key = (self.key_of)(&r);
        let kg = (self.config.key_group_of)(&key);
        let store = self.store.as_mut().ok_or_else(not_open)?;
        store.set_current_key(key, kg)?;
        store.reducing_state(REDUCE_STATE, &self.reduce).add(r)
    }

    fn finish(&mut self, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let store = self.store.as_mut().ok_or_else(not_open)?;
        for (kg, key) in store.keys(REDUCE_STATE)? {
            store.set_current_key(key, kg)?;
            if let Some(v) = store.reducing_state(REDUCE_STATE, &self.reduce).get()? {
                out.collect(v)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_state::StateBackendKind;
    use sluice_types::VecCollector;
    use std::sync::Arc;

    struct Avg;
    impl AggregateFunction<(u8, i64), (i64, i64), f64> for Avg {
        fn create_accumulator(&self) -> (i64, i64) {
            (0, 0)
        }
        fn add(&self, v: (u8, i64), a: (i64, i64)) -> (i64, i64) {
            (a.0 + v.1, a.1 + 1)
        }
        fn merge(&self, a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
            (a.0 + b.0, a.1 + b.1)
        }
        fn get_result(&self, a: &(i64, i64)) -> f64 {
            a.0 as f64 / a.1 as f64
        }
    }

    fn config() -> KeyedStateConfig<u8> {
        KeyedStateConfig {
            backend: StateBackendKind::Memory,
            key_group_of: Arc::new(|k: &u8| u32::from(*k % 8)),
            key_groups: 0..=7,
        }
    }

    fn ctx() -> OperatorContext {
        OperatorContext {
            operator_name: "Aggregate".into(),
            task_name: "Aggregate".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 8,
            operator_id: "op".into(),
            services: sluice_types::ServicesHandle::none(),
            options: Vec::new(),
        }
    }

    const INPUT: [(u8, i64); 5] = [(9, 4), (2, 1), (9, 8), (2, 5), (9, 0)];

    #[test]
    fn rolling_aggregate_emits_per_record_and_final_once_per_key() {
        let mut rolling =
            AggregateOp::new(|r: &(u8, i64)| r.0, config(), Avg, AggregateEmit::Rolling);
        let mut fin = AggregateOp::new(|r: &(u8, i64)| r.0, config(), Avg, AggregateEmit::Final);
        rolling.open(&ctx()).unwrap();
        fin.open(&ctx()).unwrap();
        let (mut a, mut b) = (VecCollector::default(), VecCollector::default());
        for r in INPUT {
            rolling.process(r, &mut a).unwrap();
            fin.process(r, &mut b).unwrap();
        }
        rolling.finish(&mut a).unwrap();
        fin.finish(&mut b).unwrap();
        assert_eq!(
            a.records,
            vec![(9, 4.0), (2, 1.0), (9, 6.0), (2, 3.0), (9, 4.0)]
        );
        // Key 9 is in key group 1, key 2 in key group 2.
        assert_eq!(b.records, vec![(9, 4.0), (2, 3.0)]);
    }

    #[test]
    fn reduce_final_emits_the_last_rolling_value_per_key() {
        let mut op = ReduceFinalOp::new(
            |r: &(u8, i64)| r.0,
            config(),
            |a: (u8, i64), b: (u8, i64)| (a.0, a.1.max(b.1)),
        );
        op.open(&ctx()).unwrap();
        let mut out = VecCollector::default();
        for r in INPUT {
            op.process(r, &mut out).unwrap();
        }
        assert!(out.records.is_empty());
        op.finish(&mut out).unwrap();
        assert_eq!(out.records, vec![(9, 8), (2, 5)]);
    }
}
