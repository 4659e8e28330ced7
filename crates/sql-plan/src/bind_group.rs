//! Unbounded aggregation: a `GROUP BY` without a window, an aggregate over the whole stream, and
//! `SELECT DISTINCT` (Flink's rewrite: a `GROUP BY` of the selected columns with no aggregate).
//! Each becomes a [`GroupAggregate`] over a `Calc` of its keys, then its calls' arguments and
//! `FILTER` conditions; HAVING and the select list are a `Calc` over its output (keys, then
//! aggregates). Its output is a changelog: a key's row is updated each time its aggregates change.

use std::collections::BTreeSet;

use sqlparser::ast;

use super::{
    agg_name, calc, column, key_name, push_args, remap, unique_names, BoundCall, FromTree,
    QueryBinder, SelectItem,
};
use crate::bind_expr::{Scope, ScopeColumn};
use crate::error::{Position, Result, SqlError};
use crate::expr::Expr;

use super::super::agg_call::AggCall;
use super::super::logical::{GroupAggregate, Rel, RelNode};
use super::super::schema::Field;
use super::Bound;

impl QueryBinder<'_> {
    /// `SELECT … FROM … [WHERE …] [GROUP BY keys] [HAVING …]` with no window among the keys.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn group_aggregate(
        &mut self,
        s: &ast::Select,
        tree: FromTree,
        flat: Scope,
        where_conds: Vec<Expr>,
        keys: Vec<(&ast::Expr, Expr)>,
        aggs: &[&ast::Expr],
        base: Position,
    ) -> Result<Bound> {
        let calls = self.bind_calls(aggs, &flat, base, true)?;
        let (agg_rel, calls) = self.group_rel(s, tree, where_conds, &keys, calls)?;
        let nkeys = keys.len();
        // The scope after aggregation: keys by their names, aggregates by their text.
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
        for (i, c) in calls.iter().enumerate() {
            let at = nkeys + i;
            post.columns.push(ScopeColumn {
                qualifier: None,
                name: agg_rel.schema[at].name.clone(),
                ty: agg_rel.schema[at].ty.clone(),
            });
            post.pre_bind(c.0, at);
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
        Ok(Bound {
            rel: calc(agg_rel, unique_names(proj), having),
            qualifiers: vec![None; n],
        })
    }

    /// `SELECT DISTINCT items FROM … [WHERE …]`: a group aggregate keyed by the items.
    pub(super) fn distinct_select(
        &mut self,
        s: &ast::Select,
        tree: FromTree,
        flat: Scope,
        where_conds: Vec<Expr>,
        base: Position,
    ) -> Result<Bound> {
        if s.having.is_some() {
            return Err(SqlError::unsupported(
                self.pos(base, s),
                "SELECT DISTINCT with HAVING",
            ));
        }
        let items = self.select_items(s, &flat, base)?;
        let fields = tree.fields();
        let mut keys: Vec<(Expr, String)> = Vec::new();
        for it in &items {
            keys.push(match it {
                SelectItem::Expr(e, n) => (self.bind(e, &flat, base)?, n.clone()),
                SelectItem::Column(j, n) => (column(*j, &fields[*j]), n.clone()),
            });
        }
        let mut required = BTreeSet::new();
        for (e, _) in &keys {
            required.extend(e.columns());
        }
        let (rel, map, consts) = self.materialize(tree, where_conds, &required, false)?;
        let proj: Vec<(Expr, String)> = unique_names(
            keys.iter()
                .map(|(e, n)| (remap(e, &map, &consts, &rel.schema), n.clone()))
                .collect(),
        );
        let input = calc(rel, proj, None);
        let schema: Vec<Field> = input
            .schema
            .iter()
            .map(|f| Field::new(f.name.clone(), f.ty.without_time_attribute()))
            .collect();
        let n = schema.len();
        Ok(Bound {
            rel: Rel {
                node: RelNode::GroupAggregate(GroupAggregate {
                    group: (0..n).collect(),
                    aggs: Vec::new(),
                    state_ttl_ms: self.state_ttl_hint.take(),
                }),
                inputs: vec![input],
                schema,
            },
            qualifiers: vec![None; n],
        })
    }

    /// The aggregate node over the FROM tree: its input `Calc` (keys, then the calls'
    /// arguments and filters) and its output (keys, then one column per call).
    fn group_rel<'e>(
        &mut self,
        s: &ast::Select,
        tree: FromTree,
        where_conds: Vec<Expr>,
        keys: &[(&ast::Expr, Expr)],
        mut calls: Vec<BoundCall<'e>>,
    ) -> Result<(Rel, Vec<BoundCall<'e>>)> {
        let mut required = BTreeSet::new();
        for e in keys
            .iter()
            .map(|k| &k.1)
            .chain(calls.iter().flat_map(|c| c.3.iter().chain(c.4.iter())))
        {
            required.extend(e.columns());
        }
        let (rel, map, consts) = self.materialize(tree, where_conds, &required, false)?;
        let mut proj: Vec<(Expr, String)> = Vec::new();
        for (g, e) in keys {
            let e = remap(e, &map, &consts, &rel.schema);
            // A computed key takes the alias the select list gives the same expression.
            let alias = s.projection.iter().find_map(|p| match p {
                ast::SelectItem::ExprWithAlias { expr, alias }
                    if expr.to_string() == g.to_string() =>
                {
                    Some(alias.value.clone())
                }
                _ => None,
            });
            let name = match (&e, alias) {
                (Expr::Column { .. }, _) | (_, None) => key_name(g, &e, proj.len()),
                (_, Some(a)) => a,
            };
            proj.push((e, name));
        }
        let nkeys = proj.len();
        for c in calls.iter_mut() {
            for a in c.3.iter_mut().chain(c.4.iter_mut()) {
                *a = remap(a, &map, &consts, &rel.schema);
            }
        }
        // A filter is an input column of its own, even when it is a plain column.
        push_args(&mut proj, &mut calls);
        let input = calc(rel, proj, None);
        let in_schema = input.schema.clone();
        let mut agg_calls = Vec::new();
        for (i, (a, kind, distinct, args, filter)) in calls.iter().enumerate() {
            let idx: Vec<usize> = args
                .iter()
                .filter_map(|e| match e {
                    Expr::Column { index, .. } => Some(*index),
                    _ => None,
                })
                .collect();
            let filter = match filter {
                Some(Expr::Column { index, .. }) => Some((*index, in_schema[*index].name.clone())),
                _ => None,
            };
            let arg_ty = idx.first().map(|&i| &in_schema[i].ty);
            agg_calls.push(AggCall {
                kind: *kind,
                args: idx.clone(),
                arg_names: idx.iter().map(|&i| in_schema[i].name.clone()).collect(),
                distinct: *distinct,
                filter,
                name: agg_name(s, a).unwrap_or_else(|| format!("$f{}", nkeys + i)),
                ty: kind.result_type(arg_ty),
            });
        }
        let mut schema: Vec<Field> = in_schema[..nkeys]
            .iter()
            .map(|f| Field::new(f.name.clone(), f.ty.without_time_attribute()))
            .collect();
        schema.extend(
            agg_calls
                .iter()
                .map(|c| Field::new(c.name.clone(), c.ty.clone())),
        );
        let rel = Rel {
            node: RelNode::GroupAggregate(GroupAggregate {
                group: (0..nkeys).collect(),
                aggs: agg_calls,
                state_ttl_ms: self.state_ttl_hint.take(),
            }),
            inputs: vec![input],
            schema,
        };
        Ok((rel, calls))
    }
}
