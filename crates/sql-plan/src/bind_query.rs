//! The query binder: sqlparser's `Query` → a relational plan ([`Rel`]).
//!
//! It resolves FROM (tables with their computed columns and watermark, views expanded from
//! their stored query with cycle detection, `WITH` queries, subqueries, window table
//! functions, inner joins and lookup joins), WHERE, GROUP BY with windows (+ HAVING), the
//! SELECT list (`*`, `t.*`, aliases, Flink's `EXPR$n` names), and `UNION ALL`.
//!
//! As Flink's optimizer does, WHERE conditions are pushed into the join inputs, each input is
//! projected to the columns used above it, and a regular join's time attributes are
//! materialized (cast to plain timestamps) below it. Constructs whose result updates (a GROUP
//! BY without a window, DISTINCT, an outer join, `UNION` without `ALL`) and ORDER BY / LIMIT
//! are refused with their place: updating queries come with the next version.

#[path = "bind_group.rs"]
mod group;
#[path = "bind_rank.rs"]
mod rank;

pub use rank::fold_rank_filters;

use std::collections::BTreeSet;

use sqlparser::ast::{self, Spanned};

use crate::bind_expr::{
    bind_expr, is_aggregate_call, nearest_names, BindContext, Scope, ScopeColumn,
};
use crate::catalog::{Catalog, CatalogTable, ObjectPath, DEFAULT_CATALOG, DEFAULT_DATABASE};
use crate::ddl::{ColumnKind, TableDef};
use crate::dialect::table_argument;
use crate::error::{Position, Result, SqlError};
use crate::expr::{BinaryOp, Expr};
use crate::functions::{FunctionRegistry, ScalarFunction};
use crate::types::{DataType, LogicalType, TimestampKind};
use crate::value::Value;

use super::agg_call::{AggCall, AggKind};
use super::logical::{
    Calc, Join, JoinKind, Rel, RelNode, ScanColumnSource, TableScan, WatermarkSpec, WindowAggregate,
};
use super::schema::{uniquify, window_bound_type, Field, WindowProperty, WindowPropertyKind};
use super::window::{WindowKind, WindowSpec, WindowTime};

/// The reason every updating construct is refused with (a caller may tell such refusals from
/// others by it, as `TableEnv::sql_query` does to defer them to the conversion, as Flink does).
pub const UPDATING: &str = "updating queries (whose results change rows already emitted) come with a later version of Sluice's SQL; this version runs append-only queries";

/// A bound relation: the plan and, per output column, the qualifier that names it.
#[derive(Clone, Debug)]
pub struct Bound {
    /// The plan.
    pub rel: Rel,
    /// The alias or table name qualifying each output column.
    pub qualifiers: Vec<Option<String>>,
}

impl Bound {
    fn scope(&self) -> Scope {
        Scope::new(
            self.rel
                .schema
                .iter()
                .zip(&self.qualifiers)
                .map(|(f, q)| ScopeColumn {
                    qualifier: q.clone(),
                    name: f.name.clone(),
                    ty: f.ty.clone(),
                })
                .collect(),
        )
    }

    fn requalified(mut self, q: &str) -> Bound {
        self.qualifiers = vec![Some(q.to_string()); self.rel.schema.len()];
        self
    }
}

/// FROM's shape before the optimizer's pushdown: relations and the joins between them.
// A query holds a handful of these, each built once: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
enum FromTree {
    Leaf(Bound),
    Join {
        left: Box<FromTree>,
        right: Box<FromTree>,
        /// The ON condition over left columns then right columns.
        on: Option<Expr>,
        /// The right side is read by `FOR SYSTEM_TIME AS OF` (a lookup join).
        lookup: bool,
        /// A `LEFT JOIN` (only of a lookup join: it emits no retraction).
        left_outer: bool,
    },
}

/// A lookup join's conditions, sorted by the caller: `lc` / `rest` / `equi` from its ON (and,
/// for an inner join, its WHERE), `after` the WHERE conditions of a LEFT JOIN.
struct LookupOn {
    lc: Vec<Expr>,
    rest: Vec<Expr>,
    equi: Vec<(usize, usize)>,
    left_outer: bool,
    after: Vec<Expr>,
}

impl FromTree {
    fn width(&self) -> usize {
        match self {
            FromTree::Leaf(b) => b.rel.schema.len(),
            FromTree::Join { left, right, .. } => left.width() + right.width(),
        }
    }

    fn scope_columns(&self) -> Vec<ScopeColumn> {
        match self {
            FromTree::Leaf(b) => b.scope().columns,
            FromTree::Join { left, right, .. } => {
                let mut c = left.scope_columns();
                c.extend(right.scope_columns());
                c
            }
        }
    }

    fn fields(&self) -> Vec<Field> {
        match self {
            FromTree::Leaf(b) => b.rel.schema.clone(),
            FromTree::Join { left, right, .. } => {
                let mut c = left.fields();
                c.extend(right.fields());
                c
            }
        }
    }
}

/// Binds queries against a catalog.
pub struct QueryBinder<'a> {
    catalog: &'a Catalog,
    functions: FunctionRegistry,
    /// Views being expanded, outermost first (a view met again is a cycle).
    expanding: Vec<String>,
    /// `WITH` queries in scope, innermost last: name, column names, query, text base.
    ctes: Vec<(String, Vec<String>, ast::Query, Position)>,
    /// The `STATE_TTL` hint of the select being bound, for its aggregate (ms).
    state_ttl_hint: Option<i64>,
}

/// Splits an AND tree into its conjuncts.
pub fn conjuncts(e: Expr) -> Vec<Expr> {
    match e {
        Expr::And(args) => args.into_iter().flat_map(conjuncts).collect(),
        other => vec![other],
    }
}

/// The AND of conditions (`None` for none).
pub fn and_all(mut conds: Vec<Expr>) -> Option<Expr> {
    match conds.len() {
        0 => None,
        1 => conds.pop(),
        _ => Some(Expr::And(conds)),
    }
}

fn column(index: usize, f: &Field) -> Expr {
    Expr::Column {
        index,
        name: f.name.clone(),
        ty: f.ty.clone(),
    }
}

/// Columns a join's input filter fixed to a constant (`category = 10`): `(column, value)`.
type Constants = Vec<(usize, Expr)>;

/// Re-points an expression's columns through `map` at `schema`'s columns (names and types);
/// a column fixed to a constant reads the constant.
fn remap(e: &Expr, map: &[Option<usize>], consts: &[(usize, Expr)], schema: &[Field]) -> Expr {
    e.substitute_columns(&|i, name| match map.get(i).copied().flatten() {
        Some(j) => column(j, &schema[j]),
        None if consts.iter().any(|c| c.0 == i) => consts
            .iter()
            .find(|c| c.0 == i)
            .map(|c| c.1.clone())
            .unwrap_or_else(|| column(i, &schema[0])),
        None => Expr::Column {
            index: i,
            name: name.to_string(),
            ty: DataType::string(),
        },
    })
}

fn calc_schema(input: &[Field], projection: &[(Expr, String)]) -> Vec<Field> {
    projection
        .iter()
        .map(|(e, n)| Field {
            name: n.clone(),
            ty: e.data_type(),
            window: match e {
                Expr::Column { index, .. } => input.get(*index).and_then(|f| f.window.clone()),
                _ => None,
            },
        })
        .collect()
}

/// A Calc node over `input`.
pub fn calc(input: Rel, projection: Vec<(Expr, String)>, condition: Option<Expr>) -> Rel {
    let schema = calc_schema(&input.schema, &projection);
    Rel {
        node: RelNode::Calc(Calc {
            projection,
            condition,
        }),
        inputs: vec![input],
        schema,
    }
}

fn interval_ms(e: &Expr, pos: Option<Position>, what: &str) -> Result<i64> {
    match e.as_literal() {
        Some(Value::IntervalMillis(ms)) if *ms > 0 => Ok(*ms),
        _ => Err(SqlError::validation(
            pos,
            format!("{what} must be a positive INTERVAL DAY TO SECOND literal, not {e}"),
        )),
    }
}

fn function_args(f: &ast::Function) -> Vec<&ast::FunctionArg> {
    match &f.args {
        ast::FunctionArguments::List(l) => l.args.iter().collect(),
        _ => Vec::new(),
    }
}

fn arg_expr(a: &ast::FunctionArg) -> Option<&ast::Expr> {
    match a {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))
        | ast::FunctionArg::Named {
            arg: ast::FunctionArgExpr::Expr(e),
            ..
        }
        | ast::FunctionArg::ExprNamed {
            arg: ast::FunctionArgExpr::Expr(e),
            ..
        } => Some(e),
        _ => None,
    }
}

/// Every aggregate call in an expression, outermost first.
fn find_aggregates<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    if is_aggregate_call(e) {
        out.push(e);
        return;
    }
    walk_children(e, &mut |c| find_aggregates(c, out));
}

/// Every call of a legacy window property (`TUMBLE_START(…)`, `SESSION_END(…)`…).
fn find_window_properties<'e>(
    e: &'e ast::Expr,
    out: &mut Vec<(&'e ast::Expr, WindowPropertyKind)>,
) {
    if let ast::Expr::Function(f) = e {
        let name = f.name.to_string().to_uppercase();
        for prefix in ["TUMBLE_", "HOP_", "SESSION_"] {
            if let Some(rest) = name.strip_prefix(prefix) {
                let kind = match rest {
                    "START" => Some(WindowPropertyKind::Start),
                    "END" => Some(WindowPropertyKind::End),
                    "ROWTIME" => Some(WindowPropertyKind::Time),
                    "PROCTIME" => Some(WindowPropertyKind::Proctime),
                    _ => None,
                };
                if let Some(k) = kind {
                    out.push((e, k));
                    return;
                }
            }
        }
    }
    walk_children(e, &mut |c| find_window_properties(c, out));
}

/// Calls `f` on the direct sub-expressions the planner looks into.
fn walk_children<'e>(e: &'e ast::Expr, f: &mut dyn FnMut(&'e ast::Expr)) {
    use ast::Expr as E;
    match e {
        E::BinaryOp { left, right, .. } => {
            f(left);
            f(right);
        }
        E::UnaryOp { expr, .. }
        | E::Nested(expr)
        | E::IsNull(expr)
        | E::IsNotNull(expr)
        | E::IsTrue(expr)
        | E::IsFalse(expr)
        | E::IsNotTrue(expr)
        | E::IsNotFalse(expr)
        | E::Cast { expr, .. } => f(expr),
        E::Between {
            expr, low, high, ..
        } => {
            f(expr);
            f(low);
            f(high);
        }
        E::In {
            expr,
            target: ast::InTarget::List(list),
            ..
        } => {
            f(expr);
            list.iter().for_each(&mut *f);
        }
        E::Like { expr, pattern, .. } => {
            f(expr);
            f(pattern);
        }
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(o) = operand {
                f(o);
            }
            for c in conditions {
                f(&c.condition);
                f(&c.result);
            }
            if let Some(e) = else_result {
                f(e);
            }
        }
        E::Function(func) => {
            for a in function_args(func) {
                if let Some(x) = arg_expr(a) {
                    f(x);
                }
            }
        }
        _ => {}
    }
}

