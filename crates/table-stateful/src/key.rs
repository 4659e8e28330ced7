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

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sluice_datastream::partition::JavaHash;
use sluice_sql::{Row, Value};

/// A key of a SQL keyed operator: a [`Row`] or a [`KeyRow`] of the key columns, or a single
/// [`Value`].
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

/// The key columns of a row, packed for keyed state: no column or one column (the common
/// `GROUP BY auction`, `ON p.id = a.seller`) is held inline, so hashing, comparing and cloning
/// a key touch no heap memory and allocate nothing (keyed state and timers compare and clone
/// keys on every record); more columns are a `Vec`.
///
/// It is the same key as the [`Row`] of its values: the same Java hash, hence the same key
/// group ([`SqlKey<KeyRow>`] and [`SqlKey<Row>`] partition alike), and the same serde form (a
/// sequence of values), hence the same bytes in a savepoint. Built only by
/// [`KeyRow::from_vec`] and [`KeyRow::of`], so one list of values has one form (`Eq` and
/// `Hash` may compare forms).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum KeyRow {
    /// No key columns (a global window aggregation or a join on the window only).
    #[default]
    Empty,
    /// One key column.
    One(Value),
    /// Two or more key columns.
    Many(Vec<Value>),
}

impl KeyRow {
    /// The key of these values.
    pub fn from_vec(mut values: Vec<Value>) -> KeyRow {
        match values.len() {
            0 => KeyRow::Empty,
            1 => values.pop().map_or(KeyRow::Empty, KeyRow::One),
            _ => KeyRow::Many(values),
        }
    }

    /// The key of `row`'s `columns`.
    pub fn of(row: &Row, columns: &[usize]) -> KeyRow {
        match columns {
            [] => KeyRow::Empty,
            [i] => KeyRow::One(row.get(*i).clone()),
            _ => KeyRow::Many(columns.iter().map(|&i| row.get(i).clone()).collect()),
        }
    }

    /// The key's values, in column order.
    pub fn values(&self) -> &[Value] {
        match self {
            KeyRow::Empty => &[],
            KeyRow::One(v) => std::slice::from_ref(v),
            KeyRow::Many(vs) => vs,
        }
    }
}

impl Serialize for KeyRow {
    /// As the `Vec<Value>` of a [`Row`]: a sequence of the values.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.values())
    }
}

impl<'de> Deserialize<'de> for KeyRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Value>::deserialize(deserializer).map(KeyRow::from_vec)
    }
}

impl JavaHash for SqlKey<KeyRow> {
    fn java_hash_code(&self) -> i32 {
        values_hash(self.0.values())
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

    fn rows() -> Vec<Vec<Value>> {
        vec![
            vec![],
            vec![Value::Int(7)],
            vec![Value::str("abc")],
            vec![Value::Null],
            vec![Value::Int(1), Value::str("x"), Value::Double(2.5)],
        ]
    }

    #[test]
    fn a_packed_key_is_its_row_for_placement_and_savepoints() {
        for values in rows() {
            let row = SqlKey(Row(values.clone()));
            let packed = SqlKey(KeyRow::from_vec(values.clone()));
            assert_eq!(packed.0.values(), values.as_slice());
            assert_eq!(packed.java_hash_code(), row.java_hash_code(), "{values:?}");
            let bytes = postcard::to_allocvec(&packed).unwrap();
            assert_eq!(bytes, postcard::to_allocvec(&row).unwrap(), "{values:?}");
            let back: SqlKey<KeyRow> = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(back, packed);
            // A savepoint's row key reads back as the packed key, in its one form.
            let from_row: SqlKey<KeyRow> =
                postcard::from_bytes(&postcard::to_allocvec(&row).unwrap()).unwrap();
            assert_eq!(from_row, packed);
        }
    }

    #[test]
    fn a_packed_key_of_columns_is_the_key_of_their_values() {
        let row = Row(vec![Value::Int(3), Value::str("s"), Value::Int(9)]);
        assert_eq!(KeyRow::of(&row, &[]), KeyRow::Empty);
        assert_eq!(KeyRow::of(&row, &[2]), KeyRow::One(Value::Int(9)));
        assert_eq!(
            KeyRow::of(&row, &[2, 0]),
            KeyRow::from_vec(vec![Value::Int(9), Value::Int(3)])
        );
        assert_eq!(
            KeyRow::from_vec(vec![Value::Int(9)]),
            KeyRow::of(&row, &[2])
        );
    }
}
