//! [`Pred`]: a compiled boolean expression, evaluated to a [`Truth`] (SQL's three values)
//! without building a `Value::Bool`.
//!
//! Every form here gives exactly what the tree walk gives for the same node: comparisons are
//! `NULL` when either side is, AND/OR evaluate their operands in order and stop at the first
//! FALSE/TRUE (so an error after a NULL operand is still raised, as the walk raises it), and a
//! comparison with a literal compares `Int`/`Str`/`Timestamp` values (and a `Decimal` with an
//! integer or a decimal of its scale) directly, handing any
//! other pair to the walk's own [`compare`].

use std::cmp::Ordering;
use std::sync::Arc;

use super::operand::{is_operand, Operand};
use super::value::Node;
use super::Fallible;
use crate::eval::compare;
use crate::expr::{BinaryOp, Expr, IsTest, Pattern};
use crate::value::{Decimal, Row, SqlStr, Timestamp, Value};

/// SQL's three truth values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Truth {
    False,
    True,
    Unknown,
}

impl Truth {
    /// The truth of a value as AND/OR/NOT/WHERE read it: only `Bool` is true or false.
    #[inline]
    pub(crate) fn of(v: &Value) -> Truth {
        match v {
            Value::Bool(true) => Truth::True,
            Value::Bool(false) => Truth::False,
            _ => Truth::Unknown,
        }
    }

    #[inline]
    fn from_bool(b: bool) -> Truth {
        if b {
            Truth::True
        } else {
            Truth::False
        }
    }

    /// As a value: `Bool` or NULL.
    #[inline]
    pub(crate) fn value(self) -> Value {
        match self {
            Truth::True => Value::Bool(true),
            Truth::False => Value::Bool(false),
            Truth::Unknown => Value::Null,
        }
    }
}

/// A literal's value in the form a comparison reads it.
#[derive(Clone, Debug)]
pub(crate) enum Lit {
    Int(i64),
    Str(SqlStr),
    Timestamp(Timestamp),
    Decimal(Decimal),
    /// Any other value: compared by [`compare`].
    Other,
}

/// A compiled boolean expression.
#[derive(Clone, Debug)]
pub(crate) enum Pred {
    /// `operand op literal` (`flipped`: written `literal op operand`).
    CmpLit {
        op: BinaryOp,
        operand: Operand,
        lit: Lit,
        literal: Value,
        flipped: bool,
    },
    /// `left op right`.
    Cmp {
        op: BinaryOp,
        left: Operand,
        right: Operand,
    },
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Not(Box<Pred>),
    /// `operand IS …` on a value.
    Is {
        operand: Operand,
        test: IsTest,
    },
    /// `pred IS …` on a predicate (its NULL is `Unknown`).
    IsTruth {
        pred: Box<Pred>,
        test: IsTest,
    },
    InList {
        operand: Operand,
        list: Vec<Operand>,
        negated: bool,
    },
    /// `LIKE` / `SIMILAR TO` a literal pattern.
    Like {
        operand: Operand,
        pattern: Arc<Pattern>,
        negated: bool,
    },
    /// Any other boolean: its value's truth.
    Value(Operand),
}

/// Whether `e` is one of the nodes the walk evaluates to `Bool` or NULL only, so that its
/// value is its [`Truth`].
pub(crate) fn is_predicate(e: &Expr) -> bool {
    match e {
        Expr::Binary { op, .. } => is_ordering(*op),
        Expr::And(_) | Expr::Or(_) | Expr::Not(_) | Expr::Is { .. } | Expr::InList { .. } => true,
        Expr::Like { compiled, .. } => compiled.is_some(),
        _ => false,
    }
}

/// The comparisons that are NULL on a NULL side (not `IS [NOT] DISTINCT FROM`).
fn is_ordering(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq
    )
}

