use std::hash::Hash;

use sluice_types::{Collector, Operator, OperatorContext, OperatorError};

use super::aggregate::{open_store, restore_store, snapshot_store};
use crate::hotkeys::{HotKeysConfig, HotKeysHook};
use crate::state::{KeyedStateConfig, KeyedStateStore, StateBackendKind, StateKind};

/// The value state a rolling reduce keeps its per-key result under. The two-phase combiner
/// ([`super::CombineOp`]) keeps the same state under the same name, which is what lets a
/// savepoint of either form restore into the other.
pub const ROLLING_STATE: &str = "rolling";

/// Rolling keyed reduce, as Flink's `StreamGroupedReduceOperator`: for each record, combine it
/// with the key's current value (`reduce(current, record)`), store the result and emit it. The
/// first record of a key is stored and emitted as is. One output per input.
///
/// The per-key value lives in the subtask's [`KeyedStateStore`] (value state
/// [`ROLLING_STATE`]) on the job's backend, so it is checkpointed by key group like every
/// other keyed state and its access time counts as state access.
///
/// With [`with_hot_keys`](Self::with_hot_keys) it also sketches its keys (see
/// [`crate::hotkeys`]): one decrement per record, 1 record in 8 offered to the sketch.
pub struct KeyedReduceOp<K, T, KS, R> {
    key_of: KS,
    reduce: R,
    config: KeyedStateConfig<K>,
    store: Option<KeyedStateStore<K>>,
    hot_keys: HotKeysHook<K>,
    _t: std::marker::PhantomData<fn(T) -> T>,
}

impl<K, T, KS, R> KeyedReduceOp<K, T, KS, R> {
    /// A reduce on the memory backend with every key in key group 0 (for tests and embedding;
    /// jobs use [`with_state`](Self::with_state)).
    pub fn new(key_of: KS, reduce: R) -> Self {
        KeyedReduceOp {
            key_of,
            reduce,
            config: KeyedStateConfig {
                backend: StateBackendKind::Memory,
                key_group_of: std::sync::Arc::new(|_: &K| 0),
                key_groups: 0..=0,
            },
            store: None,
            hot_keys: HotKeysHook::default(),
            _t: std::marker::PhantomData,
        }
    }

    /// Keeps the state on `config`'s backend, by Flink's key groups (a restore keeps exactly
    /// the keys of the subtask's range).
    pub fn with_state(mut self, config: KeyedStateConfig<K>) -> Self {
        self.config = config;
        self
    }

    /// Reports this subtask's hot keys (default sketch settings), keys rendered by `to_string`
    /// (e.g. [`crate::hotkeys::display_key`]). Attaches in `open` to the task entered with
    /// [`crate::hotkeys::enter_task`] on the task thread; stays off without one.
    pub fn with_hot_keys<F>(self, to_string: F) -> Self
    where
        K: Hash + Eq + Clone + Send + 'static,
        F: Fn(&K) -> String + Send + 'static,
    {
        self.with_hot_keys_config(HotKeysConfig::default(), to_string)
    }

    /// [`with_hot_keys`](Self::with_hot_keys) with explicit sketch settings.
    pub fn with_hot_keys_config<F>(mut self, cfg: HotKeysConfig, to_string: F) -> Self
    where
        K: Hash + Eq + Clone + Send + 'static,
        F: Fn(&K) -> String + Send + 'static,
    {
        self.hot_keys = HotKeysHook::new(cfg, to_string);
        self
    }

    /// Whether the hot-key sketch is attached (after `open`).
    pub fn hot_keys_active(&self) -> bool {
        self.hot_keys.is_active()
    }

    /// The subtask's state (after `open`).
    pub fn state(&self) -> Option<&KeyedStateStore<K>> {
        self.store.as_ref()
    }
}

/// The context of an operator used outside a task (unit tests, embedding).
fn standalone_context() -> OperatorContext {
    OperatorContext {
        operator_name: "Keyed Reduce".into(),
        task_name: "Keyed Reduce".into(),
        subtask_index: 0,
        parallelism: 1,
        max_parallelism: 128,
        operator_id: String::new(),
    }
}

impl<K, T, KS, R> Operator<T, T> for KeyedReduceOp<K, T, KS, R>
where
    K: crate::state::StateKey,
    T: crate::state::StateValue,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    #[inline]
    fn process(&mut self, r: T, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let key = (self.key_of)(&r);
        self.hot_keys.observe(&key);
        let kg = (self.config.key_group_of)(&key);
        let store = match &mut self.store {
            Some(s) => s,
            // Embedded use without a task: open on first use.
            None => self
                .store
                .insert(open_store(&self.config, &standalone_context())?),
        };
        store.set_current_key(key, kg)?;
        let reduce = &mut self.reduce;
        let next = store.value_modify::<T, T>(ROLLING_STATE, StateKind::Value, |old| {
            let next = match old {
                Some(acc) => reduce(acc, r),
                None => r,
            };
            (Some(next.clone()), next)
        })?;
        out.collect(next)
    }

    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.store = Some(open_store(&self.config, ctx)?);
        self.hot_keys.open(ctx.subtask_index as u64);
        Ok(())
    }

    fn finish(&mut self, _out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        self.hot_keys.publish();
        Ok(())
    }

    fn tick(&mut self, _out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        self.hot_keys.tick();
        Ok(())
    }

    /// The keyed store's snapshot ([`crate::state::snapshot`]): entries by key group.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        snapshot_store(&self.store)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        restore_store(&mut self.store, parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_types::VecCollector;

    #[test]
    fn emits_one_running_value_per_input_per_key() {
        let mut op = KeyedReduceOp::new(
            |r: &(u8, i64)| r.0,
            |a: (u8, i64), b: (u8, i64)| (a.0, a.1 + b.1),
        );
        let mut out = VecCollector::default();
        for r in [(1, 5), (2, 1), (1, 7), (1, -2), (2, 10)] {
            op.process(r, &mut out).unwrap();
        }
        assert_eq!(out.records, vec![(1, 5), (2, 1), (1, 12), (1, 10), (2, 11)]);
    }

    #[test]
    fn publishes_hot_keys_of_the_entered_task_at_finish() {
        use std::sync::Arc;
        let metrics = Arc::new(crate::TaskMetrics::default());
        let _task = crate::hotkeys::enter_task(metrics.clone());
        let mut op = KeyedReduceOp::new(
            |r: &(u8, i64)| r.0,
            |a: (u8, i64), b: (u8, i64)| (a.0, a.1 + b.1),
        )
        .with_hot_keys(crate::hotkeys::display_key);
        assert!(!op.hot_keys_active());
        let ctx = OperatorContext {
            operator_name: "Keyed Aggregation".into(),
            task_name: "Keyed Aggregation".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 128,
            operator_id: "op".into(),
        };
        op.open(&ctx).unwrap();
        assert!(op.hot_keys_active());
        let mut out = VecCollector::default();
        for i in 0..8000 {
            op.process((if i % 4 == 0 { 2 } else { 7 }, 1), &mut out)
                .unwrap();
        }
        op.finish(&mut out).unwrap();
        let snap = crate::hotkeys::subtask_hot_keys(&metrics).unwrap();
        assert_eq!(snap.subtask_records, 8000);
        assert_eq!(snap.keys[0].key, "7");
        assert!(
            (snap.keys[0].share_of_subtask - 0.75).abs() < 0.05,
            "{snap:?}"
        );
        assert_eq!(out.records.len(), 8000);
    }
}
