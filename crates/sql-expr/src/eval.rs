//! Evaluation of a bound [`Expr`] over a [`Row`]: a direct walk of the tree (function calls are
//! pre-resolved, regexes and formats pre-compiled at bind time; column reads clone an `Arc` at
//! most; comparisons do not allocate).
//!
//! Operands that are already values — a column, a literal, a field of either — are borrowed
//! where only read ([`Expr::operand`]): `bid.price > 10` compares in place, and `bid.price`
//! clones the field alone, not the `ROW`'s `Arc` first. Calls of up to three arguments pass
//! them on the stack. Rows of dynamic values are what SQL pays over Rust structs; these keep
//! the walk from adding clones, reference counts and allocations of its own.
//!
//! Semantics: NULL propagates through operators and strict functions; `AND`/`OR`/`NOT` use
//! three-valued logic; integer arithmetic wraps at the result type's width as Java does; any
//! division by zero is an error (as in Flink); decimal results that overflow their precision are NULL (Flink).

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::cast::{self, fit_decimal, pow10, to_decimal, to_f64, wrap_int};
use crate::datetime;
use crate::error::{Result, SqlError};
use crate::expr::{BinaryOp, Expr, IsTest};
use crate::types::{DataType, LogicalType};
use crate::value::{Decimal, Row, SqlStr, Timestamp, Value};

/// SQL comparison of two non-NULL values (numbers across representations, strings, times…);
/// `None` when either is NULL or they are not comparable.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    use Value::*;
    match (a, b) {
        (Null, _) | (_, Null) => None,
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (Str(x), Str(y)) => Some(x.as_ref().cmp(y.as_ref())),
        (Decimal(_), Decimal(_)) | (Int(_), Decimal(_)) | (Decimal(_), Int(_)) => {
            let (x, y) = (to_decimal(a)?, to_decimal(b)?);
            Some(Value::Decimal(x).cmp(&Value::Decimal(y)))
        }
        (
            Int(_) | Decimal(_) | Float(_) | Double(_),
            Int(_) | Decimal(_) | Float(_) | Double(_),
        ) => to_f64(a)?.partial_cmp(&to_f64(b)?),
        (Timestamp(x), Date(d)) => Some(x.millis.cmp(&(i64::from(*d) * datetime::MILLIS_PER_DAY))),
        (Date(d), Timestamp(y)) => Some((i64::from(*d) * datetime::MILLIS_PER_DAY).cmp(&y.millis)),
        _ if std::mem::discriminant(a) == std::mem::discriminant(b) => Some(a.cmp(b)),
        _ => None,
    }
}

/// Converts a computed value to the representation of its declared type (an `Int` where a
/// `DECIMAL` or `DOUBLE` is declared, e.g. from `COALESCE(int_col, 2.5)` or a `CASE`).
pub fn conform(v: Value, ty: &DataType) -> Result<Value> {
    let ok = match (&v, &ty.logical) {
        (Value::Null, _) => true,
        (Value::Int(_), l) => {
            !ty.is_numeric()
                || matches!(
                    l,
                    LogicalType::TinyInt
                        | LogicalType::SmallInt
                        | LogicalType::Int
                        | LogicalType::BigInt
                )
        }
        (Value::Decimal(d), LogicalType::Decimal { scale, .. }) => d.scale == *scale,
        (Value::Double(_), LogicalType::Double) | (Value::Float(_), LogicalType::Float) => true,
        (Value::Decimal(_) | Value::Double(_) | Value::Float(_), _) => !ty.is_numeric(),
        (Value::Date(_), LogicalType::Timestamp { .. }) => false,
        _ => true,
    };
    if ok {
        return Ok(v);
    }
    let from = match &v {
        Value::Int(_) => DataType::bigint(),
        Value::Decimal(d) => DataType::decimal(38, d.scale),
        Value::Double(_) => DataType::double(),
        Value::Float(_) => DataType::new(LogicalType::Float),
        Value::Date(_) => DataType::new(LogicalType::Date),
        _ => return Ok(v),
    };
    cast::cast(&v, &from, ty).map_err(SqlError::eval)
}