impl Pred {
    /// Compiles `e` (any expression; a non-boolean one reads as its value's truth).
    pub(crate) fn compile(e: &Expr) -> Pred {
        match e {
            Expr::Binary {
                op, left, right, ..
            } if is_ordering(*op) => match (&**left, &**right) {
                (l, Expr::Literal { value, .. }) if !matches!(l, Expr::Literal { .. }) => {
                    Pred::cmp_lit(*op, l, value, false)
                }
                (Expr::Literal { value, .. }, r) if !matches!(r, Expr::Literal { .. }) => {
                    Pred::cmp_lit(*op, r, value, true)
                }
                (l, r) => Pred::Cmp {
                    op: *op,
                    left: Operand::compile(l),
                    right: Operand::compile(r),
                },
            },
            Expr::And(args) => Pred::And(args.iter().map(Pred::compile).collect()),
            Expr::Or(args) => Pred::Or(args.iter().map(Pred::compile).collect()),
            Expr::Not(inner) => Pred::Not(Box::new(Pred::compile(inner))),
            Expr::Is { expr, test } if is_predicate(expr) => Pred::IsTruth {
                pred: Box::new(Pred::compile(expr)),
                test: *test,
            },
            Expr::Is { expr, test } => Pred::Is {
                operand: Operand::compile(expr),
                test: *test,
            },
            Expr::InList {
                expr,
                list,
                negated,
                ..
            } => Pred::InList {
                operand: Operand::compile(expr),
                list: list.iter().map(Operand::compile).collect(),
                negated: *negated,
            },
            Expr::Like {
                expr,
                compiled: Some(pattern),
                negated,
                ..
            } => Pred::Like {
                operand: Operand::compile(expr),
                pattern: pattern.clone(),
                negated: *negated,
            },
            other if is_operand(other) => Pred::Value(Operand::compile(other)),
            other => Pred::Value(Operand::Computed(Box::new(Node::compile(other)))),
        }
    }

    fn cmp_lit(op: BinaryOp, operand: &Expr, literal: &Value, flipped: bool) -> Pred {
        let lit = match literal {
            Value::Int(i) => Lit::Int(*i),
            Value::Str(s) => Lit::Str(s.clone()),
            Value::Timestamp(t) => Lit::Timestamp(*t),
            Value::Decimal(d) => Lit::Decimal(*d),
            _ => Lit::Other,
        };
        Pred::CmpLit {
            op,
            operand: Operand::compile(operand),
            lit,
            literal: literal.clone(),
            flipped,
        }
    }

    /// Whether the predicate is TRUE (FALSE and NULL reject, as in `WHERE`).
    #[inline]
    pub(crate) fn holds(&self, row: &Row) -> Fallible<bool> {
        Ok(self.eval(row)? == Truth::True)
    }

