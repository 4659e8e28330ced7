//! Flink's logical SQL types ([`DataType`]) as Sluice plans with them.
//!
//! A [`DataType`] is a [`LogicalType`] plus nullability, as in Flink (`BIGINT` admits NULL,
//! `BIGINT NOT NULL` does not). Time attributes are part of the timestamp types, as in Flink's
//! `TimestampType` kind: a rowtime column prints as `TIMESTAMP(3) *ROWTIME*`, the result of
//! `PROCTIME()` as `TIMESTAMP_LTZ(3) *PROCTIME*`. [`DataType`]'s `Display` writes the type the way
//! Flink's planner prints it in `EXPLAIN` and in error messages.

use std::fmt;

use serde::{Deserialize, Serialize};

/// `STRING`'s length: Flink's `VARCHAR(2147483647)`.
pub const MAX_LENGTH: u32 = i32::MAX as u32;

/// The largest precision of `DECIMAL` (Flink's `DecimalType.MAX_PRECISION`).
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// What a timestamp column is to the planner (Flink's `TimestampKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum TimestampKind {
    /// A plain value.
    #[default]
    Regular,
    /// The event-time attribute a `WATERMARK FOR` declares.
    Rowtime,
    /// The processing-time attribute `PROCTIME()` declares.
    Proctime,
}

/// One field of a `ROW` type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RowField {
    /// The field's name, as written (case kept).
    pub name: String,
    /// The field's type.
    pub ty: DataType,
}

/// A type without its nullability (Flink's `LogicalTypeRoot` with its parameters).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LogicalType {
    /// `BOOLEAN`.
    Boolean,
    /// `TINYINT`, 8-bit two's complement.
    TinyInt,
    /// `SMALLINT`, 16-bit.
    SmallInt,
    /// `INT` / `INTEGER`, 32-bit.
    Int,
    /// `BIGINT`, 64-bit.
    BigInt,
    /// `FLOAT`, IEEE single precision.
    Float,
    /// `DOUBLE`, IEEE double precision.
    Double,
    /// `DECIMAL(p, s)`: `p` digits in all, `s` of them after the point.
    Decimal {
        /// Digits in all, 1..=38.
        precision: u8,
        /// Digits after the point, 0..=precision.
        scale: u8,
    },
    /// `CHAR(n)`.
    Char {
        /// Its length.
        length: u32,
    },
    /// `VARCHAR(n)`; `STRING` is `VARCHAR(2147483647)`.
    Varchar {
        /// Its largest length.
        length: u32,
    },
    /// `BINARY(n)`.
    Binary {
        /// Its length.
        length: u32,
    },
    /// `VARBINARY(n)`; `BYTES` is `VARBINARY(2147483647)`.
    Varbinary {
        /// Its largest length.
        length: u32,
    },
    /// `DATE`.
    Date,
    /// `TIME(p)`.
    Time {
        /// Fractional-second digits, 0..=9.
        precision: u8,
    },
    /// `TIMESTAMP(p)` (without time zone).
    Timestamp {
        /// Fractional-second digits, 0..=9.
        precision: u8,
        /// Regular, rowtime or proctime.
        kind: TimestampKind,
    },
    /// `TIMESTAMP_LTZ(p)` (an instant, shown in the session time zone).
    TimestampLtz {
        /// Fractional-second digits, 0..=9.
        precision: u8,
        /// Regular, rowtime or proctime.
        kind: TimestampKind,
    },
    /// `INTERVAL DAY TO SECOND` family: a duration in milliseconds.
    IntervalDayTime,
    /// `INTERVAL YEAR TO MONTH` family: a number of months.
    IntervalYearMonth,
    /// `ROW<name type, …>`.
    Row(Vec<RowField>),
    /// `ARRAY<t>`.
    Array(Box<DataType>),
    /// `MAP<k, v>`.
    Map(Box<DataType>, Box<DataType>),
    /// The type of an untyped `NULL` literal.
    Null,
}

/// A SQL type: a [`LogicalType`] and whether it admits NULL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DataType {
    /// What the type is.
    pub logical: LogicalType,
    /// Whether NULL is a value of it.
    pub nullable: bool,
}

impl DataType {
    /// A nullable type.
    pub fn new(logical: LogicalType) -> DataType {
        DataType {
            logical,
            nullable: true,
        }
    }

    /// The same type, `NOT NULL`.
    pub fn not_null(mut self) -> DataType {
        self.nullable = false;
        self
    }

    /// The same type with the given nullability.
    pub fn with_nullable(mut self, nullable: bool) -> DataType {
        self.nullable = nullable;
        self
    }

    /// `STRING` (nullable).
    pub fn string() -> DataType {
        DataType::new(LogicalType::Varchar { length: MAX_LENGTH })
    }

    /// `BIGINT` (nullable).
    pub fn bigint() -> DataType {
        DataType::new(LogicalType::BigInt)
    }

    /// `INT` (nullable).
    pub fn int() -> DataType {
        DataType::new(LogicalType::Int)
    }

    /// `BOOLEAN` (nullable).
    pub fn boolean() -> DataType {
        DataType::new(LogicalType::Boolean)
    }

    /// `DOUBLE` (nullable).
    pub fn double() -> DataType {
        DataType::new(LogicalType::Double)
    }

    /// `TIMESTAMP(p)` (nullable, regular).
    pub fn timestamp(precision: u8) -> DataType {
        DataType::new(LogicalType::Timestamp {
            precision,
            kind: TimestampKind::Regular,
        })
    }

