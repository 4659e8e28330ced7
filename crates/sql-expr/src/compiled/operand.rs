//! [`Operand`]: where a compiled node's input comes from — a column, a literal or a `ROW` field
//! of a column, read in place; or a computed value.

use std::borrow::Cow;

use super::value::Node;
use super::Fallible;
use crate::expr::Expr;
use crate::value::{Row, Value};

/// An input of a compiled comparison, arithmetic or test.
#[derive(Clone, Debug)]
pub(crate) enum Operand {
    /// Column `.0` of the row.
    Column(usize),
    /// A constant.
    Literal(Value),
    /// Field `index` of the `ROW` column `column` (NULL when the column is NULL or not a
    /// `ROW`, as `Expr::operand` has it).
    Field { column: usize, index: usize },
    /// A deeper chain of fields, read by `Expr::operand`.
    Nested(Box<Expr>),
    /// A value to compute.
    Computed(Box<Node>),
}

/// Whether [`Expr::operand`] gives a value for `e` whatever the row.
pub(crate) fn is_operand(e: &Expr) -> bool {
    match e {
        Expr::Column { .. } | Expr::Literal { .. } => true,
        Expr::Field { expr, .. } => is_operand(expr),
        _ => false,
    }
}

impl Operand {
    /// `e` as an operand: read in place where the tree walk borrows it, computed otherwise.
    pub(crate) fn compile(e: &Expr) -> Operand {
        match e {
            Expr::Column { index, .. } => Operand::Column(*index),
            Expr::Literal { value, .. } => Operand::Literal(value.clone()),
            Expr::Field { expr, index, .. } => match &**expr {
                Expr::Column { index: column, .. } => Operand::Field {
                    column: *column,
                    index: *index,
                },
                inner if is_operand(inner) => Operand::Nested(Box::new(e.clone())),
                _ => Operand::Computed(Box::new(Node::compile(e))),
            },
            _ => Operand::Computed(Box::new(Node::compile(e))),
        }
    }

    /// The value, borrowed from the row or the literal where it is one.
    #[inline]
    pub(crate) fn get<'a>(&'a self, row: &'a Row) -> Fallible<Cow<'a, Value>> {
        Ok(match self {
            Operand::Column(i) => Cow::Borrowed(row.get(*i)),
            Operand::Literal(v) => Cow::Borrowed(v),
            Operand::Field { column, index } => Cow::Borrowed(field(row.get(*column), *index)),
            Operand::Nested(e) => Cow::Borrowed(e.operand(row).unwrap_or(&Value::Null)),
            Operand::Computed(n) => Cow::Owned(n.eval(row)?),
        })
    }
}

/// Field `index` of a `ROW` value; NULL for a NULL or non-`ROW` value or a missing field.
#[inline]
pub(crate) fn field(v: &Value, index: usize) -> &Value {
    match v {
        Value::Row(fields) => fields.get(index).unwrap_or(&Value::Null),
        _ => &Value::Null,
    }
}
