//! Hot-key detection: a heavy-hitters sketch per keyed subtask.
//!
//! Every keyed subtask can keep a [`SpaceSaving`] sketch of the keys it processes and publish its
//! top keys, with their estimated share of the subtask's records, into
//! [`TaskMetrics::hot_keys`](sluice_metrics::TaskMetrics::hot_keys). [`merge_vertex_hot_keys`] turns the
//! subtasks' snapshots into the vertex's view (each key lives on exactly one subtask).
//!
//! # The sketch: Space-Saving (Metwally, Agrawal, El Abbadi, 2005)
//!
//! `m` counters (default [`DEFAULT_CAPACITY`] = 64). A key that has a counter increments it; a new
//! key takes over the counter with the smallest count `min`, records `error = min` and increments
//! it. After `total` offers, for every key:
//!
//! 1. the counts sum to `total`, so `min ≤ total / m`;
//! 2. for a key in the sketch, `count − error ≤ true ≤ count` and `error ≤ min ≤ total / m`;
//! 3. every key with `true > min` (in particular `true > total / m`) is in the sketch.
//!
//! [`SpaceSaving::offer`] is O(1) worst case (no scan of the counters): the counters are kept in an
//! array sorted by count, where equal counts form runs ("buckets", the array form of the
//! stream-summary structure); incrementing a counter swaps it with the last counter of its run
//! and moves the run boundary. At most one hash lookup per offer (none for the current top
//! key), plus a remove and an insert when a new key takes over a counter.
//!
//! # The hot path: sampling
//!
//! The keyed operator does not offer every record: [`SampledSketch`] / the operator hook offer
//! each record independently with probability `p = 1/N` (default `N` = [`DEFAULT_SAMPLE_EVERY`] =
//! 8). The gaps between sampled records are drawn from the geometric distribution, so the
//! per-record cost is one decrement and a branch; 1 record in `N` pays the sketch update. The
//! subtask's record count `n` stays exact (the gaps add up to it).
//!
//! Reported per key: `share_of_subtask = count / S` where `S` is the number of sampled records
//! (the sketch's total), and the estimated record count `count / S × n` (the error likewise).
//! The ratio `count / S` is used rather than `count × N / n` because the sampled total and the
//! key's sampled count move together: for a key with true share `q`, the ratio's variance is
//! `q(1−q)/S`, the scaled count's is `q(1−p)/E[S]` (4.4× larger at `q` = 0.8, `N` = 8).
//!
//! ## Error bound of the sampled sketch
//!
//! Given `S`, Bernoulli sampling picks a uniformly random `S`-subset of the `n` records, so a
//! key's sampled count `S_k` is hypergeometric, and Hoeffding's bound (which holds for sampling
//! without replacement) gives `P(|S_k/S − q| ≥ t) ≤ 2·exp(−2·S·t²)`. With the sketch's own
//! one-sided error (`S_k ≤ count ≤ S_k + error`):
//!
//! > with probability at least `1 − δ`, `q ∈ [(count − error)/S − t, count/S + t]` where
//! > `t = sqrt(ln(2/δ) / (2S))`; so `share_of_subtask − q ∈ [−t, t + error/S]`, and every key
//! > with `q > 1/m + t` is reported by the sketch.
//!
//! Bernstein's inequality, which uses the variance `σ² = q(1−q)`, is tighter for a dominant key:
//! `P(|S_k/S − q| ≥ t) ≤ 2·exp(−S·t² / (2σ² + 2t/3))`.
//!
//! **The skew job** (80% of records on key 0, ≥ 100k records, ±2% required): key 0 goes to one
//! subtask, which therefore sees `n ≥ 80 000` records of which a share `q ≥ 0.8` is key 0, so
//! `σ² ≤ 0.16`. At `N` = 8, `E[S] ≥ 10 000` (and `S ≥ 9 500` except with probability `< 10⁻⁶`,
//! Chernoff). For `t` = 0.02:
//! - Bernstein: `2·exp(−9 500 · 0.0004 / (0.32 + 0.0133)) = 2·e^−11.4 ≈ 2·10⁻⁵`;
//! - Hoeffding (distribution-free): `2·exp(−2 · 9 500 · 0.0004) = 2·e^−7.6 ≈ 10⁻³`;
//! - normal approximation: `sd = sqrt(0.16 / 9 500) = 0.0041`, so 2% is 4.9 standard deviations.
//!
//! Key 0 is among the first sampled keys, while the sketch still has free counters, so its
//! `error` is 0 (or tiny); `error/S` adds nothing. The share of the vertex is
//! `count_estimate / Σ subtask records`, whose error is the subtask share's error scaled by
//! `n / n_vertex ≤ 1`. With `N` = 16 (`S ≥ 4 750`) the Bernstein bound would be `≈ 7·10⁻³`
//! (hence the default of 8). Sampling is seeded per subtask, so a run repeats exactly.
//!
//! ## Thinning after a million records
//!
//! More samples buy little once `S` is in the tens of thousands, and at 1 in 8 the sampled path
//! was a fifth of the skew job's hot subtask. So after [`DEFAULT_THIN_AFTER`] (2²⁰) records the
//! hook samples one record in `8·N` ([`THIN_FACTOR`] = 8) and offers each as 8 occurrences
//! ([`SpaceSaving::offer_weighted`]): every record is still picked independently, and a key's
//! weighted count over the weighted total (a ratio estimator, as before) estimates its share. The bound above holds
//! with the effective sample size `S_eff = (Σw)² / Σw²` in place of `S` (Hoeffding's inequality
//! for a weighted sum). With `n₀` records before thinning, `Σw ≈ n/N` and `Σw² ≈ n₀/N + 8(n − n₀)/N`,
//! so `S_eff ≈ n² / (N·(8n − 7n₀))`, smallest at `n = 7n₀/4`: `7n₀/(16N)` ≈ 57 000 at `N` = 8, more
//! than five times the 10 000 the ±2% bound needs. The bound for runs under `n₀` records is
//! unchanged.
//!
//! # Publishing
//!
//! The operator owns its sketch (no lock, no shared state per record). Every 64 sampled records,
//! and on every `Operator::tick` (the buffer-timeout clock, which also fires while the task is
//! idle), it reads the clock; every [`HotKeysConfig::publish_interval`] (100 ms) it renders its
//! top keys into a [`HotKeysSnapshot`] and stores it under the subtask's `TaskMetrics::hot_keys`
//! mutex; once more at end of input. Readers (REST, the job result) lock
//! that mutex only to clone the snapshot.
//!
//! # How an operator finds its subtask's metrics
//!
//! Operators are built by factories that receive an [`OperatorContext`](sluice_types::OperatorContext)
//! only (`sluice-types` cannot name runtime types). The context carries the task's services
//! handle ([`TaskServices`](crate::services::TaskServices)), and an operator with a [`HotKeysHook`] attaches
//! to the services' `TaskMetrics` in `open`, whatever thread runs it. Without a task (e.g. an
//! operator driven by hand in a unit test, with the empty handle) the hook stays off and costs a
//! decrement and a branch per record, like an active one.

