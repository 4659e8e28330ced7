//! `ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)` in a select list: a [`Rank`] over the FROM
//! tree, its number the last column, the select list a `Calc` over it. The filter on the number
//! that makes it a Top-N (`WHERE rn <= 10` in the enclosing query) is folded into the rank
//! later, when the plan is whole ([`fold_rank_filters`]); a rank that no filter bounds is
//! refused there. Other window functions (`RANK`, `DENSE_RANK`, aggregates `OVER`) are refused
//! by name.

use std::collections::BTreeSet;

use sqlparser::ast;

use super::{calc, column, remap, unique_names, FromTree, QueryBinder, SelectItem};
use crate::bind_expr::Scope;
use crate::error::{Position, Result, SqlError};
use crate::expr::{BinaryOp, Expr};
use crate::types::DataType;
use crate::value::Value;

use super::super::logical::{Calc, Rank, Rel, RelNode, SortKey};
use super::super::schema::Field;
use super::Bound;

/// The rank number's column name in Flink's plans.
const RANK_COLUMN: &str = "w0$o0";

/// Whether a select item is a window function call (`f(…) OVER (…)`).
pub(super) fn is_window_call(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Function(f) if f.over.is_some())
}

impl QueryBinder<'_> {
    /// A select list holding `ROW_NUMBER() OVER (…)` (at most one window call).
    pub(super) fn rank_select(
        &mut self,
        s: &ast::Select,
        tree: FromTree,
        flat: Scope,
        where_conds: Vec<Expr>,
        base: Position,
    ) -> Result<Bound> {
        let items = self.select_items(s, &flat, base)?;
        let fields = tree.fields();
        let calls: Vec<&ast::Expr> = items
            .iter()
            .filter_map(|it| match it {
                SelectItem::Expr(e, _) if is_window_call(e) => Some(*e),
                _ => None,
            })
            .collect();
        let [call] = calls.as_slice() else {
            return Err(SqlError::unsupported(
                self.pos(base, s),
                "more than one window function in a select list",
            ));
        };
        let ast::Expr::Function(f) = call else {
            return Err(SqlError::validation(self.pos(base, s), "lost window call"));
        };
        let pos = self.pos(base, *call);
        let name = f.name.to_string().to_uppercase();
        if name != "ROW_NUMBER" {
            let what = match name.as_str() {
                "RANK" | "DENSE_RANK" => format!("{name}() OVER (…) (a Top-N by {name}): this version plans ROW_NUMBER() Top-N and deduplication"),
                _ => format!("the window function {name}(…) OVER (…) (an OVER aggregate): this version plans ROW_NUMBER() Top-N and deduplication"),
            };
            return Err(SqlError::unsupported(pos, what));
        }
        let Some(ast::WindowType::WindowSpec(spec)) = &f.over else {
            return Err(SqlError::unsupported(pos, "a named window (OVER w)"));
        };
        if spec.window_frame.is_some() {
            return Err(SqlError::unsupported(
                pos,
                "a window frame on ROW_NUMBER() (Flink does not take one)",
            ));
        }
        if spec.order_by.is_empty() {
            return Err(SqlError::validation(
                pos,
                "ROW_NUMBER() OVER (…) needs an ORDER BY",
            ));
        }
        let column_of = |e: &ast::Expr, what: &str| -> Result<usize> {
            match self.bind(e, &flat, base)? {
                Expr::Column { index, .. } => Ok(index),
                _ => Err(SqlError::unsupported(
                    self.pos(base, e),
                    format!("an expression as a {what} of ROW_NUMBER() (write it as a column of a subquery)"),
                )),
            }
        };
        let mut partition = Vec::new();
        for p in &spec.partition_by {
            partition.push(column_of(p, "PARTITION BY key")?);
        }
        let mut order = Vec::new();
        for o in &spec.order_by {
            let descending = match &o.options.sort {
                None | Some(ast::OrderBySort::Asc) => false,
                Some(ast::OrderBySort::Desc) => true,
                Some(ast::OrderBySort::Using(_)) => {
                    return Err(SqlError::unsupported(
                        self.pos(base, &o.expr),
                        "ORDER BY … USING",
                    ))
                }
            };
            order.push(SortKey {
                column: column_of(&o.expr, "ORDER BY key")?,
                descending,
                nulls_first: o.options.nulls_first.unwrap_or(!descending),
            });
        }
        // The other items, over the FROM scope.
        let mut bound: Vec<Option<(Expr, String)>> = Vec::new();
        for it in &items {
            bound.push(match it {
                SelectItem::Expr(e, _) if is_window_call(e) => None,
                SelectItem::Expr(e, n) => Some((self.bind(e, &flat, base)?, n.clone())),
                SelectItem::Column(j, n) => Some((column(*j, &fields[*j]), n.clone())),
            });
        }
        let mut required: BTreeSet<usize> = partition.iter().copied().collect();
        required.extend(order.iter().map(|k| k.column));
        for (e, _) in bound.iter().flatten() {
            required.extend(e.columns());
        }
        let (rel, map, consts) = self.materialize(tree, where_conds, &required, false)?;
        let at = |i: usize| {
            map.get(i)
                .copied()
                .flatten()
                .ok_or_else(|| SqlError::validation(pos, "a ROW_NUMBER() key was lost"))
        };
        let partition = partition
            .iter()
            .map(|&i| at(i))
            .collect::<Result<Vec<_>>>()?;
        for k in &mut order {
            k.column = at(k.column)?;
        }
        let mut schema: Vec<Field> = rel.schema.clone();
        let rank_at = schema.len();
        schema.push(Field::new(RANK_COLUMN, DataType::bigint().not_null()));
        let rank_rel = Rel {
            node: RelNode::Rank(Rank {
                partition,
                order,
                start: 1,
                end: None,
                output_rank: true,
            }),
            inputs: vec![rel],
            schema,
        };
        let mut proj = Vec::new();
        for (it, b) in items.iter().zip(bound) {
            proj.push(match (it, b) {
                (SelectItem::Expr(_, n), None) => {
                    (column(rank_at, &rank_rel.schema[rank_at]), n.clone())
                }
                (_, Some((e, n))) => (remap(&e, &map, &consts, &rank_rel.schema), n),
                (SelectItem::Column(..), None) => unreachable_item()?,
            });
        }
        let n = proj.len();
        Ok(Bound {
            rel: calc(rank_rel, unique_names(proj), None),
            qualifiers: vec![None; n],
        })
    }
}

