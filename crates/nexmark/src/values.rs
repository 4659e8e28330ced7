//! Field-value primitives (docs/src/reference/nexmark-generator.md#field-values): `nextString`,
//! `price()`, `extra`, and the fixed tables
//! (hot URLs, channel cache, extra buffer) built once from fixed seeds.

use std::sync::OnceLock;

use crate::event::Text;
use crate::rng::Rng;

/// Longest `max` passed to [`push_string`] (the auction description).
const MAX_STRING: usize = 100;

/// Size of the buffer `extra` strings are sliced from: 1 MiB.
pub(crate) const EXTRA_BUFFER_LEN: usize = 1 << 20;

/// Number of non-hot channels (`channel-0` … `channel-9999`).
pub const CHANNELS_NUMBER: usize = 10_000;

/// The four hot channels, each with one fixed URL.
pub const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];

const HOT_URL_SEED: u64 = 0x686F_745F_7572_6C73; // "hot_urls"
const CHANNEL_SEED: u64 = 0x6368_616E_6E65_6C73; // "channels"
const EXTRA_SEED: u64 = 0x6578_7472_615F_6275; // "extra_bu"

/// `nextString(max, sp)`: length `3 + U[0, max − 3)`, each character `sp` with probability 1/13,
/// otherwise a lowercase letter; when `sp` is a space the result is trimmed. Appended to `out`.
///
/// Draws: one for the length, then one per two characters ([`Rng::letters_pair`]).
#[inline]
pub(crate) fn push_string(rng: &mut Rng, out: &mut String, max: usize, sp: u8) {
    debug_assert!((4..=MAX_STRING).contains(&max));
    let len = 3 + rng.below((max - 3) as u64) as usize;
    let mut buf = [0u8; MAX_STRING];
    let mut i = 0;
    while i < len {
        let [a, b] = rng.letters_pair(sp);
        buf[i] = a;
        buf[i + 1] = b; // MAX_STRING is even and len < MAX_STRING, so i + 1 is in bounds.
        i += 2;
    }
    let mut s = &buf[..len];
    if sp == b' ' {
        s = s.trim_ascii();
    }
    // Generated strings are ASCII, so this never replaces a byte (nor copies: it borrows).
    out.push_str(&String::from_utf8_lossy(s));
}

/// `nextString(max, ' ')` as a fresh `String`.
#[inline]
pub(crate) fn next_string(rng: &mut Rng, max: usize) -> String {
    let mut s = String::with_capacity(max);
    push_string(rng, &mut s, max, b' ');
    s
}

/// `price() = round(10^(6u) · 100)` cents with `u = U[0, 1)`; one draw. Rounds like Java's
/// `Math.round` (`⌊x + 0.5⌋`). The result is clamped to `10^8 − 1` (only `u > 1 − 4·10^-10`
/// would round up to 10^8).
#[inline]
pub(crate) fn price(rng: &mut Rng, tables: &Tables) -> i64 {
    // x > 0, so truncation is the floor.
    let p = (tables.pow10(6.0 * rng.unit_f64()) * 100.0 + 0.5) as i64;
    p.min(99_999_999)
}

/// Steps per decade of the `10^x` table.
const POW10_STEPS: usize = 128;

/// `10^x` for `x` in `[0, 6]` by a Taylor series, using basic IEEE-754 arithmetic only (no libm),
/// so results are bit-identical on all platforms. Relative error < 1e-14. Used to build the
/// table behind [`Tables::pow10`].
pub(crate) fn pow10_series(x: f64) -> f64 {
    const POW: [f64; 7] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6];
    let k = (x as usize).min(6); // floor for x >= 0
    let f = x - k as f64; // exact
                          // exp(f·ln10) = exp(z)^8 with z = f·ln10/8 in [0, 0.288); Taylor series to degree 13.
    let z = f * std::f64::consts::LN_10 * 0.125;
    let mut e = 1.0 / 6_227_020_800.0; // 1/13!
    for c in [
        479_001_600.0, // 12!
        39_916_800.0,
        3_628_800.0,
        362_880.0,
        40_320.0,
        5_040.0,
        720.0,
        120.0,
        24.0,
        6.0,
        2.0,
        1.0,
        1.0,
    ] {
        e = e * z + 1.0 / c;
    }
    let e2 = e * e;
    let e4 = e2 * e2;
    POW[k] * (e4 * e4)
}

