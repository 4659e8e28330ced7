//! Counter-based random numbers: every draw is a pure function of (seed, field, row, draw),
//! so `datagen`'s rows do not depend on the parallelism, the order of reading or a clock.

/// SplitMix64's finaliser: a bijection of `u64` with good avalanche.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draw number `draw` for field `field` of row `row` under `seed`.
pub fn draw(seed: u64, field: u64, row: u64, draw: u64) -> u64 {
    splitmix(splitmix(splitmix(seed ^ field.wrapping_mul(0xA24B_AED4_963E_E407)) ^ row) ^ draw)
}

/// A draw as a double in `[0, 1)`.
pub fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_pure_and_spread() {
        assert_eq!(draw(1, 2, 3, 0), draw(1, 2, 3, 0));
        assert_ne!(draw(1, 2, 3, 0), draw(1, 2, 4, 0));
        assert!((0.0..1.0).contains(&unit(u64::MAX)));
    }
}
