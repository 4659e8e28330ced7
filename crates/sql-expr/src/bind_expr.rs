//! Binding: `sqlparser`'s `ast::Expr` against a [`Scope`] of visible columns into a typed
//! [`Expr`], with Flink's name resolution and type rules.
//!
//! * Names are case-sensitive (Flink's default). `a.b` is first table alias `a`, column `b`;
//!   otherwise column `a` (a `ROW`) and its field `b` (Calcite's order). A name two inputs share
//!   is ambiguous unless qualified. An unknown name is refused with the nearest known names.
//! * Aggregate calls (`COUNT`, `SUM`, …) are not bound here: the planner computes them and
//!   lists them in the scope ([`Scope::pre_bind`]) under their text; the binder then reads them
//!   as columns. An aggregate the planner did not pre-bind is refused.
//! * `OVER` windows, subqueries and other unsupported forms are refused with their position.

use std::sync::Arc;

use sqlparser::ast::{self, Spanned};

use crate::error::{Position, Result, SqlError};
use crate::eval::{like_to_regex, similar_to_regex};
use crate::expr::{BinaryOp, Expr, IsTest, Pattern};
use crate::functions::FunctionRegistry;
use crate::types::{DataType, LogicalType, TimestampKind, MAX_LENGTH};
use crate::typing::{self, ArithOp};
use crate::value::{Decimal, Value};

/// One column a scope shows.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeColumn {
    /// The table alias (or table name) that qualifies it, if any.
    pub qualifier: Option<String>,
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: DataType,
}

/// The columns an expression can name, in input-row order, plus expressions the planner has
/// already computed into columns (aggregates, grouping keys).
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// The visible columns; a column's position is its index in the row.
    pub columns: Vec<ScopeColumn>,
    /// `(expression text, column index)`: an `ast::Expr` whose text (its `Display`) is listed is
    /// read as that column.
    pub pre_bound: Vec<(String, usize)>,
}

impl Scope {
    /// A scope of these columns.
    pub fn new(columns: Vec<ScopeColumn>) -> Scope {
        Scope {
            columns,
            pre_bound: Vec::new(),
        }
    }

    /// A scope of unqualified `(name, type)` columns.
    pub fn of(columns: &[(&str, DataType)]) -> Scope {
        Scope::new(
            columns
                .iter()
                .map(|(n, t)| ScopeColumn {
                    qualifier: None,
                    name: (*n).to_string(),
                    ty: t.clone(),
                })
                .collect(),
        )
    }

    /// The same columns, all qualified by `qualifier`.
    pub fn qualified(mut self, qualifier: &str) -> Scope {
        for c in &mut self.columns {
            c.qualifier = Some(qualifier.to_string());
        }
        self
    }

    /// Reads `expr` (by its text) as column `index` from now on.
    pub fn pre_bind(&mut self, expr: &ast::Expr, index: usize) {
        self.pre_bound.push((expr.to_string(), index));
    }

    fn pre_bound_column(&self, expr: &ast::Expr) -> Option<usize> {
        if self.pre_bound.is_empty() {
            return None;
        }
        let text = expr.to_string();
        self.pre_bound
            .iter()
            .find(|(t, _)| *t == text)
            .map(|(_, i)| *i)
    }
}

/// What binding needs besides the scope: the functions and where the text starts.
#[derive(Clone, Copy, Debug)]
pub struct BindContext<'a> {
    /// The functions calls may name.
    pub functions: &'a FunctionRegistry,
    /// The script position of the parsed text's first character (line 1, column 1 of the text
    /// maps here), so that errors name places in the script.
    pub base: Position,
}

impl<'a> BindContext<'a> {
    /// A context for text that starts at line 1, column 1.
    pub fn new(functions: &'a FunctionRegistry) -> BindContext<'a> {
        BindContext {
            functions,
            base: Position { line: 1, column: 1 },
        }
    }

    /// The script position of a node, if the parser recorded one.
    pub fn position(&self, node: &impl Spanned) -> Option<Position> {
        let start = node.span().start;
        if start.line == 0 {
            return None;
        }
        Some(if start.line == 1 {
            Position {
                line: self.base.line,
                column: self.base.column + start.column - 1,
            }
        } else {
            Position {
                line: self.base.line + start.line - 1,
                column: start.column,
            }
        })
    }
}

/// The aggregate functions the planner extracts before binding.
pub const AGGREGATES: &[&str] = &[
    "COUNT",
    "SUM",
    "MIN",
    "MAX",
    "AVG",
    "SUM0",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VAR_POP",
    "VAR_SAMP",
    "COLLECT",
    "LISTAGG",
    "FIRST_VALUE",
    "LAST_VALUE",
    "ARRAY_AGG",
];

/// Whether `expr` is a call of an aggregate function (`COUNT(*)`, `SUM(price)`,
/// `COUNT(DISTINCT bidder)`); an `OVER` call is not (it is a window function).
pub fn is_aggregate_call(expr: &ast::Expr) -> bool {
    match expr {
        ast::Expr::Function(f) => {
            f.over.is_none() && AGGREGATES.contains(&f.name.to_string().to_uppercase().as_str())
        }
        _ => false,
    }
}

/// Binds an expression.
pub fn bind_expr(expr: &ast::Expr, scope: &Scope, ctx: &BindContext<'_>) -> Result<Expr> {
    Binder { scope, ctx }.bind(expr)
}

/// Levenshtein distance, case-insensitive.
/// The known names nearest to `name`: the catalog's rule (at most three, within two edits or a
/// prefix), so tables, columns and functions are suggested alike.
pub use sluice_sql_front::catalog::nearest as nearest_names;

struct Binder<'s, 'c> {
    scope: &'s Scope,
    ctx: &'c BindContext<'c>,
}

fn literal(value: Value, ty: DataType) -> Expr {
    Expr::Literal { value, ty }
}

fn null_literal() -> Expr {
    literal(Value::Null, DataType::new(LogicalType::Null))
}

impl Binder<'_, '_> {
    fn pos(&self, node: &impl Spanned) -> Option<Position> {
        self.ctx.position(node)
    }

