//! Typed handles on one state of the current key. A handle borrows the store, so use one at a
//! time (obtain it again for the next state: lookup by name is a short scan of the few states
//! an operator has).

use std::marker::PhantomData;

use sluice_types::OperatorError;

use super::store::{KeyedStateStore, StateKind, Target};
use super::{AggregateFunction, StateKey, StateValue};

/// One value per key (Flink's `ValueState`).
pub struct ValueState<'a, K, V> {
    store: &'a mut KeyedStateStore<K>,
    target: Target<'a>,
    _v: PhantomData<fn() -> V>,
}

impl<'a, K: StateKey, V: StateValue> ValueState<'a, K, V> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, target: Target<'a>) -> Self {
        ValueState {
            store,
            target,
            _v: PhantomData,
        }
    }

    /// The current key's value, `None` if it has none.
    pub fn value(&mut self) -> Result<Option<V>, OperatorError> {
        self.store.value_get(self.target, StateKind::Value)
    }

    /// Sets the current key's value.
    pub fn update(&mut self, value: V) -> Result<(), OperatorError> {
        self.store
            .value_modify(self.target, StateKind::Value, |_| (Some(value), ()))
    }

    /// Removes the current key's value.
    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store
            .value_modify::<V, ()>(self.target, StateKind::Value, |_| (None, ()))
    }

    /// Replaces the current key's value by `f(old)` (`None` removes it) and returns `f`'s
    /// result: the value is moved in and out, never cloned (a large value, such as a distinct
    /// aggregate's map, costs nothing to reach).
    pub fn modify<R>(
        &mut self,
        f: impl FnOnce(Option<V>) -> (Option<V>, R),
    ) -> Result<R, OperatorError> {
        self.store.value_modify(self.target, StateKind::Value, f)
    }
}

/// A list of values per key (Flink's `ListState`). An empty list and no list are the same.
pub struct ListState<'a, K, V> {
    store: &'a mut KeyedStateStore<K>,
    target: Target<'a>,
    _v: PhantomData<fn() -> V>,
}

impl<'a, K: StateKey, V: StateValue> ListState<'a, K, V> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, target: Target<'a>) -> Self {
        ListState {
            store,
            target,
            _v: PhantomData,
        }
    }

    /// The current key's list, in insertion order (empty if it has none).
    pub fn get(&mut self) -> Result<Vec<V>, OperatorError> {
        self.store.list_get(self.target)
    }

    /// Appends a value.
    pub fn add(&mut self, value: V) -> Result<(), OperatorError> {
        self.store.list_extend(self.target, vec![value], false)
    }

    /// Appends values.
    pub fn add_all(&mut self, values: Vec<V>) -> Result<(), OperatorError> {
        self.store.list_extend(self.target, values, false)
    }

    /// Replaces the list (an empty `values` clears it).
    pub fn update(&mut self, values: Vec<V>) -> Result<(), OperatorError> {
        self.store.list_extend(self.target, values, true)
    }

    /// Removes the current key's list.
    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store.list_clear::<V>(self.target)
    }
}

/// A map per key (Flink's `MapState`). The iteration order of [`entries`](Self::entries) is
/// unspecified and differs between backends.
pub struct MapState<'a, K, UK, UV> {
    store: &'a mut KeyedStateStore<K>,
    target: Target<'a>,
    _v: PhantomData<fn() -> (UK, UV)>,
}