use std::any::Any;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use sluice_metrics::hot_keys::{HotKeyShare, HotKeysSnapshot};
use sluice_metrics::TaskMetrics;
use sluice_state::fasthash::{FastHashMap, FastHasher};

/// Counters per sketch unless configured otherwise.
pub const DEFAULT_CAPACITY: usize = 64;
/// One record in this many (on average) is offered to the sketch by the operator hook.
pub const DEFAULT_SAMPLE_EVERY: u32 = 8;
/// Keys per published snapshot.
pub const DEFAULT_TOP: usize = 10;
/// Records after which the operator hook thins its sampling (see [`HotKeysConfig::thin_after`]).
pub const DEFAULT_THIN_AFTER: u64 = 1 << 20;
/// How much the hook thins its sampling: one record in `sample_every × THIN_FACTOR`, each
/// sampled record then weighing `THIN_FACTOR`.
pub const THIN_FACTOR: u32 = 8;
/// Sampled records between two reads of the clock (to decide whether to publish).
const CLOCK_CHECK_EVERY: u32 = 64;

/// A key the sketch reports: `count − error ≤ true count ≤ count`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotKey<K> {
    /// The key.
    pub key: K,
    /// The sketch's count of the key: never below its true count.
    pub count: u64,
    /// Bound on how much `count` overestimates the key's true count.
    pub error: u64,
}

#[derive(Debug)]
struct Slot<K> {
    /// `None` for a counter no key has taken yet (count 0).
    key: Option<K>,
    count: u64,
    error: u64,
    /// Position in `order`.
    pos: u32,
    /// Run (bucket) of equal counts this slot belongs to.
    bucket: u32,
}

/// Space-Saving heavy-hitters sketch with `m` counters; see the [module docs](self) for the
/// guarantees.
#[derive(Debug)]
pub struct SpaceSaving<K> {
    /// Key → slot id.
    index: FastHashMap<K, u32>,
    /// Slot id → counter. Never moves.
    slots: Vec<Slot<K>>,
    /// Position → slot id, in ascending count order.
    order: Vec<u32>,
    /// Bucket id → last position of its run.
    bucket_end: Vec<u32>,
    free_buckets: Vec<u32>,
    total: u64,
}

impl<K: Hash + Eq + Clone> Default for SpaceSaving<K> {
    fn default() -> Self {
        SpaceSaving::new(DEFAULT_CAPACITY)
    }
}

impl<K: Hash + Eq + Clone> SpaceSaving<K> {
    /// A sketch with `capacity` counters (at least 1).
    pub fn new(capacity: usize) -> Self {
        let m = capacity.clamp(1, u32::MAX as usize);
        let slots = (0..m)
            .map(|i| Slot {
                key: None,
                count: 0,
                error: 0,
                pos: i as u32,
                bucket: 0,
            })
            .collect();
        SpaceSaving {
            index: FastHashMap::with_capacity_and_hasher(m, Default::default()),
            slots,
            order: (0..m as u32).collect(),
            // One run of m zero counters; at most m runs ever exist.
            bucket_end: {
                let mut ends = vec![0; m];
                ends[0] = m as u32 - 1;
                ends
            },
            free_buckets: (1..m as u32).rev().collect(),
            total: 0,
        }
    }

    /// Counts one occurrence of `key`. O(1).
    #[inline]
    pub fn offer(&mut self, key: &K) {
        self.total += 1;
        let id = self.counter_of(key);
        self.increment(id);
    }

    /// Counts `weight` occurrences of `key` (a sampled record standing for `weight` records):
    /// one lookup, then `weight` unit increments, so the sketch's structure and guarantees are
    /// those of `weight` offers of `key` in a row. O(`weight`).
    #[inline]
    pub fn offer_weighted(&mut self, key: &K, weight: u32) {
        if weight == 0 {
            return;
        }
        self.total += u64::from(weight);
        let id = self.counter_of(key);
        for _ in 0..weight {
            self.increment(id);
        }
    }