/// `extra` (docs/src/reference/nexmark-generator.md#field-values): empty when `cur > avg`;
/// otherwise `D = avg − cur`,
/// `δ = round(0.2·D)`, length `D − δ + U[0, 2δ)` (no draw when `δ = 0`), sliced from the fixed
/// 1 MiB lowercase buffer at offset `U[0, 1 MiB − length]` (one more draw).
#[inline]
pub(crate) fn next_extra(rng: &mut Rng, tables: &'static Tables, cur: u64, avg: u64) -> Text {
    if cur > avg {
        return Text::Borrowed("");
    }
    let d = avg - cur;
    let delta = (2 * d + 5) / 10; // == round(0.2·d): 0.2·d is never within 0.1 of a half
    let len = d - delta + if delta == 0 { 0 } else { rng.below(2 * delta) };
    let len = len as usize;
    let off = rng.below((EXTRA_BUFFER_LEN - len + 1) as u64) as usize;
    Text::Borrowed(&tables.extra[off..off + len])
}

/// `https://www.nexmark.com/<s1>/<s2>/<s3>/item.htm?query=1`, each `s` = `nextString(5, '_')`.
fn base_url(rng: &mut Rng) -> String {
    let mut url = String::with_capacity(96);
    url.push_str("https://www.nexmark.com/");
    for _ in 0..3 {
        push_string(rng, &mut url, 5, b'_');
        url.push('/');
    }
    url.push_str("item.htm?query=1");
    url
}

/// `|bit-reverse32(k)|` with Java's `Math.abs(int)` semantics (so `k = 1` gives
/// `-2147483648`, as in Flink).
pub(crate) fn channel_id(k: u32) -> i32 {
    (k.reverse_bits() as i32).wrapping_abs()
}

/// The process-wide fixed tables.
pub(crate) struct Tables {
    /// URL of each of [`HOT_CHANNELS`].
    pub(crate) hot_urls: [String; 4],
    /// `channel-<k>` for k in `0..CHANNELS_NUMBER`.
    pub(crate) channel_names: Vec<String>,
    /// Cached URL of channel k.
    pub(crate) channel_urls: Vec<String>,
    /// 1 MiB of lowercase letters.
    pub(crate) extra: String,
    /// `10^(j / POW10_STEPS)` for `j` in `0..=6·POW10_STEPS`.
    pow10: Vec<f64>,
}

impl Tables {
    /// `10^x` for `x` in `[0, 6)`: `table[j] · exp(r·ln10)` with `j = ⌊128x⌋`, `r = x − j/128`
    /// (both exact) and a degree-6 Taylor series (`r·ln10 < 0.018`, truncation < 2e-16).
    /// Basic IEEE-754 arithmetic only, so bit-identical on all platforms; relative error < 1e-14.
    #[inline]
    pub(crate) fn pow10(&self, x: f64) -> f64 {
        let scaled = x * POW10_STEPS as f64; // exact (power of two)
        let j = (scaled as usize).min(6 * POW10_STEPS);
        let z = (x - j as f64 / POW10_STEPS as f64) * std::f64::consts::LN_10;
        let poly = 1.0
            + z * (1.0
                + z * (1.0 / 2.0
                    + z * (1.0 / 6.0 + z * (1.0 / 24.0 + z * (1.0 / 120.0 + z * (1.0 / 720.0))))));
        self.pow10[j] * poly
    }
}

