//! The checkpoint format of a keyed operator subtask: its keyed state (key-group layout
//! entries, the same bytes on both backends) and its timers, per key group, so a restore at
//! another parallelism keeps exactly the key groups of its range.

use sluice_types::OperatorError;

use super::{layout, KeyedStateStore, StateEntry, StateKey, TimerService};

/// One timer service's timers: `(key group, serialized key, timestamp)`.
type TimerEntries = Vec<(u32, Vec<u8>, i64)>;

/// `(entries as (state, key, value) in the layout of [`layout`], one timer list per timer
/// service of the operator in a fixed order)`. A tuple: serde derives are not a dependency.
type KeyedSnapshot = (Vec<(String, Vec<u8>, Vec<u8>)>, Vec<TimerEntries>);

/// Snapshots `store` and `timers` (each timer service in a fixed order).
pub fn snapshot_keyed<K: StateKey>(
    store: &KeyedStateStore<K>,
    timers: &[&TimerService<K>],
) -> Result<Vec<u8>, OperatorError> {
    let entries = store
        .snapshot()?
        .into_iter()
        .map(|e| (e.state, e.key, e.value))
        .collect();
    let mut all = Vec::new();
    for t in timers {
        let mut list = Vec::new();
        for kg in t.key_groups() {
            for (k, ts) in t.timers_of_key_group(kg) {
                list.push((kg, layout::encode(&k)?, ts));
            }
        }
        all.push(list);
    }
    let snap: KeyedSnapshot = (entries, all);
    layout::encode(&snap)
}

/// Restores the key groups of `store`'s range from the snapshots of every old subtask.
pub fn restore_keyed<K: StateKey>(
    store: &mut KeyedStateStore<K>,
    timers: &mut [&mut TimerService<K>],
    parts: &[(usize, Vec<u8>)],
) -> Result<(), OperatorError> {
    let range = store.key_group_range();
    for (_, bytes) in parts {
        let (entries, timer_lists): KeyedSnapshot = layout::decode(bytes)?;
        store.restore(
            entries
                .into_iter()
                .map(|(state, key, value)| StateEntry { state, key, value })
                .collect(),
        )?;
        for (t, list) in timers.iter_mut().zip(timer_lists) {
            for (kg, key, ts) in list {
                if range.contains(&kg) {
                    let k: K = layout::decode(&key)?;
                    t.register(&k, kg, ts);
                }
            }
        }
    }
    Ok(())
}

/// The snapshot [`snapshot_keyed`] takes of a store whose only state is the value state
/// `state` holding `entries` (`(key group, key, value)`), without a store: for operators that
/// keep one typed value per key in their own table on the memory backend.
pub fn snapshot_values<'a, K: StateKey, V: super::StateValue>(
    state: &str,
    entries: impl Iterator<Item = (u32, &'a K, &'a V)>,
) -> Result<Vec<u8>, OperatorError> {
    let mut out = Vec::new();
    let mut prefix = Vec::new();
    for (kg, k, v) in entries {
        layout::write_key_prefix(kg, &layout::encode(k)?, &mut prefix)?;
        out.push((state.to_string(), prefix.clone(), layout::encode(v)?));
    }
    // The stores' order: by key group, then serialized key.
    out.sort_by(|a, b| a.1.cmp(&b.1));
    let snap: KeyedSnapshot = (out, Vec::new());
    layout::encode(&snap)
}

/// The values of value state `state` in the key groups `range` from the snapshots of every old
/// subtask (taken by [`snapshot_keyed`] or [`snapshot_values`]); entries of other states are
/// refused, naming them (they would be lost).
pub fn restore_values<K: StateKey, V: super::StateValue>(
    state: &str,
    range: &std::ops::RangeInclusive<u32>,
    parts: &[(usize, Vec<u8>)],
) -> Result<Vec<(u32, K, V)>, OperatorError> {
    let mut out = Vec::new();
    for (_, bytes) in parts {
        let (entries, timers): KeyedSnapshot = layout::decode(bytes)?;
        if timers.iter().any(|t| !t.is_empty()) {
            return Err(OperatorError::failed(format!(
                "the snapshot of value state '{state}' has timers, which this operator does not keep"
            )));
        }
        for (name, key, value) in entries {
            if name != state {
                return Err(OperatorError::failed(format!(
                    "the snapshot holds state '{name}', which this operator (state '{state}') cannot take"
                )));
            }
            let (kg, k, _) = layout::split_key(&key).ok_or_else(|| {
                OperatorError::failed(format!(
                    "a malformed entry of state '{state}' in a snapshot"
                ))
            })?;
            if range.contains(&kg) {
                out.push((kg, layout::decode(k)?, layout::decode(&value)?));
            }
        }
    }
    Ok(out)
}