    fn bind(&self, e: &ast::Expr) -> Result<Expr> {
        if let Some(index) = self.scope.pre_bound_column(e) {
            let c = self.scope.columns.get(index);
            return Ok(Expr::Column {
                index,
                name: c.map(|c| c.name.clone()).unwrap_or_else(|| e.to_string()),
                ty: c.map(|c| c.ty.clone()).unwrap_or_else(DataType::string),
            });
        }
        let pos = self.pos(e);
        match e {
            ast::Expr::Identifier(id) => self.resolve(std::slice::from_ref(id), pos),
            ast::Expr::CompoundIdentifier(ids) => self.resolve(ids, pos),
            ast::Expr::Nested(inner) => self.bind(inner),
            ast::Expr::Value(v) => self.bind_value(&v.value, pos),
            ast::Expr::TypedString(ts) => self.bind_typed_string(ts, pos),
            ast::Expr::Interval(iv) => self.bind_interval(iv, pos),
            ast::Expr::BinaryOp { left, op, right } => self.bind_binary(left, op, right, pos),
            ast::Expr::UnaryOp { op, expr } => {
                let inner = self.bind(expr)?;
                match op {
                    ast::UnaryOperator::Not => {
                        self.expect_boolean(&inner, "NOT", pos)?;
                        Ok(Expr::Not(Box::new(inner)))
                    }
                    ast::UnaryOperator::Minus => {
                        // A negative literal stays a literal (Calcite folds it too).
                        if let Expr::Literal { value, ty } = &inner {
                            let neg = match value {
                                Value::Int(i) => Some(Value::Int(-i)),
                                Value::Decimal(d) => Some(Value::Decimal(Decimal {
                                    unscaled: -d.unscaled,
                                    scale: d.scale,
                                })),
                                Value::Double(x) => Some(Value::Double(-x)),
                                Value::IntervalMillis(x) => Some(Value::IntervalMillis(-x)),
                                Value::IntervalMonths(x) => Some(Value::IntervalMonths(-x)),
                                _ => None,
                            };
                            if let Some(v) = neg {
                                return Ok(literal(v, ty.clone()));
                            }
                        }
                        let ty = inner.data_type();
                        if !ty.is_numeric()
                            && !matches!(
                                ty.logical,
                                LogicalType::IntervalDayTime | LogicalType::IntervalYearMonth
                            )
                        {
                            return Err(SqlError::validation(
                                pos,
                                format!("Cannot apply '-' to an operand of type {ty}"),
                            ));
                        }
                        Ok(Expr::Negate {
                            expr: Box::new(inner),
                            ty,
                        })
                    }
                    ast::UnaryOperator::Plus => Ok(inner),
                    other => Err(SqlError::unsupported(pos, format!("the operator {other}"))),
                }
            }
            ast::Expr::IsNull(x) => self.is(x, IsTest::Null),
            ast::Expr::IsNotNull(x) => self.is(x, IsTest::NotNull),
            ast::Expr::IsTrue(x) => self.is_bool(x, IsTest::True, pos),
            ast::Expr::IsNotTrue(x) => self.is_bool(x, IsTest::NotTrue, pos),
            ast::Expr::IsFalse(x) => self.is_bool(x, IsTest::False, pos),
            ast::Expr::IsNotFalse(x) => self.is_bool(x, IsTest::NotFalse, pos),
            ast::Expr::IsUnknown(x) => self.is_bool(x, IsTest::Null, pos),
            ast::Expr::IsNotUnknown(x) => self.is_bool(x, IsTest::NotNull, pos),
            ast::Expr::IsDistinctFrom(a, b) => self.compare(BinaryOp::IsDistinctFrom, a, b, pos),
            ast::Expr::IsNotDistinctFrom(a, b) => {
                self.compare(BinaryOp::IsNotDistinctFrom, a, b, pos)
            }
            ast::Expr::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => self.bind_in(expr, list, *negated, pos),
            ast::Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                // Calcite's expansion: x >= lo AND x <= hi (NOT: x < lo OR x > hi).
                let (ge, le) = if *negated {
                    (BinaryOp::Lt, BinaryOp::Gt)
                } else {
                    (BinaryOp::GtEq, BinaryOp::LtEq)
                };
                let a = self.compare(ge, expr, low, pos)?;
                let b = self.compare(le, expr, high, pos)?;
                Ok(if *negated {
                    Expr::Or(vec![a, b])
                } else {
                    Expr::And(vec![a, b])
                })
            }
            ast::Expr::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => self.bind_like(expr, pattern, escape_char.as_deref(), *negated, false, pos),
            ast::Expr::SimilarTo {
                negated,
                expr,
                pattern,
                escape_char,
            } => self.bind_like(expr, pattern, escape_char.as_deref(), *negated, true, pos),
            ast::Expr::Cast {
                kind,
                expr,
                data_type,
                format: None,
            } => {
                let safe = match kind {
                    ast::CastKind::Cast => false,
                    ast::CastKind::TryCast | ast::CastKind::SafeCast => true,
                    ast::CastKind::DoubleColon => {
                        return Err(SqlError::unsupported(
                            pos,
                            "'::' casts (write CAST(x AS type))",
                        ))
                    }
                };
                let inner = self.bind(expr)?;
                let target = sql_type(data_type)
                    .ok_or_else(|| SqlError::unsupported(pos, format!("the type {data_type}")))?;
                let from = inner.data_type();
                if !typing::can_cast(&from.logical, &target.logical) {
                    return Err(SqlError::validation(
                        pos,
                        format!(
                            "Cast function cannot convert value of type {from} to type {target}"
                        ),
                    ));
                }
                let nullable =
                    from.nullable || safe || matches!(target.logical, LogicalType::Decimal { .. });
                let ty = target.with_nullable(nullable);
                Ok(Expr::Cast {
                    expr: Box::new(inner),
                    ty,
                    safe,
                })
            }
            ast::Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.bind_case(operand.as_deref(), conditions, else_result.as_deref(), pos),
            ast::Expr::Extract { field, expr, .. } => {
                let name = match field {
                    ast::DateTimeField::Year => "YEAR",
                    ast::DateTimeField::Month => "MONTH",
                    ast::DateTimeField::Day => "DAYOFMONTH",
                    ast::DateTimeField::Hour => "HOUR",
                    ast::DateTimeField::Minute => "MINUTE",
                    ast::DateTimeField::Second => "SECOND",
                    ast::DateTimeField::Quarter => "QUARTER",
                    ast::DateTimeField::Week(_) => "WEEK",
                    ast::DateTimeField::DayOfWeek | ast::DateTimeField::Dow => "DAYOFWEEK",
                    ast::DateTimeField::DayOfYear | ast::DateTimeField::Doy => "DAYOFYEAR",
                    other => {
                        return Err(SqlError::unsupported(
                            pos,
                            format!("EXTRACT({other} FROM …)"),
                        ))
                    }
                };
                let arg = self.bind(expr)?;
                self.call(name, vec![arg], pos)
            }
            ast::Expr::Ceil { expr, field } | ast::Expr::Floor { expr, field } => {
                let name = if matches!(e, ast::Expr::Ceil { .. }) {
                    "CEIL"
                } else {
                    "FLOOR"
                };
                match field {
                    ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) => {}
                    _ => {
                        return Err(SqlError::unsupported(
                            pos,
                            format!("{name} with a time unit"),
                        ))
                    }
                }
                let arg = self.bind(expr)?;
                self.call(name, vec![arg], pos)
            }
            ast::Expr::Position { expr, r#in } => {
                let args = vec![self.bind(expr)?, self.bind(r#in)?];
                self.call("POSITION", args, pos)
            }
            ast::Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.bind(expr)?];
                match substring_from {
                    Some(f) => args.push(self.bind(f)?),
                    None => args.push(literal(Value::Int(1), DataType::int().not_null())),
                }
                if let Some(f) = substring_for {
                    args.push(self.bind(f)?);
                }
                self.call("SUBSTRING", args, pos)
            }
            ast::Expr::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters: None,
            } => {
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "LTRIM",
                    Some(ast::TrimWhereField::Trailing) => "RTRIM",
                    _ => "TRIM",
                };
                let mut args = vec![self.bind(expr)?];
                if let Some(w) = trim_what {
                    args.push(self.bind(w)?);
                }
                self.call(name, args, pos)
            }
            ast::Expr::Function(f) => self.bind_function(f, pos),
            ast::Expr::CompoundFieldAccess { root, access_chain } => {
                let mut cur = self.bind(root)?;
                for access in access_chain {
                    cur = match access {
                        ast::AccessExpr::Dot(ast::Expr::Identifier(id)) => {
                            self.field(cur, &id.value, pos)?
                        }
                        ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                            let key = self.bind(index)?;
                            self.element(cur, key, pos)?
                        }
                        other => {
                            return Err(SqlError::unsupported(pos, format!("the access {other}")))
                        }
                    };
                }
                Ok(cur)
            }
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::In { .. } => {
                Err(SqlError::unsupported(pos, "subqueries in expressions"))
            }
            other => Err(SqlError::unsupported(
                pos,
                format!("the expression '{other}'"),
            )),
        }
    }

    fn expect_boolean(&self, e: &Expr, what: &str, pos: Option<Position>) -> Result<()> {
        let ty = e.data_type();
        if matches!(ty.logical, LogicalType::Boolean | LogicalType::Null) {
            Ok(())
        } else {
            Err(SqlError::validation(
                pos,
                format!("{what} expects a BOOLEAN operand, got {ty}"),
            ))
        }
    }

    fn is(&self, x: &ast::Expr, test: IsTest) -> Result<Expr> {
        Ok(Expr::Is {
            expr: Box::new(self.bind(x)?),
            test,
        })
    }

    fn is_bool(&self, x: &ast::Expr, test: IsTest, pos: Option<Position>) -> Result<Expr> {
        let inner = self.bind(x)?;
        self.expect_boolean(&inner, "IS TRUE/FALSE", pos)?;
        Ok(Expr::Is {
            expr: Box::new(inner),
            test,
        })
    }

    /// Resolves `a`, `t.a`, `t.row.field`, `row.field`…
    fn resolve(&self, ids: &[ast::Ident], pos: Option<Position>) -> Result<Expr> {
        let names: Vec<&str> = ids.iter().map(|i| i.value.as_str()).collect();
        let cols = &self.scope.columns;
        // Qualified: table alias first.
        if names.len() >= 2 {
            let hits: Vec<usize> = (0..cols.len())
                .filter(|&i| {
                    cols[i].qualifier.as_deref() == Some(names[0]) && cols[i].name == names[1]
                })
                .collect();
            if hits.len() == 1 {
                let mut e = self.column(hits[0]);
                for f in &names[2..] {
                    e = self.field(e, f, pos)?;
                }
                return Ok(e);
            }
        }
        let hits: Vec<usize> = (0..cols.len())
            .filter(|&i| cols[i].name == names[0])
            .collect();
        match hits.len() {
            1 => {
                let mut e = self.column(hits[0]);
                for f in &names[1..] {
                    e = self.field(e, f, pos)?;
                }
                Ok(e)
            }
            0 => {
                let is_qualifier = names.len() >= 2
                    && cols
                        .iter()
                        .any(|c| c.qualifier.as_deref() == Some(names[0]));
                if is_qualifier {
                    let known = cols
                        .iter()
                        .filter(|c| c.qualifier.as_deref() == Some(names[0]))
                        .map(|c| c.name.as_str());
                    return Err(SqlError::UnknownName {
                        pos,
                        kind: "Column",
                        name: format!("{}.{}", names[0], names[1]),
                        nearest_names: nearest_names(names[1], known),
                    });
                }
                Err(SqlError::UnknownName {
                    pos,
                    kind: "Column",
                    name: names[0].to_string(),
                    nearest_names: nearest_names(names[0], cols.iter().map(|c| c.name.as_str())),
                })
            }
            _ => {
                let tables: Vec<String> = hits
                    .iter()
                    .filter_map(|&i| cols[i].qualifier.clone())
                    .collect();
                Err(SqlError::validation(
                    pos,
                    format!(
                        "Column '{}' is ambiguous (it is in {}); qualify it",
                        names[0],
                        if tables.is_empty() {
                            "several inputs".to_string()
                        } else {
                            tables.join(", ")
                        }
                    ),
                ))
            }
        }
    }

    fn column(&self, index: usize) -> Expr {
        let c = &self.scope.columns[index];
        Expr::Column {
            index,
            name: c.name.clone(),
            ty: c.ty.clone(),
        }
    }

    fn field(&self, e: Expr, name: &str, pos: Option<Position>) -> Result<Expr> {
        let ty = e.data_type();
        let LogicalType::Row(fields) = &ty.logical else {
            return Err(SqlError::validation(
                pos,
                format!("'{e}' is of type {ty}, not a ROW: it has no field '{name}'"),
            ));
        };
        match fields.iter().position(|f| f.name == name) {
            Some(index) => {
                let fty = fields[index].ty.clone();
                let nullable = fty.nullable || ty.nullable;
                Ok(Expr::Field {
                    expr: Box::new(e),
                    index,
                    name: name.to_string(),
                    ty: fty.with_nullable(nullable),
                })
            }
            None => Err(SqlError::UnknownName {
                pos,
                kind: "Field",
                name: name.to_string(),
                nearest_names: nearest_names(name, fields.iter().map(|f| f.name.as_str())),
            }),
        }
    }

    fn element(&self, e: Expr, key: Expr, pos: Option<Position>) -> Result<Expr> {
        let ty = e.data_type();
        let kt = key.data_type();
        let elem = match &ty.logical {
            LogicalType::Array(t) if kt.is_integer() => (**t).clone(),
            LogicalType::Map(k, v) if typing::common_type(k, &kt).is_some() => (**v).clone(),
            _ => {
                return Err(SqlError::validation(
                    pos,
                    format!("Cannot index a value of type {ty} with a key of type {kt}"),
                ))
            }
        };
        Ok(Expr::Element {
            expr: Box::new(e),
            key: Box::new(key),
            ty: elem.with_nullable(true),
        })
    }

    fn bind_value(&self, v: &ast::Value, pos: Option<Position>) -> Result<Expr> {
        Ok(match v {
            ast::Value::Number(text, _) => number_literal(text).ok_or_else(|| {
                SqlError::validation(pos, format!("Numeric literal '{text}' out of range"))
            })?,
            ast::Value::SingleQuotedString(s) => {
                let n = s.chars().count() as u32;
                literal(
                    Value::str(s),
                    DataType::new(LogicalType::Char { length: n }).not_null(),
                )
            }
            ast::Value::Boolean(b) => literal(Value::Bool(*b), DataType::boolean().not_null()),
            ast::Value::Null => null_literal(),
            other => return Err(SqlError::unsupported(pos, format!("the literal {other}"))),
        })
    }

    fn bind_typed_string(&self, ts: &ast::TypedString, pos: Option<Position>) -> Result<Expr> {
        let text = match &ts.value.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        };
        let bad =
            || SqlError::validation(pos, format!("Illegal {} literal '{text}'", ts.data_type));
        match &ts.data_type {
            ast::DataType::Timestamp(p, _) => {
                let t = crate::datetime::parse_timestamp(&text).ok_or_else(bad)?;
                // Calcite: the literal's precision is the digits written (at least 0).
                let digits = text
                    .split_once('.')
                    .map(|(_, f)| f.trim().len())
                    .unwrap_or(0) as u8;
                let precision = p.map(|p| p as u8).unwrap_or(digits);
                Ok(literal(
                    Value::Timestamp(t),
                    DataType::timestamp(precision).not_null(),
                ))
            }
            ast::DataType::Date => {
                let d = crate::datetime::parse_date(&text).ok_or_else(bad)?;
                Ok(literal(
                    Value::Date(d as i32),
                    DataType::new(LogicalType::Date).not_null(),
                ))
            }
            ast::DataType::Time(p, _) => {
                let t = crate::datetime::parse_time(&text).ok_or_else(bad)?;
                Ok(literal(
                    Value::Time(t),
                    DataType::new(LogicalType::Time {
                        precision: p.unwrap_or(0) as u8,
                    })
                    .not_null(),
                ))
            }
            other => Err(SqlError::unsupported(pos, format!("{other} literals"))),
        }
    }

    fn bind_interval(&self, iv: &ast::Interval, pos: Option<Position>) -> Result<Expr> {
        let text = match iv.value.as_ref() {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                ast::Value::Number(n, _) => n.clone(),
                other => other.to_string(),
            },
            other => {
                return Err(SqlError::unsupported(
                    pos,
                    format!("the interval value {other}"),
                ))
            }
        };
        let v = interval_value(&text, iv.leading_field.as_ref(), iv.last_field.as_ref())
            .ok_or_else(|| {
                SqlError::validation(pos, format!("Illegal interval literal '{text}'"))
            })?;
        let ty = match v {
            Value::IntervalMonths(_) => LogicalType::IntervalYearMonth,
            _ => LogicalType::IntervalDayTime,
        };
        Ok(literal(v, DataType::new(ty).not_null()))
    }

    fn compare(
        &self,
        op: BinaryOp,
        a: &ast::Expr,
        b: &ast::Expr,
        pos: Option<Position>,
    ) -> Result<Expr> {
        let l = self.bind(a)?;
        let r = self.bind(b)?;
        self.comparison(op, l, r, pos)
    }

    fn comparison(&self, op: BinaryOp, l: Expr, r: Expr, pos: Option<Position>) -> Result<Expr> {
        let (lt, rt) = (l.data_type(), r.data_type());
        if !typing::comparable(&lt, &rt) {
            return Err(SqlError::validation(
                pos,
                format!(
                    "Cannot apply '{}' to arguments of type '<{lt}> {} <{rt}>'",
                    op.symbol(),
                    op.symbol()
                ),
            ));
        }
        let nullable = match op {
            BinaryOp::IsDistinctFrom | BinaryOp::IsNotDistinctFrom => false,
            _ => lt.nullable || rt.nullable,
        };
        Ok(Expr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
            ty: DataType::boolean().with_nullable(nullable),
        })
    }

    fn arithmetic(&self, op: BinaryOp, l: Expr, r: Expr, pos: Option<Position>) -> Result<Expr> {
        let aop = match op {
            BinaryOp::Plus => ArithOp::Plus,
            BinaryOp::Minus => ArithOp::Minus,
            BinaryOp::Times => ArithOp::Times,
            BinaryOp::Divide => ArithOp::Divide,
            _ => ArithOp::Mod,
        };
        let (lt, rt) = (l.data_type(), r.data_type());
        let ty = typing::arithmetic_type(aop, &lt, &rt).ok_or_else(|| {
            SqlError::validation(
                pos,
                format!(
                    "Cannot apply '{}' to arguments of type '<{lt}> {} <{rt}>'",
                    op.symbol(),
                    op.symbol()
                ),
            )
        })?;
        Ok(Expr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
            ty,
        })
    }

    fn bind_binary(
        &self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        pos: Option<Position>,
    ) -> Result<Expr> {
        use ast::BinaryOperator as B;
        let cmp = |o| self.compare(o, left, right, pos);
        match op {
            B::Eq => cmp(BinaryOp::Eq),
            B::NotEq => cmp(BinaryOp::NotEq),
            B::Lt => cmp(BinaryOp::Lt),
            B::LtEq => cmp(BinaryOp::LtEq),
            B::Gt => cmp(BinaryOp::Gt),
            B::GtEq => cmp(BinaryOp::GtEq),
            B::And | B::Or => {
                let (l, r) = (self.bind(left)?, self.bind(right)?);
                let name = if matches!(op, B::And) { "AND" } else { "OR" };
                self.expect_boolean(&l, name, pos)?;
                self.expect_boolean(&r, name, pos)?;
                // Flatten nested ANDs/ORs as Calcite does: AND(a, b, c).
                let mut args = Vec::new();
                for x in [l, r] {
                    match (x, matches!(op, B::And)) {
                        (Expr::And(inner), true) => args.extend(inner),
                        (Expr::Or(inner), false) => args.extend(inner),
                        (x, _) => args.push(x),
                    }
                }
                Ok(if matches!(op, B::And) {
                    Expr::And(args)
                } else {
                    Expr::Or(args)
                })
            }
            B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo => {
                let o = match op {
                    B::Plus => BinaryOp::Plus,
                    B::Minus => BinaryOp::Minus,
                    B::Multiply => BinaryOp::Times,
                    B::Divide => BinaryOp::Divide,
                    _ => BinaryOp::Mod,
                };
                let (l, r) = (self.bind(left)?, self.bind(right)?);
                self.arithmetic(o, l, r, pos)
            }
            B::StringConcat => {
                let (l, r) = (self.bind(left)?, self.bind(right)?);
                let ty = typing::concat_type(&l.data_type(), &r.data_type()).ok_or_else(|| {
                    SqlError::validation(
                        pos,
                        format!(
                            "Cannot apply '||' to arguments of type '<{}> || <{}>'",
                            l.data_type(),
                            r.data_type()
                        ),
                    )
                })?;
                Ok(Expr::Binary {
                    op: BinaryOp::Concat,
                    left: Box::new(l),
                    right: Box::new(r),
                    ty,
                })
            }
            other => Err(SqlError::unsupported(pos, format!("the operator {other}"))),
        }
    }

    fn bind_in(
        &self,
        expr: &ast::Expr,
        list: &[ast::Expr],
        negated: bool,
        pos: Option<Position>,
    ) -> Result<Expr> {
        let x = self.bind(expr)?;
        let items: Vec<Expr> = list.iter().map(|i| self.bind(i)).collect::<Result<_>>()?;
        let xt = x.data_type();
        let mut nullable = xt.nullable;
        for i in &items {
            let it = i.data_type();
            if !typing::comparable(&xt, &it) {
                return Err(SqlError::validation(
                    pos,
                    format!(
                        "Values passed to IN operator must have compatible types: {xt} and {it}"
                    ),
                ));
            }
            nullable |= it.nullable;
        }
        Ok(Expr::InList {
            expr: Box::new(x),
            list: items,
            negated,
            ty: DataType::boolean().with_nullable(nullable),
        })
    }

    fn bind_like(
        &self,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        escape: Option<&ast::Expr>,
        negated: bool,
        similar: bool,
        pos: Option<Position>,
    ) -> Result<Expr> {
        let x = self.bind(expr)?;
        let p = self.bind(pattern)?;
        for t in [x.data_type(), p.data_type()] {
            if !t.is_string() && !matches!(t.logical, LogicalType::Null) {
                return Err(SqlError::validation(
                    pos,
                    format!("LIKE expects STRING operands, got {t}"),
                ));
            }
        }
        let escape = match escape {
            None => None,
            Some(e) => match self.bind(e)?.as_literal() {
                Some(Value::Str(s)) if s.chars().count() == 1 => s.chars().next(),
                _ => {
                    return Err(SqlError::validation(
                        pos,
                        "the ESCAPE of LIKE must be a one-character string literal",
                    ))
                }
            },
        };
        let compiled = match p.as_literal() {
            Some(Value::Str(text)) => {
                let re = if similar {
                    similar_to_regex(text, escape)
                } else {
                    like_to_regex(text, escape)
                };
                let regex = re.map_err(|m| SqlError::validation(pos, m))?;
                Some(Arc::new(Pattern {
                    text: text.to_string(),
                    regex,
                }))
            }
            _ => None,
        };
        let nullable = x.data_type().nullable || p.data_type().nullable;
        Ok(Expr::Like {
            expr: Box::new(x),
            pattern: Box::new(p),
            compiled,
            escape,
            negated,
            similar,
            ty: DataType::boolean().with_nullable(nullable),
        })
    }

    fn bind_case(
        &self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
        pos: Option<Position>,
    ) -> Result<Expr> {
        let operand = operand.map(|o| self.bind(o)).transpose()?;
        let mut branches = Vec::new();
        for w in conditions {
            let cond = match &operand {
                Some(x) => {
                    let v = self.bind(&w.condition)?;
                    self.comparison(BinaryOp::Eq, x.clone(), v, pos)?
                }
                None => {
                    let c = self.bind(&w.condition)?;
                    self.expect_boolean(&c, "CASE WHEN", pos)?;
                    c
                }
            };
            branches.push((cond, self.bind(&w.result)?));
        }
        let otherwise = match else_result {
            Some(e) => self.bind(e)?,
            None => null_literal(),
        };
        let types: Vec<DataType> = branches
            .iter()
            .map(|(_, v)| v.data_type())
            .chain(std::iter::once(otherwise.data_type()))
            .collect();
        let ty = typing::common_type_of(&types).ok_or_else(|| {
            let names: Vec<String> = types.iter().map(|t| t.to_string()).collect();
            SqlError::validation(
                pos,
                format!(
                    "Illegal mixing of types in CASE or COALESCE statement: {}",
                    names.join(", ")
                ),
            )
        })?;
        Ok(Expr::Case {
            branches,
            otherwise: Box::new(otherwise),
            ty,
        })
    }

    fn bind_function(&self, f: &ast::Function, pos: Option<Position>) -> Result<Expr> {
        let name = f.name.to_string();
        if f.over.is_some() {
            return Err(SqlError::unsupported(
                pos,
                format!("the window function {name}(…) OVER (…)"),
            ));
        }
        let upper = name.to_uppercase();
        if AGGREGATES.contains(&upper.as_str()) {
            return Err(SqlError::validation(
                pos,
                format!("Aggregate call {f} is not allowed here (aggregates belong in a SELECT with GROUP BY, HAVING or a window aggregation)"),
            ));
        }
        let args: Vec<&ast::Expr> = match &f.args {
            ast::FunctionArguments::None => vec![],
            ast::FunctionArguments::List(list) => {
                if list.duplicate_treatment.is_some() {
                    return Err(SqlError::unsupported(pos, format!("DISTINCT in {name}(…)")));
                }
                list.args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                        other => Err(SqlError::unsupported(
                            pos,
                            format!("the argument {other} of {name}"),
                        )),
                    })
                    .collect::<Result<_>>()?
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported(pos, "subqueries in expressions"))
            }
        };
        let bound: Vec<Expr> = args.iter().map(|a| self.bind(a)).collect::<Result<_>>()?;
        if upper == "MOD" {
            if bound.len() != 2 {
                return Err(SqlError::validation(pos, format!("Invalid number of arguments to function 'MOD'. Was expecting 2 arguments, got {}", bound.len())));
            }
            let mut it = bound.into_iter();
            if let (Some(l), Some(r)) = (it.next(), it.next()) {
                if !l.data_type().is_integer()
                    && !matches!(l.data_type().logical, LogicalType::Decimal { .. })
                {
                    return Err(SqlError::validation(pos, format!("Cannot apply 'MOD' to arguments of type 'MOD(<{}>, <{}>)'. Supported form(s): 'MOD(<EXACT_NUMERIC>, <EXACT_NUMERIC>)'", l.data_type(), r.data_type())));
                }
                return self.arithmetic(BinaryOp::Mod, l, r, pos);
            }
            return Err(SqlError::validation(pos, "MOD takes two arguments"));
        }
        self.call_named(&name, bound, pos)
    }

    fn call(&self, name: &str, args: Vec<Expr>, pos: Option<Position>) -> Result<Expr> {
        self.call_named(name, args, pos)
    }

    fn call_named(&self, name: &str, args: Vec<Expr>, pos: Option<Position>) -> Result<Expr> {
        let Some(func) = self.ctx.functions.get(name) else {
            return Err(SqlError::UnknownName {
                pos,
                kind: "Function",
                name: name.to_string(),
                nearest_names: nearest_names(&name.to_uppercase(), self.ctx.functions.names()),
            });
        };
        let types: Vec<DataType> = args.iter().map(Expr::data_type).collect();
        let lits: Vec<Option<&Value>> = args.iter().map(Expr::as_literal).collect();
        let Some(ty) = (func.return_type)(&types, &lits) else {
            let shown: Vec<String> = types.iter().map(|t| format!("<{t}>")).collect();
            return Err(SqlError::validation(
                pos,
                format!(
                    "Cannot apply '{}' to arguments of type '{}({})'. Supported form(s): '{}'",
                    func.display_name,
                    func.display_name,
                    shown.join(", "),
                    func.signature
                ),
            ));
        };
        let prepared = match func.prepare {
            Some(prepare) => prepare(&lits)
                .map_err(|m| SqlError::validation(pos, format!("{}: {m}", func.display_name)))?
                .map(Arc::new),
            None => None,
        };
        Ok(Expr::Call {
            func: func.clone(),
            args,
            prepared,
            ty,
        })
    }
}

