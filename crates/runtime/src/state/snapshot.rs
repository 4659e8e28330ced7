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