    /// `key`'s counter, taken over from the smallest if it has none.
    #[inline]
    fn counter_of(&mut self, key: &K) -> u32 {
        // The top key (most offers on a skewed stream) is found without hashing.
        let top = self.order[self.order.len() - 1];
        if self.slots[top as usize].key.as_ref() == Some(key) {
            top
        } else {
            match self.index.get(key) {
                Some(&id) => id,
                None => self.take_over_min(key),
            }
        }
    }

    /// The counter with the smallest count goes to `key`, keeping its count as `key`'s error.
    #[inline(never)]
    fn take_over_min(&mut self, key: &K) -> u32 {
        let id = self.order[0];
        let slot = &mut self.slots[id as usize];
        if let Some(old) = slot.key.take() {
            self.index.remove(&old);
        }
        slot.error = slot.count;
        slot.key = Some(key.clone());
        self.index.insert(key.clone(), id);
        id
    }

    #[inline]
    fn increment(&mut self, id: u32) {
        let (count, bucket, pos) = {
            let s = &self.slots[id as usize];
            (s.count, s.bucket, s.pos)
        };
        let end = self.bucket_end[bucket as usize];
        let run_continues = pos != end
            || (end > 0 && self.slots[self.order[end as usize - 1] as usize].bucket == bucket);
        let next_run = match self.order.get(end as usize + 1) {
            Some(&n) if self.slots[n as usize].count == count + 1 => {
                Some(self.slots[n as usize].bucket)
            }
            _ => None,
        };
        if !run_continues && next_run.is_none() {
            // Alone in its run and nobody at count + 1 (the usual case of the top key): the run
            // just moves up.
            self.slots[id as usize].count = count + 1;
            return;
        }
        // Move the counter to the end of its run; the run then ends one position earlier.
        if pos != end {
            let other = self.order[end as usize];
            self.order.swap(pos as usize, end as usize);
            self.slots[other as usize].pos = pos;
            self.slots[id as usize].pos = end;
        }
        if run_continues {
            self.bucket_end[bucket as usize] = end - 1;
        } else {
            self.free_buckets.push(bucket);
        }
        // Join the run of count + 1 right after, or start one.
        let new_bucket = next_run.unwrap_or_else(|| {
            // Buckets are as many as counters and a run holds at least one counter, so one
            // is free whenever a counter starts a run.
            #[allow(
                clippy::expect_used,
                reason = "as many buckets as counters; an empty pool is a bug"
            )]
            let b = self
                .free_buckets
                .pop()
                .expect("at most one run per counter");
            self.bucket_end[b as usize] = end;
            b
        });
        let s = &mut self.slots[id as usize];
        s.count = count + 1;
        s.bucket = new_bucket;
    }

    /// The `n` keys with the highest counts, highest first (ties in no particular order).
    pub fn top(&self, n: usize) -> Vec<HotKey<K>> {
        self.order
            .iter()
            .rev()
            .filter_map(|&id| {
                let s = &self.slots[id as usize];
                s.key.as_ref().map(|k| HotKey {
                    key: k.clone(),
                    count: s.count,
                    error: s.error,
                })
            })
            .take(n)
            .collect()
    }

    /// `(count, error)` of `key` if it has a counter.
    pub fn get(&self, key: &K) -> Option<(u64, u64)> {
        self.index.get(key).map(|&id| {
            let s = &self.slots[id as usize];
            (s.count, s.error)
        })
    }

    /// Number of offers so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Number of counters (`m`).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Number of keys currently in the sketch (at most `m`).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no key has been offered yet.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The smallest count (0 while a counter is free). Every key whose true count exceeds it is
    /// in the sketch, and every error is at most it.
    pub fn min_count(&self) -> u64 {
        self.slots[self.order[0] as usize].count
    }
}

/// The largest `every` drawn by scanning chunks of random words. A gap takes on average
/// `1 / (1 − (1 − 1/every)^⌊64/k⌋)` words: 1.06 at 8, 1.55 at 16, but 6.9 at 64, where one word
/// and a logarithm cost less.
const MAX_CHUNKED_EVERY: u32 = 16;

/// Picks records independently with probability `1/every`, by drawing the gaps between picked
/// records from the geometric distribution (so the per-record cost is a decrement and a branch).
/// Counts the records it has seen exactly.
///
/// For `every` a power of two up to `MAX_CHUNKED_EVERY` (`2^k`), a record is picked when its `k`-bit chunk of a
/// random word is zero, and the gap is found with bit operations on whole words (a few ns per
/// gap); otherwise the gap is `1 + ⌊ln U / ln(1 − 1/every)⌋`. Both are exact.
#[derive(Clone, Debug)]
pub struct BernoulliSampler {
    rng: u64,
    every: u32,
    /// `k` when `every = 2^k ≤ MAX_CHUNKED_EVERY`, else 0.
    bits: u32,
    /// Lowest bit of each complete `bits`-wide chunk of a word.
    chunk_lsbs: u64,
    /// Complete chunks per word.
    chunks: u32,
    /// `⌈2^16 / bits⌉`: bit position of a chunk → chunk index, by a multiply.
    inv_bits: u32,
    /// `ln(1 − 1/every)` for the general case.
    ln_keep: f64,
    /// Records in the current gap, the picked one included.
    gap: u32,
    /// Records left in the current gap; the record that brings it to 0 is picked.
    countdown: u32,
    /// Records of the completed gaps.
    before: u64,
}

