//! [`Expr`]: a bound, typed scalar expression — what the binder (`bind_expr`) makes of
//! `sqlparser`'s syntax tree and what `eval` evaluates over a [`Row`](sluice_sql_front::Row).
//!
//! Every node knows its result [`DataType`] ([`Expr::data_type`]). Names are resolved: a column is
//! an index into the input row (its name is kept for printing), a function is a
//! [`ScalarFunction`] from the registry. `Display` prints the expression the way Flink's `EXPLAIN`
//! prints Calcite's `RexNode`s: operators in prefix form (`=(MOD(auction, 123), 0)`,
//! `*(0.908:DECIMAL(4, 3), price)`), `AND(…)`, `CASE(…)`, columns by name.

use std::fmt;
use std::sync::Arc;

use crate::functions::{Prepared, ScalarFunction};
use crate::types::{DataType, LogicalType};
use crate::value::Value;

/// A binary operator (arithmetic, comparison, concatenation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`.
    Plus,
    /// `-`.
    Minus,
    /// `*`.
    Times,
    /// `/` (integer division truncates toward zero, as in Java).
    Divide,
    /// `MOD` / `%` (the sign of the dividend, as in Java).
    Mod,
    /// `=`.
    Eq,
    /// `<>`.
    NotEq,
    /// `<`.
    Lt,
    /// `<=`.
    LtEq,
    /// `>`.
    Gt,
    /// `>=`.
    GtEq,
    /// `IS DISTINCT FROM` (NULL-safe `<>`).
    IsDistinctFrom,
    /// `IS NOT DISTINCT FROM` (NULL-safe `=`).
    IsNotDistinctFrom,
    /// `||`.
    Concat,
}

impl BinaryOp {
    /// The operator's name as Flink prints it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Plus => "+",
            BinaryOp::Minus => "-",
            BinaryOp::Times => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Mod => "MOD",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::IsDistinctFrom => "IS DISTINCT FROM",
            BinaryOp::IsNotDistinctFrom => "IS NOT DISTINCT FROM",
            BinaryOp::Concat => "||",
        }
    }

    /// Whether the operator compares (its result is `BOOLEAN`).
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
                | BinaryOp::IsDistinctFrom
                | BinaryOp::IsNotDistinctFrom
        )
    }
}

/// The test of an `IS …` predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IsTest {
    /// `IS NULL`.
    Null,
    /// `IS NOT NULL`.
    NotNull,
    /// `IS TRUE`.
    True,
    /// `IS NOT TRUE`.
    NotTrue,
    /// `IS FALSE`.
    False,
    /// `IS NOT FALSE`.
    NotFalse,
}

impl IsTest {
    /// The test as SQL writes it (`IS NOT NULL`).
    pub fn name(self) -> &'static str {
        match self {
            IsTest::Null => "IS NULL",
            IsTest::NotNull => "IS NOT NULL",
            IsTest::True => "IS TRUE",
            IsTest::NotTrue => "IS NOT TRUE",
            IsTest::False => "IS FALSE",
            IsTest::NotFalse => "IS NOT FALSE",
        }
    }
}

/// A compiled `LIKE` / `SIMILAR TO` pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// The pattern as written (for printing).
    pub text: String,
    /// Its translation to an anchored regular expression.
    pub regex: regex::Regex,
}

