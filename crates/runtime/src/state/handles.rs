//! Typed handles on one state of the current key. A handle borrows the store, so use one at a
//! time (obtain it again for the next state: lookup by name is a short scan of the few states
//! an operator has).

use std::marker::PhantomData;

use sluice_types::OperatorError;

use super::store::{KeyedStateStore, StateKind};
use super::{AggregateFunction, StateKey, StateValue};

/// One value per key (Flink's `ValueState`).
pub struct ValueState<'a, K, V> {
    store: &'a mut KeyedStateStore<K>,
    name: &'a str,
    _v: PhantomData<fn() -> V>,
}

impl<'a, K: StateKey, V: StateValue> ValueState<'a, K, V> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, name: &'a str) -> Self {
        ValueState {
            store,
            name,
            _v: PhantomData,
        }
    }

    /// The current key's value, `None` if it has none.
    pub fn value(&mut self) -> Result<Option<V>, OperatorError> {
        self.store.value_get(self.name, StateKind::Value)
    }

    /// Sets the current key's value.
    pub fn update(&mut self, value: V) -> Result<(), OperatorError> {
        self.store
            .value_modify(self.name, StateKind::Value, |_| (Some(value), ()))
    }

    /// Removes the current key's value.
    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store
            .value_modify::<V, ()>(self.name, StateKind::Value, |_| (None, ()))
    }
}

/// A list of values per key (Flink's `ListState`). An empty list and no list are the same.
pub struct ListState<'a, K, V> {
    store: &'a mut KeyedStateStore<K>,
    name: &'a str,
    _v: PhantomData<fn() -> V>,
}

impl<'a, K: StateKey, V: StateValue> ListState<'a, K, V> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, name: &'a str) -> Self {
        ListState {
            store,
            name,
            _v: PhantomData,
        }
    }

    /// The current key's list, in insertion order (empty if it has none).
    pub fn get(&mut self) -> Result<Vec<V>, OperatorError> {
        self.store.list_get(self.name)
    }

    /// Appends a value.
    pub fn add(&mut self, value: V) -> Result<(), OperatorError> {
        self.store.list_extend(self.name, vec![value], false)
    }

    /// Appends values.
    pub fn add_all(&mut self, values: Vec<V>) -> Result<(), OperatorError> {
        self.store.list_extend(self.name, values, false)
    }

    /// Replaces the list (an empty `values` clears it).
    pub fn update(&mut self, values: Vec<V>) -> Result<(), OperatorError> {
        self.store.list_extend(self.name, values, true)
    }

    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store.list_clear::<V>(self.name)
    }
}

/// A map per key (Flink's `MapState`). The iteration order of [`entries`](Self::entries) is
/// unspecified and differs between backends.
pub struct MapState<'a, K, UK, UV> {
    store: &'a mut KeyedStateStore<K>,
    name: &'a str,
    _v: PhantomData<fn() -> (UK, UV)>,
}

impl<'a, K: StateKey, UK: StateKey, UV: StateValue> MapState<'a, K, UK, UV> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, name: &'a str) -> Self {
        MapState {
            store,
            name,
            _v: PhantomData,
        }
    }

    pub fn get(&mut self, key: &UK) -> Result<Option<UV>, OperatorError> {
        self.store.map_get::<UK, UV>(self.name, key)
    }

    /// Sets `key` to `value`; returns the previous value.
    pub fn put(&mut self, key: UK, value: UV) -> Result<Option<UV>, OperatorError> {
        self.store.map_set(self.name, key, Some(value))
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &UK) -> Result<Option<UV>, OperatorError> {
        self.store.map_set::<UK, UV>(self.name, key.clone(), None)
    }

    pub fn contains(&mut self, key: &UK) -> Result<bool, OperatorError> {
        self.store.map_contains::<UK, UV>(self.name, key)
    }

    /// Every entry of the current key's map (unspecified order).
    pub fn entries(&mut self) -> Result<Vec<(UK, UV)>, OperatorError> {
        self.store.map_entries(self.name)
    }

    /// The user keys of the current key's map (unspecified order).
    pub fn keys(&mut self) -> Result<Vec<UK>, OperatorError> {
        Ok(self.entries()?.into_iter().map(|(k, _)| k).collect())
    }

    pub fn is_empty(&mut self) -> Result<bool, OperatorError> {
        self.store.map_is_empty::<UK, UV>(self.name)
    }

    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store.map_clear::<UK, UV>(self.name)
    }
}