impl Expr {
    /// The value of a column, a literal or a field of either, borrowed from `row` or the
    /// expression (`None` for anything to compute). A field of a NULL or non-`ROW` value is NULL,
    /// as [`Expr::eval`] has it.
    #[inline]
    pub fn operand<'a>(&'a self, row: &'a Row) -> Option<&'a Value> {
        match self {
            Expr::Column { index, .. } => Some(row.get(*index)),
            Expr::Literal { value, .. } => Some(value),
            Expr::Field { expr, index, .. } => match expr.operand(row)? {
                Value::Row(fields) => Some(fields.get(*index).unwrap_or(&Value::Null)),
                _ => Some(&Value::Null),
            },
            _ => None,
        }
    }

    /// [`Expr::operand`] when there is one, else the computed value.
    #[inline]
    fn eval_cow<'a>(&'a self, row: &'a Row) -> Result<Cow<'a, Value>> {
        match self.operand(row) {
            Some(v) => Ok(Cow::Borrowed(v)),
            None => self.eval(row).map(Cow::Owned),
        }
    }

    /// Evaluates the expression over a row.
    pub fn eval(&self, row: &Row) -> Result<Value> {
        match self {
            Expr::Column { index, .. } => Ok(row.get(*index).clone()),
            Expr::Literal { value, .. } => Ok(value.clone()),
            Expr::Call {
                func,
                args,
                prepared,
                ty,
            } => {
                let p = prepared.as_deref();
                // The common arities without a vector per call.
                let v = match args.as_slice() {
                    [] => func.call(&[], p)?,
                    [a] => func.call(&[a.eval(row)?], p)?,
                    [a, b] => func.call(&[a.eval(row)?, b.eval(row)?], p)?,
                    [a, b, c] => func.call(&[a.eval(row)?, b.eval(row)?, c.eval(row)?], p)?,
                    _ => {
                        let mut values = Vec::with_capacity(args.len());
                        for a in args {
                            values.push(a.eval(row)?);
                        }
                        func.call(&values, p)?
                    }
                };
                conform(v, ty)
            }
            Expr::Cast { expr, ty, safe } => {
                let v = expr.eval(row)?;
                match cast::cast(&v, &expr.data_type(), ty) {
                    Ok(v) => Ok(v),
                    Err(_) if *safe => Ok(Value::Null),
                    Err(m) => Err(SqlError::eval(m)),
                }
            }
            Expr::Case {
                branches,
                otherwise,
                ty,
            } => {
                for (cond, value) in branches {
                    if cond.eval_predicate(row)? {
                        return conform(value.eval(row)?, ty);
                    }
                }
                conform(otherwise.eval(row)?, ty)
            }
            Expr::InList {
                expr,
                list,
                negated,
                ..
            } => {
                let v = expr.eval_cow(row)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for item in list {
                    let c = item.eval_cow(row)?;
                    match compare(&v, &c) {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!negated)),
                        None if c.is_null() => saw_null = true,
                        _ => {}
                    }
                }
                Ok(if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                })
            }
            Expr::Like {
                expr,
                pattern,
                compiled,
                escape,
                negated,
                similar,
                ..
            } => {
                let v = expr.eval_cow(row)?;
                let text = match v.as_ref() {
                    Value::Str(s) => s,
                    _ => return Ok(Value::Null),
                };
                let matched = match compiled {
                    Some(p) => p.regex.is_match(text),
                    None => {
                        let p = pattern.eval(row)?;
                        let Some(p) = p.as_str() else {
                            return Ok(Value::Null);
                        };
                        let re = if *similar {
                            similar_to_regex(p, *escape)
                        } else {
                            like_to_regex(p, *escape)
                        };
                        re.map_err(SqlError::eval)?.is_match(text)
                    }
                };
                Ok(Value::Bool(matched != *negated))
            }
            Expr::Is { expr, test } => {
                let v = expr.eval_cow(row)?;
                let v = v.as_ref();
                Ok(Value::Bool(match test {
                    IsTest::Null => v.is_null(),
                    IsTest::NotNull => !v.is_null(),
                    IsTest::True => matches!(v, Value::Bool(true)),
                    IsTest::NotTrue => !matches!(v, Value::Bool(true)),
                    IsTest::False => matches!(v, Value::Bool(false)),
                    IsTest::NotFalse => !matches!(v, Value::Bool(false)),
                }))
            }
            Expr::Field { expr, index, .. } => match expr.operand(row) {
                // The field alone is cloned, not the row's `Arc` first.
                Some(Value::Row(fields)) => Ok(fields.get(*index).cloned().unwrap_or(Value::Null)),
                Some(_) => Ok(Value::Null),
                None => match expr.eval(row)? {
                    Value::Row(fields) => Ok(fields.get(*index).cloned().unwrap_or(Value::Null)),
                    _ => Ok(Value::Null),
                },
            },
            Expr::Element { expr, key, .. } => {
                let container = expr.eval(row)?;
                let k = key.eval(row)?;
                Ok(match (&container, &k) {
                    (Value::Array(items), Value::Int(i)) if *i >= 1 => {
                        items.get((*i - 1) as usize).cloned().unwrap_or(Value::Null)
                    }
                    (Value::Map(entries), k) if !k.is_null() => entries
                        .iter()
                        .find(|(ek, _)| compare(ek, k) == Some(Ordering::Equal))
                        .map(|(_, v)| v.clone())
                        .unwrap_or(Value::Null),
                    _ => Value::Null,
                })
            }
            Expr::And(args) => {
                let mut saw_null = false;
                for a in args {
                    match a.eval(row)? {
                        Value::Bool(false) => return Ok(Value::Bool(false)),
                        Value::Bool(true) => {}
                        _ => saw_null = true,
                    }
                }
                Ok(if saw_null {
                    Value::Null
                } else {
                    Value::Bool(true)
                })
            }
            Expr::Or(args) => {
                let mut saw_null = false;
                for a in args {
                    match a.eval(row)? {
                        Value::Bool(true) => return Ok(Value::Bool(true)),
                        Value::Bool(false) => {}
                        _ => saw_null = true,
                    }
                }
                Ok(if saw_null {
                    Value::Null
                } else {
                    Value::Bool(false)
                })
            }
            Expr::Not(e) => Ok(match e.eval(row)? {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::Null,
            }),
            Expr::Binary {
                op,
                left,
                right,
                ty,
            } => {
                let l = left.eval_cow(row)?;
                let r = right.eval_cow(row)?;
                binary(*op, &l, &r, ty)
            }
            Expr::Negate { expr, ty } => Ok(match expr.eval(row)? {
                Value::Int(i) => Value::Int(wrap_int(i.wrapping_neg(), &ty.logical)),
                Value::Decimal(d) => Value::Decimal(Decimal {
                    unscaled: -d.unscaled,
                    scale: d.scale,
                }),
                Value::Double(x) => Value::Double(-x),
                Value::Float(x) => Value::Float(-x),
                Value::IntervalMillis(x) => Value::IntervalMillis(-x),
                Value::IntervalMonths(x) => Value::IntervalMonths(-x),
                other => other,
            }),
        }
    }

    /// Evaluates a condition: true only for TRUE (NULL and FALSE reject, as in `WHERE`).
    pub fn eval_predicate(&self, row: &Row) -> Result<bool> {
        Ok(matches!(self.eval_cow(row)?.as_ref(), Value::Bool(true)))
    }
}