    /// `DECIMAL(p, s)` (nullable).
    pub fn decimal(precision: u8, scale: u8) -> DataType {
        DataType::new(LogicalType::Decimal { precision, scale })
    }

    /// The time attribute this type carries, if any.
    pub fn time_attribute(&self) -> TimestampKind {
        match self.logical {
            LogicalType::Timestamp { kind, .. } | LogicalType::TimestampLtz { kind, .. } => kind,
            _ => TimestampKind::Regular,
        }
    }

    /// The same type as a plain value: a time attribute becomes a regular timestamp (what
    /// Flink does to a time attribute that an expression computes with).
    pub fn without_time_attribute(&self) -> DataType {
        let logical = match &self.logical {
            LogicalType::Timestamp { precision, .. } => LogicalType::Timestamp {
                precision: *precision,
                kind: TimestampKind::Regular,
            },
            LogicalType::TimestampLtz { precision, .. } => LogicalType::TimestampLtz {
                precision: *precision,
                kind: TimestampKind::Regular,
            },
            other => other.clone(),
        };
        DataType {
            logical,
            nullable: self.nullable,
        }
    }

    /// Whether values of this type are exact or approximate numbers.
    pub fn is_numeric(&self) -> bool {
        matches!(
            self.logical,
            LogicalType::TinyInt
                | LogicalType::SmallInt
                | LogicalType::Int
                | LogicalType::BigInt
                | LogicalType::Float
                | LogicalType::Double
                | LogicalType::Decimal { .. }
        )
    }

    /// Whether values of this type are integers.
    pub fn is_integer(&self) -> bool {
        matches!(
            self.logical,
            LogicalType::TinyInt | LogicalType::SmallInt | LogicalType::Int | LogicalType::BigInt
        )
    }

    /// Whether values of this type are character strings.
    pub fn is_string(&self) -> bool {
        matches!(
            self.logical,
            LogicalType::Char { .. } | LogicalType::Varchar { .. }
        )
    }
}

impl fmt::Display for LogicalType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind_suffix = |kind: &TimestampKind| match kind {
            TimestampKind::Regular => "",
            TimestampKind::Rowtime => " *ROWTIME*",
            TimestampKind::Proctime => " *PROCTIME*",
        };
        match self {
            LogicalType::Boolean => f.write_str("BOOLEAN"),
            LogicalType::TinyInt => f.write_str("TINYINT"),
            LogicalType::SmallInt => f.write_str("SMALLINT"),
            LogicalType::Int => f.write_str("INTEGER"),
            LogicalType::BigInt => f.write_str("BIGINT"),
            LogicalType::Float => f.write_str("FLOAT"),
            LogicalType::Double => f.write_str("DOUBLE"),
            LogicalType::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})"),
            LogicalType::Char { length } => write!(f, "CHAR({length})"),
            LogicalType::Varchar { length } => write!(f, "VARCHAR({length})"),
            LogicalType::Binary { length } => write!(f, "BINARY({length})"),
            LogicalType::Varbinary { length } => write!(f, "VARBINARY({length})"),
            LogicalType::Date => f.write_str("DATE"),
            LogicalType::Time { precision } => write!(f, "TIME({precision})"),
            LogicalType::Timestamp { precision, kind } => {
                write!(f, "TIMESTAMP({precision}){}", kind_suffix(kind))
            }
            LogicalType::TimestampLtz { precision, kind } => {
                write!(f, "TIMESTAMP_LTZ({precision}){}", kind_suffix(kind))
            }
            LogicalType::IntervalDayTime => f.write_str("INTERVAL SECOND(3)"),
            LogicalType::IntervalYearMonth => f.write_str("INTERVAL MONTH"),
            LogicalType::Row(fields) => {
                f.write_str("ROW<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{}` {}", field.name, field.ty)?;
                }
                f.write_str(">")
            }
            LogicalType::Array(t) => write!(f, "ARRAY<{t}>"),
            LogicalType::Map(k, v) => write!(f, "MAP<{k}, {v}>"),
            LogicalType::Null => f.write_str("NULL"),
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Flink writes NOT NULL before a time attribute's marker: `TIMESTAMP(3) NOT NULL *ROWTIME*`
        // is not a form it prints; time attributes print without NOT NULL.
        write!(f, "{}", self.logical)?;
        if !self.nullable && !matches!(self.logical, LogicalType::Null) {
            f.write_str(" NOT NULL")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_as_flink_prints_them() {
        assert_eq!(DataType::bigint().to_string(), "BIGINT");
        assert_eq!(DataType::bigint().not_null().to_string(), "BIGINT NOT NULL");
        assert_eq!(DataType::string().to_string(), "VARCHAR(2147483647)");
        assert_eq!(DataType::decimal(23, 3).to_string(), "DECIMAL(23, 3)");
        let rowtime = DataType::new(LogicalType::Timestamp {
            precision: 3,
            kind: TimestampKind::Rowtime,
        });
        assert_eq!(rowtime.to_string(), "TIMESTAMP(3) *ROWTIME*");
        assert_eq!(rowtime.without_time_attribute().to_string(), "TIMESTAMP(3)");
        let row = DataType::new(LogicalType::Row(vec![RowField {
            name: "id".into(),
            ty: DataType::bigint(),
        }]));
        assert_eq!(row.to_string(), "ROW<`id` BIGINT>");
    }
}
