//! The three operators of a salted two-phase aggregation (`key_by(k).two_phase(...)`):
//!
//! 1. [`SaltOp`] tags each record with a salt in `0..buckets` (round robin per subtask), so one
//!    hot key is spread over `buckets` partial aggregates;
//! 2. [`PreAggregateOp`], keyed by `(key, salt)`, folds records into partial aggregates and emits a
//!    partial every `emit_every` records of a `(key, salt)` and, at end of input, every partial not
//!    yet emitted — so the next stage receives a trickle instead of every record;
//! 3. [`CombineOp`], keyed by the original key, keeps the latest partial per salt and emits the
//!    fold of all of them whenever one changes.
//!
//! When `reduce` is associative and commutative (sum, min, max, count), the last value the
//! combiner emits per key equals the one-phase rolling result's last value: you cannot optimise
//! by changing the answer.

use std::hash::Hash;

use sluice_types::{Collector, Operator, OperatorContext, OperatorError};

use crate::fasthash::FastHashMap;

/// Adds a salt in `0..buckets`, round robin starting at this subtask's index (so subtasks do not
/// all start on bucket 0).
pub struct SaltOp {
    next: u32,
    buckets: u32,
}

impl SaltOp {
    pub fn new(buckets: u32) -> Self {
        SaltOp {
            next: 0,
            buckets: buckets.max(1),
        }
    }
}

impl<T: Send> Operator<T, (u32, T)> for SaltOp {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.next = ctx.subtask_index as u32 % self.buckets;
        Ok(())
    }

    #[inline]
    fn process(&mut self, r: T, out: &mut dyn Collector<(u32, T)>) -> Result<(), OperatorError> {
        let salt = self.next;
        self.next += 1;
        if self.next == self.buckets {
            self.next = 0;
        }
        out.collect((salt, r))
    }
}

struct Partial<T> {
    acc: T,
    unsent: u32,
}

/// Partial aggregation per `(key, salt)`.
pub struct PreAggregateOp<K, T, KS, R> {
    key_of: KS,
    reduce: R,
    emit_every: u32,
    state: FastHashMap<(K, u32), Partial<T>>,
    /// Key groups of `(key, salt)` for checkpoints.
    key_groups: Option<KeyGroups<(K, u32)>>,
}

/// Flink's key → key group function and the subtask's key-group range: which entries of a
/// snapshot a restored subtask keeps.
pub type KeyGroups<K> = (crate::state::KeyGroupFn<K>, std::ops::RangeInclusive<u32>);

impl<K, T, KS, R> PreAggregateOp<K, T, KS, R> {
    pub fn new(key_of: KS, reduce: R, emit_every: u32) -> Self {
        PreAggregateOp {
            key_of,
            reduce,
            key_groups: None,
            emit_every: emit_every.max(1),
            state: FastHashMap::default(),
        }
    }
}

impl<K, T, KS, R> PreAggregateOp<K, T, KS, R> {
    /// Makes the partials checkpointable by the key group of `(key, salt)`.
    pub fn with_key_groups(mut self, key_groups: KeyGroups<(K, u32)>) -> Self {
        self.key_groups = Some(key_groups);
        self
    }
}