/// `LIKE` pattern → anchored regex (`%` any run, `_` one character, `escape` quoting).
pub fn like_to_regex(
    pattern: &str,
    escape: Option<char>,
) -> std::result::Result<regex::Regex, String> {
    let mut re = String::from("(?s)^");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            match chars.next() {
                Some(n) => re.push_str(&regex::escape(&n.to_string())),
                None => {
                    return Err(format!(
                        "invalid escape sequence in LIKE pattern '{pattern}'"
                    ))
                }
            }
        } else if c == '%' {
            re.push_str(".*");
        } else if c == '_' {
            re.push('.');
        } else {
            re.push_str(&regex::escape(&c.to_string()));
        }
    }
    re.push('$');
    regex::Regex::new(&re).map_err(|e| e.to_string())
}

/// `SIMILAR TO` pattern → anchored regex (SQL's `%` and `_` plus regex alternation, groups,
/// classes and quantifiers).
pub fn similar_to_regex(
    pattern: &str,
    escape: Option<char>,
) -> std::result::Result<regex::Regex, String> {
    let mut re = String::from("(?s)^(?:");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            match chars.next() {
                Some(n) => re.push_str(&regex::escape(&n.to_string())),
                None => {
                    return Err(format!(
                        "invalid escape sequence in SIMILAR TO pattern '{pattern}'"
                    ))
                }
            }
            continue;
        }
        match c {
            '%' => re.push_str(".*"),
            '_' => re.push('.'),
            '|' | '(' | ')' | '[' | ']' | '*' | '+' | '?' | '{' | '}' | '^' | '-' => re.push(c),
            _ => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push_str(")$");
    regex::Regex::new(&re).map_err(|e| e.to_string())
}

