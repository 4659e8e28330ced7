//! Compiled expressions: a bound [`Expr`] turned once, when an operator starts, into a form
//! that is cheaper to evaluate per row than the tree walk ([`Expr::eval`]), with the same
//! answers.
//!
//! The walk decides per row what is the same for every row: whether an operand can be read in
//! place, which comparison a pair of values needs, the type a `CAST` converts from, whether a
//! boolean has to be built as a `Value` to be tested. Compilation decides it once:
//!
//! * operands (a column, a literal, a `ROW` field of a column) are read in place;
//! * a comparison with a literal compares `Int`, `Str` and `Timestamp` values directly;
//! * boolean nodes (comparisons, `AND`/`OR`/`NOT`, `IS`, `IN`, `LIKE`) evaluate to SQL's three
//!   truth values, and a [`CompiledPredicate`] answers `bool` without a `Value::Bool`;
//! * a `CASE`'s conditions are such predicates; integer arithmetic on two `Int`s is inline;
//! * errors are boxed ([`EvalError`]), so the hot `Result` is no larger than a `Value`.
//!
//! Anything else runs the walk's own code for that node (its `binary`, `cast`, `conform`,
//! function calls) or the walk itself for the subtree, so semantics cannot diverge: the same
//! operands are evaluated in the same order, and three-valued logic, Java's wrap-around,
//! decimal NULL-on-overflow and errors are the walk's. An enum of specialised nodes rather than
//! boxed closures: as fast here (see `tests`' equivalence check and the Nexmark figures in
//! the changelog) and printable in a debugger.

mod operand;
mod pred;
mod value;

#[cfg(test)]
mod tests;

use crate::error::SqlError;
use crate::expr::Expr;
use crate::value::{Row, Value};

/// A run-time evaluation error, boxed: the same [`SqlError`] the walk gives.
pub type EvalError = Box<SqlError>;

/// The result of a compiled evaluation.
pub type Fallible<T> = std::result::Result<T, EvalError>;

/// An expression compiled for evaluation to a value.
#[derive(Clone, Debug)]
pub struct CompiledExpr {
    node: value::Node,
}

impl CompiledExpr {
    /// Compiles `e`.
    pub fn new(e: &Expr) -> CompiledExpr {
        CompiledExpr {
            node: value::Node::compile(e),
        }
    }

    /// The value over `row`: what [`Expr::eval`] gives, error boxed.
    #[inline]
    pub fn eval(&self, row: &Row) -> Fallible<Value> {
        self.node.eval(row)
    }
}

/// An expression compiled as a condition.
#[derive(Clone, Debug)]
pub struct CompiledPredicate {
    pred: pred::Pred,
}

impl CompiledPredicate {
    /// Compiles the condition `e`.
    pub fn new(e: &Expr) -> CompiledPredicate {
        CompiledPredicate {
            pred: pred::Pred::compile(e),
        }
    }

    /// Whether the condition is TRUE over `row` (FALSE and NULL reject): what
    /// [`Expr::eval_predicate`] gives, error boxed.
    #[inline]
    pub fn holds(&self, row: &Row) -> Fallible<bool> {
        self.pred.holds(row)
    }
}
