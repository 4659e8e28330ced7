use std::hash::Hash;

use sluice_types::{Collector, Operator, OperatorContext, OperatorError, OutputBatch};

use super::aggregate::open_store;
use crate::hotkeys::{HotKeysConfig, HotKeysHook};
use sluice_state::fasthash::FastBuildHasher;
use sluice_state::{KeyedStateConfig, KeyedStateStore, StateBackendKind, StateHandle, ValueOf};

/// The value state a rolling reduce keeps its per-key result under. The two-phase combiner
/// ([`super::CombineOp`]) keeps the same state under the same name, which is what lets a
/// savepoint of either form restore into the other.
pub const ROLLING_STATE: &str = "rolling";

/// Rolling keyed reduce, as Flink's `StreamGroupedReduceOperator`: for each record, combine it
/// with the key's current value (`reduce(current, record)`), store the result and emit it. The
/// first record of a key is stored and emitted as is. One output per input.
///
/// The per-key value is keyed state (value state `ROLLING_STATE`) on the job's backend: on
/// the LSM backend it lives in the subtask's [`KeyedStateStore`]; on the memory backend in a
/// typed map of the operator's own (the store's memory backend costs a state lookup by name and
/// a key context per record, about 28 ns, which would double the skew job's CPU time). Both
/// snapshot in the store's format, by key group, so a checkpoint taken on one backend restores
/// on the other, and both count their access time as state access (the map 1 call in
/// `MEMORY_SAMPLE_EVERY`, scaled).
///
/// With [`with_hot_keys`](Self::with_hot_keys) it also sketches its keys (see
/// [`crate::hotkeys`]): one decrement per record, 1 record in 8 offered to the sketch (1 in 64,
/// each counting 8, after the first 2²⁰).
pub struct KeyedReduceOp<K, T, KS, R> {
    key_of: KS,
    reduce: R,
    config: KeyedStateConfig<K>,
    state: Option<Rolling<K, T>>,
    hot_keys: HotKeysHook<K>,
}

/// Calls of the memory map between two timed ones.
pub const MEMORY_SAMPLE_EVERY: u32 = 256;

/// Where the rolling values live (see [`KeyedReduceOp`]).
enum Rolling<K, T> {
    Memory {
        values: RecentValues<K, T>,
        /// Untimed updates left before the next timed one.
        countdown: u32,
        metrics: Option<std::sync::Arc<sluice_metrics::TaskMetrics>>,
    },
    /// The store, and the handle of [`ROLLING_STATE`] registered at open.
    Store(KeyedStateStore<K>, StateHandle<ValueOf<T>>),
}

impl<K: sluice_state::StateKey, T: sluice_state::StateValue> Rolling<K, T> {
    fn open(config: &KeyedStateConfig<K>, ctx: &OperatorContext) -> Result<Self, OperatorError> {
        Ok(match config.backend {
            StateBackendKind::Memory => Rolling::Memory {
                values: RecentValues {
                    values: indexmap::IndexMap::default(),
                    last: 0,
                    prev: 0,
                    dense: Vec::new(),
                },
                countdown: MEMORY_SAMPLE_EVERY,
                metrics: crate::services::task_metrics(ctx),
            },
            StateBackendKind::Lsm { .. } => {
                let mut store = open_store(config, ctx)?;
                let rolling = store.register_value::<T>(ROLLING_STATE)?;
                Rolling::Store(store, rolling)
            }
        })
    }
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
            state: None,
            hot_keys: HotKeysHook::default(),
        }
    }

    /// Keeps the state on `config`'s backend, by Flink's key groups (a restore keeps exactly
    /// the keys of the subtask's range).
    pub fn with_state(mut self, config: KeyedStateConfig<K>) -> Self {
        self.config = config;
        self
    }

    /// Reports this subtask's hot keys (default sketch settings), keys rendered by `to_string`
    /// (e.g. [`crate::hotkeys::display_key`]). Attaches in `open` to the metrics of the task in
    /// the operator's context ([`crate::services::TaskServices`]); stays off without one.
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

    /// Keys with a value (after `open`).
    pub fn keys(&self) -> Result<usize, OperatorError>
    where
        K: sluice_state::StateKey,
    {
        match &self.state {
            None => Ok(0),
            Some(Rolling::Memory { values, .. }) => Ok(values.values.len()),
            Some(Rolling::Store(s, _)) => Ok(s.keys(ROLLING_STATE)?.len()),
        }
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
        services: sluice_types::ServicesHandle::none(),
        options: Vec::new(),
    }
}

