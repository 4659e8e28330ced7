//! The small, hand-written PRNG behind every random choice of the generator.
//!
//! # Algorithm (part of the reference-mode contract)
//!
//! * **Seeding.** A stream is seeded with SplitMix64's output function applied to `seed`:
//!   `state = mix(seed + 0x9E37_79B9_7F4A_7C15)` where `mix` is the SplitMix64 finaliser
//!   (xor-shift 30, multiply `0xBF58_476D_1CE4_E5B9`, xor-shift 27, multiply
//!   `0x94D0_49BB_1331_11EB`, xor-shift 31). A per-event stream uses
//!   `seed = event_id ^ EVENT_SALT`; the fixed tables use their own fixed seeds.
//! * **Draws.** Each 64-bit draw is one step of *wyrand*: `state += 0xA076_1D64_78BD_642F`, then
//!   the 128-bit product `state * (state ^ 0xE703_7ED1_A0B4_28DB)` is folded as `hi ^ lo`.
//! * **Bounded integers.** `below(n)` is Lemire's multiply-shift without rejection:
//!   `(draw * n) >> 64`. It always consumes exactly one draw (so the draw sequence never depends
//!   on the values drawn) and its bias is at most `n / 2^64`, irrelevant for `n` ≤ 10^6.
//! * **Unit doubles.** `unit_f64()` is `(draw >> 11) * 2^-53`, uniform on `[0, 1)`.
//! * **Letters.** `letters_pair(sp)` turns one draw into two characters, one per 32-bit half `x`:
//!   `i = (x * 338) >> 32` (uniform on `[0, 338)`, 338 = 13·26); `i < 26` gives the space
//!   character `sp` (probability 1/13), otherwise the letter `'a' + i mod 26`.
//!
//! Only integer operations are used, so the streams are identical on every platform.

/// Salt xor-ed into the event id before seeding the per-event stream.
pub(crate) const EVENT_SALT: u64 = 0x6E65_786D_6172_6B31; // "nexmark1"

const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
const WY_P0: u64 = 0xA076_1D64_78BD_642F;
const WY_P1: u64 = 0xE703_7ED1_A0B4_28DB;

/// SplitMix64: one step of the generator started at `seed` (i.e. the finaliser applied to
/// `seed + gamma`).
#[inline]
pub(crate) fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(SPLITMIX_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A wyrand stream seeded through SplitMix64 (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    /// A stream for an arbitrary fixed seed.
    #[inline]
    pub(crate) fn from_seed(seed: u64) -> Self {
        Rng {
            state: splitmix64(seed),
        }
    }

    /// The stream of the event with id `event_id`.
    #[inline]
    pub(crate) fn for_event(event_id: u64) -> Self {
        Self::from_seed(event_id ^ EVENT_SALT)
    }

    /// One 64-bit draw.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(WY_P0);
        let t = u128::from(self.state) * u128::from(self.state ^ WY_P1);
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// Uniform integer in `[0, n)` (`0` when `n == 0`). Always exactly one draw.
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform double in `[0, 1)` with 53 random bits. One draw.
    #[inline]
    pub(crate) fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Two characters from one draw: each is `sp` with probability 1/13, otherwise a uniform
    /// lowercase ASCII letter.
    #[inline]
    pub(crate) fn letters_pair(&mut self, sp: u8) -> [u8; 2] {
        let r = self.next_u64();
        [letter(r as u32, sp), letter((r >> 32) as u32, sp)]
    }
}

#[inline]
fn letter(x: u32, sp: u8) -> u8 {
    let i = (u64::from(x) * 338) >> 32;
    if i < 26 {
        sp
    } else {
        b'a' + (i % 26) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_value() {
        // First output of SplitMix64 seeded with 0 (well-known test vector).
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = {
            let mut r = Rng::for_event(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::for_event(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::for_event(8);
            (0..8).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn below_and_unit_ranges() {
        let mut r = Rng::from_seed(1);
        let mut seen = [0u32; 7];
        for _ in 0..70_000 {
            let v = r.below(7) as usize;
            seen[v] += 1;
            let u = r.unit_f64();
            assert!((0.0..1.0).contains(&u));
        }
        for s in seen {
            assert!((9_000..11_000).contains(&s), "{seen:?}");
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn letters_have_one_in_thirteen_spaces() {
        let mut r = Rng::from_seed(2);
        let mut spaces = 0;
        let mut letters = [0u32; 26];
        for _ in 0..65_000 {
            for c in r.letters_pair(b' ') {
                if c == b' ' {
                    spaces += 1;
                } else {
                    assert!(c.is_ascii_lowercase());
                    letters[usize::from(c - b'a')] += 1;
                }
            }
        }
        // 130_000 chars: expected 10_000 spaces, 4_615 of each letter.
        assert!((9_500..10_500).contains(&spaces), "{spaces}");
        for l in letters {
            assert!((4_200..5_050).contains(&l), "{letters:?}");
        }
    }
}
