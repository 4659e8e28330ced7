//! Typed column values: what a [`RowMapping`](crate::RowMapping) produces per record, and how it
//! is written to PostgreSQL (binary `COPY` and statement parameters share one `ToSql` impl).

use std::error::Error;
use std::time::SystemTime;

use bytes::BytesMut;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};

/// The PostgreSQL column types a mapping can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// `integer` (`int4`) from `i32`.
    Int4,
    /// `bigint` (`int8`) from `i64`.
    Int8,
    /// `double precision` (`float8`) from `f64`.
    Float8,
    /// `text` (also `varchar`) from `String`.
    Text,
    /// `boolean` from `bool`.
    Bool,
    /// `timestamp` or `timestamptz` from `SystemTime` (microseconds, UTC).
    Timestamp,
}

impl ColumnType {
    /// The PostgreSQL type names (`format_type`) this column type can be written to.
    pub fn accepts(self, pg_type: &str) -> bool {
        match self {
            ColumnType::Int4 => pg_type == "integer",
            ColumnType::Int8 => pg_type == "bigint",
            ColumnType::Float8 => pg_type == "double precision",
            ColumnType::Text => pg_type == "text" || pg_type.starts_with("character varying"),
            ColumnType::Bool => pg_type == "boolean",
            ColumnType::Timestamp => pg_type.starts_with("timestamp"),
        }
    }

    /// The SQL name used in casts (`UNNEST($1::int8[])`) and error messages.
    pub fn sql_name(self) -> &'static str {
        match self {
            ColumnType::Int4 => "int4",
            ColumnType::Int8 => "int8",
            ColumnType::Float8 => "float8",
            ColumnType::Text => "text",
            ColumnType::Bool => "bool",
            ColumnType::Timestamp => "timestamptz",
        }
    }
}

/// One column value of a row; `Null` for SQL NULL.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// An `integer`.
    I32(i32),
    /// A `bigint`.
    I64(i64),
    /// A `double precision`.
    F64(f64),
    /// A `text`.
    Text(String),
    /// A `boolean`.
    Bool(bool),
    /// A point in time, written to a `timestamp` or `timestamptz` column.
    Timestamp(SystemTime),
}

impl Value {
    /// Whether this value may be written to a column of `ty` (NULL fits every type).
    pub fn fits(&self, ty: ColumnType) -> bool {
        matches!(
            (self, ty),
            (Value::Null, _)
                | (Value::I32(_), ColumnType::Int4)
                | (Value::I64(_), ColumnType::Int8)
                | (Value::F64(_), ColumnType::Float8)
                | (Value::Text(_), ColumnType::Text)
                | (Value::Bool(_), ColumnType::Bool)
                | (Value::Timestamp(_), ColumnType::Timestamp)
        )
    }

    /// Appends an unambiguous encoding of the value (for keys: deduplicating a batch).
    pub(crate) fn encode_key(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.push(0),
            Value::I32(v) => {
                out.push(1);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Value::I64(v) => {
                out.push(2);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Value::F64(v) => {
                out.push(3);
                out.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            Value::Text(s) => {
                out.push(4);
                out.extend_from_slice(&(s.len() as u64).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            Value::Bool(b) => out.extend_from_slice(&[5, *b as u8]),
            Value::Timestamp(t) => {
                out.push(6);
                let micros = match t.duration_since(SystemTime::UNIX_EPOCH) {
                    Ok(d) => d.as_micros() as i128,
                    Err(e) => -(e.duration().as_micros() as i128),
                };
                out.extend_from_slice(&micros.to_le_bytes());
            }
        }
    }
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::I32(v) => v.to_sql(ty, out),
            Value::I64(v) => v.to_sql(ty, out),
            Value::F64(v) => v.to_sql(ty, out),
            Value::Text(v) => v.to_sql(ty, out),
            Value::Bool(v) => v.to_sql(ty, out),
            Value::Timestamp(v) => v.to_sql(ty, out),
        }
    }

    // The table's types were checked against the mapping before the first row.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A Rust type that maps to one column: its [`ColumnType`], whether it can be NULL, and its
/// [`Value`]. Implemented for `i32`, `i64`, `f64`, `String`, `&str`, `bool`, `SystemTime` and
/// `Option` of each (nullable).
pub trait PgValue {
    /// The column type the values are written as.
    const TYPE: ColumnType;
    /// Whether the type can be NULL (`Option`).
    const NULLABLE: bool = false;
    /// The value to write.
    fn into_value(self) -> Value;
}

macro_rules! pg_value {
    ($t:ty, $ty:ident, $v:ident) => {
        impl PgValue for $t {
            const TYPE: ColumnType = ColumnType::$ty;
            fn into_value(self) -> Value {
                Value::$v(self.into())
            }
        }
    };
}

pg_value!(i32, Int4, I32);
pg_value!(i64, Int8, I64);
pg_value!(f64, Float8, F64);
pg_value!(String, Text, Text);
pg_value!(&str, Text, Text);
pg_value!(bool, Bool, Bool);
pg_value!(SystemTime, Timestamp, Timestamp);

impl<V: PgValue> PgValue for Option<V> {
    const TYPE: ColumnType = V::TYPE;
    const NULLABLE: bool = true;
    fn into_value(self) -> Value {
        self.map_or(Value::Null, V::into_value)
    }
}