/// A bound scalar expression.
#[derive(Clone, Debug)]
pub enum Expr {
    /// A column of the input row.
    Column {
        /// Its index in the row.
        index: usize,
        /// Its name (for printing).
        name: String,
        /// Its type.
        ty: DataType,
    },
    /// A constant.
    Literal {
        /// The value.
        value: Value,
        /// Its type.
        ty: DataType,
    },
    /// A call of a built-in or user scalar function.
    Call {
        /// The function.
        func: Arc<ScalarFunction>,
        /// Its arguments.
        args: Vec<Expr>,
        /// What the function prepared from literal arguments at bind time (a compiled regex or
        /// date format); evaluation prepares on the fly when this is `None`.
        prepared: Option<Arc<Prepared>>,
        /// The result type.
        ty: DataType,
    },
    /// `CAST(expr AS ty)`; `TRY_CAST` when `safe` (NULL instead of an error).
    Cast {
        /// The operand.
        expr: Box<Expr>,
        /// The target type.
        ty: DataType,
        /// `TRY_CAST`.
        safe: bool,
    },
    /// `CASE WHEN c1 THEN v1 … ELSE e END` (a `CASE x WHEN …` is bound to this form).
    Case {
        /// Conditions and their values, in order.
        branches: Vec<(Expr, Expr)>,
        /// The `ELSE` value (a NULL literal when absent).
        otherwise: Box<Expr>,
        /// The common type of the values.
        ty: DataType,
    },
    /// `expr [NOT] IN (list)`.
    InList {
        /// The operand.
        expr: Box<Expr>,
        /// The candidates.
        list: Vec<Expr>,
        /// `NOT IN`.
        negated: bool,
        /// `BOOLEAN`, nullable if any input is.
        ty: DataType,
    },
    /// `expr [NOT] LIKE pattern` or `expr [NOT] SIMILAR TO pattern`.
    Like {
        /// The operand.
        expr: Box<Expr>,
        /// The pattern, compiled when it is a literal.
        pattern: Box<Expr>,
        /// The compiled literal pattern.
        compiled: Option<Arc<Pattern>>,
        /// The escape character.
        escape: Option<char>,
        /// `NOT LIKE`.
        negated: bool,
        /// `SIMILAR TO` rather than `LIKE`.
        similar: bool,
        /// `BOOLEAN`, nullable if the inputs are.
        ty: DataType,
    },
    /// `expr IS [NOT] NULL / TRUE / FALSE` (never NULL).
    Is {
        /// The operand.
        expr: Box<Expr>,
        /// Which test.
        test: IsTest,
    },
    /// `row_expr.field`.
    Field {
        /// The `ROW` value.
        expr: Box<Expr>,
        /// The field's index.
        index: usize,
        /// The field's name.
        name: String,
        /// The field's type (nullable if the row is).
        ty: DataType,
    },
    /// `array[i]` (1-based) or `map[key]`: NULL when absent.
    Element {
        /// The `ARRAY` or `MAP` value.
        expr: Box<Expr>,
        /// The index or key.
        key: Box<Expr>,
        /// The element type (nullable).
        ty: DataType,
    },
    /// `AND(…)` with three-valued logic.
    And(Vec<Expr>),
    /// `OR(…)` with three-valued logic.
    Or(Vec<Expr>),
    /// `NOT(…)`.
    Not(Box<Expr>),
    /// `op(left, right)`.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The left operand.
        left: Box<Expr>,
        /// The right operand.
        right: Box<Expr>,
        /// The result type.
        ty: DataType,
    },
    /// `-(expr)`.
    Negate {
        /// The operand.
        expr: Box<Expr>,
        /// Its type.
        ty: DataType,
    },
}

impl Expr {
    /// The result type.
    pub fn data_type(&self) -> DataType {
        match self {
            Expr::Column { ty, .. }
            | Expr::Literal { ty, .. }
            | Expr::Call { ty, .. }
            | Expr::Cast { ty, .. }
            | Expr::Case { ty, .. }
            | Expr::InList { ty, .. }
            | Expr::Like { ty, .. }
            | Expr::Field { ty, .. }
            | Expr::Element { ty, .. }
            | Expr::Binary { ty, .. }
            | Expr::Negate { ty, .. } => ty.clone(),
            Expr::Is { .. } => DataType::boolean().not_null(),
            Expr::And(args) | Expr::Or(args) => {
                DataType::boolean().with_nullable(args.iter().any(|a| a.data_type().nullable))
            }
            Expr::Not(e) => DataType::boolean().with_nullable(e.data_type().nullable),
        }
    }

    /// A literal of this value and type.
    pub fn literal(value: Value, ty: DataType) -> Expr {
        Expr::Literal { value, ty }
    }

    /// The value, if this is a literal.
    pub fn as_literal(&self) -> Option<&Value> {
        match self {
            Expr::Literal { value, .. } => Some(value),
            _ => None,
        }
    }

