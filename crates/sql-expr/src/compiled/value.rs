//! [`Node`]: a compiled expression evaluated to a [`Value`].
//!
//! The forms mirror the tree walk (`eval`) step for step — the same operands evaluated in the
//! same order, the same `conform` to the declared type, the walk's own `binary`, `cast` and
//! function calls — with what the walk decides per row decided once: which operands are read
//! in place, the operand type of a `CAST`, integer arithmetic on two `Int`s, a boolean node as
//! a [`Pred`]. Anything else is the walk itself ([`Node::Tree`]).

use super::operand::{field, Operand};
use super::pred::{is_predicate, Pred};
use super::Fallible;
use crate::cast::{self, pow10, wrap_int};
use crate::error::SqlError;
use crate::eval::{add_millis, binary, conform, division_by_zero};
use crate::expr::{BinaryOp, Expr};
use crate::functions::{Prepared, ScalarFunction};
use crate::types::{DataType, LogicalType};
use crate::value::{Decimal, Row, Value};
use std::sync::Arc;

/// A compiled value expression.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    Column(usize),
    Literal(Value),
    /// Field `index` of the `ROW` column `column`.
    Field {
        column: usize,
        index: usize,
    },
    /// A boolean node: its truth as `Bool` or NULL.
    Truth(Pred),
    Case {
        branches: Vec<(Pred, Node)>,
        otherwise: Box<Node>,
        ty: DataType,
        conform: Conform,
    },
    Call {
        func: Arc<ScalarFunction>,
        args: Vec<Node>,
        prepared: Option<Arc<Prepared>>,
        ty: DataType,
        conform: Conform,
    },
    /// `timestamp ± INTERVAL '…' SECOND` (a literal day-time interval, `millis` signed by the
    /// operator): the timestamp moved in place; any other operand by the walk's `binary`.
    ShiftTimestamp {
        op: BinaryOp,
        operand: Operand,
        millis: i64,
        interval: Value,
        ty: DataType,
    },
    Cast {
        operand: Operand,
        from: DataType,
        ty: DataType,
        safe: bool,
    },
    /// `CAST` of an integer type to `DECIMAL(p, s)` (`factor` = 10^s, `bound` = 10^p): an `Int`
    /// scaled inline, NULL past the precision or `i128` as the walk's `fit_decimal`; any other
    /// value by `cast`.
    IntToDecimal {
        operand: Operand,
        factor: i128,
        bound: u128,
        scale: u8,
        from: DataType,
        ty: DataType,
        safe: bool,
    },
    /// `+ - * / MOD` typed as an integer: wrapping `i64` arithmetic on two `Int`s.
    IntArith {
        op: BinaryOp,
        left: Operand,
        right: Operand,
        ty: DataType,
    },
    /// `+ - *` typed as `DECIMAL(p, s)` (`bound` = 10^p): exact `i128` arithmetic on two
    /// `Int`/`Decimal` values whose result has scale `s` as it is (`0.908 * price`), NULL past
    /// the precision or `i128` as the walk's `decimal_result`; any other pair by `binary`.
    DecArith {
        op: BinaryOp,
        left: Operand,
        right: Operand,
        bound: u128,
        scale: u8,
        ty: DataType,
    },
    /// Any other binary operator, by the walk's `binary`.
    Binary {
        op: BinaryOp,
        left: Operand,
        right: Operand,
        ty: DataType,
    },
    /// The tree walk.
    Tree(Expr),
}

fn boxed(e: SqlError) -> Box<SqlError> {
    Box::new(e)
}