impl BernoulliSampler {
    /// Picks one record in `every` on average (`every` ≤ 1: all); `seed` fixes the draws.
    pub fn new(every: u32, seed: u64) -> Self {
        let mut s = BernoulliSampler {
            rng: splitmix(seed ^ 0x5EED_F00D_B07E_5EED_u64),
            every: 1,
            bits: 0,
            chunk_lsbs: 0,
            chunks: 0,
            inv_bits: 0,
            ln_keep: 0.0,
            gap: 0,
            countdown: 0,
            before: 0,
        };
        s.set_every(every);
        s.gap = s.draw_gap();
        s.countdown = s.gap;
        s
    }

    /// Samples one record in `every` from the next gap on: call right after a picked record,
    /// before [`next_gap`](Self::next_gap). Records already seen stay counted, and since every
    /// record is picked independently, the records after the change are a Bernoulli sample at
    /// the new rate.
    pub fn set_every(&mut self, every: u32) {
        let every = every.max(1);
        let bits = if every.is_power_of_two() && (2..=MAX_CHUNKED_EVERY).contains(&every) {
            every.trailing_zeros()
        } else {
            0
        };
        self.every = every;
        self.bits = bits;
        self.chunks = 64u32.checked_div(bits).unwrap_or(0);
        self.chunk_lsbs = (0..self.chunks).fold(0u64, |m, j| m | 1 << (j * bits));
        self.inv_bits = if bits == 0 {
            0
        } else {
            (1u32 << 16).div_ceil(bits)
        };
        self.ln_keep = (1.0 - 1.0 / every as f64).ln();
    }

    /// One record in how many is picked.
    pub fn every(&self) -> u32 {
        self.every
    }

    /// Counts a record; `true` if it is picked (then call [`next_gap`](Self::next_gap)).
    #[inline]
    pub fn tick(&mut self) -> bool {
        self.countdown -= 1;
        self.countdown == 0
    }

    /// After a picked record: starts the next gap.
    #[inline]
    pub fn next_gap(&mut self) {
        self.before += self.gap as u64;
        self.gap = self.draw_gap();
        self.countdown = self.gap;
    }

    /// Records seen so far (exact).
    pub fn records(&self) -> u64 {
        self.before + (self.gap - self.countdown) as u64
    }

    fn next_word(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        splitmix(self.rng)
    }

    fn draw_gap(&mut self) -> u32 {
        if self.every == 1 {
            return 1;
        }
        if self.bits > 0 {
            let mut skipped = 0u32;
            loop {
                // A chunk's lowest bit in `t` is set iff the whole chunk of `w` is zero.
                let z = !self.next_word();
                let mut t = z;
                for i in 1..self.bits {
                    t &= z >> i;
                }
                t &= self.chunk_lsbs;
                if t != 0 {
                    let chunk = (t.trailing_zeros() * self.inv_bits) >> 16;
                    return skipped.saturating_add(chunk + 1);
                }
                skipped = skipped.saturating_add(self.chunks);
            }
        }
        // u uniform in (0, 1]: P(gap > g) = (1 − p)^g.
        let u = ((self.next_word() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
        let g = 1.0 + (u.ln() / self.ln_keep).floor();
        if g >= u32::MAX as f64 {
            u32::MAX
        } else {
            g as u32
        }
    }
}

pub(crate) fn splitmix(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A Space-Saving sketch fed with a Bernoulli sample (probability `1/every`) of a stream; see the
/// [module docs](self) for its error bound.
#[derive(Debug)]
pub struct SampledSketch<K> {
    sampler: BernoulliSampler,
    sketch: SpaceSaving<K>,
}

impl<K: Hash + Eq + Clone> SampledSketch<K> {
    /// A sketch of `capacity` counters fed one record in `every` (sampler seeded with `seed`).
    pub fn new(capacity: usize, every: u32, seed: u64) -> Self {
        SampledSketch {
            sampler: BernoulliSampler::new(every, seed),
            sketch: SpaceSaving::new(capacity),
        }
    }

    /// Counts a record of `key`; offers it to the sketch if it is sampled.
    #[inline]
    pub fn offer(&mut self, key: &K) {
        if self.sampler.tick() {
            self.sketch.offer(key);
            self.sampler.next_gap();
        }
    }

    /// Records seen (exact).
    pub fn records(&self) -> u64 {
        self.sampler.records()
    }

    /// The sketch of the sampled records (its `total()` is the sample size `S`).
    pub fn sketch(&self) -> &SpaceSaving<K> {
        &self.sketch
    }

    /// The top `n` keys as shares and estimated counts (see [`HotKeysSnapshot`]).
    pub fn snapshot(&self, n: usize, render: impl Fn(&K) -> String) -> HotKeysSnapshot {
        snapshot_of(&self.sketch, self.records(), n, render)
    }
}

fn snapshot_of<K: Hash + Eq + Clone>(
    sketch: &SpaceSaving<K>,
    records: u64,
    n: usize,
    render: impl Fn(&K) -> String,
) -> HotKeysSnapshot {
    let sampled = sketch.total();
    let keys = if sampled == 0 {
        Vec::new()
    } else {
        let scale = records as f64 / sampled as f64;
        sketch
            .top(n)
            .into_iter()
            .map(|h| HotKeyShare {
                key: render(&h.key),
                count: (h.count as f64 * scale).round() as u64,
                error: (h.error as f64 * scale).round() as u64,
                share_of_subtask: h.count as f64 / sampled as f64,
            })
            .collect()
    };
    HotKeysSnapshot {
        subtask_records: records,
        sampled_records: sampled,
        keys,
    }
}

/// A key of a vertex: which subtask holds it and its shares.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexHotKey {
    /// The key, as text.
    pub key: String,
    /// Estimated records of the key.
    pub count: u64,
    /// Overestimation bound of `count`.
    pub error: u64,
    /// `count / Σ subtask records` of the vertex.
    pub share_of_vertex: f64,
    /// The subtask that holds the key (each key lives on one).
    pub subtask: usize,
    /// `count / sampled records` of that subtask: the key's estimated share of its load.
    pub share_of_subtask: f64,
}

/// The vertex's hot keys from its subtasks' snapshots (`subtasks[i]` is subtask `i`'s; pass
/// `HotKeysSnapshot::default()` for a subtask without one). Each key lives on exactly one
/// subtask, so this concatenates; sorted by count, highest first (then by subtask and key).
pub fn merge_vertex_hot_keys(subtasks: &[HotKeysSnapshot]) -> Vec<VertexHotKey> {
    let total: u64 = subtasks.iter().map(|s| s.subtask_records).sum();
    let mut keys: Vec<VertexHotKey> = subtasks
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.keys.iter().map(move |k| VertexHotKey {
                key: k.key.clone(),
                count: k.count,
                error: k.error,
                share_of_vertex: if total == 0 {
                    0.0
                } else {
                    k.count as f64 / total as f64
                },
                subtask: i,
                share_of_subtask: k.share_of_subtask,
            })
        })
        .collect();
    keys.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.subtask.cmp(&b.subtask))
            .then_with(|| a.key.cmp(&b.key))
    });
    keys
}