/// The name Flink derives for a select item without an alias.
fn derived_name(e: &ast::Expr, i: usize) -> String {
    match e {
        ast::Expr::Identifier(id) => id.value.clone(),
        ast::Expr::CompoundIdentifier(ids) => {
            ids.last().map(|i| i.value.clone()).unwrap_or_default()
        }
        _ => format!("EXPR${i}"),
    }
}

/// The registry of built-in functions plus the catalog's user functions: the implementation a
/// program registered under the function's identifier, else the ready-made one
/// ([`udf_by_identifier`](crate::functions::udf::udf_by_identifier)).
pub fn function_registry(catalog: &Catalog) -> FunctionRegistry {
    let mut reg = FunctionRegistry::builtins();
    for name in catalog.function_names() {
        if let Some(def) = catalog.function(&name) {
            let registered = catalog
                .udf_impl(&def.identifier)
                .and_then(|i| i.0.clone().downcast::<ScalarFunction>().ok());
            let f =
                registered.or_else(|| crate::functions::udf::udf_by_identifier(&def.identifier));
            if let Some(f) = f {
                reg.register_shared(&name, f);
            }
        }
    }
    reg
}

impl<'a> QueryBinder<'a> {
    /// A binder over a catalog (its user functions are registered by name).
    pub fn new(catalog: &'a Catalog) -> QueryBinder<'a> {
        QueryBinder {
            catalog,
            functions: function_registry(catalog),
            expanding: Vec::new(),
            ctes: Vec::new(),
            state_ttl_hint: None,
        }
    }

    fn ctx(&self, base: Position) -> BindContext<'_> {
        BindContext {
            functions: &self.functions,
            base,
        }
    }

    fn pos(&self, base: Position, node: &impl Spanned) -> Option<Position> {
        self.ctx(base).position(node)
    }

    fn bind(&self, e: &ast::Expr, scope: &Scope, base: Position) -> Result<Expr> {
        bind_expr(e, scope, &self.ctx(base))
    }

    /// Binds a query whose text starts at `base`.
    pub fn bind_query(&mut self, q: &ast::Query, base: Position) -> Result<Bound> {
        if let Some(o) = &q.order_by {
            return Err(SqlError::unsupported(
                self.pos(base, o),
                "ORDER BY on a streaming query: Flink sorts a stream only by an ascending time attribute, and Sluice does not run that sort yet",
            ));
        }
        if let Some(l) = &q.limit_clause {
            return Err(SqlError::unsupported(
                self.pos(base, l),
                format!("LIMIT on a streaming query (a Top-N): {UPDATING}"),
            ));
        }
        if q.fetch.is_some() {
            return Err(SqlError::unsupported(
                self.pos(base, q),
                format!("FETCH: {UPDATING}"),
            ));
        }
        let pushed = match &q.with {
            Some(with) => {
                if with.recursive {
                    return Err(SqlError::unsupported(
                        self.pos(base, with),
                        "WITH RECURSIVE",
                    ));
                }
                for cte in &with.cte_tables {
                    let cols = cte
                        .alias
                        .columns
                        .iter()
                        .map(|c| c.name.value.clone())
                        .collect();
                    self.ctes.push((
                        cte.alias.name.value.clone(),
                        cols,
                        (*cte.query).clone(),
                        base,
                    ));
                }
                with.cte_tables.len()
            }
            None => 0,
        };
        let out = self.bind_set_expr(&q.body, base);
        for _ in 0..pushed {
            self.ctes.pop();
        }
        out
    }

    fn bind_set_expr(&mut self, body: &ast::SetExpr, base: Position) -> Result<Bound> {
        match body {
            ast::SetExpr::Select(s) => self.bind_select(s, base),
            ast::SetExpr::Query(q) => self.bind_query(q, base),
            ast::SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => {
                let pos = self.pos(base, body);
                if *op != ast::SetOperator::Union {
                    return Err(SqlError::unsupported(pos, format!("{op}: {UPDATING}")));
                }
                if !matches!(set_quantifier, ast::SetQuantifier::All) {
                    return Err(SqlError::unsupported(
                        pos,
                        format!("UNION without ALL removes duplicates: {UPDATING}; use UNION ALL"),
                    ));
                }
                let l = self.bind_set_expr(left, base)?;
                let r = self.bind_set_expr(right, base)?;
                self.union(l, r, pos)
            }
            other => Err(SqlError::unsupported(
                self.pos(base, other),
                "this query form (VALUES, TABLE …) as a streaming source",
            )),
        }
    }

    fn union(&self, l: Bound, r: Bound, pos: Option<Position>) -> Result<Bound> {
        if l.rel.schema.len() != r.rel.schema.len() {
            return Err(SqlError::validation(
                pos,
                format!(
                    "Set operator cannot combine {} columns with {} columns",
                    l.rel.schema.len(),
                    r.rel.schema.len()
                ),
            ));
        }
        let mut schema = Vec::new();
        for (a, b) in l.rel.schema.iter().zip(&r.rel.schema) {
            let ty = crate::typing::common_type(&a.ty, &b.ty).ok_or_else(|| {
                SqlError::validation(
                    pos,
                    format!(
                        "Type mismatch in column '{}' of UNION ALL: {} and {}",
                        a.name, a.ty, b.ty
                    ),
                )
            })?;
            // A time attribute stays one only if both sides agree.
            let ty = if a.ty.time_attribute() == b.ty.time_attribute() {
                ty
            } else {
                ty.without_time_attribute()
            };
            schema.push(Field::new(a.name.clone(), ty));
        }
        let cast_to = |b: Bound, schema: &[Field]| -> Rel {
            let needs = b.rel.schema.iter().zip(schema).any(|(f, t)| f.ty != t.ty);
            if !needs {
                return b.rel;
            }
            let proj = b
                .rel
                .schema
                .iter()
                .enumerate()
                .zip(schema)
                .map(|((i, f), t)| {
                    let c = column(i, f);
                    let e = if f.ty == t.ty {
                        c
                    } else {
                        Expr::Cast {
                            expr: Box::new(c),
                            ty: t.ty.clone(),
                            safe: false,
                        }
                    };
                    (e, t.name.clone())
                })
                .collect();
            calc(b.rel, proj, None)
        };
        let n = schema.len();
        let left = cast_to(l, &schema);
        let right = cast_to(r, &schema);
        let mut inputs = Vec::new();
        for side in [left, right] {
            match side.node {
                RelNode::Union => inputs.extend(side.inputs),
                _ => inputs.push(side),
            }
        }
        Ok(Bound {
            rel: Rel {
                node: RelNode::Union,
                inputs,
                schema,
            },
            qualifiers: vec![None; n],
        })
    }

    // ---------------------------------------------------------------- FROM

    fn bind_from(&mut self, from: &[ast::TableWithJoins], base: Position) -> Result<FromTree> {
        let mut tree: Option<FromTree> = None;
        for twj in from {
            let mut t = FromTree::Leaf(self.bind_factor(&twj.relation, base)?);
            for j in &twj.joins {
                let (constraint, outer) = match &j.join_operator {
                    ast::JoinOperator::Join(c) | ast::JoinOperator::Inner(c) => (Some(c), None),
                    ast::JoinOperator::CrossJoin(c) => (Some(c), None),
                    ast::JoinOperator::Left(_) | ast::JoinOperator::LeftOuter(_) => {
                        (None, Some("LEFT JOIN"))
                    }
                    ast::JoinOperator::Right(_) | ast::JoinOperator::RightOuter(_) => {
                        (None, Some("RIGHT JOIN"))
                    }
                    ast::JoinOperator::FullOuter(_) => (None, Some("FULL JOIN")),
                    _ => (None, Some("this join type")),
                };
                let jpos = self.pos(base, &j.relation);
                let lookup = matches!(
                    &j.relation,
                    ast::TableFactor::Table {
                        version: Some(ast::TableVersion::ForSystemTimeAsOf(_)),
                        ..
                    }
                );
                // A lookup join's LEFT JOIN pads a row once and never retracts it.
                let left_outer = lookup && outer == Some("LEFT JOIN");
                let constraint = match (&j.join_operator, left_outer) {
                    (ast::JoinOperator::Left(c) | ast::JoinOperator::LeftOuter(c), true) => Some(c),
                    _ => constraint,
                };
                if let (Some(what), false) = (outer, left_outer) {
                    return Err(SqlError::unsupported(
                        jpos,
                        format!("{what}: an outer join emits a row and retracts it when its match arrives, so {UPDATING}"),
                    ));
                }
                let right = FromTree::Leaf(self.bind_factor(&j.relation, base)?);
                let mut cols = t.scope_columns();
                cols.extend(right.scope_columns());
                let scope = Scope::new(cols);
                let on = match constraint {
                    Some(ast::JoinConstraint::On(e)) => Some(self.bind(e, &scope, base)?),
                    Some(ast::JoinConstraint::None) | None => None,
                    Some(other) => {
                        return Err(SqlError::unsupported(
                            jpos,
                            format!("the join constraint {other:?}"),
                        ))
                    }
                };
                t = FromTree::Join {
                    left: Box::new(t),
                    right: Box::new(right),
                    on,
                    lookup,
                    left_outer,
                };
            }
            tree = Some(match tree {
                None => t,
                // A comma join: an inner join whose keys come from WHERE (as Flink plans it).
                Some(l) => FromTree::Join {
                    left: Box::new(l),
                    right: Box::new(t),
                    on: None,
                    lookup: false,
                    left_outer: false,
                },
            });
        }
        tree.ok_or_else(|| {
            SqlError::unsupported(None, "a SELECT without FROM as a streaming query")
        })
    }

