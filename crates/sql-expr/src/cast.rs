//! `CAST` between scalar types with Flink's rules, and the numeric conversions evaluation shares.
//!
//! * Integers narrow with Java's wrap-around (`CAST(300 AS TINYINT)` is 44); floating-point to
//!   integer truncates toward zero and saturates as Java's `(long)` does, NaN giving 0.
//! * To `DECIMAL(p, s)`: rounded `HALF_UP` to `s` digits; a value with more than `p - s` integer
//!   digits is NULL (Flink's decimal overflow), for `CAST` and `TRY_CAST` alike.
//! * From a string: trimmed, then parsed; text that does not parse fails the `CAST` (an evaluation
//!   error) and is NULL for `TRY_CAST`.
//! * To a string: Flink's text forms (`TRUE`, `1.0E20`, `2020-01-02 03:04:05.600`); `CHAR(n)` pads
//!   with spaces and `VARCHAR(n)` truncates.

use std::sync::Arc;

use crate::datetime;
use crate::types::{DataType, LogicalType, MAX_LENGTH};
use crate::value::{Decimal, Timestamp, Value};

/// 10^n as i128 (n ≤ 38).
pub fn pow10(n: u32) -> i128 {
    10i128.pow(n.min(38))
}

/// Wraps an integer to the width of an integer type, as Java's narrowing does.
pub fn wrap_int(v: i64, ty: &LogicalType) -> i64 {
    match ty {
        LogicalType::TinyInt => i64::from(v as i8),
        LogicalType::SmallInt => i64::from(v as i16),
        LogicalType::Int => i64::from(v as i32),
        _ => v,
    }
}

/// A numeric value as a decimal (`None` for non-exact values).
pub fn to_decimal(v: &Value) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal {
            unscaled: i128::from(*i),
            scale: 0,
        }),
        Value::Decimal(d) => Some(*d),
        _ => None,
    }
}

/// A numeric value as a double.
pub fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) => Some(f64::from(*x)),
        Value::Double(x) => Some(*x),
        Value::Decimal(d) => Some(d.to_f64()),
        _ => None,
    }
}

/// A decimal fitted to `DECIMAL(p, s)`: rounded `HALF_UP`, `None` if it overflows.
pub fn fit_decimal(d: Decimal, precision: u8, scale: u8) -> Option<Decimal> {
    let r = d.rescale(scale)?;
    if r.unscaled.unsigned_abs() >= pow10(u32::from(precision)).unsigned_abs() {
        return None;
    }
    Some(r)
}

/// A double as a decimal with `scale` digits, rounded `HALF_UP`.
fn f64_to_decimal(x: f64, scale: u8) -> Option<Decimal> {
    if !x.is_finite() {
        return None;
    }
    // Through the shortest text form, as Java's BigDecimal.valueOf(double) does.
    parse_decimal(&format!("{x:e}"))?.rescale(scale)
}

/// Parses decimal text (`-12.50`, `1e3`, ` 7 `).
pub fn parse_decimal(s: &str) -> Option<Decimal> {
    let s = s.trim();
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (neg, digits) = match mantissa.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let all: String = format!("{int}{frac}");
    let all = all.trim_start_matches('0');
    let mut unscaled: i128 = if all.is_empty() { 0 } else { all.parse().ok()? };
    let mut scale = frac.len() as i32 - exp;
    if scale < 0 {
        unscaled = unscaled.checked_mul(10i128.checked_pow(scale.unsigned_abs())?)?;
        scale = 0;
    }
    if scale > 38 {
        let d = Decimal {
            unscaled: unscaled / pow10((scale - 38) as u32),
            scale: 38,
        };
        return Some(if neg { negate(d) } else { d });
    }
    let d = Decimal {
        unscaled,
        scale: scale as u8,
    };
    Some(if neg { negate(d) } else { d })
}

fn negate(d: Decimal) -> Decimal {
    Decimal {
        unscaled: -d.unscaled,
        scale: d.scale,
    }
}

/// Java's `(long) x`: truncation toward zero, saturating, NaN → 0.
fn f64_to_i64(x: f64) -> i64 {
    x as i64
}

/// Java's `Double.toString`: plain between 10^-3 and 10^7 (at least one fractional digit),
/// computerized scientific notation (`1.0E20`) outside.
pub fn java_double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = x.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{x}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    let s = format!("{x:e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let m = if m.contains('.') {
        m.to_string()
    } else {
        format!("{m}.0")
    };
    format!("{m}E{e}")
}