/// The latest published snapshot of a subtask, if its operator publishes one.
pub fn subtask_hot_keys(metrics: &TaskMetrics) -> Option<HotKeysSnapshot> {
    metrics
        .hot_keys
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// The vertex view from its subtasks' metrics, in subtask order (`&[Arc<TaskMetrics>]` or an
/// iterator of `&Arc<TaskMetrics>`); empty when no subtask has published.
pub fn vertex_hot_keys<M: AsRef<TaskMetrics>>(
    subtasks: impl IntoIterator<Item = M>,
) -> Vec<VertexHotKey> {
    let snaps: Vec<HotKeysSnapshot> = subtasks
        .into_iter()
        .map(|m| subtask_hot_keys(m.as_ref()).unwrap_or_default())
        .collect();
    merge_vertex_hot_keys(&snaps)
}

/// Renders a key for reports without requiring `Debug`: integers, `bool`, `char` and strings
/// (`String`, `&'static str`, `Box<str>`, `Arc<str>`) as themselves, anything else as `#` and
/// a 64-bit hash of the key in hex.
pub fn display_key<K: Hash + 'static>(key: &K) -> String {
    let any = key as &dyn Any;
    macro_rules! plain {
        ($($t:ty),*) => {$(
            if let Some(v) = any.downcast_ref::<$t>() {
                return v.to_string();
            }
        )*};
    }
    plain!(
        i64,
        u64,
        i32,
        u32,
        String,
        &'static str,
        i8,
        i16,
        i128,
        isize,
        u8,
        u16,
        u128,
        usize,
        bool,
        char,
        Box<str>,
        Arc<str>
    );
    let mut h = FastHasher::default();
    key.hash(&mut h);
    format!("#{:016x}", h.finish())
}

/// Settings of an operator's hot-key sketch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotKeysConfig {
    /// Counters of the Space-Saving sketch (`m`).
    pub capacity: usize,
    /// Offer one record in this many (on average) to the sketch (`N`); 1 = every record (exact
    /// counts: never thinned).
    pub sample_every: u32,
    /// Keys per published snapshot.
    pub top: usize,
    /// Minimum time between two published snapshots while records flow.
    pub publish_interval: Duration,
    /// After this many records the hook samples one record in `sample_every × THIN_FACTOR`,
    /// each sampled record counting `THIN_FACTOR` in the sketch ([`DEFAULT_THIN_AFTER`];
    /// `None`: never; never either when `sample_every` is 1). See the module docs for why the
    /// error bound holds.
    pub thin_after: Option<u64>,
}

impl Default for HotKeysConfig {
    fn default() -> Self {
        HotKeysConfig {
            capacity: DEFAULT_CAPACITY,
            sample_every: DEFAULT_SAMPLE_EVERY,
            top: DEFAULT_TOP,
            publish_interval: Duration::from_millis(100),
            thin_after: Some(DEFAULT_THIN_AFTER),
        }
    }
}

/// The sampled path of an attached hook: sampler, sketch and publishing in one concrete type
/// behind one pointer, type-erased so that the operator does not need `K: Clone`.
trait HookCore<K>: Send {
    /// The length of the first gap (the hook's initial countdown).
    fn first_gap(&self) -> u32;
    /// A sampled record; returns the length of the next gap (the hook's new countdown).
    fn sampled(&mut self, key: &K) -> u32;
    /// Publishes a snapshot; `countdown` is the hook's (for the exact record count).
    fn publish(&mut self, countdown: u32);
    /// Publishes if the interval has elapsed and records arrived since the last snapshot.
    fn tick(&mut self, countdown: u32);
    /// What a sampled record counts now (1, or `THIN_FACTOR` once thinned).
    #[cfg(test)]
    fn weight(&self) -> u32;
}

struct SketchCore<K> {
    /// Its `countdown` is the hook's, written back when read.
    sampler: BernoulliSampler,
    sketch: SpaceSaving<K>,
    render: Box<dyn Fn(&K) -> String + Send>,
    target: Arc<TaskMetrics>,
    top: usize,
    interval: Duration,
    until_clock: u32,
    /// What a sampled record counts in the sketch: 1, then `THIN_FACTOR` once thinned.
    weight: u32,
    /// Records after which sampling thins (`u64::MAX`: never).
    thin_after: u64,
    last_publish: Instant,
    /// Records covered by the latest snapshot.
    published_records: u64,
}