    /// The predicate's truth over `row`.
    pub(crate) fn eval(&self, row: &Row) -> Fallible<Truth> {
        Ok(match self {
            Pred::CmpLit {
                op,
                operand,
                lit,
                literal,
                flipped,
            } => {
                let v = operand.get(row)?;
                let ord = match (v.as_ref(), lit) {
                    (Value::Null, _) => return Ok(Truth::Unknown),
                    (Value::Int(x), Lit::Int(y)) => x.cmp(y),
                    (Value::Str(x), Lit::Str(y)) => x.as_ref().cmp(y.as_ref()),
                    (Value::Timestamp(x), Lit::Timestamp(y)) => x.cmp(y),
                    (Value::Decimal(x), Lit::Int(y)) => match scaled(*y, x.scale) {
                        Some(y) => { x.unscaled }.cmp(&y),
                        None => match compare(v.as_ref(), literal) {
                            Some(o) => o,
                            None => return Ok(Truth::Unknown),
                        },
                    },
                    (Value::Decimal(x), Lit::Decimal(y)) if x.scale == y.scale => {
                        { x.unscaled }.cmp(&{ y.unscaled })
                    }
                    (v, _) => match compare(v, literal) {
                        Some(o) => o,
                        None => return Ok(Truth::Unknown),
                    },
                };
                test(*op, if *flipped { ord.reverse() } else { ord })
            }
            Pred::Cmp { op, left, right } => {
                let l = left.get(row)?;
                let r = right.get(row)?;
                match fast_compare(&l, &r) {
                    Some(o) => test(*op, o),
                    None => Truth::Unknown,
                }
            }
            Pred::And(args) => {
                let mut saw_null = false;
                for a in args {
                    match a.eval(row)? {
                        Truth::False => return Ok(Truth::False),
                        Truth::True => {}
                        Truth::Unknown => saw_null = true,
                    }
                }
                if saw_null {
                    Truth::Unknown
                } else {
                    Truth::True
                }
            }
            Pred::Or(args) => {
                let mut saw_null = false;
                for a in args {
                    match a.eval(row)? {
                        Truth::True => return Ok(Truth::True),
                        Truth::False => {}
                        Truth::Unknown => saw_null = true,
                    }
                }
                if saw_null {
                    Truth::Unknown
                } else {
                    Truth::False
                }
            }
            Pred::Not(p) => match p.eval(row)? {
                Truth::True => Truth::False,
                Truth::False => Truth::True,
                Truth::Unknown => Truth::Unknown,
            },
            Pred::Is { operand, test } => {
                let v = operand.get(row)?;
                Truth::from_bool(is(*test, Truth::of(&v), v.is_null()))
            }
            Pred::IsTruth { pred, test } => {
                let t = pred.eval(row)?;
                Truth::from_bool(is(*test, t, t == Truth::Unknown))
            }
            Pred::InList {
                operand,
                list,
                negated,
            } => {
                let v = operand.get(row)?;
                if v.is_null() {
                    return Ok(Truth::Unknown);
                }
                let mut saw_null = false;
                for item in list {
                    let c = item.get(row)?;
                    match fast_compare(&v, &c) {
                        Some(Ordering::Equal) => return Ok(Truth::from_bool(!negated)),
                        None if c.is_null() => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Truth::Unknown
                } else {
                    Truth::from_bool(*negated)
                }
            }
            Pred::Like {
                operand,
                pattern,
                negated,
            } => match operand.get(row)?.as_ref() {
                Value::Str(s) => Truth::from_bool(pattern.regex.is_match(s) != *negated),
                _ => Truth::Unknown,
            },
            Pred::Value(v) => Truth::of(v.get(row)?.as_ref()),
        })
    }
}

/// The integer `y` as the unscaled digits of a decimal of `scale` (`None` past `i128`): a
/// decimal of that scale compares with `y` as its digits with these, exactly as [`compare`]
/// rescales them.
#[inline]
fn scaled(y: i64, scale: u8) -> Option<i128> {
    i128::from(y).checked_mul(10i128.checked_pow(u32::from(scale))?)
}

/// [`compare`] with the common same-kind pairs first.
#[inline]
fn fast_compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Str(x), Value::Str(y)) => Some(x.as_ref().cmp(y.as_ref())),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        _ => compare(a, b),
    }
}

/// `op` applied to an ordering of its two sides.
#[inline]
fn test(op: BinaryOp, ord: Ordering) -> Truth {
    Truth::from_bool(match op {
        BinaryOp::Eq => ord == Ordering::Equal,
        BinaryOp::NotEq => ord != Ordering::Equal,
        BinaryOp::Lt => ord == Ordering::Less,
        BinaryOp::LtEq => ord != Ordering::Greater,
        BinaryOp::Gt => ord == Ordering::Greater,
        _ => ord != Ordering::Less,
    })
}

/// An `IS …` test of a value whose truth is `t` and NULL-ness `null`.
#[inline]
fn is(test: IsTest, t: Truth, null: bool) -> bool {
    match test {
        IsTest::Null => null,
        IsTest::NotNull => !null,
        IsTest::True => t == Truth::True,
        IsTest::NotTrue => t != Truth::True,
        IsTest::False => t == Truth::False,
        IsTest::NotFalse => t != Truth::False,
    }
}
