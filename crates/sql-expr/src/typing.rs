//! Flink's type rules for expressions: the result types of arithmetic (with `DECIMAL`'s precision
//! rules from Flink's `LogicalTypeMerging`), the common type of `CASE` branches, `IN` lists and
//! comparisons (Calcite's `leastRestrictive` as Flink configures it), and which casts exist.

use crate::types::{DataType, LogicalType, MAX_DECIMAL_PRECISION, MAX_LENGTH};

/// The smallest scale a decimal division or an overflowing result keeps (Flink's
/// `MINIMUM_ADJUSTED_SCALE`).
const MIN_ADJUSTED_SCALE: i32 = 6;

/// An arithmetic operator, for [`arithmetic_type`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`.
    Plus,
    /// `-`.
    Minus,
    /// `*`.
    Times,
    /// `/`.
    Divide,
    /// `MOD` / `%`.
    Mod,
}

/// The `DECIMAL(p, s)` an exact numeric type widens to: Flink's `decimalOf` (`BIGINT` is
/// `DECIMAL(19, 0)`, `INT` `DECIMAL(10, 0)`…).
pub fn decimal_of(ty: &LogicalType) -> Option<(i32, i32)> {
    match ty {
        LogicalType::TinyInt => Some((3, 0)),
        LogicalType::SmallInt => Some((5, 0)),
        LogicalType::Int => Some((10, 0)),
        LogicalType::BigInt => Some((19, 0)),
        LogicalType::Decimal { precision, scale } => {
            Some((i32::from(*precision), i32::from(*scale)))
        }
        _ => None,
    }
}

/// Flink's `adjustPrecisionScale`: a precision over 38 gives up fractional digits first, keeping at
/// least `min(scale, 6)` of them.
fn adjust(precision: i32, scale: i32) -> LogicalType {
    let max = i32::from(MAX_DECIMAL_PRECISION);
    let (p, s) = if precision <= max {
        (precision, scale)
    } else {
        let int_digits = precision - scale;
        let min_scale = scale.min(MIN_ADJUSTED_SCALE);
        (max, (max - int_digits).max(min_scale))
    };
    decimal(p, s)
}

fn decimal(p: i32, s: i32) -> LogicalType {
    let p = p.clamp(1, i32::from(MAX_DECIMAL_PRECISION));
    let s = s.clamp(0, p);
    LogicalType::Decimal {
        precision: u8::try_from(p).unwrap_or(MAX_DECIMAL_PRECISION),
        scale: u8::try_from(s).unwrap_or(0),
    }
}

/// The decimal type of `op` on two decimals (Flink's `find…DecimalType`).
pub fn decimal_arithmetic(op: ArithOp, (p1, s1): (i32, i32), (p2, s2): (i32, i32)) -> LogicalType {
    match op {
        ArithOp::Plus | ArithOp::Minus => {
            let s = s1.max(s2);
            adjust((p1 - s1).max(p2 - s2) + s + 1, s)
        }
        ArithOp::Times => adjust(p1 + p2 + 1, s1 + s2),
        ArithOp::Divide => {
            let s = MIN_ADJUSTED_SCALE.max(s1 + p2 + 1);
            adjust(p1 - s1 + s2 + s, s)
        }
        ArithOp::Mod => {
            let s = s1.max(s2);
            adjust((p1 - s1).min(p2 - s2) + s, s)
        }
    }
}

/// The type `ROUND`/`CEIL`/`FLOOR` give a `DECIMAL(p, s)` rounded to `r` digits (Flink's
/// `findRoundDecimalType`).
pub fn round_decimal_type(p: i32, s: i32, r: i32) -> LogicalType {
    if r >= s {
        return decimal(p, s);
    }
    let r = r.max(0);
    decimal((p - s + r + 1).min(i32::from(MAX_DECIMAL_PRECISION)), r)
}

/// The rank of an integer type in Flink's promotion order.
fn int_rank(ty: &LogicalType) -> Option<u8> {
    match ty {
        LogicalType::TinyInt => Some(1),
        LogicalType::SmallInt => Some(2),
        LogicalType::Int => Some(3),
        LogicalType::BigInt => Some(4),
        _ => None,
    }
}

