//! A small, fast, non-cryptographic hasher for in-memory keyed state.
//!
//! Keys come from the job itself, not from an adversary on the network, so SipHash's DoS
//! resistance buys nothing here and costs ~4x on the hottest path of a keyed aggregation.
//! This is the multiply-rotate scheme popularised by rustc's FxHash.

use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The hasher behind [`FastHashMap`]: FxHash-style multiply-rotate over 8-byte words.
#[derive(Default, Clone, Copy)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let (words, rest) = bytes.as_chunks::<8>();
        for w in words {
            self.add(u64::from_le_bytes(*w));
        }
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64)
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64)
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i)
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64)
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Fold the high bits down: hashbrown takes its control bits from the top 7 and the bucket
        // from the bottom, and a bare multiply leaves the low bits weak for small integer keys.
        self.hash ^ (self.hash >> 29)
    }
}

/// Builds [`FastHasher`]s (stateless: equal keys hash equally in every map).
pub type FastBuildHasher = BuildHasherDefault<FastHasher>;
/// A `HashMap` with the fast hasher, for keys that come from the job.
pub type FastHashMap<K, V> = std::collections::HashMap<K, V, FastBuildHasher>;
/// A `HashSet` with the fast hasher, for keys that come from the job.
pub type FastHashSet<T> = std::collections::HashSet<T, FastBuildHasher>;
