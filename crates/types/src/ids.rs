//! Identifiers. Vertex and job ids print as 32 lowercase hex digits, like Flink's.

use std::fmt;

/// A stream-graph node id (Flink's transformation id): 1-based, allocated per environment in
/// creation order; virtual transformations (key_by, union, partitioning) consume ids too.
pub type NodeId = u32;

/// 0-based index of a parallel subtask.
pub type SubtaskIndex = usize;

/// A 128-bit id rendered as 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id128(pub u128);

impl fmt::Display for Id128 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}
impl fmt::Debug for Id128 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Id128 {
    /// Parses 32 hex digits (as in REST paths).
    pub fn parse_hex(s: &str) -> Option<Id128> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u128::from_str_radix(s, 16).ok().map(Id128)
    }

    /// A deterministic id from a byte string: two independent 64-bit FNV-1a style mixes,
    /// finalised with a murmur3 fmix. Stable across runs and platforms, so the same job graph
    /// always gets the same vertex ids.
    pub fn hash_of(bytes: &[u8]) -> Id128 {
        fn mix(seed: u64, bytes: &[u8]) -> u64 {
            let mut h = seed;
            for &b in bytes {
                h ^= b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            h ^= h >> 33;
            h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
            h ^= h >> 33;
            h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
            h ^ (h >> 33)
        }
        let hi = mix(0xcbf2_9ce4_8422_2325, bytes);
        let lo = mix(0x9e37_79b9_7f4a_7c15, bytes);
        Id128(((hi as u128) << 64) | lo as u128)
    }
}

/// Id of a chained job vertex.
pub type JobVertexId = Id128;
/// Id of a job.
pub type JobId = Id128;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_determinism() {
        let a = Id128::hash_of(b"vertex-1");
        assert_eq!(a, Id128::hash_of(b"vertex-1"));
        assert_ne!(a, Id128::hash_of(b"vertex-2"));
        let s = a.to_string();
        assert_eq!(s.len(), 32);
        assert_eq!(Id128::parse_hex(&s), Some(a));
        assert_eq!(Id128::parse_hex("xyz"), None);
        assert_eq!(Id128(1).to_string(), "00000000000000000000000000000001");
    }
}
