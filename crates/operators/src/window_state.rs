//! Where the window operator keeps its windows ([`WindowContents`]) and when they fire
//! ([`WindowTimers`]).
//!
//! The operator works on one key's windows at a time as a list of `(window, accumulator)`.
//! On the memory backend that list *is* the state (typed, one hash lookup per record however
//! many windows the element falls in; the accumulator is updated in place, never cloned). On
//! the LSM backend the list is read from, and written back to, the keyed store's map state
//! [`CONTENTS`] (`(start, end)` → accumulator). Both snapshot the same bytes: the store's
//! key-group layout of that map state ([`sluice_state::layout`]).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use sluice_types::{OperatorContext, OperatorError};

use crate::time::windows::TimeWindow;
use sluice_state::fasthash::FastHashMap;
use sluice_state::{
    instance_dir_name, layout, KeyedStateConfig, KeyedStateStore, MapOf, StateBackendKind,
    StateEntry, StateHandle, StateKey, StateValue, MEMORY_TIMING_SAMPLE_EVERY,
};

/// The map state the windows are kept under (both backends, and in snapshots).
pub const CONTENTS: &str = "window-contents";

/// One key's windows with their accumulators (unordered).
pub type KeyWindows<ACC> = Vec<(TimeWindow, ACC)>;

/// The windows of every key of one operator subtask.
pub enum WindowContents<K, ACC> {
    /// Typed lists, one hash map per key group (index = key group − first key group).
    Memory {
        first_kg: u32,
        last_kg: u32,
        groups: Vec<FastHashMap<K, KeyWindows<ACC>>>,
        /// One update in [`MEMORY_TIMING_SAMPLE_EVERY`] is timed into the task's state access.
        countdown: u32,
        metrics: Option<Arc<sluice_metrics::TaskMetrics>>,
    },
    /// The keyed store's map state [`CONTENTS`], by the handle registered at open.
    Store(KeyedStateStore<K>, StateHandle<MapOf<(i64, i64), ACC>>),
}

impl<K: StateKey, ACC: StateValue> WindowContents<K, ACC> {
    pub fn open(
        config: &KeyedStateConfig<K>,
        ctx: &OperatorContext,
    ) -> Result<Self, OperatorError> {
        let metrics = crate::services::task_metrics(ctx);
        Ok(match &config.backend {
            StateBackendKind::Memory => {
                let (first_kg, last_kg) = (*config.key_groups.start(), *config.key_groups.end());
                if first_kg > last_kg {
                    return Err(OperatorError::failed(format!(
                        "invalid key-group range {:?}",
                        config.key_groups
                    )));
                }
                WindowContents::Memory {
                    first_kg,
                    last_kg,
                    groups: Vec::new(),
                    countdown: MEMORY_TIMING_SAMPLE_EVERY,
                    metrics,
                }
            }
            backend => {
                let mut store = KeyedStateStore::open(
                    backend,
                    &instance_dir_name(&ctx.operator_name, ctx.subtask_index),
                    config.key_groups.clone(),
                )?;
                store.attach_metrics(metrics);
                let contents = store.register_map(CONTENTS)?;
                WindowContents::Store(store, contents)
            }
        })
    }

    /// Runs `f` on the windows of `key` (of key group `kg`) and keeps what it leaves (an empty
    /// list removes the key).
    #[inline]
    pub fn update<R>(
        &mut self,
        key: &K,
        kg: u32,
        f: impl FnOnce(&mut KeyWindows<ACC>) -> Result<R, OperatorError>,
    ) -> Result<R, OperatorError> {
        self.update_some(key, kg, None, f)
    }

