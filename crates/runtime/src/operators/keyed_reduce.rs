use std::hash::Hash;

use sluice_types::{Collector, Operator, OperatorContext, OperatorError};

use crate::fasthash::FastHashMap;
use crate::hotkeys::{HotKeysConfig, HotKeysHook};

/// Rolling keyed reduce, as Flink's `StreamGroupedReduceOperator`: for each record, combine it
/// with the key's current value (`reduce(current, record)`), store the result and emit it. The
/// first record of a key is stored and emitted as is. One output per input.
///
/// State lives in an in-memory hash map scoped to this subtask (the subtask only ever sees keys of
/// its own key groups); the full keyed-state backends replace it in a later stage.
///
/// With [`with_hot_keys`](Self::with_hot_keys) it also sketches its keys (see
/// [`crate::hotkeys`]): one decrement per record, 1 record in 8 offered to the sketch.
pub struct KeyedReduceOp<K, T, KS, R> {
    key_of: KS,
    reduce: R,
    state: FastHashMap<K, T>,
    hot_keys: HotKeysHook<K>,
    /// Key groups for checkpoints (which keys a restored subtask keeps).
    key_groups: Option<(crate::state::KeyGroupFn<K>, std::ops::RangeInclusive<u32>)>,
}

impl<K, T, KS, R> KeyedReduceOp<K, T, KS, R> {
    pub fn new(key_of: KS, reduce: R) -> Self {
        KeyedReduceOp {
            key_of,
            reduce,
            state: FastHashMap::default(),
            hot_keys: HotKeysHook::default(),
            key_groups: None,
        }
    }

    /// Makes the state checkpointable by key group: `key_group_of` is Flink's key → key group,
    /// `range` the subtask's key groups (a restore keeps exactly the keys in it).
    pub fn with_key_groups(
        mut self,
        key_group_of: crate::state::KeyGroupFn<K>,
        range: std::ops::RangeInclusive<u32>,
    ) -> Self {
        self.key_groups = Some((key_group_of, range));
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

    /// Number of keys with state.
    pub fn keys(&self) -> usize {
        self.state.len()
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
        match self.state.get_mut(&key) {
            Some(acc) => {
                let next = (self.reduce)(acc.clone(), r);
                acc.clone_from(&next);
                out.collect(next)
            }
            None => {
                self.state.insert(key, r.clone());
                out.collect(r)
            }
        }
    }

    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
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

    /// `[(key group, key, value)]`, postcard-encoded.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        let kg_of = self.key_groups.as_ref().map(|(f, _)| f.clone());
        let mut entries: Vec<(u32, &K, &T)> = self
            .state
            .iter()
            .map(|(k, v)| (kg_of.as_ref().map_or(0, |f| f(k)), k, v))
            .collect();
        entries.sort_by_key(|e| e.0);
        crate::state::layout::encode(&entries).map(Some)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        for (_, bytes) in parts {
            let entries: Vec<(u32, K, T)> = crate::state::layout::decode(bytes)?;
            for (kg, k, v) in entries {
                if self
                    .key_groups
                    .as_ref()
                    .is_none_or(|(_, range)| range.contains(&kg))
                {
                    self.state.insert(k, v);
                }
            }
        }
        Ok(())
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
        assert_eq!(op.keys(), 2);
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
