//! The three operators of a salted two-phase aggregation (`key_by(k).two_phase(...)`), Flink's
//! local-global aggregation:
//!
//! 1. [`SaltOp`] tags each record with a salt in `0..buckets` (round robin per subtask), so one
//!    hot key is spread over `buckets` partial aggregates;
//! 2. [`PreAggregateOp`], keyed by `(key, salt)`, folds records into a partial aggregate and
//!    sends it on — as a *delta*: what it folded since it last sent — every `emit_every`
//!    records of a `(key, salt)`, before every checkpoint barrier and at end of input, so the
//!    next stage receives a trickle instead of every record;
//! 3. [`CombineOp`], keyed by the original key, folds the deltas into the key's rolling value,
//!    exactly as the one-phase rolling reduce folds records, and emits it.
//!
//! When `reduce` is associative and commutative (sum, min, max, count), the last value the
//! combiner emits per key equals the one-phase rolling result's last value: you cannot optimise
//! by changing the answer.
//!
//! Because the pre-aggregation sends everything it holds before a barrier (Flink's
//! `prepareSnapshotPreBarrier`), it has no state at a checkpoint; and the combiner keeps the
//! one-phase reduce's state (value state [`super::keyed_reduce::ROLLING_STATE`] by key group).
//! So a savepoint of the one-phase job restores into the two-phase one (the combiner takes the
//! per-key values over, the pre-aggregation starts empty) and back, at any parallelism.

use std::hash::Hash;

use sluice_types::{Collector, Operator, OperatorContext, OperatorError};

use sluice_state::fasthash::FastHashMap;

/// Adds a salt in `0..buckets`, round robin starting at this subtask's index (so subtasks do not
/// all start on bucket 0).
pub struct SaltOp {
    next: u32,
    buckets: u32,
}

impl SaltOp {
    /// Salts over `buckets` values (at least 1).
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

/// Partial aggregation per `(key, salt)`: holds only what it has not sent yet.
pub struct PreAggregateOp<K, T, KS, R> {
    key_of: KS,
    reduce: R,
    emit_every: u32,
    pending: FastHashMap<(K, u32), Partial<T>>,
}

impl<K, T, KS, R> PreAggregateOp<K, T, KS, R> {
    /// Folds records per `(key_of(record), salt)` with `reduce`, sending a key's delta after
    /// every `emit_every` records folded into it (at least 1).
    pub fn new(key_of: KS, reduce: R, emit_every: u32) -> Self {
        PreAggregateOp {
            key_of,
            reduce,
            emit_every: emit_every.max(1),
            pending: FastHashMap::default(),
        }
    }

    /// `(key, salt)` partials not sent yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

impl<K, T, KS, R> PreAggregateOp<K, T, KS, R>
where
    K: Hash + Eq,
    T: Send,
{
    /// Sends every pending partial (deltas since the last send) and forgets them.
    fn send_all(&mut self, out: &mut dyn Collector<(u32, T)>) -> Result<(), OperatorError> {
        for ((_, salt), p) in self.pending.drain() {
            out.collect((salt, p.acc))?;
        }
        Ok(())
    }
}

impl<K, T, KS, R> Operator<(u32, T), (u32, T)> for PreAggregateOp<K, T, KS, R>
where
    K: Hash + Eq + Send,
    T: Clone + Send,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    #[inline]
    fn process(
        &mut self,
        (salt, r): (u32, T),
        out: &mut dyn Collector<(u32, T)>,
    ) -> Result<(), OperatorError> {
        use std::collections::hash_map::Entry;
        let key = (self.key_of)(&r);
        match self.pending.entry((key, salt)) {
            Entry::Occupied(mut e) => {
                let p = e.get_mut();
                let acc = std::mem::replace(&mut p.acc, r.clone());
                p.acc = (self.reduce)(acc, r);
                p.unsent += 1;
                if p.unsent >= self.emit_every {
                    let (_, p) = e.remove_entry();
                    return out.collect((salt, p.acc));
                }
                Ok(())
            }
            Entry::Vacant(v) if self.emit_every <= 1 => {
                drop(v);
                out.collect((salt, r))
            }
            Entry::Vacant(v) => {
                v.insert(Partial { acc: r, unsent: 1 });
                Ok(())
            }
        }
    }

    /// Everything pending goes out ahead of the barrier, so nothing is left to snapshot.
    fn prepare_snapshot_pre_barrier(
        &mut self,
        out: &mut dyn Collector<(u32, T)>,
    ) -> Result<(), OperatorError> {
        self.send_all(out)
    }

    fn finish(&mut self, out: &mut dyn Collector<(u32, T)>) -> Result<(), OperatorError> {
        self.send_all(out)
    }
}

/// Per key, the rolling fold of the partials received: the one-phase rolling reduce over the
/// pre-aggregation's deltas, with the same state: the last step
/// of [`SaltOp`] → [`PreAggregateOp`] → `CombineOp`.
pub struct CombineOp<K, T, KS, R> {
    rolling: super::KeyedReduceOp<K, T, KS, R>,
}

impl<K, T, KS, R> CombineOp<K, T, KS, R> {
    /// Folds the partials of each `key_of(partial)` with `reduce`, the same fold as theirs.
    pub fn new(key_of: KS, reduce: R) -> Self {
        CombineOp {
            rolling: super::KeyedReduceOp::new(key_of, reduce),
        }
    }

    /// Keeps the rolling values on `config`'s backend, by key group.
    pub fn with_state(self, config: sluice_state::KeyedStateConfig<K>) -> Self {
        CombineOp {
            rolling: self.rolling.with_state(config),
        }
    }
}

impl<K, T, KS, R> Operator<(u32, T), T> for CombineOp<K, T, KS, R>
where
    K: sluice_state::StateKey,
    T: sluice_state::StateValue,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    #[inline]
    fn process(
        &mut self,
        (_salt, partial): (u32, T),
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        self.rolling.process(partial, out)
    }

    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.rolling.open(ctx)
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        self.rolling.snapshot_state(checkpoint_id)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        self.rolling.restore_state(parts)
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
        let mut comb = CombineOp::new(key, sum);
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
    hot: std::collections::HashSet<K, sluice_state::fasthash::FastBuildHasher>,
    until_refresh: u32,
}

/// Records between refreshes of the adaptive salter's hot set.
pub const ADAPTIVE_REFRESH: u32 = 1024;

impl<K: Hash + Eq + Clone, KS> AdaptiveSaltOp<K, KS> {
    /// Spreads keys holding at least `threshold` (a share, 0..1) of the records seen over
    /// `buckets` salts.
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