/// One value per key that added values are folded into with a reduce function (Flink's
/// `ReducingState`): the first value is stored as is, then `reduce(stored, added)`.
pub struct ReducingState<'a, K, V, F> {
    store: &'a mut KeyedStateStore<K>,
    name: &'a str,
    reduce: F,
    _v: PhantomData<fn() -> V>,
}

impl<'a, K: StateKey, V: StateValue, F: Fn(V, V) -> V> ReducingState<'a, K, V, F> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, name: &'a str, reduce: F) -> Self {
        ReducingState {
            store,
            name,
            reduce,
            _v: PhantomData,
        }
    }

    /// The reduced value, `None` if nothing was added since the last clear.
    pub fn get(&mut self) -> Result<Option<V>, OperatorError> {
        self.store.value_get(self.name, StateKind::Reducing)
    }

    /// Folds `value` in.
    pub fn add(&mut self, value: V) -> Result<(), OperatorError> {
        let reduce = &self.reduce;
        self.store
            .value_modify(self.name, StateKind::Reducing, |old: Option<V>| {
                let new = match old {
                    Some(acc) => reduce(acc, value),
                    None => value,
                };
                (Some(new), ())
            })
    }

    /// Folds `value` in and returns the new reduced value.
    pub fn add_and_get(&mut self, value: V) -> Result<V, OperatorError> {
        let reduce = &self.reduce;
        self.store
            .value_modify(self.name, StateKind::Reducing, |old: Option<V>| {
                let new = match old {
                    Some(acc) => reduce(acc, value),
                    None => value,
                };
                (Some(new.clone()), new)
            })
    }

    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store
            .value_modify::<V, ()>(self.name, StateKind::Reducing, |_| (None, ()))
    }
}

/// An accumulator per key that added values are aggregated into (Flink's `AggregatingState`).
pub struct AggregatingState<'a, K, IN, ACC, OUT, A> {
    store: &'a mut KeyedStateStore<K>,
    name: &'a str,
    agg: &'a A,
    _v: PhantomData<fn(IN) -> (ACC, OUT)>,
}

impl<'a, K, IN, ACC, OUT, A> AggregatingState<'a, K, IN, ACC, OUT, A>
where
    K: StateKey,
    ACC: StateValue,
    A: AggregateFunction<IN, ACC, OUT>,
{
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, name: &'a str, agg: &'a A) -> Self {
        AggregatingState {
            store,
            name,
            agg,
            _v: PhantomData,
        }
    }

    /// The result of the current key's accumulator, `None` if nothing was added since the last
    /// clear.
    pub fn get(&mut self) -> Result<Option<OUT>, OperatorError> {
        Ok(self.accumulator()?.map(|acc| self.agg.get_result(&acc)))
    }

    /// The current key's accumulator.
    pub fn accumulator(&mut self) -> Result<Option<ACC>, OperatorError> {
        self.store.value_get(self.name, StateKind::Aggregating)
    }

    /// Adds `value` to the accumulator (created with `create_accumulator` on first use).
    pub fn add(&mut self, value: IN) -> Result<(), OperatorError> {
        let agg = self.agg;
        self.store
            .value_modify(self.name, StateKind::Aggregating, |old: Option<ACC>| {
                let acc = old.unwrap_or_else(|| agg.create_accumulator());
                (Some(agg.add(value, acc)), ())
            })
    }

    /// Adds `value` and returns the new result (one state access instead of two).
    pub fn add_and_get(&mut self, value: IN) -> Result<OUT, OperatorError> {
        let agg = self.agg;
        self.store
            .value_modify(self.name, StateKind::Aggregating, |old: Option<ACC>| {
                let acc = agg.add(value, old.unwrap_or_else(|| agg.create_accumulator()));
                let out = agg.get_result(&acc);
                (Some(acc), out)
            })
    }

    /// Merges an accumulator into the current key's (`merge(stored, acc)`; stored as is if the
    /// key has none). For combining partial aggregates.
    pub fn merge_accumulator(&mut self, acc: ACC) -> Result<(), OperatorError> {
        let agg = self.agg;
        self.store
            .value_modify(self.name, StateKind::Aggregating, |old: Option<ACC>| {
                let merged = match old {
                    Some(a) => agg.merge(a, acc),
                    None => acc,
                };
                (Some(merged), ())
            })
    }

    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store
            .value_modify::<ACC, ()>(self.name, StateKind::Aggregating, |_| (None, ()))
    }
}
