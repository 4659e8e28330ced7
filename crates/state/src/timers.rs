//! Processing-time timers of a keyed operator, per (key, timestamp), stored per key group.

use std::collections::{BTreeMap, HashSet};
use std::hash::Hash;

use crate::fasthash::FastBuildHasher;

/// The timers of one keyed operator subtask (Flink's `InternalTimerService`, processing time
/// only for now).
///
/// A timer is a `(key, timestamp)` pair: registering the same pair twice keeps one timer.
/// Timers are held per key group (what a checkpoint will snapshot) plus a queue ordered by
/// timestamp; deleted timers leave a stale queue entry that is skipped when it comes due (and
/// the queue is rebuilt if stale entries pile up). Timers of one timestamp fire in registration
/// order. They live in memory on both state backends.
pub struct TimerService<K> {
    first_kg: u32,
    /// The live timers, per key group of the subtask's range (index = key group − first).
    groups: Vec<HashSet<(K, i64), FastBuildHasher>>,
    /// Timestamp → `(key group, key)` in registration order; may hold deleted timers.
    queue: BTreeMap<i64, Vec<(u32, K)>>,
    queued: usize,
    live: usize,
}

impl<K> std::fmt::Debug for TimerService<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerService")
            .field("timers", &self.live)
            .field("next", &self.queue.keys().next())
            .finish()
    }
}

impl<K: Hash + Eq + Clone> TimerService<K> {
    /// Timers for the key groups starting at `first_key_group`.
    pub fn new(first_key_group: u32) -> Self {
        TimerService {
            first_kg: first_key_group,
            groups: Vec::new(),
            queue: BTreeMap::new(),
            queued: 0,
            live: 0,
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "callers pass key groups of the subtask's own range, as the state store checks"
    )]
    fn local(&self, key_group: u32) -> usize {
        key_group
            .checked_sub(self.first_kg)
            .expect("timer key group below the subtask's range") as usize
    }

    /// Registers a timer for `key` (of `key_group`) at `timestamp`; `false` if it existed.
    pub fn register(&mut self, key: &K, key_group: u32, timestamp: i64) -> bool {
        let local = self.local(key_group);
        if self.groups.len() <= local {
            self.groups.resize_with(local + 1, HashSet::default);
        }
        if !self.groups[local].insert((key.clone(), timestamp)) {
            return false;
        }
        self.live += 1;
        self.queue
            .entry(timestamp)
            .or_default()
            .push((key_group, key.clone()));
        self.queued += 1;
        true
    }

    /// Deletes the timer of `key` at `timestamp`; `false` if there was none.
    pub fn delete(&mut self, key: &K, key_group: u32, timestamp: i64) -> bool {
        let local = self.local(key_group);
        let Some(g) = self.groups.get_mut(local) else {
            return false;
        };
        if !g.remove(&(key.clone(), timestamp)) {
            return false;
        }
        self.live -= 1;
        if self.queued > 2 * self.live + 1024 {
            self.rebuild_queue();
        }
        true
    }

    fn rebuild_queue(&mut self) {
        let mut queue: BTreeMap<i64, Vec<(u32, K)>> = BTreeMap::new();
        for (local, g) in self.groups.iter().enumerate() {
            for (k, ts) in g {
                queue
                    .entry(*ts)
                    .or_default()
                    .push((self.first_kg + local as u32, k.clone()));
            }
        }
        self.queued = self.live;
        self.queue = queue;
    }

    /// Number of live timers.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no timer is registered.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The earliest queued timestamp (possibly of a deleted timer), `None` if none is queued.
    #[inline]
    pub fn next_timestamp(&self) -> Option<i64> {
        if self.queued == 0 {
            return None;
        }
        self.queue.keys().next().copied()
    }

    /// Removes and returns every live timer with `timestamp <= now`, as `(timestamp, key group,
    /// key)`, by timestamp and then registration order.
    pub fn take_due(&mut self, now: i64) -> Vec<(i64, u32, K)> {
        let mut out = Vec::new();
        while let Some(entry) = self.queue.first_entry() {
            if *entry.key() > now {
                break;
            }
            let ts = *entry.key();
            let timers = entry.remove();
            self.queued -= timers.len();
            for (kg, k) in timers {
                let local = (kg - self.first_kg) as usize;
                let key = (k, ts);
                if self.groups[local].remove(&key) {
                    self.live -= 1;
                    out.push((ts, kg, key.0));
                }
            }
        }
        out
    }

    /// Whether `key` has a timer at `timestamp`.
    pub fn contains(&self, key: &K, key_group: u32, timestamp: i64) -> bool {
        self.groups
            .get(self.local(key_group))
            .is_some_and(|g| g.contains(&(key.clone(), timestamp)))
    }

    /// The key groups with timers, ascending.
    pub fn key_groups(&self) -> Vec<u32> {
        self.groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.is_empty())
            .map(|(i, _)| self.first_kg + i as u32)
            .collect()
    }

    /// The timers of one key group as `(key, timestamp)`, sorted by timestamp (what a
    /// checkpoint will write; keys of one timestamp in no particular order).
    pub fn timers_of_key_group(&self, key_group: u32) -> Vec<(K, i64)> {
        let Some(local) = key_group.checked_sub(self.first_kg) else {
            return Vec::new();
        };
        let mut v: Vec<(K, i64)> = self
            .groups
            .get(local as usize)
            .map(|g| g.iter().cloned().collect())
            .unwrap_or_default();
        v.sort_by_key(|(_, ts)| *ts);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_deduplicate_fire_in_order_and_can_be_deleted() {
        let mut t = TimerService::new(10);
        assert!(t.register(&"a", 10, 5));
        assert!(!t.register(&"a", 10, 5), "same key and time: one timer");
        assert!(t.register(&"b", 12, 5));
        assert!(t.register(&"a", 10, 3));
        assert!(t.register(&"c", 11, 9));
        assert_eq!(t.len(), 4);
        assert_eq!(t.key_groups(), vec![10, 11, 12]);
        assert!(t.delete(&"c", 11, 9));
        assert!(!t.delete(&"c", 11, 9));
        assert_eq!(t.next_timestamp(), Some(3));
        assert_eq!(
            t.take_due(5),
            vec![(3, 10, "a"), (5, 10, "a"), (5, 12, "b")]
        );
        assert!(t.is_empty());
        // The deleted timer's stale entry is skipped.
        assert_eq!(t.take_due(100), vec![]);
        // Re-registering after a delete fires once.
        t.register(&"d", 10, 7);
        t.delete(&"d", 10, 7);
        t.register(&"d", 10, 7);
        assert_eq!(t.take_due(7), vec![(7, 10, "d")]);
    }

    #[test]
    fn stale_entries_are_compacted() {
        let mut t = TimerService::new(0);
        for i in 0..5000 {
            t.register(&i, 0, i64::from(i));
            t.delete(&i, 0, i64::from(i));
        }
        assert!(t.queued <= 2 * t.live + 1024 + 1);
        t.register(&1, 0, 1);
        assert_eq!(t.take_due(i64::MAX), vec![(1, 0, 1)]);
    }
}
