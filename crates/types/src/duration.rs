//! Durations written as text, the way Flink's configuration writes them (`10 s`, `2min`,
//! `100ms`, `250`), read by one parser so every option of every crate accepts the same forms.
//!
//! The grammar is Flink's `TimeUtils.parseDuration`: surrounding whitespace is ignored, then a
//! whole number, then optional whitespace, then an optional unit label, matched without regard
//! to case. No unit means milliseconds. The labels:
//!
//! | unit         | labels                                                     |
//! |--------------|------------------------------------------------------------|
//! | days         | `d`, `day`, `days`                                         |
//! | hours        | `h`, `hour`, `hours`                                       |
//! | minutes      | `min`, `m`, `minute`, `minutes`                            |
//! | seconds      | `s`, `sec`, `secs`, `second`, `seconds`                    |
//! | milliseconds | `ms`, `milli`, `millis`, `millisecond`, `milliseconds`     |
//! | microseconds | `µs`, `us`, `micro`, `micros`, `microsecond`, `microseconds` |
//! | nanoseconds  | `ns`, `nano`, `nanos`, `nanosecond`, `nanoseconds`         |
//!
//! Sluice reads two forms Flink does not, because options that predate this module accepted
//! them: `us` (an ASCII spelling of `µs`) and a decimal fraction (`1.5s`, `0.25 min`). A
//! fraction finer than a nanosecond is cut to whole nanoseconds. Everything Flink reads, this
//! reads to the same value, except values too large for a [`Duration`] (an error here).

use std::time::Duration;

/// Why a text is not a duration; each case carries the text as written so a caller can put it
/// into its own error next to the option's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing but whitespace.
    #[error("an empty text is not a duration")]
    Empty,
    /// The text does not start with a digit (or a decimal point followed by one).
    #[error("'{0}' does not start with a number (e.g. 500ms, 10 s, 2min)")]
    NoNumber(String),
    /// The unit is none of the labels in this module's table.
    #[error("'{text}': unknown unit '{unit}' (d, h, min, s, ms, us, ns)")]
    UnknownUnit {
        /// The whole text.
        text: String,
        /// What followed the number.
        unit: String,
    },
    /// The number, or the number times its unit, does not fit a [`Duration`].
    #[error("'{0}' is too long a duration")]
    Overflow(String),
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Nanoseconds in one of `label` (already lower-cased), or `None` for an unknown label.
fn unit_nanos(label: &str) -> Option<u128> {
    Some(match label {
        "d" | "day" | "days" => 86_400 * NANOS_PER_SEC,
        "h" | "hour" | "hours" => 3_600 * NANOS_PER_SEC,
        "min" | "m" | "minute" | "minutes" => 60 * NANOS_PER_SEC,
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => NANOS_PER_SEC,
        "µs" | "us" | "micro" | "micros" | "microsecond" | "microseconds" => 1_000,
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => 1,
        _ => return None,
    })
}

/// Digits of a fraction that can change the result: a unit is at most 8.64e13 ns, so digits
/// past the 18th are worth far less than the nanosecond the result is cut to, and 18 digits
/// keep the arithmetic inside `u128`.
const FRACTION_DIGITS: usize = 18;

/// Reads a duration in Flink's syntax (see the module documentation for the forms).
///
/// ```
/// use std::time::Duration;
/// use sluice_types::duration::parse_duration;
///
/// assert_eq!(parse_duration("10 s"), Ok(Duration::from_secs(10)));
/// assert_eq!(parse_duration("2MIN"), Ok(Duration::from_secs(120)));
/// assert_eq!(parse_duration("250"), Ok(Duration::from_millis(250)));
/// assert!(parse_duration("soon").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(DurationError::Empty);
    }
    let int_end = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (int_digits, rest) = trimmed.split_at(int_end);
    let (frac_digits, rest) = match rest.strip_prefix('.') {
        Some(after) => {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            after.split_at(end)
        }
        None => ("", rest),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(DurationError::NoNumber(trimmed.to_string()));
    }
    let label = rest.trim().to_lowercase();
    let per_unit = unit_nanos(&label).ok_or_else(|| DurationError::UnknownUnit {
        text: trimmed.to_string(),
        unit: rest.trim().to_string(),
    })?;
    let overflow = || DurationError::Overflow(trimmed.to_string());
    let whole: u128 = if int_digits.is_empty() {
        0
    } else {
        int_digits.parse::<u64>().map_err(|_| overflow())?.into()
    };
    let mut nanos = whole.checked_mul(per_unit).ok_or_else(overflow)?;
    if !frac_digits.is_empty() {
        let kept = &frac_digits[..frac_digits.len().min(FRACTION_DIGITS)];
        // `kept` is at most 18 ASCII digits, so it fits a u64 and the scale a u128.
        let numerator = kept.parse::<u128>().map_err(|_| overflow())?;
        let scale = 10u128.pow(kept.len() as u32);
        nanos += numerator * per_unit / scale;
    }
    let secs = u64::try_from(nanos / NANOS_PER_SEC).map_err(|_| overflow())?;
    // The remainder of a division by 1e9 is below 1e9, so it fits a u32.
    let sub = (nanos % NANOS_PER_SEC) as u32;
    Ok(Duration::new(secs, sub))
}