fn unreachable_item<T>() -> Result<T> {
    Err(SqlError::validation(
        None,
        "internal plan error: a lost select item",
    ))
}

/// The rank bounds a condition's conjunct sets on the rank column `r`: `r <= n`, `r < n`,
/// `r = n`, `n >= r`, `r >= n`, `r > n` (Flink's rank range). `None`: not a bound on `r`.
fn rank_bound(e: &Expr, r: usize) -> Option<(Option<i64>, Option<i64>)> {
    let Expr::Binary {
        op, left, right, ..
    } = e
    else {
        return None;
    };
    let lit = |e: &Expr| match e {
        Expr::Literal {
            value: Value::Int(n),
            ..
        } => Some(*n),
        Expr::Cast { expr, .. } => match expr.as_ref() {
            Expr::Literal {
                value: Value::Int(n),
                ..
            } => Some(*n),
            _ => None,
        },
        _ => None,
    };
    let is_rank = |e: &Expr| matches!(e, Expr::Column { index, .. } if *index == r);
    // Normalize to `r op n`.
    let (op, n) = if is_rank(left) {
        (*op, lit(right)?)
    } else if is_rank(right) {
        let flipped = match op {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => *other,
        };
        (flipped, lit(left)?)
    } else {
        return None;
    };
    Some(match op {
        BinaryOp::LtEq => (None, Some(n)),
        BinaryOp::Lt => (None, Some(n - 1)),
        BinaryOp::Eq => (Some(n), Some(n)),
        BinaryOp::GtEq => (Some(n), None),
        BinaryOp::Gt => (Some(n + 1), None),
        _ => return None,
    })
}