    /// Whether evaluation gives the same value for the same row (no call of a non-deterministic
    /// function such as `CURRENT_TIMESTAMP` or `RAND`).
    pub fn is_deterministic(&self) -> bool {
        let mut deterministic = true;
        self.visit(&mut |e| {
            if let Expr::Call { func, .. } = e {
                deterministic &= func.deterministic;
            }
        });
        deterministic
    }

    /// The input columns the expression reads, ascending, without repeats.
    pub fn columns(&self) -> Vec<usize> {
        let mut cols = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Column { index, .. } = e {
                cols.push(*index);
            }
        });
        cols.sort_unstable();
        cols.dedup();
        cols
    }

    /// Calls `f` on this node and every node below it, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        for child in self.children() {
            child.visit(f);
        }
    }

    /// The same expression with every column index mapped by `f` (for a planner that moves
    /// columns, e.g. after projection pushdown).
    pub fn map_columns(&self, f: &dyn Fn(usize) -> usize) -> Expr {
        let mut e = self.clone();
        e.remap(f);
        e
    }

    /// The same expression with every column replaced by `f(index, name)` (for a planner that
    /// merges two projections: the upper one's columns become the lower one's expressions).
    pub fn substitute_columns(&self, f: &dyn Fn(usize, &str) -> Expr) -> Expr {
        let mut e = self.clone();
        e.substitute(f);
        e
    }

    fn substitute(&mut self, f: &dyn Fn(usize, &str) -> Expr) {
        if let Expr::Column { index, name, .. } = self {
            *self = f(*index, name);
            return;
        }
        for child in self.children_mut() {
            child.substitute(f);
        }
    }

    fn remap(&mut self, f: &dyn Fn(usize) -> usize) {
        if let Expr::Column { index, .. } = self {
            *index = f(*index);
        }
        for child in self.children_mut() {
            child.remap(f);
        }
    }

    /// The node's direct operands, in evaluation order (for analyses that walk a tree
    /// themselves and stop where they like).
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Column { .. } | Expr::Literal { .. } => vec![],
            Expr::Call { args, .. } | Expr::And(args) | Expr::Or(args) => args.iter().collect(),
            Expr::Cast { expr, .. }
            | Expr::Is { expr, .. }
            | Expr::Field { expr, .. }
            | Expr::Not(expr)
            | Expr::Negate { expr, .. } => vec![expr],
            Expr::Case {
                branches,
                otherwise,
                ..
            } => branches
                .iter()
                .flat_map(|(c, v)| [c, v])
                .chain(std::iter::once(&**otherwise))
                .collect(),
            Expr::InList { expr, list, .. } => std::iter::once(&**expr).chain(list).collect(),
            Expr::Like { expr, pattern, .. } => vec![expr, pattern],
            Expr::Element { expr, key, .. } => vec![expr, key],
            Expr::Binary { left, right, .. } => vec![left, right],
        }
    }

    /// [`Expr::children`], to rewrite them in place.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Expr::Column { .. } | Expr::Literal { .. } => vec![],
            Expr::Call { args, .. } | Expr::And(args) | Expr::Or(args) => args.iter_mut().collect(),
            Expr::Cast { expr, .. }
            | Expr::Is { expr, .. }
            | Expr::Field { expr, .. }
            | Expr::Not(expr)
            | Expr::Negate { expr, .. } => vec![expr],
            Expr::Case {
                branches,
                otherwise,
                ..
            } => branches
                .iter_mut()
                .flat_map(|(c, v)| [c, v])
                .chain(std::iter::once(&mut **otherwise))
                .collect(),
            Expr::InList { expr, list, .. } => std::iter::once(&mut **expr)
                .chain(list.iter_mut())
                .collect(),
            Expr::Like { expr, pattern, .. } => vec![expr, pattern],
            Expr::Element { expr, key, .. } => vec![expr, key],
            Expr::Binary { left, right, .. } => vec![left, right],
        }
    }
}

/// Writes `name(a, b, …)`.
fn call(f: &mut fmt::Formatter<'_>, name: &str, args: &[&Expr]) -> fmt::Result {
    write!(f, "{name}(")?;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{a}")?;
    }
    f.write_str(")")
}