/// Java's `Float.toString`.
pub fn java_float(x: f32) -> String {
    if x.is_finite() && x != 0.0 {
        let a = x.abs();
        if (1e-3..1e7).contains(&a) {
            let s = format!("{x}");
            return if s.contains('.') { s } else { format!("{s}.0") };
        }
        let s = format!("{x:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') {
            m.to_string()
        } else {
            format!("{m}.0")
        };
        return format!("{m}E{e}");
    }
    java_double(f64::from(x))
}

/// A value's text, as `CAST(… AS STRING)` writes it.
pub fn to_text(v: &Value, ty: &DataType) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => java_float(*x),
        Value::Double(x) => java_double(*x),
        Value::Decimal(d) => d.to_string(),
        Value::Str(s) => s.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Date(d) => datetime::format_date(i64::from(*d)),
        Value::Time(t) => {
            let p = match ty.logical {
                LogicalType::Time { precision } => precision,
                _ => 0,
            };
            datetime::format_time(*t, p)
        }
        Value::Timestamp(ts) => {
            let p = match ty.logical {
                LogicalType::Timestamp { precision, .. }
                | LogicalType::TimestampLtz { precision, .. } => precision,
                _ => 3,
            };
            datetime::format_timestamp(*ts, p)
        }
        Value::IntervalMillis(ms) => interval_day_time_text(*ms),
        Value::IntervalMonths(m) => {
            let sign = if *m < 0 { "-" } else { "+" };
            let a = m.unsigned_abs();
            format!("{sign}{}-{:02}", a / 12, a % 12)
        }
        Value::Row(fields) => {
            let field_types: Vec<DataType> = match &ty.logical {
                LogicalType::Row(fs) => fs.iter().map(|f| f.ty.clone()).collect(),
                _ => vec![],
            };
            let parts: Vec<String> = fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let t = field_types.get(i).cloned().unwrap_or_else(DataType::string);
                    to_text(f, &t)
                })
                .collect();
            format!("({})", parts.join(", "))
        }
        Value::Array(items) => {
            let et = match &ty.logical {
                LogicalType::Array(e) => (**e).clone(),
                _ => DataType::string(),
            };
            let parts: Vec<String> = items.iter().map(|x| to_text(x, &et)).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Map(entries) => {
            let (kt, vt) = match &ty.logical {
                LogicalType::Map(k, v) => ((**k).clone(), (**v).clone()),
                _ => (DataType::string(), DataType::string()),
            };
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}={}", to_text(k, &kt), to_text(v, &vt)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// `+d hh:mm:ss.fff`, Flink's text of a day-time interval.
fn interval_day_time_text(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "+" };
    let a = ms.unsigned_abs();
    format!(
        "{sign}{} {:02}:{:02}:{:02}.{:03}",
        a / 86_400_000,
        a / 3_600_000 % 24,
        a / 60_000 % 60,
        a / 1000 % 60,
        a % 1000
    )
}

fn truncate_precision(ts: Timestamp, precision: u8) -> Timestamp {
    if precision >= 9 {
        return ts;
    }
    if precision <= 3 {
        let unit = 10i64.pow(3 - u32::from(precision));
        return Timestamp::from_millis(ts.millis.div_euclid(unit) * unit);
    }
    let unit = 10u32.pow(9 - u32::from(precision));
    Timestamp {
        millis: ts.millis,
        nanos_of_milli: ts.nanos_of_milli / unit * unit,
    }
}

fn fit_string(s: &str, ty: &LogicalType) -> Value {
    match ty {
        LogicalType::Char { length } if *length < MAX_LENGTH => {
            let n = *length as usize;
            let count = s.chars().count();
            if count == n {
                Value::str(s)
            } else if count > n {
                Value::str(&s.chars().take(n).collect::<String>())
            } else {
                Value::str(&format!("{s}{}", " ".repeat(n - count)))
            }
        }
        LogicalType::Varchar { length } if *length < MAX_LENGTH => {
            if s.chars().count() > *length as usize {
                Value::str(&s.chars().take(*length as usize).collect::<String>())
            } else {
                Value::str(s)
            }
        }
        _ => Value::str(s),
    }
}