impl<K: Hash + Eq + Clone + Send> SketchCore<K> {
    fn publish_now(&mut self) {
        let records = self.sampler.records();
        let snap = snapshot_of(&self.sketch, records, self.top, &self.render);
        *self
            .target
            .hot_keys
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(snap);
        self.last_publish = Instant::now();
        self.published_records = records;
    }
}

impl<K: Hash + Eq + Clone + Send> HookCore<K> for SketchCore<K> {
    fn first_gap(&self) -> u32 {
        self.sampler.countdown
    }

    fn sampled(&mut self, key: &K) -> u32 {
        self.sketch.offer_weighted(key, self.weight);
        self.sampler.countdown = 0;
        if self.weight == 1 && self.sampler.records() >= self.thin_after {
            let every = self.sampler.every().saturating_mul(THIN_FACTOR);
            self.sampler.set_every(every);
            self.weight = THIN_FACTOR;
        }
        self.until_clock -= 1;
        if self.until_clock == 0 {
            self.until_clock = CLOCK_CHECK_EVERY;
            if self.last_publish.elapsed() >= self.interval {
                self.publish_now();
            }
        }
        self.sampler.next_gap();
        self.sampler.countdown
    }

    fn publish(&mut self, countdown: u32) {
        self.sampler.countdown = countdown;
        self.publish_now();
    }

    #[cfg(test)]
    fn weight(&self) -> u32 {
        self.weight
    }

    fn tick(&mut self, countdown: u32) {
        self.sampler.countdown = countdown;
        if self.sampler.records() != self.published_records
            && self.last_publish.elapsed() >= self.interval
        {
            self.publish_now();
        }
    }
}

type Attach<K> = Box<dyn FnOnce(Arc<TaskMetrics>, u64) -> Box<dyn HookCore<K>> + Send>;

/// What a keyed operator embeds to report its hot keys: off by default; [`HotKeysHook::new`]
/// configures it, [`open`](Self::open) attaches it to the metrics of the operator's task,
/// [`observe`](Self::observe) is called per record, [`publish`](Self::publish)
/// at end of input.
///
/// The per-record path touches one `u32` of the hook (a decrement and a branch), so it adds
/// almost no code to the operator's `process`; everything else sits behind one pointer, reached
/// by 1 record in `sample_every`.
pub struct HotKeysHook<K> {
    /// Records until the next sampled one; `u32::MAX` while off (when it runs out, the cold path
    /// re-arms it).
    countdown: u32,
    core: Option<Box<dyn HookCore<K>>>,
    pending: Option<Attach<K>>,
}

impl<K> Default for HotKeysHook<K> {
    fn default() -> Self {
        HotKeysHook {
            countdown: u32::MAX,
            core: None,
            pending: None,
        }
    }
}

impl<K: Hash + Eq + Clone + Send + 'static> HotKeysHook<K> {
    /// A hook that will sketch with `cfg` and render keys with `render` once opened.
    pub fn new<F>(cfg: HotKeysConfig, render: F) -> Self
    where
        F: Fn(&K) -> String + Send + 'static,
    {
        let attach: Attach<K> = Box::new(move |target, seed| {
            Box::new(SketchCore {
                sampler: BernoulliSampler::new(cfg.sample_every, seed),
                sketch: SpaceSaving::new(cfg.capacity),
                render: Box::new(render),
                target,
                top: cfg.top,
                interval: cfg.publish_interval,
                until_clock: CLOCK_CHECK_EVERY,
                weight: 1,
                // Exact counting (1 in 1) stays exact.
                thin_after: match cfg.thin_after {
                    Some(n) if cfg.sample_every > 1 => n,
                    _ => u64::MAX,
                },
                last_publish: Instant::now(),
                published_records: 0,
            }) as Box<dyn HookCore<K>>
        });
        HotKeysHook {
            countdown: u32::MAX,
            core: None,
            pending: Some(attach),
        }
    }
}

impl<K> HotKeysHook<K> {
    /// Attaches to the metrics of the task running `ctx`'s operator (no-op outside a task, or
    /// if not configured). `seed` makes the sampling differ between subtasks (use the subtask
    /// index).
    pub fn open(&mut self, ctx: &sluice_types::OperatorContext, seed: u64) {
        if self.pending.is_none() {
            return;
        }
        if let Some(target) = crate::services::task_metrics(ctx) {
            self.open_with(target, seed);
        }
    }

    /// Attaches to `target` explicitly (for operators driven outside a task thread).
    pub fn open_with(&mut self, target: Arc<TaskMetrics>, seed: u64) {
        if let Some(attach) = self.pending.take() {
            let core = attach(target, splitmix(seed));
            self.countdown = core.first_gap();
            self.core = Some(core);
        }
    }

    /// Whether the hook is sketching.
    pub fn is_active(&self) -> bool {
        self.core.is_some()
    }