pub(crate) fn division_by_zero() -> SqlError {
    SqlError::eval("Division by zero")
}

fn decimal_result(d: Option<Decimal>, ty: &DataType) -> Value {
    match (d, &ty.logical) {
        (Some(d), LogicalType::Decimal { precision, scale }) => fit_decimal(d, *precision, *scale)
            .map(Value::Decimal)
            .unwrap_or(Value::Null),
        (Some(d), _) => Value::Decimal(d),
        (None, _) => Value::Null,
    }
}

/// `a / b` on decimals, to `scale` digits rounded half up; `None` on overflow.
fn decimal_divide(a: Decimal, b: Decimal, scale: u8) -> Option<Decimal> {
    // a/b = (ua / 10^sa) / (ub / 10^sb); scaled by 10^scale: ua * 10^(scale - sa + sb) / ub,
    // computed with one extra digit for the rounding.
    let shift = i32::from(scale) - i32::from(a.scale) + i32::from(b.scale) + 1;
    let (num, den) = if shift >= 0 {
        (a.unscaled.checked_mul(pow10(shift as u32))?, b.unscaled)
    } else {
        (
            a.unscaled,
            b.unscaled.checked_mul(pow10(shift.unsigned_abs()))?,
        )
    };
    let q = num / den;
    let rounded = (q + q.signum() * 5) / 10;
    Some(Decimal {
        unscaled: rounded,
        scale,
    })
}

fn arithmetic(op: BinaryOp, l: &Value, r: &Value, ty: &DataType) -> Result<Value> {
    use LogicalType as L;
    match &ty.logical {
        L::TinyInt | L::SmallInt | L::Int | L::BigInt => {
            let (Value::Int(a), Value::Int(b)) = (l, r) else {
                return Err(SqlError::eval(format!("{} of non-integers", op.symbol())));
            };
            let v = match op {
                BinaryOp::Plus => a.wrapping_add(*b),
                BinaryOp::Minus => a.wrapping_sub(*b),
                BinaryOp::Times => a.wrapping_mul(*b),
                BinaryOp::Divide => {
                    if *b == 0 {
                        return Err(division_by_zero());
                    }
                    a.wrapping_div(*b)
                }
                _ => {
                    if *b == 0 {
                        return Err(division_by_zero());
                    }
                    a.wrapping_rem(*b)
                }
            };
            Ok(Value::Int(wrap_int(v, &ty.logical)))
        }
        L::Decimal { scale, .. } => {
            let (Some(a), Some(b)) = (to_decimal(l), to_decimal(r)) else {
                return Err(SqlError::eval(format!("{} of non-decimals", op.symbol())));
            };
            let s = a.scale.max(b.scale);
            let d = match op {
                BinaryOp::Plus | BinaryOp::Minus | BinaryOp::Mod => {
                    let (x, y) = (a.rescale(s), b.rescale(s));
                    match (x, y) {
                        (Some(x), Some(y)) => match op {
                            BinaryOp::Plus => x.unscaled.checked_add(y.unscaled),
                            BinaryOp::Minus => x.unscaled.checked_sub(y.unscaled),
                            _ => {
                                if y.unscaled == 0 {
                                    return Err(division_by_zero());
                                }
                                Some(x.unscaled % y.unscaled)
                            }
                        }
                        .map(|u| Decimal {
                            unscaled: u,
                            scale: s,
                        }),
                        _ => None,
                    }
                }
                BinaryOp::Times => a.unscaled.checked_mul(b.unscaled).map(|u| Decimal {
                    unscaled: u,
                    scale: a.scale + b.scale,
                }),
                _ => {
                    if b.unscaled == 0 {
                        return Err(division_by_zero());
                    }
                    decimal_divide(a, b, *scale)
                }
            };
            Ok(decimal_result(d, ty))
        }
        L::Double | L::Float => {
            let (Some(a), Some(b)) = (to_f64(l), to_f64(r)) else {
                return Err(SqlError::eval(format!("{} of non-numbers", op.symbol())));
            };
            // Flink fails a division by zero for approximate numbers too.
            if matches!(op, BinaryOp::Divide | BinaryOp::Mod) && b == 0.0 {
                return Err(division_by_zero());
            }
            let v = match op {
                BinaryOp::Plus => a + b,
                BinaryOp::Minus => a - b,
                BinaryOp::Times => a * b,
                BinaryOp::Divide => a / b,
                _ => a % b,
            };
            Ok(if matches!(ty.logical, L::Float) {
                Value::Float(v as f32)
            } else {
                Value::Double(v)
            })
        }
        _ => temporal(op, l, r),
    }
}