impl<'a, K: StateKey, UK: StateKey, UV: StateValue> MapState<'a, K, UK, UV> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, target: Target<'a>) -> Self {
        MapState {
            store,
            target,
            _v: PhantomData,
        }
    }

    /// The value of `key` in the current key's map, if any.
    pub fn get(&mut self, key: &UK) -> Result<Option<UV>, OperatorError> {
        self.store.map_get::<UK, UV>(self.target, key)
    }

    /// Sets `key` to `value`; returns the previous value.
    pub fn put(&mut self, key: UK, value: UV) -> Result<Option<UV>, OperatorError> {
        self.store.map_set(self.target, key, Some(value))
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &UK) -> Result<Option<UV>, OperatorError> {
        self.store.map_set::<UK, UV>(self.target, key.clone(), None)
    }

    /// Updates `key`'s value in place with `update`, first inserting `init()` if the map has
    /// none (one lookup and no copy of the value on the memory backend); returns whether it
    /// was inserted, and `update`'s result.
    pub fn upsert<R>(
        &mut self,
        key: UK,
        init: impl FnOnce() -> UV,
        update: impl FnOnce(&mut UV) -> R,
    ) -> Result<(bool, R), OperatorError> {
        self.store.map_upsert(self.target, key, init, update)
    }

    /// Calls `f` on every entry (unspecified order) without copying them on the memory
    /// backend; stops at `f`'s first error and returns it.
    pub fn for_each(
        &mut self,
        f: impl FnMut(&UK, &UV) -> Result<(), OperatorError>,
    ) -> Result<(), OperatorError> {
        self.store.map_for_each(self.target, f)
    }

    /// Removes and returns the entries whose key satisfies `take` (unspecified order), the
    /// values moved out rather than copied.
    pub fn take_where(
        &mut self,
        take: impl FnMut(&UK) -> bool,
    ) -> Result<Vec<(UK, UV)>, OperatorError> {
        self.store.map_take(self.target, take)
    }

    /// Whether the current key's map has `key`.
    pub fn contains(&mut self, key: &UK) -> Result<bool, OperatorError> {
        self.store.map_contains::<UK, UV>(self.target, key)
    }

    /// Every entry of the current key's map (unspecified order).
    pub fn entries(&mut self) -> Result<Vec<(UK, UV)>, OperatorError> {
        self.store.map_entries(self.target)
    }

    /// The user keys of the current key's map (unspecified order).
    pub fn keys(&mut self) -> Result<Vec<UK>, OperatorError> {
        self.store.map_keys::<UK, UV>(self.target)
    }

    /// Whether the current key's map has no entries.
    pub fn is_empty(&mut self) -> Result<bool, OperatorError> {
        self.store.map_is_empty::<UK, UV>(self.target)
    }

    /// Removes every entry of the current key's map.
    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store.map_clear::<UK, UV>(self.target)
    }
}

/// One value per key that added values are folded into with a reduce function (Flink's
/// `ReducingState`): the first value is stored as is, then `reduce(stored, added)`.
pub struct ReducingState<'a, K, V, F> {
    store: &'a mut KeyedStateStore<K>,
    target: Target<'a>,
    reduce: F,
    _v: PhantomData<fn() -> V>,
}

impl<'a, K: StateKey, V: StateValue, F: Fn(V, V) -> V> ReducingState<'a, K, V, F> {
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, target: Target<'a>, reduce: F) -> Self {
        ReducingState {
            store,
            target,
            reduce,
            _v: PhantomData,
        }
    }

    /// The reduced value, `None` if nothing was added since the last clear.
    pub fn get(&mut self) -> Result<Option<V>, OperatorError> {
        self.store.value_get(self.target, StateKind::Reducing)
    }

    /// Folds `value` in.
    pub fn add(&mut self, value: V) -> Result<(), OperatorError> {
        let reduce = &self.reduce;
        self.store
            .value_modify(self.target, StateKind::Reducing, |old: Option<V>| {
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
            .value_modify(self.target, StateKind::Reducing, |old: Option<V>| {
                let new = match old {
                    Some(acc) => reduce(acc, value),
                    None => value,
                };
                (Some(new.clone()), new)
            })
    }

    /// Removes the current key's reduced value.
    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store
            .value_modify::<V, ()>(self.target, StateKind::Reducing, |_| (None, ()))
    }
}

/// An accumulator per key that added values are aggregated into (Flink's `AggregatingState`).
pub struct AggregatingState<'a, K, IN, ACC, OUT, A> {
    store: &'a mut KeyedStateStore<K>,
    target: Target<'a>,
    agg: &'a A,
    _v: PhantomData<fn(IN) -> (ACC, OUT)>,
}