/// The shortest exact text [`parse_duration`] reads back to `d`: `0`, or a whole number of the
/// largest of `s`, `ms`, `us`, `ns` that divides it. Minutes and larger are not used, so a
/// duration keeps the text options have always shown for it (`60s`, not `1min`).
///
/// ```
/// use std::time::Duration;
/// use sluice_types::duration::format_duration;
///
/// assert_eq!(format_duration(Duration::from_secs(60)), "60s");
/// assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
/// ```
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0".to_string();
    }
    let (per_unit, label) = [(NANOS_PER_SEC, "s"), (1_000_000, "ms"), (1_000, "us")]
        .into_iter()
        .find(|(per_unit, _)| nanos.is_multiple_of(*per_unit))
        .unwrap_or((1, "ns"));
    format!("{}{label}", nanos / per_unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        parse_duration(text).unwrap()
    }

    #[test]
    fn every_flink_label_reads_its_unit() {
        for (labels, one) in [
            (&["d", "day", "days"][..], Duration::from_secs(86_400)),
            (&["h", "hour", "hours"], Duration::from_secs(3_600)),
            (&["min", "m", "minute", "minutes"], Duration::from_secs(60)),
            (
                &["s", "sec", "secs", "second", "seconds"],
                Duration::from_secs(1),
            ),
            (
                &["ms", "milli", "millis", "millisecond", "milliseconds"],
                Duration::from_millis(1),
            ),
            (
                &["µs", "us", "micro", "micros", "microsecond", "microseconds"],
                Duration::from_micros(1),
            ),
            (
                &["ns", "nano", "nanos", "nanosecond", "nanoseconds"],
                Duration::from_nanos(1),
            ),
        ] {
            for label in labels {
                assert_eq!(ok(&format!("3{label}")), one * 3, "3{label}");
                assert_eq!(ok(&format!(" 3 \t{label} ")), one * 3, "3 {label}");
                // `µ` upper-cases to the Greek capital mu, which lower-cases to Greek `μ`, not
                // to the micro sign: Flink refuses that spelling too.
                if label.is_ascii() {
                    assert_eq!(
                        ok(&format!("3{}", label.to_uppercase())),
                        one * 3,
                        "{label} upper"
                    );
                }
            }
        }
    }

    #[test]
    fn a_bare_number_is_milliseconds() {
        assert_eq!(ok("250"), Duration::from_millis(250));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0 ms"), Duration::ZERO);
        assert_eq!(ok("007s"), Duration::from_secs(7));
    }

    #[test]
    fn fractions_are_read_exactly_to_the_nanosecond() {
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("1.5 min"), Duration::from_secs(90));
        assert_eq!(ok("0.25ms"), Duration::from_micros(250));
        assert_eq!(ok(".5s"), Duration::from_millis(500));
        assert_eq!(ok("2.s"), Duration::from_secs(2));
        assert_eq!(ok("1.0000000015s"), Duration::new(1, 1));
        assert_eq!(
            ok("0.333333333333333333333333333333s"),
            Duration::from_nanos(333_333_333)
        );
        assert_eq!(ok("1.5"), Duration::from_micros(1500));
    }

    #[test]
    fn garbage_is_refused_with_the_reason() {
        assert_eq!(parse_duration("   "), Err(DurationError::Empty));
        for text in ["soon", "-1s", "+1s", ".", ".s", "s", "ms 10"] {
            assert!(
                matches!(parse_duration(text), Err(DurationError::NoNumber(_))),
                "{text}"
            );
        }
        for text in [
            "3 weeks", "1e3s", "1.2.3s", "10 s s", "5 mins", "1,5s", "1_000ms",
        ] {
            assert!(
                matches!(parse_duration(text), Err(DurationError::UnknownUnit { .. })),
                "{text}"
            );
        }
        let err = parse_duration(" 3 weeks ").unwrap_err();
        assert_eq!(
            err.to_string(),
            "'3 weeks': unknown unit 'weeks' (d, h, min, s, ms, us, ns)"
        );
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap_or_a_saturation() {
        let max = u64::MAX;
        assert_eq!(ok(&format!("{max}s")), Duration::from_secs(max));
        assert_eq!(ok(&format!("{max}ns")), Duration::from_nanos(max));
        for text in [
            format!("{max}0s"),
            format!("{max}d"),
            format!("{max}min"),
            "99999999999999999999999999ms".to_string(),
        ] {
            assert!(
                matches!(parse_duration(&text), Err(DurationError::Overflow(_))),
                "{text}"
            );
        }
        assert_eq!(
            ok(&format!("{}d", max / 86_400)),
            Duration::from_secs(max / 86_400 * 86_400)
        );
        assert_eq!(ok(&format!("{max}.9s")), Duration::new(max, 900_000_000));
    }

    #[test]
    fn the_formatter_writes_the_shortest_exact_form_and_reads_back() {
        for (d, text) in [
            (Duration::ZERO, "0"),
            (Duration::from_secs(60), "60s"),
            (Duration::from_secs(3_600 * 24), "86400s"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_micros(1500), "1500us"),
            (Duration::new(1, 1), "1000000001ns"),
        ] {
            assert_eq!(format_duration(d), text);
            assert_eq!(ok(text), d);
        }
    }
}