fn is_approx(ty: &LogicalType) -> bool {
    matches!(ty, LogicalType::Float | LogicalType::Double)
}

fn is_exact(ty: &LogicalType) -> bool {
    decimal_of(ty).is_some()
}

fn is_numeric(ty: &LogicalType) -> bool {
    is_exact(ty) || is_approx(ty)
}

/// The wider of two numeric types (both numeric).
fn wider_numeric(a: &LogicalType, b: &LogicalType) -> LogicalType {
    if let (Some(ra), Some(rb)) = (int_rank(a), int_rank(b)) {
        return if ra >= rb { a.clone() } else { b.clone() };
    }
    if is_approx(a) || is_approx(b) {
        // DOUBLE with anything, and DECIMAL with FLOAT, give DOUBLE; FLOAT with integers FLOAT.
        let double = matches!(a, LogicalType::Double | LogicalType::Decimal { .. })
            || matches!(b, LogicalType::Double | LogicalType::Decimal { .. });
        return if double {
            LogicalType::Double
        } else {
            LogicalType::Float
        };
    }
    match (decimal_of(a), decimal_of(b)) {
        (Some((p1, s1)), Some((p2, s2))) => {
            let s = s1.max(s2);
            let int_digits = (p1 - s1).max(p2 - s2);
            decimal(
                (int_digits + s).min(i32::from(MAX_DECIMAL_PRECISION)),
                s.min(i32::from(MAX_DECIMAL_PRECISION)),
            )
        }
        _ => LogicalType::Double,
    }
}

/// The result type of `l op r`, or `None` if the operator does not apply to these types.
pub fn arithmetic_type(op: ArithOp, l: &DataType, r: &DataType) -> Option<DataType> {
    let nullable = l.nullable || r.nullable;
    let (a, b) = (&l.logical, &r.logical);
    let logical = match (a, b) {
        _ if is_numeric(a) && is_numeric(b) => {
            if let (Some(_), Some(_)) = (int_rank(a), int_rank(b)) {
                if op == ArithOp::Mod {
                    // Calcite's MOD: the type of the divisor.
                    b.clone()
                } else {
                    wider_numeric(a, b)
                }
            } else if is_approx(a) || is_approx(b) {
                wider_numeric(a, b)
            } else {
                decimal_arithmetic(op, decimal_of(a)?, decimal_of(b)?)
            }
        }
        (LogicalType::Null, t) | (t, LogicalType::Null) if is_numeric(t) => t.clone(),
        // Datetime ± interval.
        (
            LogicalType::Timestamp { .. } | LogicalType::TimestampLtz { .. } | LogicalType::Date,
            LogicalType::IntervalDayTime | LogicalType::IntervalYearMonth,
        ) if matches!(op, ArithOp::Plus | ArithOp::Minus) => l.without_time_attribute().logical,
        (
            LogicalType::IntervalDayTime | LogicalType::IntervalYearMonth,
            LogicalType::Timestamp { .. } | LogicalType::TimestampLtz { .. } | LogicalType::Date,
        ) if op == ArithOp::Plus => r.without_time_attribute().logical,
        (LogicalType::IntervalDayTime, LogicalType::IntervalDayTime)
        | (LogicalType::IntervalYearMonth, LogicalType::IntervalYearMonth)
            if matches!(op, ArithOp::Plus | ArithOp::Minus) =>
        {
            a.clone()
        }
        (LogicalType::IntervalDayTime | LogicalType::IntervalYearMonth, t)
            if int_rank(t).is_some() && matches!(op, ArithOp::Times | ArithOp::Divide) =>
        {
            a.clone()
        }
        (t, LogicalType::IntervalDayTime | LogicalType::IntervalYearMonth)
            if int_rank(t).is_some() && op == ArithOp::Times =>
        {
            b.clone()
        }
        _ => return None,
    };
    Some(DataType { logical, nullable })
}

fn string_length(ty: &LogicalType) -> Option<(u32, bool)> {
    match ty {
        LogicalType::Char { length } => Some((*length, true)),
        LogicalType::Varchar { length } => Some((*length, false)),
        _ => None,
    }
}

