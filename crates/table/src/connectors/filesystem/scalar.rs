//! Scalar values as text, as Flink's csv and json formats write and read them: timestamps
//! `yyyy-MM-dd HH:mm:ss[.f]` (Flink's `SQL_TIMESTAMP_FORMAT`: `java.time`'s ISO local time, so
//! the fraction has no trailing zeros and a whole second none at all: `…:20.01`, `…:10`),
//! TIMESTAMP_LTZ the same in UTC with a `Z`, dates `yyyy-MM-dd`, times `HH:mm:ss[.f]`, decimals in
//! plain notation (the csv writer formats its own, [`super::csv`]), doubles as Java prints them.

use sluice_sql::cast::{java_double, java_float, parse_decimal};
use sluice_sql::datetime::{
    format_date, format_time, format_timestamp, parse_date, parse_time, parse_timestamp,
};
use sluice_sql::{DataType, LogicalType, Value};

/// Whether a type is written as a scalar text (not ROW, ARRAY, MAP or bytes).
pub fn is_scalar(ty: &DataType) -> bool {
    !matches!(
        ty.logical,
        LogicalType::Row(_)
            | LogicalType::Array(_)
            | LogicalType::Map(..)
            | LogicalType::Binary { .. }
            | LogicalType::Varbinary { .. }
            | LogicalType::IntervalDayTime
            | LogicalType::IntervalYearMonth
            | LogicalType::Null
    )
}

/// A non-NULL scalar value's text.
pub fn to_text(v: &Value, ty: &DataType) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => java_float(*x),
        Value::Double(x) => java_double(*x),
        Value::Decimal(d) => d.to_string(),
        Value::Str(s) => s.to_string(),
        Value::Date(d) => format_date(i64::from(*d)),
        Value::Time(t) => iso_fraction(format_time(*t, 9)),
        Value::Timestamp(ts) => {
            let text = iso_fraction(format_timestamp(*ts, 9));
            match ty.logical {
                LogicalType::TimestampLtz { .. } => text + "Z",
                _ => text,
            }
        }
        other => sluice_sql::cast::to_text(other, ty),
    }
}

/// A time written with nine fractional digits, as `java.time`'s ISO local time prints it: the
/// fraction without its trailing zeros, and without the point when nothing is left.
fn iso_fraction(mut text: String) -> String {
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
    text
}

/// A scalar value of type `ty` from its text; `Err` says what was expected.
pub fn from_text(text: &str, ty: &DataType) -> Result<Value, String> {
    use LogicalType as L;
    let bad = || format!("cannot read '{text}' as {ty}");
    let t = text.trim();
    Ok(match &ty.logical {
        L::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(bad()),
        },
        L::TinyInt | L::SmallInt | L::Int | L::BigInt => {
            let i: i64 = t.parse().map_err(|_| bad())?;
            let (lo, hi) = match ty.logical {
                L::TinyInt => (i64::from(i8::MIN), i64::from(i8::MAX)),
                L::SmallInt => (i64::from(i16::MIN), i64::from(i16::MAX)),
                L::Int => (i64::from(i32::MIN), i64::from(i32::MAX)),
                _ => (i64::MIN, i64::MAX),
            };
            if i < lo || i > hi {
                return Err(format!("'{text}' is out of the range of {ty}"));
            }
            Value::Int(i)
        }
        L::Float => Value::Float(t.parse().map_err(|_| bad())?),
        L::Double => Value::Double(t.parse().map_err(|_| bad())?),
        L::Decimal { precision, scale } => {
            let d = parse_decimal(t).ok_or_else(bad)?;
            let d = sluice_sql::cast::fit_decimal(d, *precision, *scale)
                .ok_or_else(|| format!("'{text}' does not fit {ty}"))?;
            Value::Decimal(d)
        }
        L::Char { .. } | L::Varchar { .. } => Value::str(text),
        L::Date => Value::Date(parse_date(t).ok_or_else(bad)? as i32),
        L::Time { .. } => Value::Time(parse_time(t).ok_or_else(bad)?),
        L::Timestamp { .. } => Value::Timestamp(parse_timestamp(t).ok_or_else(bad)?),
        L::TimestampLtz { .. } => {
            let utc = t.strip_suffix('Z').unwrap_or(t);
            Value::Timestamp(parse_timestamp(utc).ok_or_else(bad)?)
        }
        _ => return Err(format!("type {ty} is not read from text")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::Timestamp;

    #[test]
    fn timestamps_are_written_as_javas_iso_local_time() {
        let ts = |ms| {
            to_text(
                &Value::Timestamp(Timestamp::from_millis(ms)),
                &DataType::timestamp(3),
            )
        };
        // 2023-11-14 22:13:20 UTC and a few fractions of it.
        assert_eq!(ts(1_700_000_000_000), "2023-11-14 22:13:20");
        assert_eq!(ts(1_700_000_000_010), "2023-11-14 22:13:20.01");
        assert_eq!(ts(1_700_000_000_005), "2023-11-14 22:13:20.005");
        assert_eq!(ts(1_700_000_000_500), "2023-11-14 22:13:20.5");
        assert_eq!(ts(-1), "1969-12-31 23:59:59.999");
        let ltz = DataType::new(LogicalType::TimestampLtz {
            precision: 3,
            kind: sluice_sql::TimestampKind::Regular,
        });
        let text = to_text(
            &Value::Timestamp(Timestamp::from_millis(1_700_000_000_120)),
            &ltz,
        );
        assert_eq!(text, "2023-11-14 22:13:20.12Z");
        assert_eq!(
            from_text(&text, &ltz).unwrap(),
            Value::Timestamp(Timestamp::from_millis(1_700_000_000_120))
        );
        let time = DataType::new(LogicalType::Time { precision: 3 });
        assert_eq!(to_text(&Value::Time(3_600_000_000_000), &time), "01:00:00");
    }
}
