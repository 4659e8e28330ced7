//! How often a lookup's keys repeat, measured whether or not a cache is on: the doctor's
//! evidence for "cache the lookup" (a cache only pays when keys come back). A window of the
//! last [`WINDOW`] keys with a count per distinct key; the repeat ratio is the share of the
//! window's lookups whose key already occurred earlier in it, `1 − distinct / len` — the hit
//! rate a cache holding the window's keys would have had. O(1) per record.

use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

use crate::LookupKey;

/// Lookups the window holds.
pub const WINDOW: usize = 1024;

/// The last [`WINDOW`] keys (as hashes) and how often each occurs among them.
pub(crate) struct RepeatWindow {
    ring: VecDeque<u64>,
    counts: HashMap<u64, u32>,
    capacity: usize,
}

impl RepeatWindow {
    pub(crate) fn new(capacity: usize) -> Self {
        RepeatWindow {
            ring: VecDeque::with_capacity(capacity),
            counts: HashMap::with_capacity(capacity),
            capacity: capacity.max(1),
        }
    }

    /// Records a lookup of `key`, forgetting the oldest when the window is full.
    pub(crate) fn observe(&mut self, key: &LookupKey) {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let h = h.finish();
        if self.ring.len() == self.capacity {
            if let Some(old) = self.ring.pop_front() {
                if let Entry::Occupied(mut e) = self.counts.entry(old) {
                    *e.get_mut() -= 1;
                    if *e.get() == 0 {
                        e.remove();
                    }
                }
            }
        }
        self.ring.push_back(h);
        *self.counts.entry(h).or_insert(0) += 1;
    }

    /// `1 − distinct / len` over the window (0 when empty).
    pub(crate) fn ratio(&self) -> f64 {
        if self.ring.is_empty() {
            return 0.0;
        }
        1.0 - self.counts.len() as f64 / self.ring.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_counted_within_the_window_only() {
        let mut w = RepeatWindow::new(100);
        assert_eq!(w.ratio(), 0.0);
        for i in 0..100 {
            w.observe(&LookupKey::Int(i));
        }
        assert_eq!(w.ratio(), 0.0, "all distinct");
        for i in 0..100 {
            w.observe(&LookupKey::Int(i % 10));
        }
        assert!((w.ratio() - 0.9).abs() < 1e-9, "{}", w.ratio());
        for i in 1000..1100 {
            w.observe(&LookupKey::Int(i));
        }
        assert_eq!(w.ratio(), 0.0, "the repeats left the window");
    }
}
