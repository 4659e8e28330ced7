//! Key groups, as in Flink's `KeyGroupRangeAssignment`.
//!
//! Flink never maps a key straight to a subtask. It maps the key to one of `max_parallelism`
//! *key groups* and gives each subtask a contiguous range of key groups. Keyed state is stored
//! per key group, so rescaling only moves whole ranges, and restoring needs the very same
//! mapping — which is why every function here reproduces Flink's integer arithmetic exactly.
//!
//! Java `int` products such as `keyGroup * parallelism` cannot overflow for the bounded inputs
//! Flink allows; we compute in `u64` so that they cannot overflow for *any* `u32` input either,
//! while giving identical results wherever Flink's inputs are valid.

use std::ops::RangeInclusive;

use super::java_hash::JavaHash;

/// Smallest max parallelism Flink picks by default (`1 << 7`).
pub const DEFAULT_LOWER_BOUND_MAX_PARALLELISM: u32 = 1 << 7;

/// Largest max parallelism Flink accepts at all (`1 << 15`, inclusive).
pub const UPPER_BOUND_MAX_PARALLELISM: u32 = 1 << 15;

/// Flink's `MathUtils.murmurHash(int)`: one murmur3 round plus finaliser over a single 32-bit
/// word, folded to a non-negative number.
///
/// Flink applies it on top of Java's `hashCode()` because many `hashCode()`s (e.g. `Integer`'s)
/// are far from uniform. The fold to non-negative is Flink's, not murmur3's: negative results are
/// negated, and `i32::MIN` (which has no positive counterpart) becomes `0`.
#[inline]
pub fn murmur_hash(code: i32) -> i32 {
    let mut c = code as u32;
    c = c.wrapping_mul(0xcc9e_2d51);
    c = c.rotate_left(15);
    c = c.wrapping_mul(0x1b87_3593);
    c = c.rotate_left(13);
    c = c.wrapping_mul(5).wrapping_add(0xe654_6b64);
    // Murmur3 mixes in the input length in bytes: one 4-byte int.
    c ^= 4;
    c ^= c >> 16;
    c = c.wrapping_mul(0x85eb_ca6b);
    c ^= c >> 13;
    c = c.wrapping_mul(0xc2b2_ae35);
    c ^= c >> 16;
    let c = c as i32;
    if c >= 0 {
        c
    } else if c != i32::MIN {
        -c
    } else {
        0
    }
}

/// The max parallelism Flink uses when none is configured (`pipeline.max-parallelism` = -1):
/// `min(max(next_pow2(p + p/2), 128), 32768)`.
///
/// The 1.5× headroom lets a job later scale up by half without a savepoint-incompatible change of
/// max parallelism. `parallelism == 0` (which Flink rejects) yields the lower bound, 128.
pub fn default_max_parallelism(parallelism: u32) -> u32 {
    let p = u64::from(parallelism);
    let headroom = (p + p / 2).next_power_of_two();
    headroom.clamp(
        u64::from(DEFAULT_LOWER_BOUND_MAX_PARALLELISM),
        u64::from(UPPER_BOUND_MAX_PARALLELISM),
    ) as u32
}

/// The key group (in `0..max_parallelism`) of a key whose Java `hashCode()` is `key_hash`:
/// `murmur_hash(key_hash) % max_parallelism`.
///
/// # Panics
/// If `max_parallelism` is 0.
#[inline]
pub fn assign_to_key_group(key_hash: i32, max_parallelism: u32) -> u32 {
    // murmur_hash is never negative, so the cast cannot change the value.
    (murmur_hash(key_hash) as u32) % max_parallelism
}

/// The subtask (in `0..parallelism`) that owns `key_group`: `key_group * parallelism /
/// max_parallelism`, which is the inverse of [`key_group_range_for_subtask`].
///
/// # Panics
/// If `max_parallelism` is 0.
#[inline]
pub fn key_group_to_subtask(max_parallelism: u32, parallelism: u32, key_group: u32) -> u32 {
    (u64::from(key_group) * u64::from(parallelism) / u64::from(max_parallelism)) as u32
}

/// The subtask Flink's `KeyGroupStreamPartitioner` sends `key` to.
///
/// # Panics
/// If `max_parallelism` is 0.
#[inline]
pub fn assign_key_to_subtask<K: JavaHash + ?Sized>(
    key: &K,
    max_parallelism: u32,
    parallelism: u32,
) -> u32 {
    let key_group = assign_to_key_group(key.java_hash_code(), max_parallelism);
    key_group_to_subtask(max_parallelism, parallelism, key_group)
}