/// The fixed tables, built on first use:
/// * hot URLs: `base_url` four times from seed [`HOT_URL_SEED`];
/// * channel cache: from seed [`CHANNEL_SEED`], for k = 0, 1, …: `base_url`, then a coin
///   `U[0,10) > 0` (90 %) that appends `&channel_id=<channel_id(k)>`;
/// * extra buffer: `'a' + U[0,26)` per byte from seed [`EXTRA_SEED`].
pub(crate) fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut rng = Rng::from_seed(HOT_URL_SEED);
        let hot_urls = std::array::from_fn(|_| base_url(&mut rng));

        let mut rng = Rng::from_seed(CHANNEL_SEED);
        let mut channel_names = Vec::with_capacity(CHANNELS_NUMBER);
        let mut channel_urls = Vec::with_capacity(CHANNELS_NUMBER);
        for k in 0..CHANNELS_NUMBER as u32 {
            let mut url = base_url(&mut rng);
            if rng.below(10) > 0 {
                url.push_str("&channel_id=");
                url.push_str(&channel_id(k).to_string());
            }
            channel_names.push(format!("channel-{k}"));
            channel_urls.push(url);
        }

        let mut rng = Rng::from_seed(EXTRA_SEED);
        let bytes: Vec<u8> = (0..EXTRA_BUFFER_LEN)
            .map(|_| b'a' + rng.below(26) as u8)
            .collect();
        let extra: String = bytes.into_iter().map(char::from).collect();

        let pow10 = (0..=6 * POW10_STEPS)
            .map(|j| pow10_series(j as f64 / POW10_STEPS as f64))
            .collect();

        Tables {
            hot_urls,
            channel_names,
            channel_urls,
            extra,
            pow10,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow10_is_accurate() {
        let t = tables();
        for i in 0..=60_000 {
            let x = f64::from(i) / 10_000.0 * 0.999_999_9;
            let want = 10f64.powf(x);
            for got in [pow10_series(x), t.pow10(x)] {
                assert!(((got - want) / want).abs() < 1e-14, "x={x} {got} {want}");
            }
        }
        assert_eq!(t.pow10(0.0), 1.0);
        assert_eq!(pow10_series(0.0), 1.0);
    }

    #[test]
    fn prices_in_range() {
        let t = tables();
        let mut rng = Rng::from_seed(9);
        for _ in 0..100_000 {
            assert!((100..100_000_000).contains(&price(&mut rng, t)));
        }
    }

    #[test]
    fn channel_ids_follow_java_abs_of_reverse() {
        assert_eq!(channel_id(0), 0);
        assert_eq!(channel_id(1), i32::MIN); // Math.abs(Integer.MIN_VALUE)
        assert_eq!(channel_id(2), 1 << 30);
        assert_eq!(channel_id(3), (0xC000_0000u32 as i32).wrapping_abs());
    }

    #[test]
    fn tables_shape() {
        let t = tables();
        assert_eq!(t.extra.len(), EXTRA_BUFFER_LEN);
        assert!(t.extra.bytes().all(|b| b.is_ascii_lowercase()));
        assert_eq!(t.channel_names.len(), CHANNELS_NUMBER);
        assert_eq!(t.channel_names[42], "channel-42");
        let with_id = t
            .channel_urls
            .iter()
            .filter(|u| u.contains("&channel_id="))
            .count();
        assert!((8_800..9_200).contains(&with_id), "{with_id}");
        assert!(t.channel_urls[7].starts_with("https://www.nexmark.com/"));
        for url in t.hot_urls.iter().chain(&t.channel_urls) {
            let rest = url.strip_prefix("https://www.nexmark.com/").unwrap();
            let parts: Vec<&str> = rest.splitn(4, '/').collect();
            for p in &parts[..3] {
                assert!((3..=4).contains(&p.len()), "{url}");
                assert!(p.bytes().all(|b| b == b'_' || b.is_ascii_lowercase()));
            }
            assert!(parts[3].starts_with("item.htm?query=1"), "{url}");
        }
        // Built from fixed seeds: a second call returns the very same tables.
        assert!(std::ptr::eq(t, tables()));
    }

    #[test]
    fn strings_lengths_and_trim() {
        let mut rng = Rng::from_seed(5);
        for _ in 0..10_000 {
            let s = next_string(&mut rng, 20);
            assert!(s.len() <= 19);
            assert_eq!(s, s.trim());
            let mut u = String::new();
            push_string(&mut rng, &mut u, 5, b'_');
            assert!((3..=4).contains(&u.len()));
        }
    }
}