    fn bind_factor(&mut self, f: &ast::TableFactor, base: Position) -> Result<Bound> {
        match f {
            ast::TableFactor::Table {
                name, alias, args, ..
            } => {
                if args.is_some() {
                    return Err(SqlError::unsupported(
                        self.pos(base, f),
                        "a table function call here",
                    ));
                }
                let parts: Vec<String> = name
                    .0
                    .iter()
                    .filter_map(|p| p.as_ident().map(|i| i.value.clone()))
                    .collect();
                let path = ObjectPath {
                    parts,
                    pos: self.pos(base, name).unwrap_or(base),
                };
                let b = self.bind_named(&path)?;
                Ok(self.aliased(b, alias.as_ref(), &path))
            }
            ast::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                if *lateral {
                    return Err(SqlError::unsupported(
                        self.pos(base, f),
                        "LATERAL subqueries",
                    ));
                }
                let b = self.bind_query(subquery, base)?;
                Ok(match alias {
                    Some(a) => rename_columns(b, a).requalified(&a.name.value),
                    None => b,
                })
            }
            ast::TableFactor::TableFunction { expr, alias } => {
                let b = self.bind_window_tvf(expr, base)?;
                Ok(match alias {
                    Some(a) => rename_columns(b, a).requalified(&a.name.value),
                    None => b,
                })
            }
            ast::TableFactor::NestedJoin { .. } => Err(SqlError::unsupported(
                self.pos(base, f),
                "parenthesised joins",
            )),
            other => Err(SqlError::unsupported(
                self.pos(base, other),
                format!("the FROM item {other}"),
            )),
        }
    }

    fn aliased(&self, b: Bound, alias: Option<&ast::TableAlias>, path: &ObjectPath) -> Bound {
        match alias {
            Some(a) => rename_columns(b, a).requalified(&a.name.value),
            None => b.requalified(path.object_name()),
        }
    }

    /// A table, view or `WITH` query by name.
    fn bind_named(&mut self, path: &ObjectPath) -> Result<Bound> {
        if path.parts.len() == 1 {
            if let Some(i) = self.ctes.iter().rposition(|c| c.0 == path.parts[0]) {
                let (name, cols, query, base) = self.ctes[i].clone();
                // A WITH query sees only the WITH queries before it.
                let saved = self.ctes.split_off(i);
                let out = self.bind_query(&query, base);
                self.ctes.extend(saved);
                let b = out?;
                return Ok(with_column_names(b, &cols, &name));
            }
        }
        let entry = self.catalog.lookup(path).map_err(|e| match e {
            SqlError::UnknownName {
                pos,
                kind,
                name,
                mut nearest_names,
            } => {
                for c in &self.ctes {
                    if nearest_names.len() < 3
                        && crate::bind_expr::nearest_names(&name, [c.0.as_str()]).len() == 1
                    {
                        nearest_names.push(c.0.clone());
                    }
                }
                SqlError::UnknownName {
                    pos,
                    kind,
                    name,
                    nearest_names,
                }
            }
            other => other,
        })?;
        match entry {
            CatalogTable::Table(def) => self.scan(def),
            CatalogTable::View(v) => {
                let key = path.resolve()?;
                if self.expanding.contains(&key) {
                    return Err(SqlError::validation(
                        Some(path.pos),
                        format!(
                            "View '{key}' refers to itself (through {}): a view cannot be expanded",
                            self.expanding.join(" -> ")
                        ),
                    ));
                }
                self.expanding.push(key);
                let saved = std::mem::take(&mut self.ctes);
                let out = self.bind_query(&v.query, v.pos);
                self.ctes = saved;
                self.expanding.pop();
                let name = v.name.object_name().to_string();
                Ok(with_column_names(out?, &v.columns, &name))
            }
        }
    }

    /// A catalog table: its columns (physical, metadata, computed) and its watermark.
    fn scan(&self, def: &TableDef) -> Result<Bound> {
        let mut physical = Vec::new();
        for c in &def.columns {
            match &c.kind {
                ColumnKind::Physical(ty) | ColumnKind::Metadata { ty, .. } => {
                    physical.push(Field::new(c.name.clone(), ty.clone()))
                }
                ColumnKind::Computed(_) => {}
            }
        }
        let phys_scope = Scope::new(
            physical
                .iter()
                .map(|f| ScopeColumn {
                    qualifier: None,
                    name: f.name.clone(),
                    ty: f.ty.clone(),
                })
                .collect(),
        );
        let mut columns = Vec::new();
        let mut pi = 0;
        for c in &def.columns {
            match &c.kind {
                ColumnKind::Physical(ty) => {
                    columns.push((
                        Field::new(c.name.clone(), ty.clone()),
                        ScanColumnSource::Physical(pi),
                    ));
                    pi += 1;
                }
                ColumnKind::Metadata { ty, key, .. } => {
                    columns.push((
                        Field::new(c.name.clone(), ty.clone()),
                        ScanColumnSource::Metadata {
                            index: pi,
                            key: key.clone().unwrap_or_else(|| c.name.clone()),
                        },
                    ));
                    pi += 1;
                }
                ColumnKind::Computed(e) => {
                    let bound = self.bind(e, &phys_scope, def.pos)?;
                    columns.push((
                        Field::new(c.name.clone(), bound.data_type()),
                        ScanColumnSource::Computed(bound),
                    ));
                }
            }
        }
        let mut watermark = None;
        if let Some(wm) = &def.watermark {
            let Some(rt) = columns.iter().position(|(f, _)| f.name == wm.column) else {
                return Err(SqlError::UnknownName {
                    pos: Some(wm.pos),
                    kind: "Column",
                    name: wm.column.clone(),
                    nearest_names: nearest_names(
                        &wm.column,
                        columns.iter().map(|(f, _)| f.name.as_str()),
                    ),
                });
            };
            let ty = columns[rt].0.ty.clone();
            let rowtime_ty = match ty.logical {
                LogicalType::Timestamp { precision, .. } => LogicalType::Timestamp {
                    precision,
                    kind: TimestampKind::Rowtime,
                },
                LogicalType::TimestampLtz { precision, .. } => LogicalType::TimestampLtz {
                    precision,
                    kind: TimestampKind::Rowtime,
                },
                _ => {
                    return Err(SqlError::validation(
                        Some(wm.pos),
                        format!("Invalid data type of time field for watermark definition. The field must be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' is from 0 to 3, but the time field type is {ty}"),
                    ))
                }
            };
            let scope = Scope::new(
                columns
                    .iter()
                    .map(|(f, _)| ScopeColumn {
                        qualifier: None,
                        name: f.name.clone(),
                        ty: f.ty.clone(),
                    })
                    .collect(),
            );
            let expr = self.bind(&wm.expr, &scope, def.pos)?;
            columns[rt].0.ty = DataType {
                logical: rowtime_ty,
                nullable: ty.nullable,
            };
            watermark = Some(WatermarkSpec {
                rowtime: rt,
                rowtime_name: wm.column.clone(),
                expr,
            });
        }
        let schema: Vec<Field> = columns.iter().map(|(f, _)| f.clone()).collect();
        let n = schema.len();
        let name = def.name.object_name().to_string();
        let path = vec![
            DEFAULT_CATALOG.to_string(),
            DEFAULT_DATABASE.to_string(),
            name.clone(),
        ];
        Ok(Bound {
            rel: Rel {
                node: RelNode::TableScan(TableScan {
                    path,
                    physical,
                    columns,
                    watermark,
                    options: def.options.clone(),
                }),
                inputs: Vec::new(),
                schema,
            },
            qualifiers: vec![Some(name); n],
        })
    }

    /// `TUMBLE(TABLE t, DESCRIPTOR(col), size)`, `HOP(…, slide, size)`, `CUMULATE(…, step,
    /// size)`, `SESSION(TABLE t [PARTITION BY k], DESCRIPTOR(col), gap)`.
    fn bind_window_tvf(&mut self, expr: &ast::Expr, base: Position) -> Result<Bound> {
        let pos = self.pos(base, expr);
        let ast::Expr::Function(f) = expr else {
            return Err(SqlError::unsupported(
                pos,
                format!("the table function {expr}"),
            ));
        };
        let fname = f.name.to_string().to_uppercase();
        if !["TUMBLE", "HOP", "CUMULATE", "SESSION"].contains(&fname.as_str()) {
            return Err(SqlError::UnknownName {
                pos,
                kind: "Table function",
                name: f.name.to_string(),
                nearest_names: nearest_names(&fname, ["TUMBLE", "HOP", "CUMULATE", "SESSION"]),
            });
        }
        let args: Vec<&ast::Expr> = function_args(f).into_iter().filter_map(arg_expr).collect();
        let expected = if fname == "TUMBLE" || fname == "SESSION" {
            3
        } else {
            4
        };
        if args.len() != expected {
            return Err(SqlError::validation(
                pos,
                format!(
                    "{fname} takes {expected} arguments (TABLE, DESCRIPTOR and the sizes), not {}",
                    args.len()
                ),
            ));
        }
        let Some(table) = table_argument(args[0]) else {
            return Err(SqlError::validation(
                self.pos(base, args[0]),
                format!("the first argument of {fname} must be TABLE name"),
            ));
        };
        let path = ObjectPath {
            parts: table.iter().map(|i| i.value.clone()).collect(),
            pos: self.pos(base, args[0]).unwrap_or(base),
        };
        let input = self.bind_named(&path)?;
        let input = self.aliased(input, None, &path);
        // DESCRIPTOR(col)
        let descriptor = match args[1] {
            ast::Expr::Function(d) if d.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") => {
                function_args(d)
                    .into_iter()
                    .filter_map(arg_expr)
                    .collect::<Vec<_>>()
            }
            other => {
                return Err(SqlError::validation(
                    self.pos(base, other),
                    format!("the second argument of {fname} must be DESCRIPTOR(time_column)"),
                ))
            }
        };
        let [col] = descriptor.as_slice() else {
            return Err(SqlError::validation(
                pos,
                "DESCRIPTOR names one time attribute column",
            ));
        };
        let time = self.bind(col, &input.scope(), base)?;
        let Expr::Column { index, name, ty } = time else {
            return Err(SqlError::validation(
                self.pos(base, *col),
                "DESCRIPTOR names a column",
            ));
        };
        let kind = ty.time_attribute();
        if kind == TimestampKind::Regular {
            return Err(SqlError::validation(
                self.pos(base, *col),
                format!("The window function {fname} requires the timecol to be a time attribute type, but is {ty}."),
            ));
        }
        let scope = Scope::default();
        let a = self.bind(args[2], &scope, base)?;
        let a = interval_ms(&a, self.pos(base, args[2]), &format!("the size of {fname}"))?;
        let kind_w = match fname.as_str() {
            "TUMBLE" => WindowKind::Tumble { size_ms: a },
            "SESSION" => WindowKind::Session {
                gap_ms: a,
                partition_keys: Vec::new(),
            },
            _ => {
                let b = self.bind(args[3], &scope, base)?;
                let b = interval_ms(&b, self.pos(base, args[3]), &format!("the size of {fname}"))?;
                if fname == "HOP" {
                    WindowKind::Hop {
                        slide_ms: a,
                        size_ms: b,
                    }
                } else {
                    WindowKind::Cumulate {
                        step_ms: a,
                        size_ms: b,
                    }
                }
            }
        };
        let window = WindowSpec {
            kind: kind_w,
            time: WindowTime::TimeColumn {
                index,
                name,
                proctime: kind == TimestampKind::Proctime,
            },
        };
        let mut schema = input.rel.schema.clone();
        let bound_ty = window_bound_type(&ty);
        let prop = |k| {
            Some(WindowProperty {
                kind: k,
                window: window.clone(),
            })
        };
        schema.push(Field {
            name: "window_start".into(),
            ty: bound_ty.clone(),
            window: prop(WindowPropertyKind::Start),
        });
        schema.push(Field {
            name: "window_end".into(),
            ty: bound_ty,
            window: prop(WindowPropertyKind::End),
        });
        schema.push(Field {
            name: "window_time".into(),
            ty: ty.clone().not_null(),
            window: prop(WindowPropertyKind::Time),
        });
        let mut qualifiers = input.qualifiers.clone();
        qualifiers.extend([None, None, None]);
        Ok(Bound {
            rel: Rel {
                node: RelNode::WindowTableFunction(window),
                inputs: vec![input.rel],
                schema,
            },
            qualifiers,
        })
    }

    // ---------------------------------------------------------------- SELECT

    fn bind_select(&mut self, s: &ast::Select, base: Position) -> Result<Bound> {
        let distinct = match &s.distinct {
            None | Some(ast::Distinct::All) => false,
            Some(ast::Distinct::Distinct) => true,
            Some(d @ ast::Distinct::On(_)) => {
                return Err(SqlError::unsupported(
                    self.pos(base, s),
                    format!("SELECT {d} (PostgreSQL's, not Flink's SQL)"),
                ))
            }
        };
        let hints = super::hints::select_hints(s, self.pos(base, s))?;
        let tree = self.bind_from(&s.from, base)?;
        let flat = Scope::new(tree.scope_columns());
        let state_ttl = self.state_ttl(s, &hints, &tree, &flat, base)?;
        let where_conds = match &s.selection {
            Some(w) => {
                let e = self
                    .bind(w, &flat, base)
                    .map_err(|e| select_alias_in_where(e, &s.projection))?;
                if e.data_type().logical != LogicalType::Boolean {
                    return Err(SqlError::validation(
                        self.pos(base, w),
                        "WHERE must be a boolean condition",
                    ));
                }
                conjuncts(e)
            }
            None => Vec::new(),
        };
        let group_exprs: Vec<&ast::Expr> = match &s.group_by {
            ast::GroupByExpr::Expressions(v, mods) => {
                if !mods.is_empty() {
                    return Err(SqlError::unsupported(
                        self.pos(base, s),
                        "GROUP BY modifiers (ROLLUP, CUBE, GROUPING SETS)",
                    ));
                }
                v.iter().collect()
            }
            ast::GroupByExpr::All(_) => {
                return Err(SqlError::unsupported(self.pos(base, s), "GROUP BY ALL"))
            }
        };
        let mut aggs = Vec::new();
        for item in &s.projection {
            if let ast::SelectItem::UnnamedExpr(e)
            | ast::SelectItem::ExprWithAlias { expr: e, .. } = item
            {
                find_aggregates(e, &mut aggs);
            }
        }
        if let Some(h) = &s.having {
            find_aggregates(h, &mut aggs);
        }
        // The same call written twice (SELECT and HAVING) is computed once.
        let mut seen = BTreeSet::new();
        aggs.retain(|a| seen.insert(a.to_string()));
        if distinct {
            if !group_exprs.is_empty() || !aggs.is_empty() {
                return Err(SqlError::unsupported(
                    self.pos(base, s),
                    "SELECT DISTINCT over GROUP BY or aggregates: write the aggregate in a subquery",
                ));
            }
            self.state_ttl_hint = state_ttl;
            return self.distinct_select(s, tree, flat, where_conds, base);
        }
        if group_exprs.is_empty() && aggs.is_empty() {
            if let Some(h) = &s.having {
                return Err(SqlError::validation(
                    self.pos(base, h),
                    "HAVING without GROUP BY or aggregates",
                ));
            }
            if state_ttl.is_some() {
                return Err(SqlError::unsupported(
                    self.pos(base, s),
                    "STATE_TTL on a query without aggregation (Flink takes it on regular joins and group aggregations; this version on group aggregations)",
                ));
            }
            let windowed = s.projection.iter().any(|p| {
                matches!(p, ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } if rank::is_window_call(e))
            });
            if windowed {
                return self.rank_select(s, tree, flat, where_conds, base);
            }
            return self.plain_select(s, tree, flat, where_conds, base);
        }
        self.state_ttl_hint = state_ttl;
        self.aggregate_select(s, tree, flat, where_conds, group_exprs, aggs, base)
    }

    /// The `STATE_TTL` hint's time to live (ms) for this select's aggregation; every other hint
    /// is refused by name. Its keys must name the FROM's tables or aliases (Flink's rule).
    fn state_ttl(
        &self,
        s: &ast::Select,
        hints: &[super::hints::QueryHint],
        tree: &FromTree,
        flat: &Scope,
        base: Position,
    ) -> Result<Option<i64>> {
        let pos = self.pos(base, s);
        let mut ttl = None;
        for h in hints {
            if h.name != "STATE_TTL" {
                return Err(SqlError::unsupported(
                    pos,
                    format!(
                        "the query hint {} (this version applies STATE_TTL only)",
                        h.name
                    ),
                ));
            }
            if matches!(tree, FromTree::Join { .. }) {
                return Err(SqlError::unsupported(
                    pos,
                    "STATE_TTL on a join (this version applies it to group aggregations; use table.exec.state.ttl for joins)",
                ));
            }
            for (k, v) in &h.options {
                let known = flat.columns.iter().any(|c| {
                    c.qualifier
                        .as_deref()
                        .is_some_and(|q| q.eq_ignore_ascii_case(k))
                });
                if !known {
                    return Err(SqlError::validation(
                        pos,
                        format!("The options of following hints cannot match the name of input tables or views: \n`{k}` in `STATE_TTL`"),
                    ));
                }
                let d = crate::config::parse_flink_duration(v).ok_or_else(|| {
                    SqlError::validation(pos, format!("STATE_TTL('{k}' = '{v}'): not a duration"))
                })?;
                ttl = Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            }
        }
        Ok(ttl)
    }

    /// The select list's items: (expression AST, output name) with `*` expanded.
    fn select_items<'q>(
        &self,
        s: &'q ast::Select,
        scope: &Scope,
        base: Position,
    ) -> Result<Vec<SelectItem<'q>>> {
        let mut out = Vec::new();
        for (i, item) in s.projection.iter().enumerate() {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    out.push(SelectItem::Expr(e, derived_name(e, i)))
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    out.push(SelectItem::Expr(expr, alias.value.clone()))
                }
                ast::SelectItem::ExprWithAliases { .. } => {
                    return Err(SqlError::unsupported(
                        self.pos(base, item),
                        "a select item with several aliases",
                    ))
                }
                ast::SelectItem::Wildcard(_) => {
                    for (j, c) in scope.columns.iter().enumerate() {
                        out.push(SelectItem::Column(j, c.name.clone()));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => n.to_string(),
                        ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
                    };
                    let q = q.trim_matches('`').to_string();
                    let hits: Vec<usize> = (0..scope.columns.len())
                        .filter(|&j| scope.columns[j].qualifier.as_deref() == Some(q.as_str()))
                        .collect();
                    if hits.is_empty() {
                        let known: BTreeSet<&str> = scope
                            .columns
                            .iter()
                            .filter_map(|c| c.qualifier.as_deref())
                            .collect();
                        return Err(SqlError::UnknownName {
                            pos: self.pos(base, item),
                            kind: "Table",
                            name: q.clone(),
                            nearest_names: nearest_names(&q, known),
                        });
                    }
                    for j in hits {
                        out.push(SelectItem::Column(j, scope.columns[j].name.clone()));
                    }
                }
            }
        }
        Ok(out)
    }

    fn plain_select(
        &mut self,
        s: &ast::Select,
        tree: FromTree,
        flat: Scope,
        where_conds: Vec<Expr>,
        base: Position,
    ) -> Result<Bound> {
        let items = self.select_items(s, &flat, base)?;
        let fields = tree.fields();
        let mut proj = Vec::new();
        for it in &items {
            proj.push(match it {
                SelectItem::Expr(e, n) => (self.bind(e, &flat, base)?, n.clone()),
                SelectItem::Column(j, n) => (column(*j, &fields[*j]), n.clone()),
            });
        }
        let mut required = BTreeSet::new();
        for (e, _) in &proj {
            required.extend(e.columns());
        }
        let (rel, map, consts) = self.materialize(tree, where_conds, &required, false)?;
        let proj = unique_names(
            proj.iter()
                .map(|(e, n)| (remap(e, &map, &consts, &rel.schema), n.clone()))
                .collect(),
        );
        let n = items.len();
        Ok(Bound {
            rel: calc(rel, proj, None),
            qualifiers: vec![None; n],
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn aggregate_select(
        &mut self,
        s: &ast::Select,
        tree: FromTree,
        flat: Scope,
        where_conds: Vec<Expr>,
        group_exprs: Vec<&ast::Expr>,
        aggs: Vec<&ast::Expr>,
        base: Position,
    ) -> Result<Bound> {
        let fields = tree.fields();
        let spos = self.pos(base, s);
        // Classify GROUP BY items: the legacy window call, window bounds, plain keys.
        let mut legacy: Option<(WindowKind, Expr)> = None;
        let mut keys: Vec<(&ast::Expr, Expr)> = Vec::new();
        let mut bounds: Vec<(WindowPropertyKind, &ast::Expr, usize)> = Vec::new();
        // `GROUP BY …, window_time`: allowed, it is a window property, not a key.
        let mut time_item: Option<(&ast::Expr, usize)> = None;
        for g in &group_exprs {
            if let ast::Expr::Function(f) = g {
                let name = f.name.to_string().to_uppercase();
                if ["TUMBLE", "HOP", "SESSION"].contains(&name.as_str()) {
                    let args: Vec<&ast::Expr> =
                        function_args(f).into_iter().filter_map(arg_expr).collect();
                    let gpos = self.pos(base, *g);
                    let need = if name == "HOP" { 3 } else { 2 };
                    if args.len() != need {
                        return Err(SqlError::validation(
                            gpos,
                            format!("{name} in GROUP BY takes {need} arguments"),
                        ));
                    }
                    let time = self.bind(args[0], &flat, base)?;
                    if time.data_type().time_attribute() == TimestampKind::Regular
                        || !matches!(time, Expr::Column { .. })
                    {
                        return Err(SqlError::validation(
                            self.pos(base, args[0]),
                            format!("Window can only be defined on a time attribute column, but is type of {}", time.data_type()),
                        ));
                    }
                    let empty = Scope::default();
                    let a = self.bind(args[1], &empty, base)?;
                    let a = interval_ms(&a, self.pos(base, args[1]), "a window size")?;
                    let kind = match name.as_str() {
                        "TUMBLE" => WindowKind::Tumble { size_ms: a },
                        "SESSION" => WindowKind::Session {
                            gap_ms: a,
                            partition_keys: Vec::new(),
                        },
                        _ => {
                            let b = self.bind(args[2], &empty, base)?;
                            let b = interval_ms(&b, self.pos(base, args[2]), "a window size")?;
                            WindowKind::Hop {
                                slide_ms: a,
                                size_ms: b,
                            }
                        }
                    };
                    if legacy.replace((kind, time)).is_some() {
                        return Err(SqlError::validation(gpos, "GROUP BY holds one window"));
                    }
                    continue;
                }
            }
            let e = self.bind(g, &flat, base)?;
            if let Expr::Column { index, .. } = &e {
                if let Some(p) = &fields[*index].window {
                    if p.kind != WindowPropertyKind::Time {
                        bounds.push((p.kind, *g, *index));
                    } else {
                        time_item = Some((*g, *index));
                    }
                    continue;
                }
            }
            keys.push((*g, e));
        }
        let has_start = bounds.iter().any(|b| b.0 == WindowPropertyKind::Start);
        let has_end = bounds.iter().any(|b| b.0 == WindowPropertyKind::End);
        if legacy.is_none() && bounds.is_empty() && time_item.is_none() {
            return self.group_aggregate(s, tree, flat, where_conds, keys, &aggs, base);
        }
        if self.state_ttl_hint.take().is_some() {
            return Err(SqlError::unsupported(
                spos,
                "STATE_TTL on a window aggregation (its state is dropped when the watermark closes the window)",
            ));
        }
        if legacy.is_none() && !(has_start && has_end) {
            let what = if group_exprs.is_empty() {
                "an aggregate over the whole stream (no GROUP BY window)".to_string()
            } else {
                "GROUP BY without a window (window_start and window_end of a window table function, or TUMBLE/HOP/SESSION)".to_string()
            };
            return Err(SqlError::unsupported(
                group_exprs
                    .first()
                    .and_then(|g| self.pos(base, *g))
                    .or(spos),
                format!("{what} emits a new result for a key each time a row arrives: {UPDATING}"),
            ));
        }
        let mut calls = self.bind_calls(&aggs, &flat, base, false)?;
        // Which TVF, if the window bounds come straight from one (Flink folds the TVF into the
        // aggregate); otherwise the input is windowed already.
        let tvf_leaf = legacy.is_none()
            && matches!(&tree, FromTree::Leaf(b) if matches!(b.rel.node, RelNode::WindowTableFunction(_)));
        let (input, window, group) = if tvf_leaf {
            let FromTree::Leaf(b) = tree else {
                unreachable_leaf()?
            };
            let RelNode::WindowTableFunction(w) = b.rel.node.clone() else {
                unreachable_leaf()?
            };
            let tvf_in = b
                .rel
                .inputs
                .into_iter()
                .next()
                .ok_or_else(|| SqlError::validation(spos, "a window function without input"))?;
            let n = tvf_in.schema.len();
            let mut refs: Vec<usize> = Vec::new();
            for c in where_conds
                .iter()
                .chain(keys.iter().map(|k| &k.1))
                .chain(calls.iter().flat_map(|c| c.3.iter()))
            {
                refs.extend(c.columns());
            }
            if refs.iter().any(|&i| i >= n) {
                return Err(SqlError::unsupported(spos, "window_time or window bounds inside keys, arguments or WHERE of a window aggregate"));
            }
            let filtered = match and_all(where_conds) {
                Some(c) => {
                    let proj = tvf_in
                        .schema
                        .iter()
                        .enumerate()
                        .map(|(i, f)| (column(i, f), f.name.clone()))
                        .collect();
                    calc(tvf_in, proj, Some(c))
                }
                None => tvf_in,
            };
            let WindowTime::TimeColumn {
                index,
                name,
                proctime,
            } = &w.time
            else {
                unreachable_leaf()?
            };
            let mut proj: Vec<(Expr, String)> = Vec::new();
            for (g, e) in &keys {
                proj.push((e.clone(), key_name(g, e, proj.len())));
            }
            let nkeys = proj.len();
            let arg_at = push_args(&mut proj, &mut calls);
            let time_at = proj.len();
            proj.push((column(*index, &filtered.schema[*index]), name.clone()));
            let _ = arg_at;
            let window = WindowSpec {
                kind: w.kind.clone(),
                time: WindowTime::TimeColumn {
                    index: time_at,
                    name: name.clone(),
                    proctime: *proctime,
                },
            };
            (
                calc(filtered, proj, None),
                window,
                (0..nkeys).collect::<Vec<usize>>(),
            )
        } else {
            let mut required = BTreeSet::new();
            for c in keys
                .iter()
                .map(|k| &k.1)
                .chain(calls.iter().flat_map(|c| c.3.iter()))
            {
                required.extend(c.columns());
            }
            if let Some((_, t)) = &legacy {
                required.extend(t.columns());
            }
            for b in &bounds {
                required.insert(b.2);
            }
            let (rel, map, consts) = self.materialize(tree, where_conds, &required, false)?;
            let mut proj: Vec<(Expr, String)> = Vec::new();
            let mut start_end = (0, 0);
            let mut bound_names = (String::new(), String::new());
            // Flink's order: the GROUP BY items as written, then the aggregate arguments.
            let mut key_iter = keys.iter();
            let mut ordered_keys = Vec::new();
            let mut legacy_time: Option<(usize, String, bool)> = None;
            for g in &group_exprs {
                if let Some(b) = bounds.iter().find(|b| std::ptr::eq(b.1, *g)) {
                    let e = remap(&column(b.2, &fields[b.2]), &map, &consts, &rel.schema);
                    let name = rel.schema[map[b.2].unwrap_or(0)].name.clone();
                    if b.0 == WindowPropertyKind::Start {
                        start_end.0 = proj.len();
                        bound_names.0 = name.clone();
                    } else {
                        start_end.1 = proj.len();
                        bound_names.1 = name.clone();
                    }
                    proj.push((e, name));
                } else if keys.iter().any(|k| std::ptr::eq(k.0, *g)) {
                    if let Some((g2, e)) = key_iter.next() {
                        let e = remap(e, &map, &consts, &rel.schema);
                        // Flink names a legacy window's key `$fN` unless it reads a
                        // table column as is.
                        let name = match (&legacy, &e) {
                            (Some(_), Expr::Column { index, .. })
                                if !passes_through(&rel, *index) =>
                            {
                                format!("$f{}", proj.len())
                            }
                            _ => key_name(g2, &e, proj.len()),
                        };
                        ordered_keys.push(proj.len());
                        proj.push((e, name));
                    }
                } else if let Some((_, t)) = &legacy {
                    // The window call's place holds its time attribute.
                    let t = remap(t, &map, &consts, &rel.schema);
                    if let Expr::Column { index, name, ty } = &t {
                        legacy_time = Some((
                            proj.len(),
                            name.clone(),
                            ty.time_attribute() == TimestampKind::Proctime,
                        ));
                        proj.push((column(*index, &rel.schema[*index]), name.clone()));
                    }
                }
            }
            for c in calls.iter_mut() {
                for a in c.3.iter_mut() {
                    *a = remap(a, &map, &consts, &rel.schema);
                }
            }
            push_args(&mut proj, &mut calls);
            let window = if let Some((kind, _)) = &legacy {
                let Some((at, name, proctime)) = legacy_time.clone() else {
                    unreachable_leaf()?
                };
                WindowSpec {
                    kind: kind.clone(),
                    time: WindowTime::TimeColumn {
                        index: at,
                        name,
                        proctime,
                    },
                }
            } else {
                let p = fields[bounds[0].2]
                    .window
                    .clone()
                    .ok_or_else(|| SqlError::validation(spos, "lost window"))?;
                WindowSpec {
                    kind: p.window.kind.clone(),
                    time: WindowTime::Bounds {
                        start: (start_end.0, bound_names.0),
                        end: (start_end.1, bound_names.1),
                    },
                }
            };
            (calc(rel, proj, None), window, ordered_keys)
        };
        // The aggregate node.
        let nkeys = group.len();
        let in_schema = input.schema.clone();
        let mut agg_calls = Vec::new();
        for (i, (a, kind, distinct, args, _)) in calls.iter().enumerate() {
            let idx: Vec<usize> = args
                .iter()
                .filter_map(|e| match e {
                    Expr::Column { index, .. } => Some(*index),
                    _ => None,
                })
                .collect();
            let arg_ty = idx.first().map(|&i| &in_schema[i].ty);
            let name = agg_name(s, a).unwrap_or_else(|| format!("$f{}", nkeys + i));
            agg_calls.push(AggCall {
                kind: *kind,
                args: idx.clone(),
                arg_names: idx.iter().map(|&i| in_schema[i].name.clone()).collect(),
                distinct: *distinct,
                filter: None,
                name,
                ty: kind.result_type(arg_ty),
            });
        }
        let uses_time = time_item.is_some()
            || s.projection
                .iter()
                .any(|p| p.to_string().contains("window_time"))
            || s.having
                .as_ref()
                .is_some_and(|h| h.to_string().contains("window_time"));
        let mut schema: Vec<Field> = group
            .iter()
            .map(|&i| {
                Field::new(
                    in_schema[i].name.clone(),
                    in_schema[i].ty.without_time_attribute(),
                )
            })
            .collect();
        schema.extend(
            agg_calls
                .iter()
                .map(|c| Field::new(c.name.clone(), c.ty.clone())),
        );
        let time_ty = match &window.time {
            WindowTime::TimeColumn { index, .. } => in_schema[*index].ty.clone().not_null(),
            WindowTime::Bounds { .. } => DataType::new(LogicalType::Timestamp {
                precision: 3,
                kind: TimestampKind::Rowtime,
            })
            .not_null(),
        };
        let bound_ty = window_bound_type(&time_ty);
        let out_window = WindowSpec {
            kind: window.kind.clone(),
            time: window.time.clone(),
        };
        let prop = |k| {
            Some(WindowProperty {
                kind: k,
                window: out_window.clone(),
            })
        };
        let (properties, rel_node) = if legacy.is_some() {
            // Flink's: a processing-time window has no rowtime property.
            let mut props = vec![WindowPropertyKind::Start, WindowPropertyKind::End];
            schema.push(Field::new("w$start", bound_ty.clone()));
            schema.push(Field::new("w$end", bound_ty.clone()));
            if !window.is_proctime() {
                props.push(WindowPropertyKind::Time);
                schema.push(Field::new("w$rowtime", time_ty.clone()));
            }
            props.push(WindowPropertyKind::Proctime);
            schema.push(Field::new(
                "w$proctime",
                DataType::new(LogicalType::TimestampLtz {
                    precision: 3,
                    kind: TimestampKind::Proctime,
                })
                .not_null(),
            ));
            (props, true)
        } else {
            let mut props = vec![WindowPropertyKind::Start, WindowPropertyKind::End];
            schema.push(Field {
                name: "window_start".into(),
                ty: bound_ty.clone(),
                window: prop(WindowPropertyKind::Start),
            });
            schema.push(Field {
                name: "window_end".into(),
                ty: bound_ty,
                window: prop(WindowPropertyKind::End),
            });
            if uses_time {
                props.push(WindowPropertyKind::Time);
                schema.push(Field {
                    name: "window_time".into(),
                    ty: time_ty,
                    window: prop(WindowPropertyKind::Time),
                });
            }
            (props, false)
        };
        let agg = WindowAggregate {
            group: group.clone(),
            aggs: agg_calls,
            window,
            properties,
        };
        let agg_rel = Rel {
            node: if rel_node {
                RelNode::GroupWindowAggregate(agg)
            } else {
                RelNode::WindowAggregate(agg)
            },
            inputs: vec![input],
            schema,
        };
        // The scope after aggregation: keys by their names, aggregates and window properties by
        // their text.
        let mut post = Scope::new(Vec::new());
        for (k, (g, e)) in keys.iter().enumerate() {
            let (q, n) = match e {
                Expr::Column { index, .. } => (
                    flat.columns[*index].qualifier.clone(),
                    flat.columns[*index].name.clone(),
                ),
                _ => (None, agg_rel.schema[k].name.clone()),
            };
            post.columns.push(ScopeColumn {
                qualifier: q,
                name: n,
                ty: agg_rel.schema[k].ty.clone(),
            });
            post.pre_bind(g, k);
        }
        let na = calls.len();
        for (i, c) in calls.iter().enumerate() {
            let at = nkeys + i;
            post.columns.push(ScopeColumn {
                qualifier: None,
                name: agg_rel.schema[at].name.clone(),
                ty: agg_rel.schema[at].ty.clone(),
            });
            post.pre_bind(c.0, at);
        }
        let first_prop = nkeys + na;
        for (j, f) in agg_rel.schema[first_prop..].iter().enumerate() {
            let at = first_prop + j;
            // The window bounds keep the names (and qualifiers) they were grouped by.
            let bound = bounds.iter().find(|b| match j {
                0 => b.0 == WindowPropertyKind::Start,
                1 => b.0 == WindowPropertyKind::End,
                _ => false,
            });
            if let (2, Some((g, i))) = (j, time_item) {
                post.columns.push(ScopeColumn {
                    qualifier: flat.columns[i].qualifier.clone(),
                    name: flat.columns[i].name.clone(),
                    ty: f.ty.clone(),
                });
                post.pre_bind(g, at);
                continue;
            }
            let (q, n) = match bound {
                Some(b) => (
                    flat.columns[b.2].qualifier.clone(),
                    flat.columns[b.2].name.clone(),
                ),
                None => (None, f.name.clone()),
            };
            post.columns.push(ScopeColumn {
                qualifier: q,
                name: n,
                ty: f.ty.clone(),
            });
            if let Some(b) = bound {
                post.pre_bind(b.1, at);
            }
        }
        if let RelNode::GroupWindowAggregate(agg) = &agg_rel.node {
            let mut props = Vec::new();
            for p in &s.projection {
                if let ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } = p
                {
                    find_window_properties(e, &mut props);
                }
            }
            if let Some(h) = &s.having {
                find_window_properties(h, &mut props);
            }
            for (e, k) in props {
                let pos = self.pos(base, e);
                let at = agg.properties.iter().position(|p| *p == k);
                let at = match (k, at) {
                    (_, Some(at))
                        if k != WindowPropertyKind::Proctime || agg.window.is_proctime() =>
                    {
                        first_prop + at
                    }
                    (WindowPropertyKind::Time, None) => {
                        return Err(SqlError::validation(
                            pos,
                            "A proctime window cannot provide a rowtime attribute.",
                        ))
                    }
                    _ => {
                        // Flink's operator leaves the property NULL; Sluice gives no other value.
                        let name = match e {
                            ast::Expr::Function(f) => f.name.to_string().to_uppercase(),
                            _ => e.to_string(),
                        };
                        return Err(SqlError::unsupported(
                            pos,
                            format!(
                                "{name} of an event-time window (Flink gives NULL for it): use \
                                 the window's rowtime ({}) or CURRENT_TIMESTAMP",
                                name.replace("_PROCTIME", "_ROWTIME")
                            ),
                        ));
                    }
                };
                post.pre_bind(e, at);
            }
        }
        let having = match &s.having {
            Some(h) => Some(self.bind(h, &post, base)?),
            None => None,
        };
        let items = self.select_items(s, &post, base)?;
        let mut proj = Vec::new();
        for it in &items {
            proj.push(match it {
                SelectItem::Expr(e, n) => (self.bind(e, &post, base)?, n.clone()),
                SelectItem::Column(j, n) => (column(*j, &agg_rel.schema[*j]), n.clone()),
            });
        }
        let n = proj.len();
        let proj = unique_names(proj);
        Ok(Bound {
            rel: calc(agg_rel, proj, having),
            qualifiers: vec![None; n],
        })
    }

    /// The aggregate calls' kinds and arguments, bound over the FROM scope. `DISTINCT` is
    /// refused unless `allow_distinct` (the window aggregates do not plan it yet).
    #[allow(clippy::type_complexity)]
    fn bind_calls<'e>(
        &self,
        aggs: &[&'e ast::Expr],
        flat: &Scope,
        base: Position,
        allow_distinct: bool,
    ) -> Result<Vec<BoundCall<'e>>> {
        let mut calls: Vec<BoundCall<'e>> = Vec::new();
        for a in aggs {
            let ast::Expr::Function(f) = a else { continue };
            let apos = self.pos(base, *a);
            let (distinct, star, args) = match &f.args {
                ast::FunctionArguments::List(l) => {
                    let distinct = matches!(
                        l.duplicate_treatment,
                        Some(ast::DuplicateTreatment::Distinct)
                    );
                    let star = matches!(
                        l.args.as_slice(),
                        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)]
                    );
                    let args: Vec<&ast::Expr> = l.args.iter().filter_map(arg_expr).collect();
                    (distinct, star, args)
                }
                _ => (false, false, Vec::new()),
            };
            let kind = AggKind::from_name(&f.name.to_string(), star || (args.is_empty())).ok_or_else(|| {
                SqlError::unsupported(apos, format!("the aggregate function {} (this version plans COUNT, SUM, MIN, MAX, AVG)", f.name))
            })?;
            if distinct && !allow_distinct {
                return Err(SqlError::unsupported(
                    apos,
                    format!(
                        "{}(DISTINCT …) in a window aggregate is not planned yet",
                        kind.name()
                    ),
                ));
            }
            let bound: Vec<Expr> = args
                .iter()
                .map(|x| self.bind(x, flat, base))
                .collect::<Result<_>>()?;
            let filter = match &f.filter {
                Some(w) if !allow_distinct => {
                    return Err(SqlError::unsupported(
                        self.pos(base, w.as_ref()),
                        "FILTER (WHERE …) in a window aggregate is not planned yet",
                    ))
                }
                Some(w) => {
                    let e = self.bind(w, flat, base)?;
                    if e.data_type().logical != LogicalType::Boolean {
                        return Err(SqlError::validation(
                            self.pos(base, w.as_ref()),
                            "FILTER must be a boolean condition",
                        ));
                    }
                    // Flink's: the row counts when the condition IS TRUE (not NULL).
                    Some(Expr::Is {
                        expr: Box::new(e),
                        test: crate::expr::IsTest::True,
                    })
                }
                None => None,
            };
            calls.push((a, kind, distinct, bound, filter));
        }
        Ok(calls)
    }

    // ------------------------------------------------------- pushdown and joins

    /// Builds the plan of a FROM tree with `conds` (over its columns) pushed as far down as they
    /// go and each input projected to the `required` columns and those conditions read.
    /// Returns the plan and where each FROM column ended up. `materialize_time`: cast time
    /// attributes to plain timestamps (below a regular join).
    fn materialize(
        &mut self,
        tree: FromTree,
        conds: Vec<Expr>,
        required: &BTreeSet<usize>,
        materialize_time: bool,
    ) -> Result<(Rel, Vec<Option<usize>>, Constants)> {
        match tree {
            FromTree::Leaf(b) => {
                let n = b.rel.schema.len();
                let rel = b.rel;
                let condition = and_all(conds);
                let mut cols: Vec<usize> = required.iter().copied().filter(|&i| i < n).collect();
                if let Some(c) = &condition {
                    let _ = c;
                }
                cols.sort_unstable();
                let identity = cols.len() == n && condition.is_none() && !materialize_time;
                // Without a condition and with every column kept, the input is used as is.
                if identity
                    || (condition.is_none()
                        && cols.len() == n
                        && !rel
                            .schema
                            .iter()
                            .any(|f| f.ty.time_attribute() != TimestampKind::Regular))
                {
                    return Ok((rel, (0..n).map(Some).collect(), Vec::new()));
                }
                let mut map = vec![None; n];
                let mut proj = Vec::new();
                for &i in &cols {
                    let f = &rel.schema[i];
                    let c = column(i, f);
                    let e = if materialize_time && f.ty.time_attribute() != TimestampKind::Regular {
                        Expr::Cast {
                            expr: Box::new(c),
                            ty: f.ty.without_time_attribute(),
                            safe: false,
                        }
                    } else {
                        c
                    };
                    map[i] = Some(proj.len());
                    proj.push((e, f.name.clone()));
                }
                Ok((calc(rel, proj, condition), map, Vec::new()))
            }
            FromTree::Join {
                left,
                right,
                on,
                lookup,
                left_outer,
            } => {
                let lw = left.width();
                let fields_l = left.fields();
                let fields_r = right.fields();
                // A LEFT JOIN's WHERE holds after the join, its ON decides matches only.
                let (mut all, after) = if left_outer {
                    (Vec::new(), conds)
                } else {
                    (conds, Vec::new())
                };
                if let Some(o) = on {
                    all.extend(conjuncts(o));
                }
                let (mut lc, mut rc, mut both) = (Vec::new(), Vec::new(), Vec::new());
                for c in all {
                    let cols = c.columns();
                    if !cols.is_empty() && cols.iter().all(|&i| i < lw) && !lookup {
                        lc.push(c);
                    } else if !cols.is_empty() && cols.iter().all(|&i| i >= lw) && !lookup {
                        rc.push(c.map_columns(&|i| i - lw));
                    } else {
                        both.push(c);
                    }
                }
                // Equality keys (column = column across the sides), the window bounds among them.
                let mut equi: Vec<(usize, usize)> = Vec::new();
                let mut rest: Vec<Expr> = Vec::new();
                for c in both {
                    if let Expr::Binary {
                        op: BinaryOp::Eq,
                        left: a,
                        right: b,
                        ..
                    } = &c
                    {
                        if let (Expr::Column { index: x, .. }, Expr::Column { index: y, .. }) =
                            (a.as_ref(), b.as_ref())
                        {
                            let (x, y) = (*x, *y);
                            if x < lw && y >= lw {
                                equi.push((x, y - lw));
                                continue;
                            }
                            if y < lw && x >= lw {
                                equi.push((y, x - lw));
                                continue;
                            }
                        }
                    }
                    rest.push(c);
                }
                let prop_of =
                    |f: &Field| f.window.as_ref().map(|p| (p.kind, p.window.kind.clone()));
                let find = |k: WindowPropertyKind| {
                    equi.iter().position(|(a, b)| {
                        let (pa, pb) = (prop_of(&fields_l[*a]), prop_of(&fields_r[*b]));
                        matches!((&pa, &pb), (Some((ka, wa)), Some((kb, wb))) if *ka == k && *kb == k && wa == wb)
                    })
                };
                let window_join = if lookup {
                    None
                } else {
                    match (
                        find(WindowPropertyKind::Start),
                        find(WindowPropertyKind::End),
                    ) {
                        (Some(s), Some(e)) => Some((equi[s], equi[e])),
                        _ => None,
                    }
                };
                if lookup {
                    let on = LookupOn {
                        lc,
                        rest,
                        equi,
                        left_outer,
                        after,
                    };
                    return self.lookup_join(*left, *right, on, required, lw);
                }
                if let Some(((sl, sr), (el, er))) = window_join {
                    equi.retain(|p| *p != (sl, sr) && *p != (el, er));
                }
                let mut req_l: BTreeSet<usize> =
                    required.iter().copied().filter(|&i| i < lw).collect();
                let mut req_r: BTreeSet<usize> = required
                    .iter()
                    .copied()
                    .filter(|&i| i >= lw)
                    .map(|i| i - lw)
                    .collect();
                for (a, b) in &equi {
                    req_l.insert(*a);
                    req_r.insert(*b);
                }
                if let Some(((sl, sr), (el, er))) = window_join {
                    req_l.extend([sl, el]);
                    req_r.extend([sr, er]);
                }
                for c in &rest {
                    for i in c.columns() {
                        if i < lw {
                            req_l.insert(i);
                        } else {
                            req_r.insert(i - lw);
                        }
                    }
                }
                // An event-time interval join: both rowtimes bounded against each other.
                let interval = if window_join.is_none() {
                    interval_bounds(&rest, lw, &fields_l, &fields_r)
                } else {
                    None
                };
                if let Some((lt, rt, _, _)) = interval {
                    req_l.insert(lt);
                    req_r.insert(rt);
                }
                let regular = window_join.is_none() && interval.is_none();
                // A column an input filter fixes (`category = 10`) and that the join itself
                // does not read is not carried through the join: the constant is read above
                // it (Calcite's constant reduction with pulled-up predicates).
                let mut used_here: BTreeSet<usize> = BTreeSet::new();
                for (a, b) in &equi {
                    used_here.extend([*a, lw + *b]);
                }
                for c in &rest {
                    used_here.extend(c.columns());
                }
                if let Some(((sl, sr), (el, er))) = window_join {
                    used_here.extend([sl, el, lw + sr, lw + er]);
                }
                if let Some((lt, rt, _, _)) = interval {
                    used_here.extend([lt, lw + rt]);
                }
                let mut consts: Constants = Vec::new();
                if regular {
                    for (side, conds, offset) in [(&mut req_l, &lc, 0), (&mut req_r, &rc, lw)] {
                        for c in conds.iter() {
                            if let Some((col, value)) = fixed_constant(c) {
                                let flat = col + offset;
                                if required.contains(&flat) && !used_here.contains(&flat) {
                                    side.remove(&col);
                                    let f = if offset == 0 {
                                        &fields_l[col]
                                    } else {
                                        &fields_r[col]
                                    };
                                    consts.push((flat, constant_of(value, &f.ty)));
                                }
                            }
                        }
                    }
                }
                let (lrel, lmap, lconsts) = self.materialize(*left, lc, &req_l, regular)?;
                let (rrel, rmap, rconsts) = self.materialize(*right, rc, &req_r, regular)?;
                consts.extend(lconsts);
                consts.extend(rconsts.into_iter().map(|(i, e)| (i + lw, e)));
                let lo = lrel.schema.len();
                let mut map: Vec<Option<usize>> = lmap.clone();
                map.extend(rmap.iter().map(|m| m.map(|j| j + lo)));
                let mut schema: Vec<Field> = lrel.schema.clone();
                schema.extend(rrel.schema.iter().cloned());
                let mut names: Vec<String> = schema.iter().map(|f| f.name.clone()).collect();
                uniquify(&mut names);
                for (f, n) in schema.iter_mut().zip(names) {
                    f.name = n;
                }
                let condition = and_all(
                    rest.iter()
                        .map(|c| remap(c, &map, &consts, &schema))
                        .collect(),
                );
                let equi: Vec<(usize, usize)> = equi
                    .iter()
                    .filter_map(|(a, b)| Some((lmap[*a]?, rmap[*b]?)))
                    .collect();
                let kind = match window_join {
                    Some(((sl, sr), (el, er))) => {
                        let lw_spec = fields_l[sl].window.clone().map(|p| p.window);
                        let rw_spec = fields_r[sr].window.clone().map(|p| p.window);
                        match (lw_spec, rw_spec, lmap[sl], lmap[el], rmap[sr], rmap[er]) {
                            (Some(l), Some(r), Some(a), Some(b), Some(c), Some(d)) => {
                                JoinKind::Window {
                                    left: l,
                                    right: r,
                                    left_bounds: (a, b),
                                    right_bounds: (c, d),
                                }
                            }
                            _ => JoinKind::Regular,
                        }
                    }
                    None => match interval {
                        Some((lt, rt, lower_ms, upper_ms)) => match (lmap[lt], rmap[rt]) {
                            (Some(left_time), Some(right_time)) => JoinKind::Interval {
                                left_time,
                                right_time,
                                lower_ms,
                                upper_ms,
                            },
                            _ => JoinKind::Regular,
                        },
                        None => JoinKind::Regular,
                    },
                };
                if matches!(kind, JoinKind::Regular) && equi.is_empty() {
                    return Err(SqlError::unsupported(
                        None,
                        "a join without an equality condition (a cross join) on streams",
                    ));
                }
                // A regular join's output has no time attributes: Flink materializes them.
                if matches!(kind, JoinKind::Regular) {
                    for f in schema.iter_mut() {
                        f.window = None;
                    }
                }
                Ok((
                    Rel {
                        node: RelNode::Join(Join {
                            kind,
                            equi,
                            condition,
                        }),
                        inputs: vec![lrel, rrel],
                        schema,
                    },
                    map,
                    consts,
                ))
            }
        }
    }

    fn lookup_join(
        &mut self,
        left: FromTree,
        right: FromTree,
        on: LookupOn,
        required: &BTreeSet<usize>,
        lw: usize,
    ) -> Result<(Rel, Vec<Option<usize>>, Constants)> {
        let LookupOn {
            lc,
            rest,
            equi,
            left_outer,
            after,
        } = on;
        let FromTree::Leaf(rb) = right else {
            return Err(SqlError::unsupported(
                None,
                "a lookup join whose right side is not a table",
            ));
        };
        if !matches!(rb.rel.node, RelNode::TableScan(_)) {
            return Err(SqlError::unsupported(
                None,
                "FOR SYSTEM_TIME AS OF on a view or subquery: name the lookup table itself",
            ));
        }
        // Keys: right column = expression over the left side (computed below the join as $fN).
        let mut key_exprs: Vec<(usize, Expr)> = equi
            .iter()
            .map(|(l, r)| (*r, column(*l, &left.fields()[*l])))
            .collect();
        let mut residual = Vec::new();
        for c in lc.into_iter().chain(rest) {
            if let Expr::Binary {
                op: BinaryOp::Eq,
                left: a,
                right: b,
                ..
            } = &c
            {
                let (ca, cb) = (a.columns(), b.columns());
                let pick = |side: &Expr, other: &Expr, cs: &[usize], co: &[usize]| {
                    if let Expr::Column { index, .. } = other {
                        if *index >= lw
                            && !cs.is_empty()
                            && cs.iter().all(|&i| i < lw)
                            && co.len() == 1
                        {
                            return Some((*index - lw, side.clone()));
                        }
                    }
                    None
                };
                if let Some(k) = pick(a, b, &ca, &cb).or_else(|| pick(b, a, &cb, &ca)) {
                    key_exprs.push(k);
                    continue;
                }
            }
            residual.push(c);
        }
        if key_exprs.is_empty() {
            return Err(SqlError::validation(
                None,
                "Temporal table join requires an equality condition on fields of table",
            ));
        }
        let mut left_conds = Vec::new();
        let mut join_rest = Vec::new();
        // An inner join's left-only conditions filter its input; a LEFT JOIN's ON conditions
        // only decide matches (its WHERE's left-only ones filter the input, the others hold
        // over the joined row).
        let mut post = Vec::new();
        for c in residual {
            if c.columns().iter().all(|&i| i < lw) && !left_outer {
                left_conds.push(c);
            } else {
                join_rest.push(c);
            }
        }
        for c in after {
            if c.columns().iter().all(|&i| i < lw) {
                left_conds.push(c);
            } else {
                post.push(c);
            }
        }
        let mut req_l: BTreeSet<usize> = required.iter().copied().filter(|&i| i < lw).collect();
        for c in join_rest.iter().chain(&post) {
            req_l.extend(c.columns().into_iter().filter(|&i| i < lw));
        }
        let (lrel, lmap, consts) = self.materialize(left, left_conds, &req_l, false)?;
        // Project the key expressions onto the left side.
        let mut proj: Vec<(Expr, String)> = lrel
            .schema
            .iter()
            .enumerate()
            .map(|(i, f)| (column(i, f), f.name.clone()))
            .collect();
        let mut keys = Vec::new();
        for (rcol, e) in &key_exprs {
            let e = remap(e, &lmap, &consts, &lrel.schema);
            let rty = &rb.rel.schema[*rcol].ty;
            match &e {
                Expr::Column { index, .. } if e.data_type().logical == rty.logical => {
                    keys.push((*rcol, *index))
                }
                _ => {
                    let e = if e.data_type().logical != rty.logical {
                        Expr::Cast {
                            expr: Box::new(e),
                            ty: rty.clone().with_nullable(true),
                            safe: false,
                        }
                    } else {
                        e
                    };
                    keys.push((*rcol, proj.len()));
                    let name = format!("$f{}", lw.max(proj.len()) + proj.len() - proj.len());
                    proj.push((e, name));
                }
            }
        }
        let lrel = if proj.len() > lrel.schema.len() {
            calc(lrel, proj, None)
        } else {
            lrel
        };
        let lo = lrel.schema.len();
        let mut map = lmap;
        map.extend((0..rb.rel.schema.len()).map(|j| Some(lo + j)));
        let mut schema = lrel.schema.clone();
        schema.extend(rb.rel.schema.iter().map(|f| {
            let mut f = f.clone();
            if left_outer {
                f.ty = f.ty.with_nullable(true);
            }
            f
        }));
        let mut names: Vec<String> = schema.iter().map(|f| f.name.clone()).collect();
        uniquify(&mut names);
        for (f, n) in schema.iter_mut().zip(names) {
            f.name = n;
        }
        let condition = and_all(
            join_rest
                .iter()
                .map(|c| remap(c, &map, &consts, &schema))
                .collect(),
        );
        let rel = Rel {
            node: RelNode::Join(Join {
                kind: JoinKind::Lookup {
                    keys: keys.clone(),
                    left_outer,
                },
                equi: keys.iter().map(|(r, l)| (*l, *r)).collect(),
                condition,
            }),
            inputs: vec![lrel, rb.rel],
            schema,
        };
        // A LEFT JOIN's WHERE over looked-up columns: a filter over the joined rows.
        let rel = match and_all(
            post.iter()
                .map(|c| remap(c, &map, &consts, &rel.schema))
                .collect(),
        ) {
            None => rel,
            Some(cond) => {
                let proj = rel
                    .schema
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (column(i, f), f.name.clone()))
                    .collect();
                calc(rel, proj, Some(cond))
            }
        };
        Ok((rel, map, consts))
    }
}