/// An inclusive range of key groups, `start..=end`, like Flink's `KeyGroupRange`.
///
/// A range with `start > end` is empty (Flink uses `[0, -1]`; unsigned, we cannot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyGroupRange {
    /// First key group in the range.
    pub start: u32,
    /// Last key group in the range (inclusive).
    pub end: u32,
}

impl KeyGroupRange {
    /// Number of key groups in the range.
    #[inline]
    pub fn len(&self) -> u32 {
        if self.end >= self.start {
            self.end - self.start + 1
        } else {
            0
        }
    }

    /// Whether the range holds no key group.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.start > self.end
    }

    /// Whether `key_group` lies in the range.
    #[inline]
    pub fn contains(&self, key_group: u32) -> bool {
        self.start <= key_group && key_group <= self.end
    }

    /// The key groups of the range, in ascending order.
    #[inline]
    pub fn iter(&self) -> RangeInclusive<u32> {
        self.start..=self.end
    }
}

impl IntoIterator for KeyGroupRange {
    type Item = u32;
    type IntoIter = RangeInclusive<u32>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The key groups subtask `subtask` owns: `start = (i*M + p - 1) / p`, `end = ((i+1)*M - 1) / p`.
///
/// Ranges are contiguous and, over all subtasks, partition `0..max_parallelism`; their sizes
/// differ by at most one. A key group `kg` is in subtask `i`'s range exactly when
/// [`key_group_to_subtask`] returns `i` for it.
///
/// # Panics
/// Like Flink: if `parallelism` is 0, `max_parallelism < parallelism`, or
/// `subtask >= parallelism`.
pub fn key_group_range_for_subtask(
    max_parallelism: u32,
    parallelism: u32,
    subtask: u32,
) -> KeyGroupRange {
    assert!(parallelism > 0, "parallelism must be at least 1");
    assert!(
        max_parallelism >= parallelism,
        "max parallelism {max_parallelism} must not be smaller than parallelism {parallelism}"
    );
    assert!(
        subtask < parallelism,
        "subtask {subtask} out of range for parallelism {parallelism}"
    );
    let (m, p, i) = (
        u64::from(max_parallelism),
        u64::from(parallelism),
        u64::from(subtask),
    );
    // Both quotients are < max_parallelism, so they fit in u32.
    KeyGroupRange {
        start: (i * m).div_ceil(p) as u32,
        end: (((i + 1) * m - 1) / p) as u32,
    }
}

/// Validates a (parallelism, max parallelism) pair the way Flink does before building a job:
/// parallelism ≥ 1, `1 <= max_parallelism <= 32768`, and `max_parallelism >= parallelism`
/// (otherwise some subtask would own no key group).
pub fn check_max_parallelism(parallelism: u32, max_parallelism: u32) -> Result<(), String> {
    if parallelism == 0 {
        return Err(format!(
            "parallelism {parallelism} must be at least 1 (max parallelism {max_parallelism})"
        ));
    }
    if max_parallelism == 0 || max_parallelism > UPPER_BOUND_MAX_PARALLELISM {
        return Err(format!(
            "max parallelism {max_parallelism} must be between 1 and \
             {UPPER_BOUND_MAX_PARALLELISM} (parallelism {parallelism})"
        ));
    }
    if max_parallelism < parallelism {
        return Err(format!(
            "max parallelism {max_parallelism} must not be smaller than parallelism {parallelism}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_max_parallelism_matches_spec_examples() {
        assert_eq!(default_max_parallelism(1), 128);
        assert_eq!(default_max_parallelism(100), 256);
        assert_eq!(default_max_parallelism(200), 512);
        assert_eq!(default_max_parallelism(30_000), 32_768);
    }

    #[test]
    fn default_max_parallelism_edges() {
        assert_eq!(default_max_parallelism(0), 128);
        // 85 + 42 = 127 -> 128; 86 + 43 = 129 -> 256: the 1.5x rounds down (integer p/2).
        assert_eq!(default_max_parallelism(85), 128);
        assert_eq!(default_max_parallelism(86), 256);
        // p + p/2 exactly a power of two must not be bumped to the next one.
        assert_eq!(default_max_parallelism(171), 256);
        assert_eq!(default_max_parallelism(172), 512);
        assert_eq!(default_max_parallelism(341), 512);
        assert_eq!(default_max_parallelism(21_845), 32_768);
        assert_eq!(default_max_parallelism(32_768), 32_768);
        assert_eq!(default_max_parallelism(u32::MAX), 32_768);
    }

    #[test]
    fn murmur_matches_flink_values() {
        // From a JDK run of MathUtils.murmurHash; the key groups mod 128 also agree with the
        // Flink 2.3 fixture (hash 0 = "" -> 94, hash 4 = -5L -> 7, hash 97 = "a" -> 81).
        assert_eq!(murmur_hash(0), 593_689_054);
        assert_eq!(murmur_hash(1), 68_075_478);
        assert_eq!(murmur_hash(-1), 1_982_413_648);
        assert_eq!(murmur_hash(4), 1_889_779_975);
        assert_eq!(murmur_hash(97), 1_455_541_201);
        assert_eq!(murmur_hash(99_162_322), 1_715_862_179);
        assert_eq!(murmur_hash(i32::MIN), 1_718_298_732);
        assert_eq!(murmur_hash(i32::MAX), 1_653_689_534);
    }

    #[test]
    fn murmur_is_never_negative() {
        let mut x = 0x1234_5678_u32;
        for _ in 0..100_000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            assert!(murmur_hash(x as i32) >= 0);
        }
    }

    #[test]
    fn key_groups_match_flink_fixture_rows() {
        assert_eq!(assign_to_key_group("".java_hash_code(), 128), 94);
        assert_eq!(assign_to_key_group("".java_hash_code(), 1000), 54);
        assert_eq!(assign_to_key_group("".java_hash_code(), 32_768), 31_198);
        assert_eq!(assign_key_to_subtask("", 32_768, 16), 15);
        assert_eq!(assign_key_to_subtask(&-5_i64, 1000, 5), 4);
        assert_eq!(assign_key_to_subtask("tenant-42", 128, 7), 1);
    }

    #[test]
    fn ranges_match_spec_example() {
        let r: Vec<_> = (0..3)
            .map(|i| key_group_range_for_subtask(128, 3, i))
            .collect();
        assert_eq!(
            r,
            vec![
                KeyGroupRange { start: 0, end: 42 },
                KeyGroupRange { start: 43, end: 85 },
                KeyGroupRange {
                    start: 86,
                    end: 127
                },
            ]
        );
        assert_eq!(r[0].len(), 43);
        assert_eq!(r[2].len(), 42);
        assert!(r[1].contains(43) && r[1].contains(85) && !r[1].contains(86));
        assert_eq!(r[2].iter().count(), 42);
        assert_eq!(key_group_to_subtask(128, 3, 42), 0);
        assert_eq!(key_group_to_subtask(128, 3, 43), 1);
        assert_eq!(key_group_to_subtask(128, 3, 127), 2);
    }

    #[test]
    fn full_range_at_upper_bound() {
        let r = key_group_range_for_subtask(32_768, 1, 0);
        assert_eq!(
            r,
            KeyGroupRange {
                start: 0,
                end: 32_767
            }
        );
        assert_eq!(r.len(), 32_768);
        let r = key_group_range_for_subtask(32_768, 32_768, 32_767);
        assert_eq!(
            r,
            KeyGroupRange {
                start: 32_767,
                end: 32_767
            }
        );
    }

    #[test]
    fn empty_range_is_empty() {
        let r = KeyGroupRange { start: 5, end: 4 };
        assert!(r.is_empty());
        assert_eq!(r.len(), 0);
        assert_eq!(r.iter().count(), 0);
        assert!(!r.contains(4) && !r.contains(5));
    }

    #[test]
    #[should_panic(expected = "must not be smaller than parallelism")]
    fn range_rejects_max_below_parallelism() {
        key_group_range_for_subtask(2, 3, 0);
    }

    #[test]
    fn check_max_parallelism_bounds() {
        assert!(check_max_parallelism(1, 1).is_ok());
        assert!(check_max_parallelism(4, 128).is_ok());
        assert!(check_max_parallelism(32_768, 32_768).is_ok());
        let e = check_max_parallelism(4, 32_769).unwrap_err();
        assert!(e.contains("32769") && e.contains('4'), "{e}");
        let e = check_max_parallelism(200, 128).unwrap_err();
        assert!(e.contains("200") && e.contains("128"), "{e}");
        let e = check_max_parallelism(3, 0).unwrap_err();
        assert!(e.contains('0') && e.contains('3'), "{e}");
        assert!(check_max_parallelism(0, 128).is_err());
    }
}