/// The type of `a || b`: lengths add; `CHAR` if both are `CHAR`.
pub fn concat_type(l: &DataType, r: &DataType) -> Option<DataType> {
    let (la, ca) = string_length(&l.logical)?;
    let (lb, cb) = string_length(&r.logical)?;
    let length = la.saturating_add(lb).min(MAX_LENGTH);
    let logical = if ca && cb {
        LogicalType::Char { length }
    } else {
        LogicalType::Varchar { length }
    };
    Some(DataType {
        logical,
        nullable: l.nullable || r.nullable,
    })
}

/// The common type of two types (Calcite's `leastRestrictive` with Flink's type system: `CHAR`s of
/// different lengths meet in `VARCHAR`), or `None` if they have none.
pub fn common_type(a: &DataType, b: &DataType) -> Option<DataType> {
    let nullable = a.nullable || b.nullable;
    let (x, y) = (&a.logical, &b.logical);
    let logical = match (x, y) {
        (LogicalType::Null, t) | (t, LogicalType::Null) => {
            return Some(DataType {
                logical: t.clone(),
                nullable: true,
            })
        }
        _ if x == y => x.clone(),
        _ if is_numeric(x) && is_numeric(y) => wider_numeric(x, y),
        (LogicalType::Char { length: l1 }, LogicalType::Char { length: l2 }) => {
            LogicalType::Varchar {
                length: *l1.max(l2),
            }
        }
        _ if string_length(x).is_some() && string_length(y).is_some() => {
            let (l1, _) = string_length(x)?;
            let (l2, _) = string_length(y)?;
            LogicalType::Varchar { length: l1.max(l2) }
        }
        (
            LogicalType::Binary { length: l1 } | LogicalType::Varbinary { length: l1 },
            LogicalType::Binary { length: l2 } | LogicalType::Varbinary { length: l2 },
        ) => LogicalType::Varbinary {
            length: *l1.max(l2),
        },
        (
            LogicalType::Timestamp { precision: p1, .. },
            LogicalType::Timestamp { precision: p2, .. },
        ) => LogicalType::Timestamp {
            precision: *p1.max(p2),
            kind: Default::default(),
        },
        (
            LogicalType::TimestampLtz { precision: p1, .. },
            LogicalType::TimestampLtz { precision: p2, .. },
        ) => LogicalType::TimestampLtz {
            precision: *p1.max(p2),
            kind: Default::default(),
        },
        (LogicalType::Time { precision: p1 }, LogicalType::Time { precision: p2 }) => {
            LogicalType::Time {
                precision: *p1.max(p2),
            }
        }
        (LogicalType::Date, LogicalType::Timestamp { precision, .. })
        | (LogicalType::Timestamp { precision, .. }, LogicalType::Date) => LogicalType::Timestamp {
            precision: *precision,
            kind: Default::default(),
        },
        (LogicalType::Array(e1), LogicalType::Array(e2)) => {
            LogicalType::Array(Box::new(common_type(e1, e2)?))
        }
        _ => return None,
    };
    Some(DataType { logical, nullable })
}

/// The common type of several types.
pub fn common_type_of<'a>(types: impl IntoIterator<Item = &'a DataType>) -> Option<DataType> {
    let mut it = types.into_iter();
    let first = it.next()?.clone();
    it.try_fold(first, |acc, t| common_type(&acc, t))
}

/// Whether values of these two types can be compared with `=`, `<`… (after implicit widening).
pub fn comparable(a: &DataType, b: &DataType) -> bool {
    let (x, y) = (&a.logical, &b.logical);
    matches!(x, LogicalType::Null)
        || matches!(y, LogicalType::Null)
        || (is_numeric(x) && is_numeric(y))
        || common_type(a, b).is_some()
}

/// The family of a type, for the cast matrix.
fn family(ty: &LogicalType) -> u8 {
    match ty {
        LogicalType::Boolean => 0,
        t if is_numeric(t) => 1,
        LogicalType::Char { .. } | LogicalType::Varchar { .. } => 2,
        LogicalType::Binary { .. } | LogicalType::Varbinary { .. } => 3,
        LogicalType::Date => 4,
        LogicalType::Time { .. } => 5,
        LogicalType::Timestamp { .. } => 6,
        LogicalType::TimestampLtz { .. } => 7,
        LogicalType::IntervalDayTime | LogicalType::IntervalYearMonth => 8,
        LogicalType::Null => 9,
        _ => 10,
    }
}