impl<'a, K, IN, ACC, OUT, A> AggregatingState<'a, K, IN, ACC, OUT, A>
where
    K: StateKey,
    ACC: StateValue,
    A: AggregateFunction<IN, ACC, OUT>,
{
    pub(crate) fn new(store: &'a mut KeyedStateStore<K>, target: Target<'a>, agg: &'a A) -> Self {
        AggregatingState {
            store,
            target,
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
        self.store.value_get(self.target, StateKind::Aggregating)
    }

    /// Adds `value` to the accumulator (created with `create_accumulator` on first use).
    pub fn add(&mut self, value: IN) -> Result<(), OperatorError> {
        let agg = self.agg;
        self.store
            .value_modify(self.target, StateKind::Aggregating, |old: Option<ACC>| {
                let acc = old.unwrap_or_else(|| agg.create_accumulator());
                (Some(agg.add(value, acc)), ())
            })
    }

    /// Adds `value` and returns the new result (one state access instead of two).
    pub fn add_and_get(&mut self, value: IN) -> Result<OUT, OperatorError> {
        let agg = self.agg;
        self.store
            .value_modify(self.target, StateKind::Aggregating, |old: Option<ACC>| {
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
            .value_modify(self.target, StateKind::Aggregating, |old: Option<ACC>| {
                let merged = match old {
                    Some(a) => agg.merge(a, acc),
                    None => acc,
                };
                (Some(merged), ())
            })
    }

    /// Removes the current key's accumulator.
    pub fn clear(&mut self) -> Result<(), OperatorError> {
        self.store
            .value_modify::<ACC, ()>(self.target, StateKind::Aggregating, |_| (None, ()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{KeyedStateStore, StateBackendKind};

    fn stores(tag: &str) -> Vec<KeyedStateStore<u32>> {
        let dir = std::env::temp_dir().join(format!("sluice-handles-{}", std::process::id()));
        [StateBackendKind::Memory, StateBackendKind::lsm(dir)]
            .iter()
            .map(|b| KeyedStateStore::open(b, tag, 0..=3).unwrap())
            .collect()
    }

    #[test]
    fn a_handle_reaches_the_same_state_as_its_name() {
        for mut s in stores("same-state") {
            let n = s.register_value::<u64>("n").unwrap();
            let l = s.register_list::<i32>("l").unwrap();
            let m = s.register_map::<String, i64>("m").unwrap();
            s.set_current_key(7, 3).unwrap();
            s.value(&n).update(5).unwrap();
            s.list(&l).add(1).unwrap();
            s.list_state::<i32>("l").add(2).unwrap();
            s.map(&m).put("a".into(), -1).unwrap();
            assert_eq!(s.value_state::<u64>("n").value().unwrap(), Some(5));
            assert_eq!(s.list(&l).get().unwrap(), vec![1, 2]);
            assert_eq!(
                s.map_state::<String, i64>("m").get(&"a".into()).unwrap(),
                Some(-1)
            );
            s.set_current_key(8, 0).unwrap();
            assert_eq!(
                s.value(&n).value().unwrap(),
                None,
                "scoped to the current key"
            );
        }
    }

    #[test]
    fn registration_checks_types_once_and_a_foreign_handle_is_refused() {
        let mut all = stores("foreign");
        let mut other = all.pop().unwrap();
        let mut s = all.pop().unwrap();
        let n = s.register_value::<u64>("n").unwrap();
        assert!(
            s.register_list::<u64>("n").is_err(),
            "a value state, not a list"
        );
        assert!(s.register_value::<i8>("n").is_err(), "of u64, not i8");
        assert_eq!(s.register_value::<u64>("n").unwrap().slot, n.slot);
        other.set_current_key(1, 1).unwrap();
        let err = other.value(&n).value().unwrap_err().to_string();
        assert!(err.contains("another") || err.contains("other"), "{err}");
    }
}
