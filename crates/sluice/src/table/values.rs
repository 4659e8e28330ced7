//! Rust values as SQL values: [`IntoValue`] (what [`crate::row!`] calls on each argument) and
//! [`fits`], the check that a value is one of a column's type (rows from a program's stream and
//! the results of Rust functions are checked by it, so a wrong value is refused, never read as
//! something else).

use std::sync::Arc;

use sluice_sql::types::MAX_LENGTH;
use sluice_sql::{DataType, LogicalType, SqlStr, Timestamp, Value};

/// A Rust value that is a SQL value: integers are `Int` (any of `TINYINT` … `BIGINT`), `f32`
/// `FLOAT`, `f64` `DOUBLE`, strings `STRING`, byte vectors `BYTES`, [`Timestamp`] a `TIMESTAMP`
/// or `TIMESTAMP_LTZ`, `None` NULL.
pub trait IntoValue {
    /// The SQL value.
    fn into_value(self) -> Value;
}

macro_rules! int_values {
    ($($t:ty),*) => {$(
        impl IntoValue for $t {
            fn into_value(self) -> Value {
                Value::Int(i64::from(self))
            }
        }
    )*};
}
int_values!(i8, i16, i32, i64, u8, u16, u32);

impl IntoValue for bool {
    fn into_value(self) -> Value {
        Value::Bool(self)
    }
}

impl IntoValue for f32 {
    fn into_value(self) -> Value {
        Value::Float(self)
    }
}

impl IntoValue for f64 {
    fn into_value(self) -> Value {
        Value::Double(self)
    }
}

impl IntoValue for &str {
    fn into_value(self) -> Value {
        Value::str(self)
    }
}

impl IntoValue for String {
    fn into_value(self) -> Value {
        Value::Str(SqlStr::from(self))
    }
}

impl IntoValue for Arc<str> {
    fn into_value(self) -> Value {
        Value::Str(SqlStr::from(self))
    }
}

impl IntoValue for Vec<u8> {
    fn into_value(self) -> Value {
        Value::Bytes(Arc::from(self))
    }
}

impl IntoValue for Timestamp {
    fn into_value(self) -> Value {
        Value::Timestamp(self)
    }
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl<T: IntoValue> IntoValue for Option<T> {
    fn into_value(self) -> Value {
        self.map_or(Value::Null, IntoValue::into_value)
    }
}

/// How many decimal digits `n` has (1 for 0).
fn digits(n: i128) -> u32 {
    n.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1)
}

/// Whether `v` is a value of type `ty` (NULL only if `ty` is nullable; integers within the
/// type's range; a decimal of the type's scale and at most its precision; strings and bytes
/// no longer than the type's length).
pub fn fits(v: &Value, ty: &DataType) -> bool {
    use LogicalType as L;
    match (v, &ty.logical) {
        (Value::Null, _) => ty.nullable,
        (Value::Bool(_), L::Boolean) => true,
        (Value::Int(i), L::TinyInt) => i8::try_from(*i).is_ok(),
        (Value::Int(i), L::SmallInt) => i16::try_from(*i).is_ok(),
        (Value::Int(i), L::Int) => i32::try_from(*i).is_ok(),
        (Value::Int(_), L::BigInt) => true,
        (Value::Float(_), L::Float) | (Value::Double(_), L::Double) => true,
        (Value::Decimal(d), L::Decimal { precision, scale }) => {
            d.scale == *scale && digits(d.unscaled) <= u32::from(*precision)
        }
        (Value::Str(s), L::Char { length } | L::Varchar { length }) => {
            *length == MAX_LENGTH
                || s.len() <= *length as usize
                || s.chars().count() <= *length as usize
        }
        (Value::Bytes(b), L::Binary { length } | L::Varbinary { length }) => {
            b.len() <= *length as usize
        }
        (Value::Date(_), L::Date)
        | (Value::Time(_), L::Time { .. })
        | (Value::Timestamp(_), L::Timestamp { .. } | L::TimestampLtz { .. })
        | (Value::IntervalMillis(_), L::IntervalDayTime)
        | (Value::IntervalMonths(_), L::IntervalYearMonth) => true,
        (Value::Row(vs), L::Row(fields)) => {
            vs.len() == fields.len() && vs.iter().zip(fields).all(|(v, f)| fits(v, &f.ty))
        }
        (Value::Array(vs), L::Array(t)) => vs.iter().all(|v| fits(v, t)),
        (Value::Map(es), L::Map(k, t)) => es.iter().all(|(a, b)| fits(a, k) && fits(b, t)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fit_their_types_only() {
        assert!(fits(&7i32.into_value(), &DataType::int()));
        assert!(!fits(&(1i64 << 40).into_value(), &DataType::int()));
        assert!(fits(&(1i64 << 40).into_value(), &DataType::bigint()));
        assert!(!fits(&"x".into_value(), &DataType::bigint()));
        assert!(fits(&None::<i64>.into_value(), &DataType::bigint()));
        assert!(!fits(&Value::Null, &DataType::bigint().not_null()));
        let varchar3 = DataType::new(LogicalType::Varchar { length: 3 });
        assert!(fits(&"héé".into_value(), &varchar3));
        assert!(!fits(&"four".into_value(), &varchar3));
        let d = Value::Decimal(sluice_sql::Decimal {
            unscaled: 12345,
            scale: 2,
        });
        assert!(fits(&d, &DataType::decimal(5, 2)));
        assert!(!fits(&d, &DataType::decimal(4, 2)));
        assert!(!fits(&d, &DataType::decimal(6, 3)));
    }
}
