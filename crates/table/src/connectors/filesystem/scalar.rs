//! Scalar values as text, as Flink's csv and json formats write and read them: timestamps
//! `yyyy-MM-dd HH:mm:ss.SSS` (the SQL standard form, with the type's fractional digits), dates
//! `yyyy-MM-dd`, times `HH:mm:ss`, decimals in plain notation, doubles as Java prints them.

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
        Value::Time(t) => format_time(*t, precision(ty).min(3)),
        Value::Timestamp(ts) => format_timestamp(*ts, precision(ty)),
        other => sluice_sql::cast::to_text(other, ty),
    }
}

fn precision(ty: &DataType) -> u8 {
    match ty.logical {
        LogicalType::Timestamp { precision, .. }
        | LogicalType::TimestampLtz { precision, .. }
        | LogicalType::Time { precision } => precision,
        _ => 3,
    }
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
        L::Timestamp { .. } | L::TimestampLtz { .. } => {
            Value::Timestamp(parse_timestamp(t).ok_or_else(bad)?)
        }
        _ => return Err(format!("type {ty} is not read from text")),
    })
}