    /// Counts a record of `key`; 1 in `sample_every` (on average) goes to the sketch.
    #[inline]
    pub fn observe(&mut self, key: &K) {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.sampled(key);
        }
    }

    #[cold]
    #[inline(never)]
    fn sampled(&mut self, key: &K) {
        self.countdown = match &mut self.core {
            Some(core) => core.sampled(key),
            None => u32::MAX,
        };
    }

    /// Publishes a snapshot now (call at end of input).
    pub fn publish(&mut self) {
        if let Some(core) = &mut self.core {
            core.publish(self.countdown);
        }
    }

    /// Publishes if the publish interval has elapsed and records arrived since the latest
    /// snapshot (call from the operator's `tick`, so a slow or paused stream is reported too).
    pub fn tick(&mut self) {
        if let Some(core) = &mut self.core {
            core.tick(self.countdown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_runs<K: Hash + Eq + Clone>(s: &SpaceSaving<K>) {
        let counts: Vec<u64> = s
            .order
            .iter()
            .map(|&id| s.slots[id as usize].count)
            .collect();
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
        for (p, &id) in s.order.iter().enumerate() {
            let slot = &s.slots[id as usize];
            assert_eq!(slot.pos as usize, p);
            let end = s.bucket_end[slot.bucket as usize] as usize;
            assert!(end >= p && counts[end] == slot.count);
            assert!(end + 1 == counts.len() || counts[end + 1] > slot.count);
        }
        assert_eq!(counts.iter().sum::<u64>(), s.total());
    }

    #[test]
    fn counts_exactly_while_keys_fit() {
        let mut s = SpaceSaving::new(4);
        for k in [1, 2, 1, 3, 1, 2, 4] {
            s.offer(&k);
            check_runs(&s);
        }
        assert_eq!(
            s.top(2),
            vec![
                HotKey {
                    key: 1,
                    count: 3,
                    error: 0
                },
                HotKey {
                    key: 2,
                    count: 2,
                    error: 0
                }
            ]
        );
        assert_eq!(s.total(), 7);
        assert_eq!(s.min_count(), 1);
        // A fifth key takes over a counter of count 1.
        s.offer(&5);
        check_runs(&s);
        assert_eq!(s.get(&5), Some((2, 1)));
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn runs_stay_consistent_on_a_churning_stream() {
        let mut s = SpaceSaving::new(5);
        let mut x = 1u64;
        for _ in 0..5000 {
            x = splitmix(x);
            let k = if x >> 62 == 0 { 0 } else { x % 40 };
            s.offer(&k);
            check_runs(&s);
        }
        assert_eq!(s.top(1)[0].key, 0);
    }

    #[test]
    fn capacity_one_keeps_the_latest_key() {
        let mut s = SpaceSaving::new(1);
        for k in [7, 8, 8, 9] {
            s.offer(&k);
            check_runs(&s);
        }
        assert_eq!(
            s.top(5),
            vec![HotKey {
                key: 9,
                count: 4,
                error: 3
            }]
        );
    }

    #[test]
    fn sampler_counts_every_record_and_samples_about_one_in_n() {
        let mut b = BernoulliSampler::new(8, 42);
        let mut picked = 0u64;
        for _ in 0..800_000 {
            if b.tick() {
                picked += 1;
                b.next_gap();
            }
        }
        assert_eq!(b.records(), 800_000);
        assert!((98_000..102_000).contains(&picked), "{picked}");
        // Both gap methods follow the geometric law: mean `every`, P(gap = 1) = 1/every.
        for every in [2u32, 8, 10, 16, 32, 64, 100] {
            let mut b = BernoulliSampler::new(every, every as u64);
            let (mut gaps, mut ones) = (0u64, 0u64);
            for _ in 0..200_000 {
                ones += (b.gap == 1) as u64;
                gaps += 1;
                b.next_gap();
            }
            let mean = b.before as f64 / gaps as f64;
            let p1 = ones as f64 / gaps as f64;
            let e = every as f64;
            assert!(
                (mean / e - 1.0).abs() < 0.02,
                "every {every}: mean gap {mean}"
            );
            assert!(
                (p1 * e - 1.0).abs() < 0.05,
                "every {every}: P(gap = 1) = {p1}"
            );
        }
        let mut every = BernoulliSampler::new(1, 0);
        assert!((0..100).all(|_| {
            let t = every.tick();
            every.next_gap();
            t
        }));
    }

    #[test]
    fn display_key_shows_plain_keys_and_hashes_others() {
        assert_eq!(display_key(&-3i64), "-3");
        assert_eq!(display_key(&"abc".to_string()), "abc");
        assert_eq!(display_key(&'x'), "x");
        let h = display_key(&(1u8, 2u8));
        assert!(h.starts_with('#') && h.len() == 17, "{h}");
        assert_eq!(h, display_key(&(1u8, 2u8)));
    }

    #[test]
    fn vertex_view_concatenates_and_sorts() {
        let a = HotKeysSnapshot {
            subtask_records: 300,
            sampled_records: 300,
            keys: vec![HotKeyShare {
                key: "x".into(),
                count: 100,
                error: 0,
                share_of_subtask: 1.0 / 3.0,
            }],
        };
        let b = HotKeysSnapshot {
            subtask_records: 700,
            sampled_records: 700,
            keys: vec![HotKeyShare {
                key: "y".into(),
                count: 600,
                error: 2,
                share_of_subtask: 6.0 / 7.0,
            }],
        };
        let v = merge_vertex_hot_keys(&[a, HotKeysSnapshot::default(), b]);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].key.as_str(), v[0].subtask), ("y", 2));
        assert!((v[0].share_of_vertex - 0.6).abs() < 1e-12);
        assert!((v[1].share_of_vertex - 0.1).abs() < 1e-12);
        assert!(merge_vertex_hot_keys(&[]).is_empty());
    }

    #[test]
    fn hook_attaches_to_the_task_of_its_context_only() {
        let ctx = |services| sluice_types::OperatorContext {
            operator_name: "Keyed Aggregation".into(),
            task_name: "Keyed Aggregation".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 128,
            operator_id: "op".into(),
            services,
            options: Vec::new(),
        };
        let mut off: HotKeysHook<u32> = HotKeysHook::new(HotKeysConfig::default(), display_key);
        off.open(&ctx(sluice_types::ServicesHandle::none()), 0);
        assert!(!off.is_active());

        let m = Arc::new(TaskMetrics::default());
        let services = crate::services::TaskServices::metrics_only(m.clone());
        // Opened and driven on other threads than the one that created the services.
        let on_ctx = ctx(services.handle());
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut on: HotKeysHook<u32> = HotKeysHook::new(
                    HotKeysConfig {
                        sample_every: 1,
                        ..Default::default()
                    },
                    display_key,
                );
                on.open(&on_ctx, 0);
                assert!(on.is_active());
                for k in [1, 1, 1, 2] {
                    on.observe(&k);
                }
                on.tick(); // within the publish interval: nothing yet
                assert!(subtask_hot_keys(&m).is_none());
                on.publish();
            });
        });
        let snap = subtask_hot_keys(&m).unwrap();
        assert_eq!(snap.subtask_records, 4);
        assert_eq!(snap.keys[0].key, "1");
        assert_eq!(snap.keys[0].count, 3);
        assert!((snap.keys[0].share_of_subtask - 0.75).abs() < 1e-12);
        assert_eq!(vertex_hot_keys(&[m])[0].count, 3);
    }

    /// A hook with `cfg`, attached to fresh task metrics.
    fn attached_hook<K: Hash + Eq + Clone + Send + std::fmt::Display + 'static>(
        cfg: HotKeysConfig,
        seed: u64,
    ) -> (Arc<TaskMetrics>, HotKeysHook<K>) {
        let m = Arc::new(TaskMetrics::default());
        let mut hook = HotKeysHook::new(cfg, |k: &K| k.to_string());
        hook.open_with(m.clone(), seed);
        (m, hook)
    }

    #[test]
    fn tick_publishes_new_records_once_the_interval_elapsed() {
        let (m, mut hook) = attached_hook::<u32>(
            HotKeysConfig {
                sample_every: 1,
                publish_interval: Duration::ZERO,
                ..Default::default()
            },
            7,
        );
        hook.tick();
        assert!(subtask_hot_keys(&m).is_none(), "no records, no snapshot");
        hook.observe(&5);
        hook.tick();
        assert_eq!(subtask_hot_keys(&m).unwrap().subtask_records, 1);
        *m.hot_keys.lock().unwrap() = None;
        hook.tick();
        assert!(
            subtask_hot_keys(&m).is_none(),
            "nothing new since the last snapshot"
        );
    }

    #[test]
    fn a_weighted_offer_is_that_many_offers_in_a_row() {
        let mut weighted = SpaceSaving::new(4);
        let mut unit = SpaceSaving::new(4);
        let mut rng = 0x1234_u64;
        for _ in 0..5_000 {
            rng = splitmix(rng);
            let key = rng % 9;
            let w = (rng >> 32) as u32 % 9;
            weighted.offer_weighted(&key, w);
            for _ in 0..w {
                unit.offer(&key);
            }
        }
        assert_eq!(weighted.total(), unit.total());
        let view = |s: &SpaceSaving<u64>| {
            let mut t: Vec<_> = s
                .top(4)
                .into_iter()
                .map(|h| (h.key, h.count, h.error))
                .collect();
            t.sort();
            t
        };
        assert_eq!(view(&weighted), view(&unit));
        check_runs(&weighted);
    }

    #[test]
    fn exact_counting_is_never_thinned() {
        let (m, mut hook) = attached_hook::<u64>(
            HotKeysConfig {
                sample_every: 1,
                thin_after: Some(10),
                ..Default::default()
            },
            1,
        );
        for i in 0..1_000u64 {
            hook.observe(&(i % 3));
        }
        assert_eq!(hook.core.as_ref().map(|c| c.weight()), Some(1));
        hook.publish();
        let snap = subtask_hot_keys(&m).unwrap();
        assert_eq!(snap.sampled_records, 1_000);
        assert_eq!(snap.keys[0].count, 334);
    }

    #[test]
    fn the_hook_thins_its_sampling_and_keeps_the_share() {
        let (m, mut hook) = attached_hook::<u64>(
            HotKeysConfig {
                thin_after: Some(50_000),
                ..Default::default()
            },
            3,
        );
        let weight = |h: &HotKeysHook<u64>| h.core.as_ref().map(|c| c.weight());
        let n = 600_000u64;
        let mut rng = 0x77_u64;
        for i in 0..n {
            if i == 40_000 {
                assert_eq!(weight(&hook), Some(1), "not thinned before 50 000 records");
            }
            rng = splitmix(rng);
            // Key 0 on 80 % of the records, the rest over 1 000 keys.
            let key = if rng % 10 < 8 {
                0
            } else {
                1 + (rng >> 8) % 1_000
            };
            hook.observe(&key);
        }
        assert_eq!(weight(&hook), Some(THIN_FACTOR));
        hook.publish();
        let snap = subtask_hot_keys(&m).unwrap();
        assert_eq!(snap.subtask_records, n, "the record count stays exact");
        assert_eq!(snap.keys[0].key, "0");
        assert!(
            (snap.keys[0].share_of_subtask - 0.8).abs() < 0.02,
            "{}",
            snap.keys[0].share_of_subtask
        );
        // The weighted total still estimates n / 8.
        let expected = n as f64 / DEFAULT_SAMPLE_EVERY as f64;
        assert!(
            (snap.sampled_records as f64 / expected - 1.0).abs() < 0.1,
            "{} vs {expected}",
            snap.sampled_records
        );
    }
}