    /// [`update`](Self::update), where `f` needs only the windows `only` of the key (those it
    /// may find, change or add): the LSM backend then reads them by point lookups instead of
    /// scanning every window of the key (whose older versions a scan of the LSM tree must
    /// skip). The memory backend hands `f` the whole list either way.
    #[inline]
    pub fn update_some<R>(
        &mut self,
        key: &K,
        kg: u32,
        only: Option<&[TimeWindow]>,
        f: impl FnOnce(&mut KeyWindows<ACC>) -> Result<R, OperatorError>,
    ) -> Result<R, OperatorError> {
        match self {
            WindowContents::Memory {
                first_kg,
                last_kg,
                groups,
                countdown,
                metrics,
            } => {
                if kg < *first_kg || kg > *last_kg {
                    return Err(key_group_error(kg, *first_kg, *last_kg));
                }
                *countdown -= 1;
                let started = (*countdown == 0).then(Instant::now);
                let local = (kg - *first_kg) as usize;
                if groups.len() <= local {
                    groups.resize_with(local + 1, FastHashMap::default);
                }
                let g = &mut groups[local];
                let r = match g.get_mut(key) {
                    Some(list) => {
                        let r = f(list);
                        if list.is_empty() {
                            g.remove(key);
                        }
                        r
                    }
                    None => {
                        let mut list = Vec::new();
                        let r = f(&mut list);
                        if !list.is_empty() {
                            g.insert(key.clone(), list);
                        }
                        r
                    }
                };
                if let Some(t) = started {
                    *countdown = MEMORY_TIMING_SAMPLE_EVERY;
                    if let Some(m) = metrics {
                        let ns =
                            t.elapsed().as_nanos() as u64 * u64::from(MEMORY_TIMING_SAMPLE_EVERY);
                        m.state_access_ns.fetch_add(ns, Relaxed);
                    }
                }
                r
            }
            WindowContents::Store(store, contents) => {
                store.set_current_key(key.clone(), kg)?;
                let mut list: KeyWindows<ACC> = match only {
                    Some(windows) => {
                        let mut state = store.map(contents);
                        let mut list = Vec::with_capacity(windows.len());
                        for w in windows {
                            if let Some(acc) = state.get(&(w.start, w.end))? {
                                list.push((*w, acc));
                            }
                        }
                        list
                    }
                    None => store
                        .map(contents)
                        .entries()?
                        .into_iter()
                        .map(|((start, end), acc)| (TimeWindow::new(start, end), acc))
                        .collect(),
                };
                let before: Vec<TimeWindow> = list.iter().map(|(w, _)| *w).collect();
                let r = f(&mut list)?;
                let mut state = store.map(contents);
                for w in before {
                    if !list.iter().any(|(x, _)| *x == w) {
                        state.remove(&(w.start, w.end))?;
                    }
                }
                for (w, acc) in list {
                    state.put((w.start, w.end), acc)?;
                }
                Ok(r)
            }
        }
    }

    /// Every window, as `(key group, key, window)`, for deriving the timers of a snapshot.
    fn windows(&self) -> Result<Vec<(u32, K, TimeWindow)>, OperatorError> {
        let mut out = Vec::new();
        match self {
            WindowContents::Memory {
                first_kg, groups, ..
            } => {
                for (local, g) in groups.iter().enumerate() {
                    for (k, list) in g {
                        for (w, _) in list {
                            out.push((*first_kg + local as u32, k.clone(), *w));
                        }
                    }
                }
            }
            WindowContents::Store(store, _) => {
                for e in store.snapshot()? {
                    let (kg, k, suffix) = split(&e)?;
                    let (start, end): (i64, i64) = layout::decode(suffix)?;
                    out.push((kg, layout::decode(k)?, TimeWindow::new(start, end)));
                }
            }
        }
        Ok(out)
    }

    /// Every entry, in the store's snapshot order (key group, state, key): the same bytes on
    /// both backends.
    fn entries(&self) -> Result<Vec<StateEntry>, OperatorError> {
        match self {
            WindowContents::Memory {
                first_kg, groups, ..
            } => {
                let mut out = Vec::new();
                let mut prefix = Vec::new();
                for (local, g) in groups.iter().enumerate() {
                    let kg = *first_kg + local as u32;
                    for (k, list) in g {
                        layout::write_key_prefix(kg, &layout::encode(k)?, &mut prefix)?;
                        for (w, acc) in list {
                            let mut key = prefix.clone();
                            layout::encode_into(&(w.start, w.end), &mut key)?;
                            out.push(StateEntry {
                                state: CONTENTS.to_string(),
                                key,
                                value: layout::encode(acc)?,
                            });
                        }
                    }
                }
                out.sort();
                Ok(out)
            }
            WindowContents::Store(store, _) => store.snapshot(),
        }
    }

    /// Takes back entries of a snapshot (of any subtask): those of this subtask's key groups.
    fn restore(&mut self, entries: Vec<StateEntry>) -> Result<(), OperatorError> {
        match self {
            WindowContents::Memory {
                first_kg,
                last_kg,
                groups,
                ..
            } => {
                for e in entries {
                    if e.state != CONTENTS {
                        return Err(OperatorError::failed(format!(
                            "the snapshot holds state '{}', which a window operator (state '{CONTENTS}') cannot take",
                            e.state
                        )));
                    }
                    let (kg, k, suffix) = split(&e)?;
                    if kg < *first_kg || kg > *last_kg {
                        continue;
                    }
                    let key: K = layout::decode(k)?;
                    let (start, end): (i64, i64) = layout::decode(suffix)?;
                    let acc: ACC = layout::decode(&e.value)?;
                    let local = (kg - *first_kg) as usize;
                    if groups.len() <= local {
                        groups.resize_with(local + 1, FastHashMap::default);
                    }
                    groups[local]
                        .entry(key)
                        .or_default()
                        .push((TimeWindow::new(start, end), acc));
                }
                Ok(())
            }
            WindowContents::Store(store, _) => store.restore(entries),
        }
    }
}

