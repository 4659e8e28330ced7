//! SQL values ([`Value`]) and the rows SQL jobs move ([`Row`]).
//!
//! A row is a vector of dynamically typed values; the plan knows each column's
//! [`DataType`](crate::DataType), the value only carries what evaluation needs. All integer
//! types are held as `i64` (evaluation narrows to the column's type with Java's wrap-around, as
//! Flink does), `FLOAT` as `f32` and `DOUBLE` as `f64`, `DECIMAL` as an unscaled `i128` with its
//! scale, bytes behind an `Arc` and strings as a [`SqlStr`] (static or shared text) so that copying
//! a row does not copy its text.
//!
//! Values are `Eq`, `Ord` and `Hash` so that they can be keys (GROUP BY, joins): floating-point
//! values compare by IEEE total order, so NaN equals itself and a key never goes missing.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::sql_str::SqlStr;

/// A `DECIMAL` value: `unscaled × 10^-scale`.
///
/// Packed to 8-byte alignment: an `i128` would align it (and every [`Value`]) to 16 bytes,
/// making `Value` 48 bytes instead of 32 — a third more to move and keep per column, for a
/// type most rows never hold. Fields are read by copy (a reference to a packed field is
/// refused by the compiler), and the serialized form is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(C, packed(8))]
pub struct Decimal {
    /// The digits, as an integer.
    pub unscaled: i128,
    /// How many of them are after the point.
    pub scale: u8,
}

impl Decimal {
    /// The value as a double (for comparisons across scales and for casts).
    pub fn to_f64(self) -> f64 {
        self.unscaled as f64 / 10f64.powi(i32::from(self.scale))
    }

    /// The same value with `scale` digits after the point, rounding half away from zero (Flink's
    /// `HALF_UP`) when digits are dropped; `None` if it overflows `i128`.
    pub fn rescale(self, scale: u8) -> Option<Decimal> {
        if scale >= self.scale {
            let factor = 10i128.checked_pow(u32::from(scale - self.scale))?;
            Some(Decimal {
                unscaled: self.unscaled.checked_mul(factor)?,
                scale,
            })
        } else {
            let factor = 10i128.checked_pow(u32::from(self.scale - scale))?;
            let q = self.unscaled / factor;
            let r = self.unscaled % factor;
            let round = if r.abs() * 2 >= factor {
                self.unscaled.signum()
            } else {
                0
            };
            Some(Decimal {
                unscaled: q + round,
                scale,
            })
        }
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let digits = self.unscaled.unsigned_abs().to_string();
        let scale = usize::from(self.scale);
        let sign = if self.unscaled < 0 { "-" } else { "" };
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = if digits.len() <= scale {
            format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits)
        } else {
            digits
        };
        let (int, frac) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int}.{frac}")
    }
}

/// A `TIMESTAMP` or `TIMESTAMP_LTZ` value (Flink's `TimestampData`): milliseconds since the epoch
/// and the nanoseconds within that millisecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Timestamp {
    /// Milliseconds since 1970-01-01T00:00:00 (UTC for `TIMESTAMP_LTZ`).
    pub millis: i64,
    /// Nanoseconds within the millisecond, 0..1_000_000.
    pub nanos_of_milli: u32,
}

impl Timestamp {
    /// A timestamp at a whole millisecond.
    pub fn from_millis(millis: i64) -> Timestamp {
        Timestamp {
            millis,
            nanos_of_milli: 0,
        }
    }
}

/// One SQL value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// `BOOLEAN`.
    Bool(bool),
    /// `TINYINT`, `SMALLINT`, `INT` or `BIGINT`.
    Int(i64),
    /// `FLOAT`.
    Float(f32),
    /// `DOUBLE`.
    Double(f64),
    /// `DECIMAL(p, s)`.
    Decimal(Decimal),
    /// `CHAR` / `VARCHAR` / `STRING`.
    Str(SqlStr),
    /// `BINARY` / `VARBINARY` / `BYTES`.
    Bytes(Arc<[u8]>),
    /// `DATE`: days since 1970-01-01.
    Date(i32),
    /// `TIME`: nanoseconds since midnight.
    Time(i64),
    /// `TIMESTAMP` / `TIMESTAMP_LTZ`.
    Timestamp(Timestamp),
    /// A day-time interval, in milliseconds.
    IntervalMillis(i64),
    /// A year-month interval, in months.
    IntervalMonths(i32),
    /// `ROW<…>`.
    Row(Arc<[Value]>),
    /// `ARRAY<…>`.
    Array(Arc<[Value]>),
    /// `MAP<…>`, entries in insertion order.
    Map(Arc<[(Value, Value)]>),
}

impl Value {
    /// Whether this is SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A string value: a shared copy of `s`.
    pub fn str(s: &str) -> Value {
        Value::Str(SqlStr::from(s))
    }

    /// A string value of static text: borrowed, no allocation and no copy.
    pub const fn static_str(s: &'static str) -> Value {
        Value::Str(SqlStr::from_static(s))
    }

