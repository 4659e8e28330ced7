//! Which source subtask reads which partition: Flink `KafkaSourceEnumerator.getSplitOwner`.
//!
//! `start = ((topic.hashCode() * 31) & 0x7FFFFFFF) % readers`, `owner = (start + partition) %
//! readers`, with Java's `String.hashCode` (UTF-16 code units, `h = 31·h + c`, wrapping `int`)
//! and Java's `int` arithmetic. A topic's partitions go round-robin from a topic-dependent start,
//! so every partition has exactly one owner and a topic's partitions are spread evenly.

use sluice_datastream::partition::JavaHash;

/// Java's `String.hashCode()`.
pub fn java_string_hash(s: &str) -> i32 {
    s.java_hash_code()
}

/// The subtask (of `readers`) that owns `partition` of `topic`. `readers` must be ≥ 1.
pub fn split_owner(topic: &str, partition: i32, readers: usize) -> usize {
    let readers = readers.max(1) as i64;
    let start = (i64::from(java_string_hash(topic).wrapping_mul(31) & 0x7FFF_FFFF)) % readers;
    // Java adds two ints (partition ids are small and non-negative); i64 avoids overflow.
    ((start + i64::from(partition)) % readers) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn java_hash_codes_of_known_strings() {
        // Values of String.hashCode() in Java.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("abc"), 96354);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(java_string_hash("test-topic"), 639_758_388);
        // Java's famous Integer.MIN_VALUE hash code, and a negative one.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("skew-input"), -1_690_705_593);
    }

    #[test]
    fn owners_of_known_topics() {
        // "abc": 96354 * 31 = 2986974, % 4 = 2 -> partitions 0..4 on 2, 3, 0, 1.
        let owners: Vec<usize> = (0..4).map(|p| split_owner("abc", p, 4)).collect();
        assert_eq!(owners, vec![2, 3, 0, 1]);
        // Negative hash code: -1690705593 * 31 wraps to 1275217817 after & 0x7FFFFFFF
        // (computed in Java int arithmetic); % 3 = 2.
        assert_eq!(1_275_217_817 % 3, 2);
        assert_eq!(split_owner("skew-input", 0, 3), 2);
        assert_eq!(split_owner("skew-input", 1, 3), 0);
        // MIN_VALUE * 31 = MIN_VALUE (wrapping), & 0x7FFFFFFF = 0: partition p on p % n.
        assert_eq!(split_owner("polygenelubricants", 5, 4), 1);
    }

    proptest! {
        #[test]
        fn every_partition_has_one_owner_and_topics_spread_evenly(
            topic in "[a-zA-Z0-9._-]{1,40}",
            partitions in 1i32..64,
            readers in 1usize..17,
        ) {
            let mut load = vec![0usize; readers];
            for p in 0..partitions {
                let o = split_owner(&topic, p, readers);
                prop_assert!(o < readers);
                load[o] += 1;
            }
            prop_assert_eq!(load.iter().sum::<usize>(), partitions as usize);
            let (min, max) = (load.iter().min().unwrap(), load.iter().max().unwrap());
            prop_assert!(max - min <= 1, "load {:?}", load);
        }
    }
}