/// `col = literal` (either way round) over integer or boolean types — where reading
/// the literal instead of the column gives the same value: `(column, literal)`.
fn fixed_constant(c: &Expr) -> Option<(usize, &Expr)> {
    let Expr::Binary {
        op: BinaryOp::Eq,
        left,
        right,
        ..
    } = c
    else {
        return None;
    };
    let (col, lit) = match (left.as_ref(), right.as_ref()) {
        (Expr::Column { index, ty, .. }, l @ Expr::Literal { .. }) => (Some((*index, ty)), l),
        (l @ Expr::Literal { .. }, Expr::Column { index, ty, .. }) => (Some((*index, ty)), l),
        _ => return None,
    };
    let (index, ty) = col?;
    let exact = ty.is_integer() || matches!(ty.logical, LogicalType::Boolean);
    match lit.as_literal() {
        Some(Value::Null) | None => None,
        Some(_) if exact => Some((index, lit)),
        _ => None,
    }
}

/// The constant a fixed column reads: the literal cast to the column's type, as Calcite
/// writes it (`CAST(10:BIGINT AS BIGINT)`).
fn constant_of(lit: &Expr, ty: &DataType) -> Expr {
    let value = lit.as_literal().cloned().unwrap_or(Value::Null);
    Expr::Cast {
        expr: Box::new(Expr::Literal {
            value,
            ty: ty.without_time_attribute().not_null(),
        }),
        ty: ty.without_time_attribute(),
        safe: false,
    }
}

