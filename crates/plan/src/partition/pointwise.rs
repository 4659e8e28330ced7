//! Which subtasks a pointwise (FORWARD / RESCALE) edge connects, as in Flink's
//! `EdgeManagerBuildUtil.connectPointwise`.
//!
//! Unlike all-to-all edges, a pointwise edge gives each upstream subtask only a contiguous slice
//! of the downstream subtasks (or vice versa), so that rescaling keeps data local. Flink users see
//! this slice in load distribution (RESCALE round-robins only within it), so it must be the same
//! slice Flink computes. With `S` upstream and `T` downstream subtasks:
//!
//! * `S == T`: upstream `i` feeds downstream `i`;
//! * `S > T`: downstream `j` reads upstream `[j*S/T, (j+1)*S/T)`;
//! * `S < T`: upstream `i` writes downstream `[(i*T+S-1)/S, ((i+1)*T+S-1)/S)`.
//!
//! The opposite direction of each case (the single partner on the "many" side) is derived in
//! closed form below rather than searched for, since the wiring is queried per subtask at setup.
//! Parallelisms are bounded by 32768, so the products cannot overflow a `usize`.

use std::ops::Range;

fn check(upstream_parallelism: usize, downstream_parallelism: usize, index: usize, of: usize) {
    assert!(
        upstream_parallelism > 0 && downstream_parallelism > 0,
        "pointwise edge needs parallelism >= 1 on both sides \
         (upstream {upstream_parallelism}, downstream {downstream_parallelism})"
    );
    assert!(
        index < of,
        "subtask index {index} out of range for parallelism {of}"
    );
}

/// The downstream subtasks (as a contiguous range) that upstream subtask `upstream_index` sends
/// to. Its local channel `k` is the `k`-th element of this range.
///
/// # Panics
/// If either parallelism is 0 or `upstream_index >= upstream_parallelism`.
pub fn pointwise_targets(
    upstream_parallelism: usize,
    downstream_parallelism: usize,
    upstream_index: usize,
) -> Range<usize> {
    check(
        upstream_parallelism,
        downstream_parallelism,
        upstream_index,
        upstream_parallelism,
    );
    let (s, t, i) = (upstream_parallelism, downstream_parallelism, upstream_index);
    if s <= t {
        // For s == t this reduces to i..i+1.
        (i * t).div_ceil(s)..((i + 1) * t).div_ceil(s)
    } else {
        // The j with j*S/T <= i < (j+1)*S/T; the first inequality alone bounds j from above by
        // ((i+1)*T - 1)/S, and that largest candidate also satisfies the second.
        let j = ((i + 1) * t - 1) / s;
        j..j + 1
    }
}

/// The upstream subtasks (as a contiguous range) that feed downstream subtask
/// `downstream_index`.
///
/// # Panics
/// If either parallelism is 0 or `downstream_index >= downstream_parallelism`.
pub fn pointwise_sources(
    upstream_parallelism: usize,
    downstream_parallelism: usize,
    downstream_index: usize,
) -> Range<usize> {
    check(
        upstream_parallelism,
        downstream_parallelism,
        downstream_index,
        downstream_parallelism,
    );
    let (s, t, j) = (
        upstream_parallelism,
        downstream_parallelism,
        downstream_index,
    );
    if s >= t {
        // For s == t this reduces to j..j+1.
        j * s / t..(j + 1) * s / t
    } else {
        // The i with ceil(i*T/S) <= j < ceil((i+1)*T/S); the first inequality alone gives
        // i <= j*S/T, and that largest candidate also satisfies the second.
        let i = j * s / t;
        i..i + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_targets(s: usize, t: usize) -> Vec<Range<usize>> {
        (0..s).map(|i| pointwise_targets(s, t, i)).collect()
    }

    fn all_sources(s: usize, t: usize) -> Vec<Range<usize>> {
        (0..t).map(|j| pointwise_sources(s, t, j)).collect()
    }

    #[test]
    fn equal_parallelism_is_one_to_one() {
        assert_eq!(all_targets(3, 3), vec![0..1, 1..2, 2..3]);
        assert_eq!(all_sources(3, 3), vec![0..1, 1..2, 2..3]);
    }

    #[test]
    fn two_to_four() {
        assert_eq!(all_targets(2, 4), vec![0..2, 2..4]);
        assert_eq!(all_sources(2, 4), vec![0..1, 0..1, 1..2, 1..2]);
    }

    #[test]
    fn four_to_two() {
        assert_eq!(all_sources(4, 2), vec![0..2, 2..4]);
        assert_eq!(all_targets(4, 2), vec![0..1, 0..1, 1..2, 1..2]);
    }

    #[test]
    fn two_to_three() {
        assert_eq!(all_targets(2, 3), vec![0..2, 2..3]);
        assert_eq!(all_sources(2, 3), vec![0..1, 0..1, 1..2]);
    }

    #[test]
    fn three_to_two() {
        assert_eq!(all_sources(3, 2), vec![0..1, 1..3]);
        assert_eq!(all_targets(3, 2), vec![0..1, 1..2, 1..2]);
    }

    #[test]
    fn fan_in_and_fan_out_to_one() {
        assert_eq!(all_targets(5, 1), vec![0..1; 5]);
        assert_eq!(all_sources(5, 1), vec![0..5]);
        assert_eq!(all_targets(1, 5), vec![0..5]);
        assert_eq!(all_sources(1, 5), vec![0..1; 5]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn rejects_index_out_of_range() {
        pointwise_targets(2, 3, 2);
    }
}