/// A numeric literal's value and type: Calcite's rules (an integer is `INT`, `BIGINT` if it does not
/// fit, `DECIMAL(p, 0)` beyond; `0.908` is `DECIMAL(4, 3)`: every digit written counts; with an
/// exponent it is `DOUBLE`).
pub fn number_literal(text: &str) -> Option<Expr> {
    if text.contains(['e', 'E']) {
        return Some(literal(
            Value::Double(text.parse().ok()?),
            DataType::double().not_null(),
        ));
    }
    match text.split_once('.') {
        None => {
            if let Ok(i) = text.parse::<i64>() {
                let ty = if i32::try_from(i).is_ok() {
                    DataType::int()
                } else {
                    DataType::bigint()
                };
                return Some(literal(Value::Int(i), ty.not_null()));
            }
            let d = crate::cast::parse_decimal(text)?;
            let p = text.trim_start_matches('-').len() as u8;
            (p <= 38).then(|| literal(Value::Decimal(d), DataType::decimal(p, 0).not_null()))
        }
        Some((_, frac)) => {
            let d = crate::cast::parse_decimal(text)?;
            let digits = text.chars().filter(char::is_ascii_digit).count() as u8;
            let scale = frac.len() as u8;
            if digits > 38 {
                return None;
            }
            Some(literal(
                Value::Decimal(Decimal {
                    unscaled: d.rescale(scale)?.unscaled,
                    scale,
                }),
                DataType::decimal(digits.max(1), scale).not_null(),
            ))
        }
    }
}

