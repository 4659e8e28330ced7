//! Per-sender channel choosers for REBALANCE and RESCALE, as in Flink's
//! `RebalancePartitioner` and `RescalePartitioner`.
//!
//! Each upstream subtask owns one chooser; no state is shared between senders. The two differ only
//! in where they start, and that difference is visible to users: REBALANCE starts at a random
//! channel so that many senders with few records each don't all pile onto channel 0, whereas
//! RESCALE deliberately starts at local channel 0 (Flink initialises it to -1).
//!
//! These run once per record, so they avoid division and allocation: the wrap-around is a compare
//! that compiles to a conditional move.

/// A tiny, seedable PRNG (SplitMix64) used to pick REBALANCE's random start.
///
/// Quality needs are low (one draw per sender at setup), but reproducibility matters: a seeded
/// generator lets tests and deterministic replays pin the start channel. Not cryptographic.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose whole output sequence is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 pseudo-random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A pseudo-random number in `0..n`.
    ///
    /// Uses the multiply-high reduction instead of `%`; its bias is below `n / 2^64`, which is
    /// irrelevant for channel counts.
    ///
    /// # Panics
    /// If `n` is 0.
    #[inline]
    pub fn next_below(&mut self, n: usize) -> usize {
        assert!(n > 0, "next_below needs a non-empty range");
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// A round robin over `n` channels, advancing by one per record.
#[derive(Clone, Debug)]
pub struct RoundRobin {
    /// The channel returned last; always `< n`.
    next: usize,
    n: usize,
}

impl RoundRobin {
    /// REBALANCE's chooser: Flink sets `next` to a uniform random channel at setup and then, per
    /// record, returns `next = (next + 1) % n` — so the first record goes to `(r + 1) % n`.
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn rebalance(n: usize, rng: &mut SplitMix64) -> Self {
        assert!(n > 0, "rebalance needs at least one channel");
        Self {
            next: rng.next_below(n),
            n,
        }
    }

    /// RESCALE's chooser over the `n` channels of this sender's pointwise slice: the first record
    /// goes to local channel 0, then round robin.
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn rescale(n: usize) -> Self {
        assert!(n > 0, "rescale needs at least one channel");
        // Flink starts at -1; n - 1 is the same position modulo n without going signed.
        Self { next: n - 1, n }
    }

    /// The channel for the next record.
    #[inline]
    pub fn next_channel(&mut self) -> usize {
        let candidate = self.next + 1;
        self.next = if candidate == self.n { 0 } else { candidate };
        self.next
    }

    /// How many channels this chooser cycles over.
    #[inline]
    pub fn num_channels(&self) -> usize {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_sequence() {
        // Reference output of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(rng.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn next_below_stays_in_range_and_covers_it() {
        let mut rng = SplitMix64::new(42);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = rng.next_below(7);
            assert!(v < 7);
            seen[v] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(rng.next_below(1), 0);
    }

    #[test]
    fn rescale_starts_at_zero_and_cycles() {
        let mut rr = RoundRobin::rescale(3);
        let got: Vec<_> = (0..7).map(|_| rr.next_channel()).collect();
        assert_eq!(got, vec![0, 1, 2, 0, 1, 2, 0]);
        let mut single = RoundRobin::rescale(1);
        assert_eq!((single.next_channel(), single.next_channel()), (0, 0));
    }

    #[test]
    fn rebalance_starts_one_after_the_random_draw() {
        for seed in 0..50 {
            let r = SplitMix64::new(seed).next_below(5);
            let mut rr = RoundRobin::rebalance(5, &mut SplitMix64::new(seed));
            let got: Vec<_> = (0..6).map(|_| rr.next_channel()).collect();
            let want: Vec<_> = (1..=6).map(|k| (r + k) % 5).collect();
            assert_eq!(got, want, "seed {seed}");
        }
    }

    #[test]
    fn rebalance_start_varies_with_seed() {
        let firsts: std::collections::HashSet<_> = (0..64)
            .map(|seed| RoundRobin::rebalance(8, &mut SplitMix64::new(seed)).next_channel())
            .collect();
        assert!(firsts.len() > 1, "random start never varied: {firsts:?}");
    }
}