impl<K, T, KS, R> KeyedReduceOp<K, T, KS, R>
where
    K: sluice_state::StateKey,
    T: sluice_state::StateValue,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    /// Combines `r` with its key's value, stores and returns the result. The memory map's
    /// untimed update is all that is inlined into the record loop; the timed update, the store
    /// and opening are out of line (in one function they made a call with a large frame per
    /// record).
    #[inline]
    fn reduce_one(&mut self, r: T) -> Result<T, OperatorError> {
        let key = (self.key_of)(&r);
        self.hot_keys.observe(&key);
        if let Some(Rolling::Memory {
            values, countdown, ..
        }) = &mut self.state
        {
            *countdown -= 1;
            if *countdown != 0 {
                return Ok(values.reduce(&mut self.reduce, key, r));
            }
        }
        self.reduce_slow(key, r)
    }

    #[inline(never)]
    fn reduce_slow(&mut self, key: K, r: T) -> Result<T, OperatorError> {
        let state = match &mut self.state {
            Some(s) => s,
            // Embedded use without a task: open on first use.
            None => self
                .state
                .insert(Rolling::open(&self.config, &standalone_context())?),
        };
        match state {
            Rolling::Memory {
                values,
                countdown,
                metrics,
            } => {
                if *countdown != 0 {
                    // Opened just now: not a timed update.
                    return Ok(values.reduce(&mut self.reduce, key, r));
                }
                *countdown = MEMORY_SAMPLE_EVERY;
                let started = std::time::Instant::now();
                let next = values.reduce(&mut self.reduce, key, r);
                if let Some(m) = metrics {
                    let ns = started.elapsed().as_nanos() as u64 * u64::from(MEMORY_SAMPLE_EVERY);
                    m.state_access_ns
                        .fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(next)
            }
            Rolling::Store(store, rolling) => {
                let kg = (self.config.key_group_of)(&key);
                store.set_current_key(key, kg)?;
                let reduce = &mut self.reduce;
                store.modify_value::<T, T>(rolling, |old| {
                    let next = match old {
                        Some(acc) => reduce(acc, r),
                        None => r,
                    };
                    (Some(next.clone()), next)
                })
            }
        }
    }
}

/// The memory backend's values, with the indexes of the last two distinct keys used: a skewed
/// stream's hot key is found with a key comparison or two instead of a hash and a probe, also
/// right after a record of another key (with one slot, each such record cost the hot key's
/// next record a lookup too). Entries keep their index (nothing is ever removed), which is what
/// lets `dense` remember them.
struct RecentValues<K, T> {
    values: indexmap::IndexMap<K, T, FastBuildHasher>,
    last: usize,
    prev: usize,
    /// For integer keys in `0..DENSE_KEYS`: the key's index in `values`, or [`NOT_DENSE`] when
    /// not known yet (then found by hashing once, and remembered). A cache, never the truth:
    /// snapshots and restores read and write `values` only. The skew job's cold keys (a tenth of
    /// its hot subtask's records) cost a hash probe each, a fifth of that subtask's time.
    dense: Vec<u32>,
}

/// Integer keys below this get a direct index ([`RecentValues::dense`], 4 bytes a key at most).
const DENSE_KEYS: i64 = 1 << 16;
const NOT_DENSE: u32 = u32::MAX;

/// `key` as an index into [`RecentValues::dense`], for the integer key types in `0..DENSE_KEYS`
/// (the type test folds away when `K` is known).
#[inline]
fn dense_slot<K: 'static>(key: &K) -> Option<usize> {
    let any = key as &dyn std::any::Any;
    let v = if let Some(k) = any.downcast_ref::<i64>() {
        *k
    } else if let Some(k) = any.downcast_ref::<u64>() {
        i64::try_from(*k).unwrap_or(i64::MAX)
    } else if let Some(k) = any.downcast_ref::<i32>() {
        i64::from(*k)
    } else if let Some(k) = any.downcast_ref::<u32>() {
        i64::from(*k)
    } else {
        return None;
    };
    (0..DENSE_KEYS).contains(&v).then_some(v as usize)
}

impl<K: std::hash::Hash + Eq + 'static, T: Clone> RecentValues<K, T> {
    /// One record: `reduce(current, r)` stored and returned, or `r` itself for a key's first.
    #[inline]
    fn reduce(&mut self, reduce: &mut impl FnMut(T, T) -> T, key: K, r: T) -> T {
        let is_at = |i: usize| self.values.get_index(i).is_some_and(|(k, _)| *k == key);
        if !is_at(self.last) {
            if is_at(self.prev) {
                std::mem::swap(&mut self.last, &mut self.prev);
            } else {
                return self.reduce_cold(reduce, key, r);
            }
        }
        match self.values.get_index_mut(self.last) {
            Some((_, acc)) => combine(acc, reduce, r),
            // Not reached (`last` was just checked to hold the key); hashing is right anyway.
            None => self.reduce_cold(reduce, key, r),
        }
    }

    /// [`Self::reduce`] for a key other than the last two: found by its dense index, by
    /// hashing, or added.
    #[inline(never)]
    fn reduce_cold(&mut self, reduce: &mut impl FnMut(T, T) -> T, key: K, r: T) -> T {
        let slot = dense_slot(&key);
        let known = slot
            .and_then(|d| self.dense.get(d).copied())
            .filter(|&i| i != NOT_DENSE);
        if let Some(i) = known {
            if let Some((k, acc)) = self.values.get_index_mut(i as usize) {
                debug_assert!(*k == key, "a dense index names another key");
                let next = combine(acc, reduce, r);
                self.prev = std::mem::replace(&mut self.last, i as usize);
                return next;
            }
        }
        let (i, next) = match self.values.get_full_mut(&key) {
            Some((i, _, acc)) => (i, combine(acc, reduce, r)),
            None => (self.values.insert_full(key, r.clone()).0, r),
        };
        let index = u32::try_from(i).ok().filter(|&x| x != NOT_DENSE);
        if let (Some(d), Some(index)) = (slot, index) {
            if self.dense.len() <= d {
                self.dense.resize(d + 1, NOT_DENSE);
            }
            self.dense[d] = index;
        }
        self.prev = std::mem::replace(&mut self.last, i);
        next
    }
}