impl Node {
    /// Compiles `e`.
    pub(crate) fn compile(e: &Expr) -> Node {
        match e {
            Expr::Column { index, .. } => Node::Column(*index),
            Expr::Literal { value, .. } => Node::Literal(value.clone()),
            Expr::Field { expr, index, .. } if matches!(**expr, Expr::Column { .. }) => {
                let Expr::Column { index: column, .. } = **expr else {
                    return Node::Tree(e.clone());
                };
                Node::Field {
                    column,
                    index: *index,
                }
            }
            _ if is_predicate(e) => Node::Truth(Pred::compile(e)),
            Expr::Case {
                branches,
                otherwise,
                ty,
            } => Node::Case {
                branches: branches
                    .iter()
                    .map(|(c, v)| (Pred::compile(c), Node::compile(v)))
                    .collect(),
                otherwise: Box::new(Node::compile(otherwise)),
                ty: ty.clone(),
                conform: Conform::to(ty),
            },
            Expr::Call {
                func,
                args,
                prepared,
                ty,
            } => Node::Call {
                func: func.clone(),
                args: args.iter().map(Node::compile).collect(),
                prepared: prepared.clone(),
                ty: ty.clone(),
                conform: Conform::to(ty),
            },
            Expr::Binary {
                op: op @ (BinaryOp::Plus | BinaryOp::Minus),
                left,
                right,
                ty,
            } if matches!(ty.logical, LogicalType::Timestamp { .. })
                && !matches!(**left, Expr::Literal { .. }) =>
            {
                match right.as_literal() {
                    Some(interval @ Value::IntervalMillis(ms)) => Node::ShiftTimestamp {
                        op: *op,
                        operand: Operand::compile(left),
                        millis: ms.wrapping_mul(if *op == BinaryOp::Minus { -1 } else { 1 }),
                        interval: interval.clone(),
                        ty: ty.clone(),
                    },
                    _ => Node::binary(*op, left, right, ty),
                }
            }
            Expr::Cast { expr, ty, safe } if int_to_decimal(&expr.data_type(), ty).is_some() => {
                let Some((factor, bound, scale)) = int_to_decimal(&expr.data_type(), ty) else {
                    return Node::Tree(e.clone());
                };
                Node::IntToDecimal {
                    operand: Operand::compile(expr),
                    factor,
                    bound,
                    scale,
                    from: expr.data_type(),
                    ty: ty.clone(),
                    safe: *safe,
                }
            }
            Expr::Cast { expr, ty, safe } => Node::Cast {
                operand: Operand::compile(expr),
                from: expr.data_type(),
                ty: ty.clone(),
                safe: *safe,
            },
            Expr::Binary {
                op,
                left,
                right,
                ty,
            } => Node::binary(*op, left, right, ty),
            other => Node::Tree(other.clone()),
        }
    }

    fn binary(op: BinaryOp, left: &Expr, right: &Expr, ty: &DataType) -> Node {
        let (left, right) = (Operand::compile(left), Operand::compile(right));
        let arithmetic = matches!(
            op,
            BinaryOp::Plus | BinaryOp::Minus | BinaryOp::Times | BinaryOp::Divide | BinaryOp::Mod
        );
        if arithmetic && is_integer(&ty.logical) {
            Node::IntArith {
                op,
                left,
                right,
                ty: ty.clone(),
            }
        } else if let (
            BinaryOp::Plus | BinaryOp::Minus | BinaryOp::Times,
            LogicalType::Decimal { precision, scale },
        ) = (op, &ty.logical)
        {
            Node::DecArith {
                op,
                left,
                right,
                bound: pow10(u32::from(*precision)).unsigned_abs(),
                scale: *scale,
                ty: ty.clone(),
            }
        } else {
            Node::Binary {
                op,
                left,
                right,
                ty: ty.clone(),
            }
        }
    }

