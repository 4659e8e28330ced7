//! [`SqlKey`]: the key of a SQL keyed operator (GROUP BY, join keys), as keyed streams and keyed
//! state require.
//!
//! [`Row`] and [`Value`] already are `Hash + Eq + Clone + Send + Sync + serde` (so
//! `sluice_types::Data`, `StateKey` and `StateValue` hold for them as they are); what they lack
//! is `JavaHash` (key-group placement), which lives in `sluice-plan` while the types live in
//! `sluice-sql`: the orphan rule forbids implementing it in a third crate, and neither owner may
//! depend on the other, hence this newtype.
//!
//! The hash mirrors the boxed Java value of each SQL value (`Long.hashCode` for integers,
//! `String.hashCode` over UTF-16 for strings, `Double.hashCode`…) combined like
//! `java.util.Arrays.hashCode` for rows. It is deterministic across processes and runs, which is
//! what placement needs; it is not Flink SQL's placement, which hashes a key's `BinaryRowData`
//! bytes with murmur (a layout that depends on the declared types, not only the values).

use serde::{Deserialize, Serialize};
use sluice_datastream::partition::JavaHash;
use sluice_sql::{Row, Value};

/// A key of a SQL keyed operator: a [`Row`] of the key columns, or a single [`Value`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct SqlKey<K>(pub K);

impl JavaHash for SqlKey<Row> {
    fn java_hash_code(&self) -> i32 {
        values_hash(&self.0 .0)
    }
}

impl JavaHash for SqlKey<Value> {
    fn java_hash_code(&self) -> i32 {
        value_hash(&self.0)
    }
}

/// `Arrays.hashCode(Object[])`: `31 * h + e` from 1, NULL as 0.
fn values_hash(values: &[Value]) -> i32 {
    values
        .iter()
        .fold(1i32, |h, v| h.wrapping_mul(31).wrapping_add(value_hash(v)))
}

/// The Java `hashCode()` of the boxed value Flink's external type for `v` would be.
fn value_hash(v: &Value) -> i32 {
    match v {
        Value::Null => 0,
        Value::Bool(b) => b.java_hash_code(),
        Value::Int(i) => i.java_hash_code(),
        Value::Float(x) => {
            let bits = if x.is_nan() { 0x7fc0_0000 } else { x.to_bits() };
            bits as i32
        }
        Value::Double(x) => x.java_hash_code(),
        Value::Decimal(d) => {
            // Equal values at different scales hash alike (as `Value`'s own Hash does).
            let mut d = *d;
            while d.scale > 0 && d.unscaled % 10 == 0 {
                d.unscaled /= 10;
                d.scale -= 1;
            }
            let u = d.unscaled as u128;
            let folded = (u as u64) ^ ((u >> 64) as u64);
            (folded as i64)
                .java_hash_code()
                .wrapping_mul(31)
                .wrapping_add(i32::from(d.scale))
        }
        Value::Str(s) => s.as_ref().java_hash_code(),
        Value::Bytes(b) => b.iter().fold(1i32, |h, x| {
            h.wrapping_mul(31).wrapping_add(i32::from(*x as i8))
        }),
        Value::Date(d) => d.java_hash_code(),
        Value::Time(t) => t.java_hash_code(),
        Value::Timestamp(ts) => ts
            .millis
            .java_hash_code()
            .wrapping_mul(31)
            .wrapping_add(ts.nanos_of_milli as i32),
        Value::IntervalMillis(ms) => ms.java_hash_code(),
        Value::IntervalMonths(m) => m.java_hash_code(),
        Value::Row(items) | Value::Array(items) => values_hash(items),
        Value::Map(entries) => entries.iter().fold(0i32, |h, (k, v)| {
            h.wrapping_add(value_hash(k) ^ value_hash(v))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_strings_hash_as_java_boxes() {
        assert_eq!(
            SqlKey(Value::Int(7)).java_hash_code(),
            7i64.java_hash_code()
        );
        assert_eq!(SqlKey(Value::str("abc")).java_hash_code(), 96354);
        let row = SqlKey(Row(vec![Value::Int(1), Value::Null]));
        assert_eq!(row.java_hash_code(), (31 + 1) * 31);
    }
}