    /// The value as a boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as an integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as text, if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The rank of the variant, for ordering values of different variants (which a typed plan
    /// never compares; the order only has to be total).
    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) => 2,
            Value::Float(_) => 3,
            Value::Double(_) => 4,
            Value::Decimal(_) => 5,
            Value::Str(_) => 6,
            Value::Bytes(_) => 7,
            Value::Date(_) => 8,
            Value::Time(_) => 9,
            Value::Timestamp(_) => 10,
            Value::IntervalMillis(_) => 11,
            Value::IntervalMonths(_) => 12,
            Value::Row(_) => 13,
            Value::Array(_) => 14,
            Value::Map(_) => 15,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    /// A total order: NULL first, then by variant; within a variant the SQL order, floats by IEEE
    /// total order, decimals by value whatever their scale.
    fn cmp(&self, other: &Value) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Double(a), Double(b)) => a.total_cmp(b),
            (Decimal(a), Decimal(b)) => decimal_cmp(*a, *b),
            (Str(a), Str(b)) => a.cmp(b),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Time(a), Time(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (IntervalMillis(a), IntervalMillis(b)) => a.cmp(b),
            (IntervalMonths(a), IntervalMonths(b)) => a.cmp(b),
            (Row(a), Row(b)) | (Array(a), Array(b)) => a.iter().cmp(b.iter()),
            (Map(a), Map(b)) => a.iter().cmp(b.iter()),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

fn decimal_cmp(a: Decimal, b: Decimal) -> Ordering {
    let scale = a.scale.max(b.scale);
    match (a.rescale(scale), b.rescale(scale)) {
        (Some(x), Some(y)) => { x.unscaled }.cmp(&{ y.unscaled }),
        _ => a.to_f64().total_cmp(&b.to_f64()),
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Value::Null => {}
            Value::Bool(b) => b.hash(state),
            Value::Int(i) => i.hash(state),
            Value::Float(x) => x.to_bits().hash(state),
            Value::Double(x) => x.to_bits().hash(state),
            Value::Decimal(d) => {
                // Equal values at different scales hash alike: strip trailing zeros.
                let mut d = *d;
                while d.scale > 0 && d.unscaled % 10 == 0 {
                    d.unscaled /= 10;
                    d.scale -= 1;
                }
                d.hash(state)
            }
            Value::Str(s) => s.hash(state),
            Value::Bytes(b) => b.hash(state),
            Value::Date(d) => d.hash(state),
            Value::Time(t) => t.hash(state),
            Value::Timestamp(t) => t.hash(state),
            Value::IntervalMillis(i) => i.hash(state),
            Value::IntervalMonths(i) => i.hash(state),
            Value::Row(r) | Value::Array(r) => r.hash(state),
            Value::Map(m) => m.hash(state),
        }
    }
}

/// One row of a SQL job: its columns' values in the plan's column order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Row(pub Vec<Value>);

impl Row {
    /// A row of these values.
    pub fn new(values: Vec<Value>) -> Row {
        Row(values)
    }

    /// The value of column `i` (NULL past the end, which a planned job never reads).
    pub fn get(&self, i: usize) -> &Value {
        self.0.get(i).unwrap_or(&Value::Null)
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_print_and_compare_across_scales() {
        let a = Decimal {
            unscaled: 9080,
            scale: 3,
        };
        assert_eq!(a.to_string(), "9.080");
        assert_eq!(
            Decimal {
                unscaled: -5,
                scale: 3
            }
            .to_string(),
            "-0.005"
        );
        let b = Decimal {
            unscaled: 908,
            scale: 2,
        };
        assert_eq!(Value::Decimal(a), Value::Decimal(b));
        let hash = |v: &Value| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            v.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&Value::Decimal(a)), hash(&Value::Decimal(b)));
    }

    #[test]
    fn rescale_rounds_half_away_from_zero() {
        let d = |u, s| Decimal {
            unscaled: u,
            scale: s,
        };
        assert_eq!(d(12345, 3).rescale(2), Some(d(1235, 2)));
        assert_eq!(d(-12345, 3).rescale(2), Some(d(-1235, 2)));
        assert_eq!(d(12344, 3).rescale(2), Some(d(1234, 2)));
        assert_eq!(d(12, 0).rescale(3), Some(d(12000, 3)));
    }

    #[test]
    fn static_and_shared_strings_are_the_same_value() {
        let a = Value::static_str("Google");
        let b = Value::str("Google");
        assert_eq!(a, b);
        let hash = |v: &Value| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            v.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&a), hash(&b));
        // The bytes of the `Arc<str>` form this replaced: variant index 6, length, UTF-8.
        let bytes = postcard::to_stdvec(&a).unwrap();
        assert_eq!(bytes, vec![6, 6, b'G', b'o', b'o', b'g', b'l', b'e']);
        assert_eq!(postcard::to_stdvec(&b).unwrap(), bytes);
        // Static or shared text does not make a value bigger than its widest variant (DECIMAL).
        assert_eq!(std::mem::size_of::<Value>(), 32);
    }

    #[test]
    fn nan_is_a_key_like_any_other() {
        let nan = Value::Double(f64::NAN);
        assert_eq!(nan, nan.clone());
        assert!(Value::Null < Value::Int(0));
    }
}