/// The value of `INTERVAL 'text' leading [TO last]`.
fn interval_value(
    text: &str,
    leading: Option<&ast::DateTimeField>,
    last: Option<&ast::DateTimeField>,
) -> Option<Value> {
    use ast::DateTimeField as F;
    let text = text.trim();
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let unit_ms = |f: &F| -> Option<i64> {
        Some(match f {
            F::Day | F::Days => 86_400_000,
            F::Hour | F::Hours => 3_600_000,
            F::Minute | F::Minutes => 60_000,
            F::Second | F::Seconds => 1000,
            _ => return None,
        })
    };
    let sign = if neg { -1 } else { 1 };
    let leading = leading.unwrap_or(&F::Second);
    match (leading, last) {
        (F::Year | F::Years, None) => {
            Some(Value::IntervalMonths(sign * body.parse::<i32>().ok()? * 12))
        }
        (F::Month | F::Months, None) => {
            Some(Value::IntervalMonths(sign * body.parse::<i32>().ok()?))
        }
        (F::Year | F::Years, Some(F::Month | F::Months)) => {
            let (y, m) = body.split_once('-')?;
            Some(Value::IntervalMonths(
                sign * (y.parse::<i32>().ok()? * 12 + m.parse::<i32>().ok()?),
            ))
        }
        (f, None) => {
            let unit = unit_ms(f)?;
            let d = crate::cast::parse_decimal(body)?;
            let ms = d.unscaled * i128::from(unit) / crate::cast::pow10(u32::from(d.scale));
            Some(Value::IntervalMillis(
                i64::from(sign) * i64::try_from(ms).ok()?,
            ))
        }
        (f, Some(l)) => {
            // 'D H:M:S.fff' style: split on space and colon, fill from the leading field down.
            let units: Vec<i64> = [86_400_000i64, 3_600_000, 60_000, 1000]
                .into_iter()
                .skip_while(|u| Some(*u) != unit_ms(f))
                .take_while(|u| unit_ms(l).is_some_and(|lu| *u >= lu))
                .collect();
            let parts: Vec<&str> = body.split([' ', ':']).collect();
            if parts.len() != units.len() {
                return None;
            }
            let mut ms: i64 = 0;
            for (p, u) in parts.iter().zip(&units) {
                let d = crate::cast::parse_decimal(p)?;
                ms += i64::try_from(
                    d.unscaled * i128::from(*u) / crate::cast::pow10(u32::from(d.scale)),
                )
                .ok()?;
            }
            Some(Value::IntervalMillis(i64::from(sign) * ms))
        }
    }
}