/// A rowtime column plus a constant: `(column, offset ms)` for `col`, `col + INTERVAL`,
/// `col - INTERVAL`.
fn time_ref(e: &Expr, fields: &dyn Fn(usize) -> Option<bool>) -> Option<(usize, i64)> {
    match e {
        Expr::Column { index, .. } if fields(*index) == Some(true) => Some((*index, 0)),
        Expr::Binary {
            op: op @ (BinaryOp::Plus | BinaryOp::Minus),
            left,
            right,
            ..
        } => {
            let (i, o) = time_ref(left, fields)?;
            let Some(Value::IntervalMillis(c)) = right.as_literal() else {
                return None;
            };
            Some((i, if *op == BinaryOp::Plus { o + c } else { o - c }))
        }
        _ => None,
    }
}

/// The bounds of an event-time interval join, if `conds` bound a left rowtime against a right
/// rowtime from below and above: `(left time, right time (right index), lower, upper)` with
/// `right + lower <= left <= right + upper`.
fn interval_bounds(
    conds: &[Expr],
    lw: usize,
    fields_l: &[Field],
    fields_r: &[Field],
) -> Option<(usize, usize, i64, i64)> {
    let is_rowtime = |i: usize| {
        let f = if i < lw {
            fields_l.get(i)
        } else {
            fields_r.get(i - lw)
        };
        f.map(|f| f.ty.time_attribute() == TimestampKind::Rowtime)
    };
    // (left time, right time, bound) from below and from above.
    let mut lower: Option<(usize, usize, i64)> = None;
    let mut upper: Option<(usize, usize, i64)> = None;
    for c in conds {
        let Expr::Binary {
            op, left, right, ..
        } = c
        else {
            continue;
        };
        if !matches!(
            op,
            BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq
        ) {
            continue;
        }
        let (Some((a, ca)), Some((b, cb))) =
            (time_ref(left, &is_rowtime), time_ref(right, &is_rowtime))
        else {
            continue;
        };
        // Normalise to `L - R op k`.
        let (l, r, op, k) = if a < lw && b >= lw {
            (a, b - lw, *op, cb - ca)
        } else if b < lw && a >= lw {
            let flipped = match op {
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::LtEq => BinaryOp::GtEq,
                BinaryOp::Gt => BinaryOp::Lt,
                _ => BinaryOp::LtEq,
            };
            (b, a - lw, flipped, ca - cb)
        } else {
            continue;
        };
        match op {
            BinaryOp::GtEq => lower = Some((l, r, k)),
            BinaryOp::Gt => lower = Some((l, r, k + 1)),
            BinaryOp::LtEq => upper = Some((l, r, k)),
            _ => upper = Some((l, r, k - 1)),
        }
    }
    match (lower, upper) {
        (Some((l1, r1, lo)), Some((l2, r2, hi))) if l1 == l2 && r1 == r2 => Some((l1, r1, lo, hi)),
        _ => None,
    }
}