impl<K, T, KS, R> Operator<(u32, T), (u32, T)> for PreAggregateOp<K, T, KS, R>
where
    K: crate::state::StateKey,
    T: crate::state::StateValue,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    #[inline]
    fn process(
        &mut self,
        (salt, r): (u32, T),
        out: &mut dyn Collector<(u32, T)>,
    ) -> Result<(), OperatorError> {
        let key = (self.key_of)(&r);
        let p = match self.state.get_mut(&(key, salt)) {
            Some(p) => {
                let acc = std::mem::replace(&mut p.acc, r.clone());
                p.acc = (self.reduce)(acc, r);
                p.unsent += 1;
                p
            }
            None => {
                let key = (self.key_of)(&r);
                self.state
                    .entry((key, salt))
                    .or_insert(Partial { acc: r, unsent: 1 })
            }
        };
        if p.unsent >= self.emit_every {
            p.unsent = 0;
            return out.collect((salt, p.acc.clone()));
        }
        Ok(())
    }

    /// `[(key group, (key, salt), partial, unsent)]`.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        let kg_of = self.key_groups.as_ref().map(|(f, _)| f.clone());
        let entries: Vec<(u32, &(K, u32), &T, u32)> = self
            .state
            .iter()
            .map(|(k, p)| (kg_of.as_ref().map_or(0, |f| f(k)), k, &p.acc, p.unsent))
            .collect();
        crate::state::layout::encode(&entries).map(Some)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        for (_, bytes) in parts {
            let entries: Vec<(u32, (K, u32), T, u32)> = crate::state::layout::decode(bytes)?;
            for (kg, k, acc, unsent) in entries {
                if self
                    .key_groups
                    .as_ref()
                    .is_none_or(|(_, r)| r.contains(&kg))
                {
                    self.state.insert(k, Partial { acc, unsent });
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn Collector<(u32, T)>) -> Result<(), OperatorError> {
        for ((_, salt), p) in self.state.iter_mut() {
            if p.unsent > 0 {
                p.unsent = 0;
                out.collect((*salt, p.acc.clone()))?;
            }
        }
        Ok(())
    }
}

/// Per key, the latest partial of every salt; emits their fold on every update.
pub struct CombineOp<K, T, KS, R> {
    key_of: KS,
    reduce: R,
    buckets: usize,
    state: FastHashMap<K, Vec<Option<T>>>,
    key_groups: Option<KeyGroups<K>>,
}

impl<K, T, KS, R> CombineOp<K, T, KS, R> {
    pub fn new(key_of: KS, reduce: R, buckets: u32) -> Self {
        CombineOp {
            key_of,
            reduce,
            buckets: buckets.max(1) as usize,
            state: FastHashMap::default(),
            key_groups: None,
        }
    }

    /// Makes the latest partials checkpointable by the key group of the key.
    pub fn with_key_groups(mut self, key_groups: KeyGroups<K>) -> Self {
        self.key_groups = Some(key_groups);
        self
    }
}

impl<K, T, KS, R> Operator<(u32, T), T> for CombineOp<K, T, KS, R>
where
    K: crate::state::StateKey,
    T: crate::state::StateValue,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    /// `[(key group, key, latest partial per salt)]`.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        let kg_of = self.key_groups.as_ref().map(|(f, _)| f.clone());
        let entries: Vec<(u32, &K, &Vec<Option<T>>)> = self
            .state
            .iter()
            .map(|(k, v)| (kg_of.as_ref().map_or(0, |f| f(k)), k, v))
            .collect();
        crate::state::layout::encode(&entries).map(Some)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        for (_, bytes) in parts {
            let entries: Vec<(u32, K, Vec<Option<T>>)> = crate::state::layout::decode(bytes)?;
            for (kg, k, mut slots) in entries {
                if self
                    .key_groups
                    .as_ref()
                    .is_none_or(|(_, r)| r.contains(&kg))
                {
                    slots.resize(self.buckets, None);
                    self.state.insert(k, slots);
                }
            }
        }
        Ok(())
    }

    fn process(
        &mut self,
        (salt, partial): (u32, T),
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        let key = (self.key_of)(&partial);
        let buckets = self.buckets;
        let slots = self.state.entry(key).or_insert_with(|| vec![None; buckets]);
        let i = salt as usize % buckets;
        slots[i] = Some(partial);
        let mut folded: Option<T> = None;
        for p in slots.iter().flatten() {
            folded = Some(match folded {
                None => p.clone(),
                Some(acc) => (self.reduce)(acc, p.clone()),
            });
        }
        match folded {
            Some(v) => out.collect(v),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_types::VecCollector;

    #[test]
    fn two_phase_sum_ends_at_the_one_phase_total() {
        let sum = |a: (u8, i64), b: (u8, i64)| (a.0, a.1 + b.1);
        let key = |r: &(u8, i64)| r.0;
        let mut salt = SaltOp::new(3);
        let mut pre = PreAggregateOp::new(key, sum, 4);
        let mut comb = CombineOp::new(key, sum, 3);
        let input: Vec<(u8, i64)> = (0..100).map(|i| ((i % 2) as u8, i as i64)).collect();
        let mut salted = VecCollector::default();
        for r in input.clone() {
            salt.process(r, &mut salted).unwrap();
        }
        let mut partials = VecCollector::default();
        for r in salted.records {
            pre.process(r, &mut partials).unwrap();
        }
        pre.finish(&mut partials).unwrap();
        assert!(
            partials.records.len() < 100,
            "the pre-aggregation thins the stream"
        );
        let mut out = VecCollector::default();
        for r in partials.records {
            comb.process(r, &mut out).unwrap();
        }
        let mut last = std::collections::BTreeMap::new();
        for (k, v) in out.records {
            last.insert(k, v);
        }
        let even: i64 = (0..100).filter(|i| i % 2 == 0).sum();
        let odd: i64 = (0..100).filter(|i| i % 2 == 1).sum();
        assert_eq!(last[&0], even);
        assert_eq!(last[&1], odd);
    }
}

/// Adaptive salting: only keys that this subtask's heavy-hitter sketch reports hot (at least
/// `threshold` of the records it has seen) are spread over `buckets` salts; every other key keeps
/// salt 0, so cold keys are pre-aggregated in one partial as before. The hot set is refreshed every
/// [`ADAPTIVE_REFRESH`] records. Any salting keeps the final results (the combiner merges all salts),
/// so the decision can change at any time.
pub struct AdaptiveSaltOp<K, KS> {
    key_of: KS,
    buckets: u32,
    next: u32,
    threshold: f64,
    sketch: crate::hotkeys::SampledSketch<K>,
    hot: std::collections::HashSet<K, crate::fasthash::FastBuildHasher>,
    until_refresh: u32,
}

/// Records between refreshes of the adaptive salter's hot set.
pub const ADAPTIVE_REFRESH: u32 = 1024;

impl<K: Hash + Eq + Clone, KS> AdaptiveSaltOp<K, KS> {
    pub fn new(key_of: KS, buckets: u32, threshold: f64) -> Self {
        AdaptiveSaltOp {
            key_of,
            buckets: buckets.max(1),
            next: 0,
            threshold,
            sketch: crate::hotkeys::SampledSketch::new(64, 8, 0x5a17),
            hot: Default::default(),
            until_refresh: ADAPTIVE_REFRESH,
        }
    }

    /// Keys currently salted.
    pub fn hot_keys(&self) -> usize {
        self.hot.len()
    }

    fn refresh(&mut self) {
        let total = self.sketch.sketch().total() as f64;
        self.hot = self
            .sketch
            .sketch()
            .top(64)
            .into_iter()
            .filter(|h| h.count as f64 >= self.threshold * total)
            .map(|h| h.key)
            .collect();
    }
}

impl<K, T, KS> Operator<T, (u32, T)> for AdaptiveSaltOp<K, KS>
where
    K: Hash + Eq + Clone + Send,
    T: Send,
    KS: Fn(&T) -> K + Send,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.next = ctx.subtask_index as u32 % self.buckets;
        Ok(())
    }

    #[inline]
    fn process(&mut self, r: T, out: &mut dyn Collector<(u32, T)>) -> Result<(), OperatorError> {
        let key = (self.key_of)(&r);
        self.sketch.offer(&key);
        self.until_refresh -= 1;
        if self.until_refresh == 0 {
            self.until_refresh = ADAPTIVE_REFRESH;
            self.refresh();
        }
        let salt = if !self.hot.is_empty() && self.hot.contains(&key) {
            let s = self.next;
            self.next += 1;
            if self.next == self.buckets {
                self.next = 0;
            }
            s
        } else {
            0
        };
        out.collect((salt, r))
    }
}

#[cfg(test)]
mod adaptive_tests {
    use super::*;
    use sluice_types::VecCollector;

    #[test]
    fn only_hot_keys_are_salted() {
        let mut op = AdaptiveSaltOp::new(|r: &u32| *r, 4, 0.1);
        let mut out = VecCollector::default();
        // Key 0 is 80% of the stream, keys 1..=100 share the rest.
        for i in 0..20_000u32 {
            let k = if i % 5 != 0 { 0 } else { 1 + i % 100 };
            op.process(k, &mut out).unwrap();
        }
        assert_eq!(op.hot_keys(), 1);
        let late = &out.records[10_000..];
        let salts_of_hot: std::collections::BTreeSet<u32> = late
            .iter()
            .filter(|(_, k)| *k == 0)
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(salts_of_hot.len(), 4, "the hot key uses every bucket");
        assert!(
            late.iter().filter(|(_, k)| *k != 0).all(|(s, _)| *s == 0),
            "cold keys stay unsalted"
        );
    }
}