/// The Sluice type of a `sqlparser` type name in a `CAST` (Flink's type names).
pub fn sql_type(t: &ast::DataType) -> Option<DataType> {
    use ast::DataType as T;
    let len = |l: &Option<ast::CharacterLength>, default: u32| match l {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => *length as u32,
        Some(ast::CharacterLength::Max) => MAX_LENGTH,
        None => default,
    };
    let logical = match t {
        T::Boolean | T::Bool => LogicalType::Boolean,
        T::TinyInt(_) => LogicalType::TinyInt,
        T::SmallInt(_) => LogicalType::SmallInt,
        T::Int(_) | T::Integer(_) => LogicalType::Int,
        T::BigInt(_) => LogicalType::BigInt,
        T::Float(_) | T::Real => LogicalType::Float,
        T::Double(_) | T::DoublePrecision => LogicalType::Double,
        T::Decimal(info) | T::Numeric(info) | T::Dec(info) => {
            let (p, s) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
            };
            if p == 0 || p > 38 || s > p {
                return None;
            }
            LogicalType::Decimal {
                precision: p as u8,
                scale: s as u8,
            }
        }
        T::Char(l) | T::Character(l) => LogicalType::Char { length: len(l, 1) },
        // A bare VARCHAR is VARCHAR(2147483647) in Flink's SQL (its type system's default
        // precision), as in the DDL; CHAR is CHAR(1).
        T::Varchar(l) | T::CharacterVarying(l) | T::CharVarying(l) => LogicalType::Varchar {
            length: len(l, MAX_LENGTH),
        },
        T::String(_) | T::Text => LogicalType::Varchar { length: MAX_LENGTH },
        T::Bytes(_) | T::Varbinary(_) => LogicalType::Varbinary { length: MAX_LENGTH },
        T::Binary(l) => LogicalType::Binary {
            length: l.unwrap_or(1) as u32,
        },
        T::Date => LogicalType::Date,
        T::Time(p, _) => LogicalType::Time {
            precision: p.unwrap_or(0) as u8,
        },
        T::Timestamp(p, tz) => {
            let precision = p.unwrap_or(6) as u8;
            match tz {
                ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => {
                    LogicalType::TimestampLtz {
                        precision,
                        kind: TimestampKind::Regular,
                    }
                }
                _ => LogicalType::Timestamp {
                    precision,
                    kind: TimestampKind::Regular,
                },
            }
        }
        T::Custom(name, mods) => {
            let n = name.to_string().to_uppercase();
            let p = mods.first().and_then(|m| m.to_string().parse::<u8>().ok());
            match n.as_str() {
                "STRING" => LogicalType::Varchar { length: MAX_LENGTH },
                "BYTES" => LogicalType::Varbinary { length: MAX_LENGTH },
                "TIMESTAMP_LTZ" => LogicalType::TimestampLtz {
                    precision: p.unwrap_or(6),
                    kind: TimestampKind::Regular,
                },
                _ => return None,
            }
        }
        T::Array(ast::ArrayElemTypeDef::AngleBracket(inner)) => {
            LogicalType::Array(Box::new(sql_type(inner)?))
        }
        // `ROW<name type, …>`, as the Flink dialect reads it.
        T::Struct(fields, _) => LogicalType::Row(
            fields
                .iter()
                .map(|f| {
                    Some(crate::types::RowField {
                        name: f.field_name.as_ref()?.value.clone(),
                        ty: sql_type(&f.field_type)?,
                    })
                })
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    };
    Some(DataType::new(logical))
}