fn unreachable_leaf<T>() -> Result<T> {
    Err(SqlError::validation(
        None,
        "internal: the window aggregate's input changed shape",
    ))
}

/// A select item: an expression with its output name, or a column `*` expanded to.
/// An aggregate call as bound: its text, function, `DISTINCT`, arguments and `FILTER`.
type BoundCall<'e> = (&'e ast::Expr, AggKind, bool, Vec<Expr>, Option<Expr>);

enum SelectItem<'q> {
    Expr(&'q ast::Expr, String),
    Column(usize, String),
}

/// Whether column `index` of `rel` is a table column read as is (not computed on the way).
fn passes_through(rel: &Rel, index: usize) -> bool {
    match &rel.node {
        RelNode::TableScan(t) => !matches!(
            t.columns.get(index),
            Some((_, ScanColumnSource::Computed(_)))
        ),
        RelNode::Calc(c) => match c.projection.get(index) {
            Some((Expr::Column { index: i, .. }, _)) => {
                rel.inputs.first().is_some_and(|r| passes_through(r, *i))
            }
            _ => false,
        },
        _ => true,
    }
}

/// Makes a projection's names unique as Calcite's validator does (`dateTime`, `dateTime0`).
fn unique_names(proj: Vec<(Expr, String)>) -> Vec<(Expr, String)> {
    let mut names: Vec<String> = proj.iter().map(|p| p.1.clone()).collect();
    uniquify(&mut names);
    proj.into_iter()
        .zip(names)
        .map(|((e, _), n)| (e, n))
        .collect()
}