/// Folds the filters on rank numbers into their ranks (Flink's `FlinkLogicalRankRule`): in a
/// `Calc` right over a `Rank`, the conjuncts bounding the number become the rank's range; when
/// nothing above reads the number any more, the rank stops emitting it. A rank left without an
/// upper bound is refused.
pub fn fold_rank_filters(rel: Rel) -> Result<Rel> {
    let Rel {
        node,
        inputs,
        schema,
    } = rel;
    let mut inputs = inputs
        .into_iter()
        .map(fold_rank_filters)
        .collect::<Result<Vec<_>>>()?;
    if let (RelNode::Calc(c), Some(input)) = (&node, inputs.first_mut()) {
        if let RelNode::Rank(rank) = &mut input.node {
            if rank.end.is_none() && rank.output_rank {
                let r = input.schema.len() - 1;
                let mut kept = Vec::new();
                for conj in c
                    .condition
                    .clone()
                    .map(super::conjuncts)
                    .unwrap_or_default()
                {
                    match rank_bound(&conj, r) {
                        Some((lo, hi)) => {
                            if let Some(lo) = lo {
                                rank.start = rank.start.max(lo);
                            }
                            if let Some(hi) = hi {
                                rank.end = Some(rank.end.map_or(hi, |e| e.min(hi)));
                            }
                        }
                        None => kept.push(conj),
                    }
                }
                let condition = super::and_all(kept);
                let reads_rank = c
                    .projection
                    .iter()
                    .map(|(e, _)| e)
                    .chain(condition.iter())
                    .any(|e| e.columns().contains(&r));
                if !reads_rank {
                    rank.output_rank = false;
                    input.schema.pop();
                }
                let mut calc = Calc {
                    projection: c.projection.clone(),
                    condition,
                };
                if !rank.output_rank {
                    prune_below_rank(&mut calc, input);
                }
                check_bounded(&inputs)?;
                return Ok(Rel {
                    node: RelNode::Calc(calc),
                    inputs,
                    schema,
                });
            }
        }
    }
    check_bounded(&inputs)?;
    Ok(Rel {
        node,
        inputs,
        schema,
    })
}

/// Flink's projection push-down through a rank that does not emit its number: the rank's
/// input keeps only the columns `calc` (above it) reads and the rank's own keys.
fn prune_below_rank(calc: &mut Calc, rank_rel: &mut Rel) {
    let RelNode::Rank(rank) = &mut rank_rel.node else {
        return;
    };
    let Some(below) = rank_rel.inputs.first_mut() else {
        return;
    };
    let n = below.schema.len();
    let mut used = vec![false; n];
    for e in calc
        .projection
        .iter()
        .map(|(e, _)| e)
        .chain(calc.condition.iter())
    {
        for c in e.columns() {
            if c < n {
                used[c] = true;
            }
        }
    }
    for &k in rank
        .partition
        .iter()
        .chain(rank.order.iter().map(|k| &k.column))
    {
        used[k] = true;
    }
    if used.iter().all(|u| *u) {
        return;
    }
    let mut map = vec![None; n];
    let mut proj = Vec::new();
    for (i, f) in below.schema.iter().enumerate() {
        if used[i] {
            map[i] = Some(proj.len());
            proj.push((
                Expr::Column {
                    index: i,
                    name: f.name.clone(),
                    ty: f.ty.clone(),
                },
                f.name.clone(),
            ));
        }
    }
    let at = |i: usize| map[i].unwrap_or(0);
    for k in &mut rank.partition {
        *k = at(*k);
    }
    for k in &mut rank.order {
        k.column = at(k.column);
    }
    let old = std::mem::replace(
        below,
        Rel {
            node: RelNode::Union,
            inputs: Vec::new(),
            schema: Vec::new(),
        },
    );
    let pruned = calc_rel(old, proj);
    rank_rel.schema = pruned.schema.clone();
    *below = pruned;
    let rename = |e: &Expr| {
        e.substitute_columns(&|i, _| {
            let j = at(i);
            Expr::Column {
                index: j,
                name: rank_rel.schema[j].name.clone(),
                ty: rank_rel.schema[j].ty.clone(),
            }
        })
    };
    for (e, _) in &mut calc.projection {
        *e = rename(e);
    }
    if let Some(c) = &mut calc.condition {
        *c = rename(c);
    }
}

/// A projection over `input`, merged into it when it is a projection too.
fn calc_rel(input: Rel, proj: Vec<(Expr, String)>) -> Rel {
    super::super::physical::merge_calcs(calc(input, proj, None))
}

fn check_bounded(inputs: &[Rel]) -> Result<()> {
    for i in inputs {
        if let RelNode::Rank(r) = &i.node {
            if r.end.is_none() {
                return Err(SqlError::unsupported(
                    None,
                    "ROW_NUMBER() OVER (…) without a filter on its number (WHERE rn <= N) is an unbounded rank, which Flink's streaming planner does not run either",
                ));
            }
            if r.start < 1 || r.end.is_some_and(|e| e < r.start) {
                return Err(SqlError::validation(
                    None,
                    format!(
                        "the rank range [{}, {}] is empty",
                        r.start,
                        r.end.unwrap_or_default()
                    ),
                ));
            }
        }
    }
    Ok(())
}