/// Casts a value of type `from` to type `to`. `Err` says why the cast fails (`CAST` turns it into an
/// evaluation error, `TRY_CAST` into NULL); an overflowing decimal is `Ok(NULL)`.
pub fn cast(v: &Value, from: &DataType, to: &DataType) -> Result<Value, String> {
    use LogicalType as L;
    if v.is_null() {
        return Ok(Value::Null);
    }
    let fail = || {
        format!(
            "cannot cast '{}' of type {} to {}",
            to_text(v, from),
            from.logical,
            to.logical
        )
    };
    let out = match (&to.logical, v) {
        (L::Boolean, Value::Bool(_)) => v.clone(),
        (L::Boolean, Value::Str(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "1" => Value::Bool(true),
            "false" | "f" | "no" | "n" | "0" => Value::Bool(false),
            _ => return Err(fail()),
        },
        (L::Boolean, _) => Value::Bool(to_f64(v).ok_or_else(fail)? != 0.0),
        (L::TinyInt | L::SmallInt | L::Int | L::BigInt, _) => {
            let i = match v {
                Value::Int(i) => *i,
                Value::Bool(b) => i64::from(*b),
                Value::Decimal(d) => {
                    let t = d.unscaled / pow10(u32::from(d.scale));
                    t as i64
                }
                Value::Float(x) => f64_to_i64(f64::from(*x)),
                Value::Double(x) => f64_to_i64(*x),
                Value::Str(s) => {
                    let t = s.trim();
                    match t.parse::<i64>() {
                        Ok(i) => i,
                        Err(_) => {
                            return Err(fail());
                        }
                    }
                }
                Value::IntervalMillis(ms) => *ms,
                Value::IntervalMonths(m) => i64::from(*m),
                Value::Timestamp(ts) => ts.millis.div_euclid(1000),
                _ => return Err(fail()),
            };
            if let (Value::Str(_), L::TinyInt | L::SmallInt | L::Int) = (v, &to.logical) {
                // Text out of the type's range does not parse as that type.
                if wrap_int(i, &to.logical) != i {
                    return Err(fail());
                }
            }
            Value::Int(wrap_int(i, &to.logical))
        }
        (L::Float, _) => match v {
            Value::Str(s) => Value::Float(s.trim().parse().map_err(|_| fail())?),
            Value::Bool(b) => Value::Float(f32::from(u8::from(*b))),
            _ => Value::Float(to_f64(v).ok_or_else(fail)? as f32),
        },
        (L::Double, _) => match v {
            Value::Str(s) => Value::Double(s.trim().parse().map_err(|_| fail())?),
            Value::Bool(b) => Value::Double(f64::from(u8::from(*b))),
            _ => Value::Double(to_f64(v).ok_or_else(fail)?),
        },
        (L::Decimal { precision, scale }, _) => {
            let d = match v {
                Value::Int(_) | Value::Decimal(_) => to_decimal(v),
                Value::Float(x) => f64_to_decimal(f64::from(*x), *scale),
                Value::Double(x) => f64_to_decimal(*x, *scale),
                Value::Bool(b) => Some(Decimal {
                    unscaled: i128::from(*b),
                    scale: 0,
                }),
                Value::Str(s) => Some(parse_decimal(s).ok_or_else(fail)?),
                _ => return Err(fail()),
            };
            match d.and_then(|d| fit_decimal(d, *precision, *scale)) {
                Some(d) => Value::Decimal(d),
                None => Value::Null,
            }
        }
        (L::Char { .. } | L::Varchar { .. }, _) => fit_string(&to_text(v, from), &to.logical),
        (L::Binary { .. } | L::Varbinary { .. }, Value::Str(s)) => {
            Value::Bytes(Arc::from(s.as_bytes()))
        }
        (L::Binary { .. } | L::Varbinary { .. }, Value::Bytes(_)) => v.clone(),
        (L::Date, Value::Str(s)) => {
            let days = datetime::parse_date(s)
                .or_else(|| {
                    datetime::parse_timestamp(s)
                        .map(|t| t.millis.div_euclid(datetime::MILLIS_PER_DAY))
                })
                .ok_or_else(fail)?;
            Value::Date(i32::try_from(days).map_err(|_| fail())?)
        }
        (L::Date, Value::Timestamp(ts)) => {
            Value::Date(ts.millis.div_euclid(datetime::MILLIS_PER_DAY) as i32)
        }
        (L::Date, Value::Date(_)) => v.clone(),
        (L::Time { .. }, Value::Str(s)) => Value::Time(datetime::parse_time(s).ok_or_else(fail)?),
        (L::Time { .. }, Value::Time(_)) => v.clone(),
        (L::Time { .. }, Value::Timestamp(ts)) => Value::Time(
            ts.millis.rem_euclid(datetime::MILLIS_PER_DAY) * 1_000_000
                + i64::from(ts.nanos_of_milli),
        ),
        (L::Timestamp { precision, .. } | L::TimestampLtz { precision, .. }, _) => {
            let ts = match v {
                Value::Timestamp(ts) => *ts,
                Value::Str(s) => datetime::parse_timestamp(s).ok_or_else(fail)?,
                Value::Date(d) => Timestamp::from_millis(i64::from(*d) * datetime::MILLIS_PER_DAY),
                Value::Time(t) => Timestamp {
                    millis: t / 1_000_000,
                    nanos_of_milli: (t % 1_000_000) as u32,
                },
                // Numbers to TIMESTAMP_LTZ: seconds since the epoch.
                Value::Int(i) => Timestamp::from_millis(i.saturating_mul(1000)),
                Value::Decimal(_) | Value::Double(_) | Value::Float(_) => {
                    Timestamp::from_millis((to_f64(v).ok_or_else(fail)? * 1000.0) as i64)
                }
                _ => return Err(fail()),
            };
            Value::Timestamp(truncate_precision(ts, *precision))
        }
        (L::IntervalDayTime, Value::Int(i)) => Value::IntervalMillis(*i),
        (L::IntervalYearMonth, Value::Int(i)) => Value::IntervalMonths(*i as i32),
        (L::IntervalDayTime | L::IntervalYearMonth, _) => v.clone(),
        // A row to a row type: each field to its field's type (`CAST(ROW(…) AS ROW<…>)`).
        (L::Row(to_fields), Value::Row(values)) => match &from.logical {
            L::Row(from_fields) if from_fields.len() == to_fields.len() => Value::Row(
                values
                    .iter()
                    .zip(from_fields.iter().zip(to_fields))
                    .map(|(x, (f, t))| cast(x, &f.ty, &t.ty))
                    .collect::<Result<Vec<_>, _>>()?
                    .into(),
            ),
            _ => v.clone(),
        },
        (L::Row(_) | L::Array(_) | L::Map(..), _) => v.clone(),
        _ => return Err(fail()),
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: Value, from: DataType, to: DataType) -> Result<Value, String> {
        cast(&v, &from, &to)
    }

    #[test]
    fn casts_follow_flink() {
        let s = DataType::string();
        assert_eq!(
            c(Value::str(" 12 "), s.clone(), DataType::int()),
            Ok(Value::Int(12))
        );
        assert!(c(Value::str("abc"), s.clone(), DataType::int()).is_err());
        let tiny = DataType::new(LogicalType::TinyInt);
        assert_eq!(
            c(Value::Int(300), DataType::int(), tiny),
            Ok(Value::Int(44))
        );
        let d = |u, sc| {
            Value::Decimal(Decimal {
                unscaled: u,
                scale: sc,
            })
        };
        assert_eq!(
            c(d(25, 1), DataType::decimal(2, 1), DataType::decimal(3, 0)),
            Ok(d(3, 0))
        );
        assert_eq!(
            c(d(-25, 1), DataType::decimal(2, 1), DataType::decimal(3, 0)),
            Ok(d(-3, 0))
        );
        assert_eq!(
            c(d(15, 1), DataType::decimal(2, 1), DataType::int()),
            Ok(Value::Int(1))
        );
        assert_eq!(
            c(
                d(123456, 3),
                DataType::decimal(6, 3),
                DataType::decimal(4, 2)
            ),
            Ok(Value::Null)
        );
        assert_eq!(
            c(Value::Double(-2.7), DataType::double(), DataType::bigint()),
            Ok(Value::Int(-2))
        );
        assert_eq!(
            c(Value::Double(1e20), DataType::double(), s.clone()),
            Ok(Value::str("1.0E20"))
        );
        assert_eq!(
            c(Value::Double(0.1), DataType::double(), s.clone()),
            Ok(Value::str("0.1"))
        );
        assert_eq!(
            c(Value::Double(3.0), DataType::double(), s.clone()),
            Ok(Value::str("3.0"))
        );
        assert_eq!(
            c(Value::Bool(true), DataType::boolean(), s.clone()),
            Ok(Value::str("TRUE"))
        );
        let ts = c(
            Value::str("2020-01-02 03:04:05.6"),
            s.clone(),
            DataType::timestamp(3),
        )
        .unwrap();
        assert_eq!(
            c(ts, DataType::timestamp(3), s.clone()),
            Ok(Value::str("2020-01-02 03:04:05.600"))
        );
        let char3 = DataType::new(LogicalType::Char { length: 3 });
        assert_eq!(c(Value::str("a"), s, char3), Ok(Value::str("a  ")));
    }
}