/// The name of a projected group key: the column's name, else `$fN`.
fn key_name(_g: &ast::Expr, e: &Expr, at: usize) -> String {
    match e {
        Expr::Column { name, .. } => name.clone(),
        _ => format!("$f{at}"),
    }
}

/// Appends the aggregate arguments that are not plain projected columns to the projection and
/// points each call's arguments at projection columns.
fn push_args(proj: &mut Vec<(Expr, String)>, calls: &mut [BoundCall<'_>]) -> usize {
    let start = proj.len();
    for c in calls.iter_mut() {
        for a in c.3.iter_mut().chain(c.4.iter_mut()) {
            let at = match proj
                .iter()
                .position(|(e, _)| e.to_string() == a.to_string())
            {
                Some(i) => i,
                None => {
                    let name = match a {
                        Expr::Column { name, .. } => name.clone(),
                        _ => format!("$f{}", proj.len()),
                    };
                    proj.push((a.clone(), name));
                    proj.len() - 1
                }
            };
            *a = Expr::Column {
                index: at,
                name: proj[at].1.clone(),
                ty: proj[at].0.data_type(),
            };
        }
    }
    start
}

/// The output name of an aggregate: the select alias when the item is exactly the call.
fn agg_name(s: &ast::Select, a: &ast::Expr) -> Option<String> {
    for (i, p) in s.projection.iter().enumerate() {
        match p {
            ast::SelectItem::ExprWithAlias { expr, alias } if expr.to_string() == a.to_string() => {
                return Some(alias.value.clone())
            }
            ast::SelectItem::UnnamedExpr(e) if e.to_string() == a.to_string() => {
                return Some(format!("EXPR${i}"))
            }
            _ => {}
        }
    }
    None
}

/// Applies `AS t(c1, c2, …)` column names.
fn rename_columns(mut b: Bound, alias: &ast::TableAlias) -> Bound {
    for (f, c) in b.rel.schema.iter_mut().zip(&alias.columns) {
        f.name = c.name.value.clone();
    }
    b
}

/// Applies a view's or WITH query's column list and qualifies the columns by its name.
fn with_column_names(mut b: Bound, cols: &[String], name: &str) -> Bound {
    if !cols.is_empty() {
        let proj: Vec<(Expr, String)> = b
            .rel
            .schema
            .iter()
            .enumerate()
            .zip(cols)
            .map(|((i, f), c)| (column(i, f), c.clone()))
            .collect();
        b.rel = calc(b.rel, proj, None);
    }
    b.requalified(name)
}

/// An unknown column in a WHERE that is an alias of the same SELECT's select list (Nexmark's
/// q6 filters `rownum`, its own `ROW_NUMBER() OVER …`): refused as Flink refuses it (`Column
/// 'rownum' not found in any table`, at the name), saying why the name is not there.
fn select_alias_in_where(e: SqlError, projection: &[ast::SelectItem]) -> SqlError {
    let SqlError::UnknownName {
        pos,
        kind: "Column",
        name,
        ..
    } = &e
    else {
        return e;
    };
    let defined = projection.iter().find_map(|p| match p {
        ast::SelectItem::ExprWithAlias { expr, alias }
            if alias.value.eq_ignore_ascii_case(name) =>
        {
            Some(expr)
        }
        _ => None,
    });
    match defined {
        Some(expr) => SqlError::validation(
            *pos,
            format!(
                "Column '{name}' not found in any table: '{name}' is this SELECT's own alias of \
                 `{expr}`, which its WHERE cannot read (WHERE filters the FROM's rows, before the \
                 select list); filter it in an outer query"
            ),
        ),
        None => e,
    }
}