fn temporal(op: BinaryOp, l: &Value, r: &Value) -> Result<Value> {
    use Value::*;
    let sign = if op == BinaryOp::Minus { -1 } else { 1 };
    Ok(match (l, r) {
        (Timestamp(t), IntervalMillis(ms)) | (IntervalMillis(ms), Timestamp(t)) => {
            Timestamp(add_millis(*t, sign * ms))
        }
        (Timestamp(t), IntervalMonths(m)) | (IntervalMonths(m), Timestamp(t)) => {
            Timestamp(datetime::add_months(*t, sign * i64::from(*m)))
        }
        (Date(d), IntervalMillis(ms)) | (IntervalMillis(ms), Date(d)) => {
            Date(d + (sign * ms / datetime::MILLIS_PER_DAY) as i32)
        }
        (Date(d), IntervalMonths(m)) | (IntervalMonths(m), Date(d)) => {
            let t = crate::value::Timestamp::from_millis(i64::from(*d) * datetime::MILLIS_PER_DAY);
            let t = datetime::add_months(t, sign * i64::from(*m));
            Date(t.millis.div_euclid(datetime::MILLIS_PER_DAY) as i32)
        }
        (IntervalMillis(a), IntervalMillis(b)) => IntervalMillis(a + sign * b),
        (IntervalMonths(a), IntervalMonths(b)) => IntervalMonths(a + sign as i32 * b),
        (IntervalMillis(a), Int(b)) | (Int(b), IntervalMillis(a)) => match op {
            BinaryOp::Divide if *b == 0 => return Err(division_by_zero()),
            BinaryOp::Divide => IntervalMillis(a / b),
            _ => IntervalMillis(a.wrapping_mul(*b)),
        },
        (IntervalMonths(a), Int(b)) | (Int(b), IntervalMonths(a)) => match op {
            BinaryOp::Divide if *b == 0 => return Err(division_by_zero()),
            BinaryOp::Divide => IntervalMonths((i64::from(*a) / b) as i32),
            _ => IntervalMonths((i64::from(*a) * b) as i32),
        },
        _ => return Err(SqlError::eval(format!("{} on these operands", op.symbol()))),
    })
}

pub(crate) fn add_millis(t: Timestamp, ms: i64) -> Timestamp {
    Timestamp {
        millis: t.millis.wrapping_add(ms),
        nanos_of_milli: t.nanos_of_milli,
    }
}

pub(crate) fn binary(op: BinaryOp, l: &Value, r: &Value, ty: &DataType) -> Result<Value> {
    match op {
        BinaryOp::IsDistinctFrom | BinaryOp::IsNotDistinctFrom => {
            let same = match (l.is_null(), r.is_null()) {
                (true, true) => true,
                (false, false) => compare(l, r) == Some(Ordering::Equal),
                _ => false,
            };
            return Ok(Value::Bool(same == (op == BinaryOp::IsNotDistinctFrom)));
        }
        _ if l.is_null() || r.is_null() => return Ok(Value::Null),
        _ => {}
    }
    if op.is_comparison() {
        let Some(ord) = compare(l, r) else {
            return Ok(Value::Null);
        };
        return Ok(Value::Bool(match op {
            BinaryOp::Eq => ord == Ordering::Equal,
            BinaryOp::NotEq => ord != Ordering::Equal,
            BinaryOp::Lt => ord == Ordering::Less,
            BinaryOp::LtEq => ord != Ordering::Greater,
            BinaryOp::Gt => ord == Ordering::Greater,
            _ => ord != Ordering::Less,
        }));
    }
    if op == BinaryOp::Concat {
        let (Value::Str(a), Value::Str(b)) = (l, r) else {
            return Ok(Value::Null);
        };
        let mut s = String::with_capacity(a.len() + b.len());
        s.push_str(a);
        s.push_str(b);
        return Ok(Value::Str(SqlStr::from(s)));
    }
    arithmetic(op, l, r, ty)
}

