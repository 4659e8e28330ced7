//! Value parsers for numeric flags with a range, so an absurd value is refused by clap with
//! the flag's name before anything runs (instead of a panic in `Duration::from_secs_f64` or
//! an allocation the size of the number).

use std::fmt::Display;
use std::str::FromStr;

/// Longest duration a millisecond flag takes: a day.
pub const MAX_MS: u64 = 86_400_000;

/// A parser for a number in `lo..=hi` (`unit` is printed after the bounds, e.g. " seconds").
/// NaN and infinities are refused (they compare outside any range).
pub fn between<T>(
    lo: T,
    hi: T,
    unit: &'static str,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr + PartialOrd + Display + Copy + Send + Sync + 'static,
{
    move |s: &str| {
        let v: T = s
            .trim()
            .parse()
            .map_err(|_| format!("expected a number between {lo} and {hi}{unit}"))?;
        if lo <= v && v <= hi {
            Ok(v)
        } else {
            Err(format!("must be between {lo} and {hi}{unit}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::between;

    #[test]
    fn refuses_out_of_range_nan_and_infinity() {
        let p = between(0.001, 3600.0, " seconds");
        assert_eq!(p("5"), Ok(5.0));
        assert!(p("1e20")
            .unwrap_err()
            .contains("between 0.001 and 3600 seconds"));
        assert!(p("1e-9").is_err());
        assert!(p("NaN").is_err());
        assert!(p("inf").is_err());
        assert!(p("x").unwrap_err().contains("expected a number"));
        let n = between(1usize, 10, "");
        assert_eq!(n("10"), Ok(10));
        assert!(n("11").is_err());
    }
}