/// Whether `CAST(from AS to)` is allowed (Flink's `LogicalTypeCasts.supportsExplicitCast`, for the
/// types Sluice has).
pub fn can_cast(from: &LogicalType, to: &LogicalType) -> bool {
    let (f, t) = (family(from), family(to));
    if f == 9 || from == to {
        return true;
    }
    match (f, t) {
        (_, 2) => {
            f != 10
                || matches!(
                    from,
                    LogicalType::Row(_) | LogicalType::Array(_) | LogicalType::Map(..)
                )
        }
        (2, _) => t != 10 && t != 8,
        (0, 1) | (1, 0) | (1, 1) => true,
        (1, 7) => true,
        (1, 8) => int_rank(from).is_some(),
        (8, 1) => int_rank(to).is_some(),
        (3, 3) => true,
        (4, 6) | (4, 7) | (6, 4) | (7, 4) | (6, 5) | (7, 5) | (6, 6) | (7, 7) | (6, 7) | (7, 6) => {
            true
        }
        (5, 5) | (5, 6) => true,
        (8, 8) => from == to,
        (7, 1) | (6, 1) => int_rank(to).is_some() && f == 7,
        (10, 10) => match (from, to) {
            (LogicalType::Array(a), LogicalType::Array(b)) => can_cast(&a.logical, &b.logical),
            (LogicalType::Row(a), LogicalType::Row(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| can_cast(&x.ty.logical, &y.ty.logical))
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_results_follow_flink() {
        // 0.908 is DECIMAL(4, 3) (Calcite counts the leading zero); BIGINT is DECIMAL(19, 0).
        let lit = DataType::decimal(4, 3).not_null();
        let price = DataType::bigint();
        let t = arithmetic_type(ArithOp::Times, &lit, &price).unwrap();
        assert_eq!(t.to_string(), "DECIMAL(24, 3)");
        let d = DataType::decimal(10, 2).not_null();
        let int = DataType::int().not_null();
        let ty = |op| arithmetic_type(op, &d, &int).unwrap().to_string();
        assert_eq!(ty(ArithOp::Times), "DECIMAL(21, 2) NOT NULL");
        assert_eq!(ty(ArithOp::Divide), "DECIMAL(21, 13) NOT NULL");
        assert_eq!(ty(ArithOp::Plus), "DECIMAL(13, 2) NOT NULL");
        assert_eq!(ty(ArithOp::Mod), "DECIMAL(10, 2) NOT NULL");
        assert_eq!(
            arithmetic_type(ArithOp::Times, &d, &d).unwrap().to_string(),
            "DECIMAL(21, 4) NOT NULL"
        );
    }

    #[test]
    fn integers_promote_and_mod_takes_the_divisor_type() {
        let t = arithmetic_type(ArithOp::Mod, &DataType::bigint(), &DataType::int()).unwrap();
        assert_eq!(t.to_string(), "INTEGER");
        let t = arithmetic_type(ArithOp::Plus, &DataType::int(), &DataType::bigint()).unwrap();
        assert_eq!(t.to_string(), "BIGINT");
        let t = arithmetic_type(
            ArithOp::Times,
            &DataType::decimal(10, 2),
            &DataType::double(),
        );
        assert_eq!(t.unwrap().to_string(), "DOUBLE");
    }

    #[test]
    fn common_types_meet_like_flink() {
        let c = |n| DataType::new(LogicalType::Char { length: n }).not_null();
        assert_eq!(
            common_type(&c(1), &c(2)).unwrap().to_string(),
            "VARCHAR(2) NOT NULL"
        );
        let t = common_type(
            &DataType::int().not_null(),
            &DataType::decimal(2, 1).not_null(),
        );
        assert_eq!(t.unwrap().to_string(), "DECIMAL(11, 1) NOT NULL");
        assert!(common_type(&DataType::int(), &DataType::string()).is_none());
    }
}