#[cfg(test)]
mod tests {
    //! The borrowed operands and the stack-passed arguments give what the plain walk gives:
    //! fields of a `ROW` column and of a NULL one, in comparisons, `IN`, `LIKE`, `IS`, `CASE`
    //! and calls of every arity.

    use sqlparser::parser::Parser;

    use crate::bind_expr::{bind_expr, BindContext, Scope};
    use crate::dialect::FlinkDialect;
    use crate::functions::FunctionRegistry;
    use crate::types::{DataType, LogicalType, RowField};
    use crate::value::{Row, Value};

    fn scope() -> Scope {
        let field = |name: &str, ty: DataType| RowField {
            name: name.into(),
            ty,
        };
        let bid = DataType::new(LogicalType::Row(vec![
            field("auction", DataType::bigint()),
            field("channel", DataType::string()),
            field("extra", DataType::string()),
        ]));
        Scope::of(&[("event_type", DataType::int()), ("bid", bid)])
    }

    fn eval(sql: &str, row: &Row) -> Value {
        let ast = Parser::new(&FlinkDialect)
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap();
        let f = FunctionRegistry::builtins();
        let e = bind_expr(&ast, &scope(), &BindContext::new(&f)).unwrap();
        e.eval(row).unwrap_or_else(|err| panic!("{sql}: {err}"))
    }

    fn rows() -> (Row, Row) {
        let bid =
            Value::Row(vec![Value::Int(1007), Value::str("Apple"), Value::str("a,b,c")].into());
        (
            Row(vec![Value::Int(2), bid]),
            Row(vec![Value::Int(0), Value::Null]),
        )
    }

    #[test]
    fn fields_of_a_row_column_and_of_a_null_one() {
        let (bid, person) = rows();
        let t = Value::Bool(true);
        let f = Value::Bool(false);
        for (sql, on_bid, on_person) in [
            ("bid.auction", Value::Int(1007), Value::Null),
            ("bid.auction = 1007", t.clone(), Value::Null),
            ("1007 < bid.auction", f.clone(), Value::Null),
            ("bid.auction IS DISTINCT FROM 1007", f.clone(), t.clone()),
            ("bid.channel IN ('x', 'Apple')", t.clone(), Value::Null),
            ("bid.channel NOT IN ('x', bid.extra)", t.clone(), Value::Null),
            ("bid.channel LIKE 'App%'", t.clone(), Value::Null),
            ("bid.channel IS NULL", f.clone(), t.clone()),
            ("bid.auction = 1007 IS TRUE", t.clone(), f.clone()),
            ("bid.auction = 1007 IS NOT FALSE", t.clone(), t.clone()),
            (
                "CASE WHEN event_type = 0 THEN 'person' WHEN bid.auction > 1000 THEN bid.channel ELSE 'other' END",
                Value::str("Apple"),
                Value::str("person"),
            ),
        ] {
            assert_eq!(eval(sql, &bid), on_bid, "{sql} on a bid");
            assert_eq!(eval(sql, &person), on_person, "{sql} on a person");
        }
    }

    #[test]
    fn calls_of_every_arity() {
        let (bid, person) = rows();
        for (sql, on_bid) in [
            ("lower(bid.channel)", Value::str("apple")),
            ("MOD(bid.auction, 10)", Value::Int(7)),
            ("SPLIT_INDEX(bid.extra, ',', 1)", Value::str("b")),
            (
                "CONCAT(bid.channel, '-', bid.extra, '-', 'x')",
                Value::str("Apple-a,b,c-x"),
            ),
        ] {
            assert_eq!(eval(sql, &bid), on_bid, "{sql}");
            assert_eq!(eval(sql, &person), Value::Null, "{sql} on a person");
        }
    }
}