    /// The value over `row`.
    pub(crate) fn eval(&self, row: &Row) -> Fallible<Value> {
        match self {
            Node::Column(i) => Ok(row.get(*i).clone()),
            Node::Literal(v) => Ok(v.clone()),
            Node::Field { column, index } => Ok(field(row.get(*column), *index).clone()),
            Node::Truth(p) => Ok(p.eval(row)?.value()),
            Node::Case {
                branches,
                otherwise,
                ty,
                conform,
            } => {
                for (cond, value) in branches {
                    if cond.holds(row)? {
                        return conform.apply(value.eval(row)?, ty);
                    }
                }
                conform.apply(otherwise.eval(row)?, ty)
            }
            Node::ShiftTimestamp {
                op,
                operand,
                millis,
                interval,
                ty,
            } => match operand.get(row)?.as_ref() {
                Value::Timestamp(t) => Ok(Value::Timestamp(add_millis(*t, *millis))),
                v => binary(*op, v, interval, ty).map_err(boxed),
            },
            Node::IntArith {
                op,
                left,
                right,
                ty,
            } => {
                let l = left.get(row)?;
                let r = right.get(row)?;
                match (l.as_ref(), r.as_ref()) {
                    (Value::Int(a), Value::Int(b)) => int_arith(*op, *a, *b, &ty.logical),
                    (l, r) => binary(*op, l, r, ty).map_err(boxed),
                }
            }
            Node::DecArith {
                op,
                left,
                right,
                bound,
                scale,
                ty,
            } => {
                let l = left.get(row)?;
                let r = right.get(row)?;
                match (exact(l.as_ref()), exact(r.as_ref())) {
                    (Some(a), Some(b)) => match dec_arith(*op, a, b, *bound, *scale) {
                        Some(v) => Ok(v),
                        None => binary(*op, &l, &r, ty).map_err(boxed),
                    },
                    _ => binary(*op, &l, &r, ty).map_err(boxed),
                }
            }
            Node::IntToDecimal {
                operand,
                factor,
                bound,
                scale,
                from,
                ty,
                safe,
            } => match operand.get(row)?.as_ref() {
                Value::Int(i) => Ok(match i128::from(*i).checked_mul(*factor) {
                    Some(u) if u.unsigned_abs() < *bound => Value::Decimal(Decimal {
                        unscaled: u,
                        scale: *scale,
                    }),
                    _ => Value::Null,
                }),
                v => match cast::cast(v, from, ty) {
                    Ok(v) => Ok(v),
                    Err(_) if *safe => Ok(Value::Null),
                    Err(m) => Err(boxed(SqlError::eval(m))),
                },
            },
            // The rest out of line: their frames (a call's arguments) stay off the hot path's.
            Node::Call { .. } => self.call(row),
            Node::Cast { .. } | Node::Binary { .. } | Node::Tree(_) => self.cold(row),
        }
    }

    #[inline(never)]
    fn call(&self, row: &Row) -> Fallible<Value> {
        let Node::Call {
            func,
            args,
            prepared,
            ty,
            conform,
        } = self
        else {
            return self.cold(row);
        };
        let p = prepared.as_deref();
        // The common arities without a vector per call.
        let v = match args.as_slice() {
            [] => func.call(&[], p),
            [a] => func.call(&[a.eval(row)?], p),
            [a, b] => func.call(&[a.eval(row)?, b.eval(row)?], p),
            [a, b, c] => func.call(&[a.eval(row)?, b.eval(row)?, c.eval(row)?], p),
            _ => {
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    values.push(a.eval(row)?);
                }
                func.call(&values, p)
            }
        };
        conform.apply(v.map_err(boxed)?, ty)
    }

    #[inline(never)]
    fn cold(&self, row: &Row) -> Fallible<Value> {
        match self {
            Node::Cast {
                operand,
                from,
                ty,
                safe,
            } => match cast::cast(operand.get(row)?.as_ref(), from, ty) {
                Ok(v) => Ok(v),
                Err(_) if *safe => Ok(Value::Null),
                Err(m) => Err(boxed(SqlError::eval(m))),
            },
            Node::Binary {
                op,
                left,
                right,
                ty,
            } => {
                let l = left.get(row)?;
                let r = right.get(row)?;
                binary(*op, &l, &r, ty).map_err(boxed)
            }
            Node::Tree(e) => e.eval(row).map_err(boxed),
            other => other.eval(row),
        }
    }
}