/// `reduce(acc, r)`, stored in `acc` and returned.
#[inline]
fn combine<T: Clone>(acc: &mut T, reduce: &mut impl FnMut(T, T) -> T, r: T) -> T {
    let next = reduce(acc.clone(), r);
    acc.clone_from(&next);
    next
}

impl<K, T, KS, R> Operator<T, T> for KeyedReduceOp<K, T, KS, R>
where
    K: sluice_state::StateKey,
    T: sluice_state::StateValue,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    #[inline]
    fn process(&mut self, r: T, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let next = self.reduce_one(r)?;
        out.collect(next)
    }

    #[inline]
    fn process_into(&mut self, r: T, out: &mut OutputBatch<'_, T>) -> Result<(), OperatorError> {
        let next = self.reduce_one(r)?;
        out.push(next)
    }

    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.state = Some(Rolling::open(&self.config, ctx)?);
        self.hot_keys.open(ctx, ctx.subtask_index as u64);
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

    /// The keyed store's snapshot format ([`sluice_state::snapshot`]): entries by key group.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        match &self.state {
            Some(Rolling::Memory { values, .. }) => {
                let kg = &self.config.key_group_of;
                sluice_state::snapshot::snapshot_values(
                    ROLLING_STATE,
                    values.values.iter().map(|(k, v)| (kg(k), k, v)),
                )
                .map(Some)
            }
            Some(Rolling::Store(store, _)) => {
                sluice_state::snapshot::snapshot_keyed(store, &[]).map(Some)
            }
            None => Err(super::aggregate::not_open()),
        }
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        match &mut self.state {
            Some(Rolling::Memory { values, .. }) => {
                let restored = sluice_state::snapshot::restore_values::<K, T>(
                    ROLLING_STATE,
                    &self.config.key_groups,
                    parts,
                )?;
                values
                    .values
                    .extend(restored.into_iter().map(|(_, k, v)| (k, v)));
                Ok(())
            }
            Some(Rolling::Store(store, _)) => {
                sluice_state::snapshot::restore_keyed(store, &mut [], parts)
            }
            None => Err(super::aggregate::not_open()),
        }
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
    fn publishes_hot_keys_of_its_task_at_finish() {
        use std::sync::Arc;
        let metrics = Arc::new(sluice_metrics::TaskMetrics::default());
        let services = crate::services::TaskServices::metrics_only(metrics.clone());
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
            services: services.handle(),
            options: Vec::new(),
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

    /// The dense index is a cache of the map: every key, dense or not, sums as a plain map
    /// would, also after a snapshot restored into a fresh operator (whose dense index is empty).
    #[test]
    fn dense_and_hashed_keys_sum_like_a_map() {
        use std::collections::HashMap;
        let stream: Vec<(i64, i64)> = (0..20_000u64)
            .map(|i| {
                let h = crate::hotkeys::splitmix(i);
                let key = match h % 5 {
                    0 => 0,                                 // hot
                    1 => (h >> 8) as i64 % 3_000,           // dense
                    2 => -((h >> 8) as i64 % 50) - 1,       // negative: hashed
                    3 => DENSE_KEYS + (h >> 8) as i64 % 50, // too large: hashed
                    _ => DENSE_KEYS - 1,                    // the last dense slot
                };
                (key, (h >> 40) as i64 % 1000)
            })
            .collect();
        let sum = |a: (i64, i64), b: (i64, i64)| (a.0, a.1 + b.1);
        let mut op = KeyedReduceOp::new(|r: &(i64, i64)| r.0, sum);
        let mut reference: HashMap<i64, i64> = HashMap::new();
        let mut out = VecCollector::default();
        let (first, second) = stream.split_at(stream.len() / 2);
        for &r in first {
            op.process(r, &mut out).unwrap();
        }
        let snap = op.snapshot_state(1).unwrap().unwrap();
        let mut restored = KeyedReduceOp::new(|r: &(i64, i64)| r.0, sum);
        restored.open(&standalone_context()).unwrap();
        restored.restore_state(&[(0, snap)]).unwrap();
        for &r in second {
            restored.process(r, &mut out).unwrap();
        }
        for (r, got) in stream.iter().zip(&out.records) {
            let acc = reference.entry(r.0).or_insert(0);
            *acc += r.1;
            assert_eq!(*got, (r.0, *acc), "key {}", r.0);
        }
        assert_eq!(restored.keys().unwrap(), reference.len());
    }
}