/// A literal as Calcite's `RexLiteral` prints it: the value, and its type where Flink shows it
/// (`1007:BIGINT`, `0.908:DECIMAL(4, 3)`, `_UTF-16LE'apple'`; `INTEGER` and `BOOLEAN` plain).
fn write_literal(f: &mut fmt::Formatter<'_>, value: &Value, ty: &DataType) -> fmt::Result {
    match (value, &ty.logical) {
        (Value::Null, _) => write!(f, "null:{}", ty.logical),
        (Value::Str(s), _) => write!(f, "_UTF-16LE'{}'", s.replace('\'', "''")),
        (Value::Bool(b), _) => write!(f, "{b}"),
        (Value::Int(i), LogicalType::Int) => write!(f, "{i}"),
        (Value::Decimal(d), _) => write!(f, "{d}:{}", ty.logical),
        (Value::Timestamp(_) | Value::Date(_) | Value::Time(_), _) => {
            let text = crate::cast::to_text(value, ty);
            write!(f, "{text}:{}", ty.logical)
        }
        (Value::IntervalMillis(ms), _) => write!(f, "{ms}:INTERVAL SECOND"),
        (Value::IntervalMonths(m), _) => write!(f, "{m}:INTERVAL MONTH"),
        _ => {
            let text = crate::cast::to_text(value, ty);
            write!(f, "{text}:{}", ty.logical)
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column { name, .. } => f.write_str(name),
            Expr::Literal { value, ty } => write_literal(f, value, ty),
            Expr::Call { func, args, .. } => {
                // Calcite rewrites HOUR(x) and friends to EXTRACT(FLAG(HOUR), x).
                let flag = match func.display_name.as_str() {
                    "YEAR" | "QUARTER" | "MONTH" | "WEEK" | "HOUR" | "MINUTE" | "SECOND" => {
                        Some(func.display_name.as_str())
                    }
                    "DAYOFMONTH" => Some("DAY"),
                    "DAYOFWEEK" => Some("DOW"),
                    "DAYOFYEAR" => Some("DOY"),
                    _ => None,
                };
                match (flag, args.as_slice()) {
                    (Some(flag), [arg]) => write!(f, "EXTRACT(FLAG({flag}), {arg})"),
                    _ => {
                        let refs: Vec<&Expr> = args.iter().collect();
                        call(f, &func.display_name, &refs)
                    }
                }
            }
            Expr::Cast { expr, ty, safe } => {
                let name = if *safe { "TRY_CAST" } else { "CAST" };
                write!(f, "{name}({expr} AS {ty})")
            }
            Expr::Case {
                branches,
                otherwise,
                ..
            } => {
                let mut refs: Vec<&Expr> = branches.iter().flat_map(|(c, v)| [c, v]).collect();
                refs.push(otherwise);
                call(f, "CASE", &refs)
            }
            Expr::InList {
                expr,
                list,
                negated,
                ..
            } => {
                let mut refs: Vec<&Expr> = vec![expr];
                refs.extend(list.iter());
                call(f, if *negated { "NOT IN" } else { "IN" }, &refs)
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
                similar,
                ..
            } => {
                let name = match (similar, negated) {
                    (false, false) => "LIKE",
                    (false, true) => "NOT LIKE",
                    (true, false) => "SIMILAR TO",
                    (true, true) => "NOT SIMILAR TO",
                };
                match escape {
                    Some(c) => {
                        let esc = Expr::literal(Value::str(&c.to_string()), DataType::string());
                        call(f, name, &[expr, pattern, &esc])
                    }
                    None => call(f, name, &[expr, pattern]),
                }
            }
            Expr::Is { expr, test } => call(f, test.name(), &[expr]),
            Expr::Field { expr, name, .. } => write!(f, "{expr}.{name}"),
            Expr::Element { expr, key, .. } => call(f, "ITEM", &[expr, key]),
            Expr::And(args) => call(f, "AND", &args.iter().collect::<Vec<_>>()),
            Expr::Or(args) => call(f, "OR", &args.iter().collect::<Vec<_>>()),
            Expr::Not(e) => call(f, "NOT", &[e]),
            Expr::Binary {
                op, left, right, ..
            } => call(f, op.symbol(), &[left, right]),
            Expr::Negate { expr, .. } => call(f, "-", &[expr]),
        }
    }
}
