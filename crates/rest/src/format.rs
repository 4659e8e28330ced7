//! Number formatting and statistics exactly as Flink's Java code produces them.

/// Java's `Double.toString`: plain decimal with at least one fraction digit for
/// 10⁻³ ≤ |d| < 10⁷, otherwise `d.dddE±n`; `NaN`, `Infinity`.
pub fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = d.abs();
    if (1e-3..1e7).contains(&a) {
        plain(format!("{d}"))
    } else {
        scientific(format!("{d:e}"))
    }
}

/// Java's `Float.toString` (same rules, float precision).
pub fn java_float(f: f32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = f.abs();
    if (1e-3..1e7).contains(&a) {
        plain(format!("{f}"))
    } else {
        scientific(format!("{f:e}"))
    }
}

fn plain(s: String) -> String {
    if s.contains('.') {
        s
    } else {
        s + ".0"
    }
}

fn scientific(s: String) -> String {
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let m = if m.contains('.') {
        m.to_string()
    } else {
        format!("{m}.0")
    };
    format!("{m}E{e}")
}

/// Flink's `StatsSummary` view of longs (the `aggregated` blocks of vertex details): min, max,
/// sum, integer average and Commons-Math "legacy" percentiles truncated to long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongStats {
    pub min: i64,
    pub max: i64,
    pub avg: i64,
    pub sum: i64,
    pub p25: i64,
    pub median: i64,
    pub p75: i64,
    pub p95: i64,
}

impl LongStats {
    pub fn of(values: &[i64]) -> LongStats {
        if values.is_empty() {
            return LongStats {
                min: 0,
                max: 0,
                avg: 0,
                sum: 0,
                p25: 0,
                median: 0,
                p75: 0,
                p95: 0,
            };
        }
        let mut v = values.to_vec();
        v.sort_unstable();
        let sum: i64 = v.iter().fold(0i64, |a, b| a.saturating_add(*b));
        LongStats {
            min: v[0],
            max: v[v.len() - 1],
            avg: sum / v.len() as i64,
            sum,
            p25: percentile(&v, 25.0),
            median: percentile(&v, 50.0),
            p75: percentile(&v, 75.0),
            p95: percentile(&v, 95.0),
        }
    }
}

/// Apache Commons Math `Percentile` (estimation type LEGACY) over sorted values, as a long.
fn percentile(sorted: &[i64], p: f64) -> i64 {
    let n = sorted.len();
    let pos = p / 100.0 * (n as f64 + 1.0);
    if pos < 1.0 {
        return sorted[0];
    }
    if pos >= n as f64 {
        return sorted[n - 1];
    }
    let lower = pos.floor();
    let d = pos - lower;
    let lo = sorted[lower as usize - 1] as f64;
    let hi = sorted[lower as usize] as f64;
    (lo + d * (hi - lo)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_like_java() {
        assert_eq!(java_double(200.0), "200.0");
        assert_eq!(java_double(113920.83333333333), "113920.83333333333");
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(1e7), "1.0E7");
        assert_eq!(java_double(12345678.5), "1.23456785E7");
        assert_eq!(java_double(0.0001), "1.0E-4");
        assert_eq!(java_double(f64::NAN), "NaN");
        assert_eq!(java_float(1.0), "1.0");
        assert_eq!(java_float(1.0 / 3.0), "0.33333334");
    }

    #[test]
    fn stats_match_flinks_captured_aggregates() {
        // v0 write-records in the Flink 2.3 fixture.
        let s = LongStats::of(&[8348801, 8339788]);
        assert_eq!(
            (s.p25, s.min, s.avg, s.median, s.max, s.sum, s.p95, s.p75),
            (8339788, 8339788, 8344294, 8344294, 8348801, 16688589, 8348801, 8348801)
        );
        let s = LongStats::of(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!((s.p25, s.median, s.p75, s.p95), (2, 5, 8, 10));
        assert_eq!(LongStats::of(&[]).sum, 0);
    }
}