/// Whether a result must be converted to its declared type's representation (`conform`): only
/// numbers (an `Int` where a `DECIMAL` is declared…) and dates (where a `TIMESTAMP` is) ever
/// are, so a `CASE` or call of another type passes its value through untouched.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Conform {
    /// The type is neither numeric nor a timestamp: `conform` keeps every value.
    Never,
    /// A timestamp: `conform` converts a `DATE` only.
    Dates,
    /// A number: `conform` decides.
    Always,
}

impl Conform {
    fn to(ty: &DataType) -> Conform {
        if ty.is_numeric() {
            Conform::Always
        } else if matches!(ty.logical, LogicalType::Timestamp { .. }) {
            Conform::Dates
        } else {
            Conform::Never
        }
    }

    #[inline]
    fn apply(self, v: Value, ty: &DataType) -> Fallible<Value> {
        match self {
            Conform::Never => Ok(v),
            Conform::Dates if !matches!(v, Value::Date(_)) => Ok(v),
            _ => conform(v, ty).map_err(boxed),
        }
    }
}

/// `(10^s, 10^p, s)` for a `CAST` from an integer type to `DECIMAL(p, s)` (`None` for any
/// other, or a scale past `i128`).
fn int_to_decimal(from: &DataType, to: &DataType) -> Option<(i128, u128, u8)> {
    match &to.logical {
        LogicalType::Decimal { precision, scale } if is_integer(&from.logical) => Some((
            10i128.checked_pow(u32::from(*scale))?,
            pow10(u32::from(*precision)).unsigned_abs(),
            *scale,
        )),
        _ => None,
    }
}

fn is_integer(l: &LogicalType) -> bool {
    matches!(
        l,
        LogicalType::TinyInt | LogicalType::SmallInt | LogicalType::Int | LogicalType::BigInt
    )
}

/// An exact number as `(unscaled, scale)` (what the walk's `to_decimal` gives).
#[inline]
fn exact(v: &Value) -> Option<(i128, u8)> {
    match v {
        Value::Int(i) => Some((i128::from(*i), 0)),
        Value::Decimal(d) => Some((d.unscaled, d.scale)),
        _ => None,
    }
}

/// The walk's decimal `+ - *` where its result's scale is the declared `scale` as computed
/// (so its `fit_decimal` rescales nothing): the value, or NULL where the walk's overflows
/// `i128` or the precision (`|unscaled| ≥ bound`). `None`: the walk must do it (operands
/// rescaled past `i128`, or a result to round).
#[inline]
fn dec_arith(
    op: BinaryOp,
    (a, sa): (i128, u8),
    (b, sb): (i128, u8),
    bound: u128,
    scale: u8,
) -> Option<Value> {
    let (unscaled, s) = match op {
        BinaryOp::Times => (a.checked_mul(b), sa.checked_add(sb)?),
        _ => {
            let s = sa.max(sb);
            let up = |u: i128, from: u8| u.checked_mul(10i128.checked_pow(u32::from(s - from))?);
            let (x, y) = (up(a, sa)?, up(b, sb)?);
            let u = if op == BinaryOp::Plus {
                x.checked_add(y)
            } else {
                x.checked_sub(y)
            };
            (u, s)
        }
    };
    if s != scale {
        return None;
    }
    Some(match unscaled {
        Some(u) if u.unsigned_abs() < bound => Value::Decimal(Decimal { unscaled: u, scale }),
        _ => Value::Null,
    })
}

/// The walk's integer arithmetic (Java's wrap-around at the type's width; division by zero
/// fails), on two `Int`s.
#[inline]
fn int_arith(op: BinaryOp, a: i64, b: i64, ty: &LogicalType) -> Fallible<Value> {
    let v = match op {
        BinaryOp::Plus => a.wrapping_add(b),
        BinaryOp::Minus => a.wrapping_sub(b),
        BinaryOp::Times => a.wrapping_mul(b),
        BinaryOp::Divide if b != 0 => a.wrapping_div(b),
        BinaryOp::Mod if b != 0 => a.wrapping_rem(b),
        _ => return Err(boxed(division_by_zero())),
    };
    Ok(Value::Int(wrap_int(v, ty)))
}
