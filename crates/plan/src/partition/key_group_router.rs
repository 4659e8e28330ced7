//! Flink's key → key group → subtask routing for one edge, precomputed so that a record costs
//! no division.
//!
//! [`assign_to_key_group`](super::key_groups::assign_to_key_group) takes `murmur % max_parallelism`
//! and [`key_group_to_subtask`] `key_group * parallelism / max_parallelism`: two integer divisions
//! per record, the larger part of a HASH edge's per-record cost. Both divisors are fixed per edge,
//! so the router keeps the subtask of every key group in a table and takes the remainder by
//! Lemire's "fastmod" (a multiply by the precomputed `2^64 / max_parallelism`, exact for every
//! 32-bit dividend). The results are those of the two functions, bit for bit (tested below for
//! every key group and for arbitrary hashes).

use super::key_groups::{key_group_to_subtask, murmur_hash, UPPER_BOUND_MAX_PARALLELISM};

/// The routing of one HASH edge: `max_parallelism` key groups over `parallelism` subtasks.
#[derive(Clone, Debug)]
pub struct KeyGroupRouter {
    max_parallelism: u32,
    /// `⌊(2^64 − 1) / max_parallelism⌋ + 1` (wrapping: 0 for a max parallelism of 1).
    magic: u64,
    /// The subtask owning each key group.
    owner: Vec<u16>,
}

impl KeyGroupRouter {
    /// # Panics
    /// If `max_parallelism` is 0 or above Flink's bound (`1 << 15`), or `parallelism` is 0 or
    /// above `max_parallelism` (the plan refuses both before any router is made).
    pub fn new(max_parallelism: u32, parallelism: u32) -> KeyGroupRouter {
        assert!(
            (1..=UPPER_BOUND_MAX_PARALLELISM).contains(&max_parallelism),
            "max parallelism {max_parallelism} outside 1..=32768"
        );
        assert!(
            (1..=max_parallelism).contains(&parallelism),
            "parallelism {parallelism} outside 1..={max_parallelism}"
        );
        let owner = (0..max_parallelism)
            .map(|kg| key_group_to_subtask(max_parallelism, parallelism, kg) as u16)
            .collect();
        KeyGroupRouter {
            max_parallelism,
            magic: (u64::MAX / u64::from(max_parallelism)).wrapping_add(1),
            owner,
        }
    }

    /// `assign_to_key_group(key_hash, max_parallelism)`.
    #[inline]
    pub fn key_group(&self, key_hash: i32) -> u32 {
        // murmur_hash is never negative: the cast keeps the value.
        let x = murmur_hash(key_hash) as u32;
        let low = self.magic.wrapping_mul(u64::from(x));
        ((u128::from(low) * u128::from(self.max_parallelism)) >> 64) as u32
    }

    /// The subtask the key with Java hash `key_hash` goes to (Flink's
    /// `KeyGroupStreamPartitioner`).
    #[inline]
    pub fn subtask(&self, key_hash: i32) -> usize {
        usize::from(self.owner[self.key_group(key_hash) as usize])
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::partition::assign_to_key_group;

    fn expected(hash: i32, max_p: u32, p: u32) -> (u32, usize) {
        let kg = assign_to_key_group(hash, max_p);
        (kg, key_group_to_subtask(max_p, p, kg) as usize)
    }

    #[test]
    fn edge_cases_match_flinks_formulas() {
        for (max_p, p) in [
            (1, 1),
            (2, 1),
            (128, 2),
            (128, 128),
            (129, 7),
            (32768, 3),
            (32768, 32768),
            (1000, 999),
        ] {
            let r = KeyGroupRouter::new(max_p, p);
            for hash in [0, 1, -1, i32::MIN, i32::MAX, 42, -42, 0x7fff_0000] {
                assert_eq!(
                    (r.key_group(hash), r.subtask(hash)),
                    expected(hash, max_p, p),
                    "{hash} {max_p} {p}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn routes_as_flinks_formulas(hash in any::<i32>(), max_p in 1u32..=32768, p_frac in 0.0f64..1.0) {
            let p = ((f64::from(max_p) * p_frac) as u32).clamp(1, max_p);
            let r = KeyGroupRouter::new(max_p, p);
            prop_assert_eq!((r.key_group(hash), r.subtask(hash)), expected(hash, max_p, p));
        }
    }
}