fn key_group_error(kg: u32, first: u32, last: u32) -> OperatorError {
    OperatorError::failed(format!(
        "key group {kg} of the current key is not in this subtask's key groups {first}..={last} (is the input keyed by the same key and max parallelism?)"
    ))
}

fn split(e: &StateEntry) -> Result<(u32, &[u8], &[u8]), OperatorError> {
    layout::split_key(&e.key).ok_or_else(|| {
        OperatorError::failed(format!(
            "a malformed entry of state '{}' in a snapshot",
            e.state
        ))
    })
}

/// When windows fire: a queue of `(time, key group, key)` in time order, registration order
/// within a time. It holds *candidates*: the operator looks at the key's windows when an entry
/// comes due and decides there what fires, what is dropped and what is due later (Flink's
/// `WindowOperator` keeps one deduplicated timer per window and deletes it on a merge; here a
/// merge costs nothing, which is what made session windows expensive).
///
/// Invariant (kept by the operator): every window has an entry at or before its next due time
/// (its end − 1 until it fired, then its cleanup time).
pub struct WindowTimers<K> {
    queue: BTreeMap<i64, Vec<(u32, K)>>,
    len: usize,
}

impl<K: StateKey> WindowTimers<K> {
    pub fn new() -> Self {
        WindowTimers {
            queue: BTreeMap::new(),
            len: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, time: i64, kg: u32, key: K) {
        self.queue.entry(time).or_default().push((kg, key));
        self.len += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries of the earliest time if it is `<= now`, duplicates removed (first kept).
    pub fn pop_due(&mut self, now: i64, dedup: bool) -> Option<(i64, Vec<(u32, K)>)> {
        let entry = self.queue.first_entry()?;
        if *entry.key() > now {
            return None;
        }
        let (ts, mut due) = entry.remove_entry();
        self.len -= due.len();
        if dedup && due.len() > 1 {
            let mut seen = sluice_state::fasthash::FastHashSet::default();
            due.retain(|(kg, k)| seen.insert((*kg, k.clone())));
        }
        Some((ts, due))
    }
}

impl<K: StateKey> Default for WindowTimers<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// One timer list of a snapshot: `(key group, serialized key, time)`.
type TimerEntries = Vec<(u32, Vec<u8>, i64)>;

/// The snapshot layout of [`sluice_state::snapshot::snapshot_keyed`] (entries, timer lists).
type KeyedSnapshot = (Vec<(String, Vec<u8>, Vec<u8>)>, Vec<TimerEntries>);

/// Snapshots the windows and their timers in the keyed-operator format
/// ([`sluice_state::snapshot`]). The timers are derived from the windows (what a timer per
/// window would hold): `end − 1` for a window that has not fired (`end − 1 > fired_up_to`), the
/// cleanup time when it differs; sorted by key group, time and serialized key. So the bytes
/// depend only on the windows, and are the same on both backends.
pub fn snapshot<K: StateKey, ACC: StateValue>(
    contents: &WindowContents<K, ACC>,
    fired_up_to: i64,
    cleanup: impl Fn(&TimeWindow) -> i64,
) -> Result<Vec<u8>, OperatorError> {
    let entries = contents
        .entries()?
        .into_iter()
        .map(|e| (e.state, e.key, e.value))
        .collect();
    let mut timers: Vec<(u32, i64, Vec<u8>)> = Vec::new();
    for (kg, k, w) in contents.windows()? {
        let key = layout::encode(&k)?;
        let (end, clean) = (w.max_timestamp(), cleanup(&w));
        if end > fired_up_to {
            timers.push((kg, end, key.clone()));
        }
        if clean != end {
            timers.push((kg, clean, key));
        }
    }
    timers.sort();
    timers.dedup();
    let list: TimerEntries = timers.into_iter().map(|(kg, t, k)| (kg, k, t)).collect();
    let snap: KeyedSnapshot = (entries, vec![list]);
    layout::encode(&snap)
}

/// Restores the key groups of this subtask from the snapshots of every old subtask (taken by
/// [`snapshot`] or, before, by `snapshot_keyed` with one timer service: the same layout).
pub fn restore<K: StateKey, ACC: StateValue>(
    contents: &mut WindowContents<K, ACC>,
    timers: &mut WindowTimers<K>,
    key_groups: &std::ops::RangeInclusive<u32>,
    parts: &[(usize, Vec<u8>)],
) -> Result<(), OperatorError> {
    for (_, bytes) in parts {
        let (entries, lists): KeyedSnapshot = layout::decode(bytes)?;
        contents.restore(
            entries
                .into_iter()
                .map(|(state, key, value)| StateEntry { state, key, value })
                .collect(),
        )?;
        for list in lists {
            for (kg, key, ts) in list {
                if key_groups.contains(&kg) {
                    timers.push(ts, kg, layout::decode(&key)?);
                }
            }
        }
    }
    Ok(())
}
