//! `EXPLAIN` in Flink 2.3's layout — `== Abstract Syntax Tree ==`, `== Optimized Physical Plan
//! ==`, `== Optimized Execution Plan ==` — and the operator names and ids Sluice's dashboard
//! shows for SQL operators ([`operator_name`], [`operator_uid`]).
//!
//! The physical section prints expressions as Calcite does (`=(MOD(auction, 123), 0)`); the
//! execution section as Flink's exec nodes do (`(MOD(auction, 123) = 0)`, `'apple'`).

use crate::expr::{BinaryOp, Expr};
use crate::types::{LogicalType, TimestampKind};
use crate::value::Value;

use super::agg_call::AggCall;
use super::logical::{Calc, Join, JoinKind, Rel, RelNode, WindowAggregate};
use super::physical::{local_accumulators, Distribution, PhysicalNode, PhysicalOp};
use super::schema::{Field, WindowPropertyKind};
use super::window::{duration, WindowKind, WindowTime};

/// How expressions are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Calcite's `RexNode` text (the physical plan).
    Physical,
    /// Flink's exec-node text (the execution plan and operator names).
    Exec,
}

/// An expression in the given style.
pub fn expr_text(e: &Expr, style: Style) -> String {
    match style {
        Style::Physical => e.to_string(),
        Style::Exec => exec_expr(e),
    }
}

fn exec_literal(value: &Value, ty: &crate::types::DataType) -> String {
    match (value, &ty.logical) {
        (Value::Str(s), _) => format!("'{}'", s.replace('\'', "''")),
        (Value::Int(i), _) => i.to_string(),
        (Value::Decimal(d), _) => d.to_string(),
        (Value::Bool(b), _) => b.to_string(),
        (Value::IntervalMillis(ms), _) => format!("{ms}:INTERVAL SECOND"),
        _ => Expr::literal(value.clone(), ty.clone()).to_string(),
    }
}

fn exec_type(ty: &crate::types::DataType) -> String {
    ty.without_time_attribute()
        .to_string()
        .replace(" CHARACTER SET \"UTF-16LE\"", "")
}

/// A value inside a printed `Sarg[…]`.
fn sarg_value(v: &Value, ty: &crate::types::DataType) -> String {
    match v {
        Value::Str(s) => format!("_UTF-16LE'{}'", s.replace('\'', "''")),
        other => exec_literal(other, ty),
    }
}

/// Flink's `SEARCH(x, Sarg[…])` for what Calcite folds into a search argument: `x IN (literals)`,
/// an OR of `x = literal` (a printing of the same test). Ranges (`BETWEEN`, which Flink also
/// prints as a `Sarg`) are left as their comparisons: the binder has expanded them already.
fn exec_search(e: &Expr) -> Option<String> {
    let points = |x: &Expr, lits: Vec<&Expr>| -> Option<String> {
        let mut vals: Vec<(&Value, &crate::types::DataType)> = Vec::new();
        for l in lits {
            let Expr::Literal { value, ty } = l else {
                return None;
            };
            if matches!(value, Value::Null) {
                return None;
            }
            vals.push((value, ty));
        }
        vals.sort_by(|a, b| a.0.cmp(b.0));
        vals.dedup_by(|a, b| a.0 == b.0);
        let body: Vec<String> = vals.iter().map(|(v, t)| sarg_value(v, t)).collect();
        Some(format!(
            "SEARCH({}, Sarg[{}])",
            exec_expr(x),
            body.join(", ")
        ))
    };
    match e {
        Expr::InList {
            expr,
            list,
            negated: false,
            ..
        } if list.len() > 1 => points(expr, list.iter().collect()),
        Expr::Or(args) if args.len() > 1 => {
            let mut x: Option<&Expr> = None;
            let mut lits = Vec::new();
            for a in args {
                let Expr::Binary {
                    op: BinaryOp::Eq,
                    left,
                    right,
                    ..
                } = a
                else {
                    return None;
                };
                if !matches!(right.as_ref(), Expr::Literal { .. }) {
                    return None;
                }
                match x {
                    Some(x0) if x0.to_string() != left.to_string() => return None,
                    _ => x = Some(left),
                }
                lits.push(right.as_ref());
            }
            points(x?, lits)
        }
        _ => None,
    }
}

fn exec_expr(e: &Expr) -> String {
    if let Some(s) = exec_search(e) {
        return s;
    }
    let list = |args: &[&Expr]| {
        args.iter()
            .map(|a| exec_expr(a))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match e {
        Expr::Column { name, .. } => name.clone(),
        Expr::Literal { value, ty } => exec_literal(value, ty),
        Expr::Binary {
            op, left, right, ..
        } => {
            let sym = match op {
                BinaryOp::IsDistinctFrom | BinaryOp::IsNotDistinctFrom => {
                    return format!("{}({}, {})", op.symbol(), exec_expr(left), exec_expr(right))
                }
                other if other.symbol().chars().all(|c| c.is_ascii_alphabetic()) => {
                    return format!(
                        "{}({}, {})",
                        other.symbol(),
                        exec_expr(left),
                        exec_expr(right)
                    )
                }
                other => other.symbol(),
            };
            format!("({} {sym} {})", exec_expr(left), exec_expr(right))
        }
        Expr::And(args) => format!(
            "({})",
            args.iter().map(exec_expr).collect::<Vec<_>>().join(" AND ")
        ),
        Expr::Or(args) => format!(
            "({})",
            args.iter().map(exec_expr).collect::<Vec<_>>().join(" OR ")
        ),
        Expr::Not(x) => format!("NOT({})", exec_expr(x)),
        Expr::Is { expr, test } => format!("{} {}", exec_expr(expr), test.name()),
        Expr::Cast { expr, ty, safe } => {
            let name = if *safe { "TRY_CAST" } else { "CAST" };
            format!("{name}({} AS {})", exec_expr(expr), exec_type(ty))
        }
        Expr::Case {
            branches,
            otherwise,
            ..
        } => {
            let mut refs: Vec<&Expr> = branches.iter().flat_map(|(c, v)| [c, v]).collect();
            refs.push(otherwise);
            format!("CASE({})", list(&refs))
        }
        Expr::Field { expr, name, .. } => format!("{}.{name}", exec_expr(expr)),
        Expr::Negate { expr, .. } => format!("-({})", exec_expr(expr)),
        Expr::Call { func, args, .. } => {
            let flag = match func.display_name.as_str() {
                "YEAR" | "QUARTER" | "MONTH" | "WEEK" | "HOUR" | "MINUTE" | "SECOND" => {
                    Some(func.display_name.as_str())
                }
                "DAYOFMONTH" => Some("DAY"),
                _ => None,
            };
            match (flag, args.as_slice()) {
                (Some(f), [a]) => format!("EXTRACT({f}, {})", exec_expr(a)),
                _ => format!(
                    "{}({})",
                    func.display_name,
                    list(&args.iter().collect::<Vec<_>>())
                ),
            }
        }
        Expr::InList {
            expr,
            list: l,
            negated,
            ..
        } => {
            let mut refs: Vec<&Expr> = vec![expr];
            refs.extend(l.iter());
            format!(
                "{}({})",
                if *negated { "NOT IN" } else { "IN" },
                list(&refs)
            )
        }
        Expr::Like {
            expr,
            pattern,
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
            format!("{name}({})", list(&[expr, pattern]))
        }
        Expr::Element { expr, key, .. } => format!("ITEM({})", list(&[expr, key])),
    }
}

fn names(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn calc_text(c: &Calc, style: Style) -> String {
    let select: Vec<String> = c
        .projection
        .iter()
        .map(|(e, n)| match e {
            Expr::Column { name, .. } if name == n => n.clone(),
            _ => format!("{} AS {n}", expr_text(e, style)),
        })
        .collect();
    let mut s = format!("Calc(select=[{}]", select.join(", "));
    if let Some(w) = &c.condition {
        s.push_str(&format!(", where=[{}]", expr_text(w, style)));
    }
    s.push(')');
    s
}

fn agg_select(group: &[usize], aggs: &[AggCall], input: &[Field], out: &[Field]) -> Vec<String> {
    let mut sel: Vec<String> = group.iter().map(|&i| input[i].name.clone()).collect();
    for (k, a) in aggs.iter().enumerate() {
        sel.push(format!(
            "{} AS {}",
            a.call_text(),
            out[group.len() + k].name
        ));
    }
    sel
}

/// One accumulator by its name, several as a tuple (`(sum$2, count$3)` for AVG).
fn acc_tuple(names: &[&str]) -> String {
    match names {
        [one] => (*one).to_string(),
        _ => format!("({})", names.join(", ")),
    }
}

fn props_select(agg: &WindowAggregate, out: &[Field], legacy: bool) -> Vec<String> {
    let first = agg.group.len() + agg.aggs.len();
    let mut sel = Vec::new();
    for (j, f) in out.iter().enumerate().skip(first) {
        let func = match agg.properties.get(j - first) {
            Some(WindowPropertyKind::Start) => "start",
            Some(WindowPropertyKind::End) => "end",
            Some(WindowPropertyKind::Proctime) => "proctime",
            _ if !legacy && agg.window.is_proctime() => "proctime",
            _ => "rowtime",
        };
        sel.push(format!("{func}('w$) AS {}", f.name));
    }
    sel
}

fn group_by(group: &[usize], input: &[Field]) -> String {
    if group.is_empty() {
        String::new()
    } else {
        format!(
            "groupBy=[{}], ",
            group
                .iter()
                .map(|&i| input[i].name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

fn legacy_window(agg: &WindowAggregate, input: &[Field]) -> String {
    let time = match &agg.window.time {
        WindowTime::TimeColumn { index, .. } => input
            .get(*index)
            .map(|f| f.name.clone())
            .unwrap_or_default(),
        WindowTime::Bounds { .. } => String::new(),
    };
    match &agg.window.kind {
        WindowKind::Tumble { size_ms } => format!("TumblingGroupWindow('w$, {time}, {size_ms})"),
        WindowKind::Hop { slide_ms, size_ms } => {
            format!("SlidingGroupWindow('w$, {time}, {size_ms}, {slide_ms})")
        }
        WindowKind::Session { gap_ms, .. } => format!("SessionGroupWindow('w$, {time}, {gap_ms})"),
        WindowKind::Cumulate { .. } => format!("CumulativeGroupWindow('w$, {time})"),
    }
}

fn join_where(j: &Join, schema: &[Field], left_width: usize, style: Style) -> String {
    let mut conds: Vec<Expr> = j
        .equi
        .iter()
        .map(|(l, r)| Expr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(Expr::Column {
                index: *l,
                name: schema[*l].name.clone(),
                ty: schema[*l].ty.clone(),
            }),
            right: Box::new(Expr::Column {
                index: left_width + r,
                name: schema[left_width + r].name.clone(),
                ty: schema[left_width + r].ty.clone(),
            }),
            ty: crate::types::DataType::boolean(),
        })
        .collect();
    if let Some(c) = &j.condition {
        conds.extend(super::bind_query::conjuncts(c.clone()));
    }
    match super::bind_query::and_all(conds) {
        Some(e) => expr_text(&e, style),
        None => "true".into(),
    }
}

/// The node's one-line description, as Flink prints it in the given style.
pub fn describe(node: &PhysicalNode, style: Style) -> String {
    let input = |i: usize| {
        node.inputs
            .get(i)
            .map(|n| n.schema.as_slice())
            .unwrap_or(&[])
    };
    match &node.op {
        PhysicalOp::TableSourceScan(t) => format!(
            "TableSourceScan(table=[[{}]], fields=[{}])",
            t.path.join(", "),
            names(&t.physical)
        ),
        PhysicalOp::Calc(c) => calc_text(c, style),
        PhysicalOp::WatermarkAssigner { rowtime, expr } => format!(
            "WatermarkAssigner(rowtime=[{}], watermark=[{}])",
            node.schema[*rowtime].name,
            expr_text(expr, style)
        ),
        PhysicalOp::Exchange(d) => match d {
            Distribution::Single => "Exchange(distribution=[single])".into(),
            Distribution::Hash(keys) => format!(
                "Exchange(distribution=[hash[{}]])",
                keys.iter()
                    .map(|&k| node.schema[k].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        PhysicalOp::WindowTableFunction(w) => format!("WindowTableFunction(window=[{w}])"),
        PhysicalOp::LocalWindowAggregate(agg) => {
            let mut sel: Vec<String> = agg
                .group
                .iter()
                .map(|&i| input(0)[i].name.clone())
                .collect();
            let accs = local_accumulators(&agg.aggs);
            let mut k = 0;
            for a in &agg.aggs {
                let n = a.kind.accumulators().len();
                let names: Vec<&str> = accs[k..k + n].iter().map(|a| a.0.as_str()).collect();
                k += n;
                sel.push(format!("{} AS {}", a.call_text(), acc_tuple(&names)));
            }
            let end = node
                .schema
                .last()
                .map(|f| f.name.clone())
                .unwrap_or_default();
            sel.push(format!("slice_end('w$) AS {end}"));
            format!(
                "LocalWindowAggregate({}window=[{}], select=[{}])",
                group_by(&agg.group, input(0)),
                agg.window,
                sel.join(", ")
            )
        }
        PhysicalOp::GlobalWindowAggregate(agg) => {
            let local = input(0);
            let end = local.last().map(|f| f.name.clone()).unwrap_or_default();
            let time = match agg.window.time {
                WindowTime::TimeColumn { .. } => format!("slice_end=[{end}]"),
                WindowTime::Bounds { .. } => format!("win_end=[{end}]"),
            };
            let keys: Vec<usize> = (0..agg.group.len()).collect();
            let mut sel: Vec<String> = keys.iter().map(|&i| local[i].name.clone()).collect();
            let accs = local_accumulators(&agg.aggs);
            let mut k = 0;
            for (i, a) in agg.aggs.iter().enumerate() {
                let n = a.kind.accumulators().len();
                let names: Vec<&str> = accs[k..k + n].iter().map(|a| a.0.as_str()).collect();
                k += n;
                sel.push(format!(
                    "{}({}) AS {}",
                    a.kind.name(),
                    acc_tuple(&names),
                    node.schema[agg.group.len() + i].name
                ));
            }
            sel.extend(props_select(agg, &node.schema, false));
            let gb = if keys.is_empty() {
                String::new()
            } else {
                format!(
                    "groupBy=[{}], ",
                    keys.iter()
                        .map(|&i| local[i].name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            format!(
                "GlobalWindowAggregate({gb}window=[{}], select=[{}])",
                agg.window.describe(&time),
                sel.join(", ")
            )
        }
        PhysicalOp::WindowAggregate(agg) => {
            let mut sel = agg_select(&agg.group, &agg.aggs, input(0), &node.schema);
            sel.extend(props_select(agg, &node.schema, false));
            format!(
                "WindowAggregate({}window=[{}], select=[{}])",
                group_by(&agg.group, input(0)),
                agg.window,
                sel.join(", ")
            )
        }
        PhysicalOp::GroupAggregate { agg, retract, .. } => {
            let mut sel = agg_select(&agg.group, &agg.aggs, input(0), &node.schema);
            if *retract {
                // Flink names the retracting variants `COUNT_RETRACT(*)`, `AVG_RETRACT(x)`.
                for s in sel.iter_mut().skip(agg.group.len()) {
                    if let Some(at) = s.find('(') {
                        s.insert_str(at, "_RETRACT");
                    }
                }
            }
            format!(
                "GroupAggregate({}select=[{}])",
                group_by(&agg.group, input(0)),
                sel.join(", ")
            )
        }
        PhysicalOp::MiniBatchAssigner { interval_ms } => {
            format!("MiniBatchAssigner(interval=[{interval_ms}ms], mode=[ProcTime])")
        }
        PhysicalOp::LocalGroupAggregate(agg) => {
            let mut sel: Vec<String> = agg
                .group
                .iter()
                .map(|&i| input(0)[i].name.clone())
                .collect();
            let accs = local_accumulators(&agg.aggs);
            let mut k = 0;
            for a in &agg.aggs {
                let n = a.kind.accumulators().len();
                let names: Vec<&str> = accs[k..k + n].iter().map(|a| a.0.as_str()).collect();
                k += n;
                sel.push(format!("{} AS {}", a.call_text(), acc_tuple(&names)));
            }
            format!(
                "LocalGroupAggregate({}select=[{}])",
                group_by(&agg.group, input(0)),
                sel.join(", ")
            )
        }
        PhysicalOp::GlobalGroupAggregate { agg, .. } => {
            let local = input(0);
            let keys: Vec<usize> = (0..agg.group.len()).collect();
            let mut sel: Vec<String> = keys.iter().map(|&i| local[i].name.clone()).collect();
            let accs = local_accumulators(&agg.aggs);
            let mut k = 0;
            for (i, a) in agg.aggs.iter().enumerate() {
                let n = a.kind.accumulators().len();
                let names: Vec<&str> = accs[k..k + n].iter().map(|a| a.0.as_str()).collect();
                k += n;
                sel.push(format!(
                    "{}({}) AS {}",
                    a.kind.name(),
                    acc_tuple(&names),
                    node.schema[agg.group.len() + i].name
                ));
            }
            format!(
                "GlobalGroupAggregate({}select=[{}])",
                group_by(&keys, local),
                sel.join(", ")
            )
        }
        PhysicalOp::Rank { rank, retract, .. } => {
            let cols = |ks: &[usize]| {
                ks.iter()
                    .map(|&i| input(0)[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let order: Vec<String> = rank
                .order
                .iter()
                .map(|k| {
                    let dir = if k.descending { "DESC" } else { "ASC" };
                    format!("{} {dir}", input(0)[k.column].name)
                })
                .collect();
            let end = rank.end.unwrap_or(i64::MAX);
            format!(
                "Rank(strategy=[{}], rankType=[ROW_NUMBER], rankRange=[rankStart={}, rankEnd={end}], partitionBy=[{}], orderBy=[{}], select=[{}])",
                if *retract { "RetractStrategy" } else { "AppendFastStrategy" },
                rank.start,
                cols(&rank.partition),
                order.join(", "),
                names(&node.schema)
            )
        }
        // Flink's physical plan keeps the rank a deduplication is; its exec plan names it.
        PhysicalOp::Deduplicate {
            keys,
            order,
            keep_last,
            rowtime,
            ..
        } if style == Style::Physical => format!(
            "Rank(strategy=[AppendFastStrategy], rankType=[ROW_NUMBER], rankRange=[rankStart=1, rankEnd=1], partitionBy=[{}], orderBy=[{} {} {}], select=[{}])",
            keys.iter()
                .map(|&i| input(0)[i].name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if *rowtime { "ROWTIME" } else { "PROCTIME" },
            input(0)[*order].name,
            if *keep_last { "DESC" } else { "ASC" },
            names(&node.schema)
        ),
        PhysicalOp::Deduplicate {
            keys,
            keep_last,
            rowtime,
            ..
        } => format!(
            "Deduplicate(keep=[{}], key=[{}], order=[{}], outputInsertOnly=[{}])",
            if *keep_last { "LastRow" } else { "FirstRow" },
            keys.iter()
                .map(|&i| input(0)[i].name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if *rowtime { "ROWTIME" } else { "PROCTIME" },
            !keep_last && !rowtime
        ),
        PhysicalOp::GroupWindowAggregate(agg) => {
            let mut sel = agg_select(&agg.group, &agg.aggs, input(0), &node.schema);
            sel.extend(props_select(agg, &node.schema, true));
            // A processing-time window has no `w$rowtime`.
            let first = agg.group.len() + agg.aggs.len();
            let props: Vec<&str> = node.schema[first..]
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            format!(
                "GroupWindowAggregate({}window=[{}], properties=[{}], select=[{}])",
                group_by(&agg.group, input(0)),
                legacy_window(agg, input(0)),
                props.join(", "),
                sel.join(", ")
            )
        }
        PhysicalOp::Join(j) | PhysicalOp::IntervalJoin(j) | PhysicalOp::WindowJoin(j) => {
            let lw = input(0).len();
            let w = join_where(j, &node.schema, lw, style);
            match &j.kind {
                JoinKind::Window { left, right, left_bounds, right_bounds } => {
                    let lt = format!("win_start=[{}], win_end=[{}]", node.schema[left_bounds.0].name, node.schema[left_bounds.1].name);
                    let rt = format!(
                        "win_start=[{}], win_end=[{}]",
                        input(1).get(right_bounds.0).map(|f| f.name.as_str()).unwrap_or(""),
                        input(1).get(right_bounds.1).map(|f| f.name.as_str()).unwrap_or("")
                    );
                    format!(
                        "WindowJoin(leftWindow=[{}], rightWindow=[{}], joinType=[InnerJoin], where=[{w}], select=[{}])",
                        left.describe(&lt),
                        right.describe(&rt),
                        names(&node.schema)
                    )
                }
                JoinKind::Interval {
                    lower_ms,
                    upper_ms,
                    left_time,
                    right_time,
                } => format!(
                    "IntervalJoin(joinType=[InnerJoin], windowBounds=[isRowTime=true, leftLowerBound={lower_ms}, leftUpperBound={upper_ms}, leftTimeIndex={left_time}, rightTimeIndex={right_time}], where=[{w}], select=[{}])",
                    names(&node.schema)
                ),
                _ => format!(
                    "Join(joinType=[InnerJoin], where=[{w}], select=[{}], leftInputSpec=[NoUniqueKey], rightInputSpec=[NoUniqueKey])",
                    names(&node.schema)
                ),
            }
        }
        PhysicalOp::LookupJoin { join, table } => {
            let lw = input(0).len();
            let JoinKind::Lookup { keys, left_outer } = &join.kind else {
                return "LookupJoin()".into();
            };
            let join_type = if *left_outer {
                "LeftOuterJoin"
            } else {
                "InnerJoin"
            };
            let lookup: Vec<String> = keys
                .iter()
                .map(|(r, l)| format!("{}={}", node.schema[lw + r].name, input(0)[*l].name))
                .collect();
            let mut s = format!(
                "LookupJoin(table=[{}], joinType=[{join_type}], lookup=[{}]",
                table.full_name(),
                lookup.join(", ")
            );
            if let Some(c) = &join.condition {
                s.push_str(&format!(", where=[{}]", expr_text(c, style)));
            }
            s.push_str(&format!(", select=[{}])", names(&node.schema)));
            s
        }
        PhysicalOp::Union => format!("Union(all=[true], union=[{}])", names(&node.schema)),
        PhysicalOp::Sink(s) => format!(
            "Sink(table=[{}], fields=[{}])",
            s.full_name(),
            names(&node.schema)
        ),
    }
}

/// The name Sluice's dashboard shows for a SQL operator: Flink's exec-node description
/// (`Calc(select=[auction, price], where=[(MOD(auction, 123) = 0)])`).
pub fn operator_name(node: &PhysicalNode) -> String {
    describe(node, Style::Exec)
}

/// The transformation name of a node, as in Flink's uids (`calc`, `window-join`…).
pub fn transformation_name(node: &PhysicalNode) -> &'static str {
    match &node.op {
        PhysicalOp::TableSourceScan(_) => "source",
        PhysicalOp::Calc(_) => "calc",
        PhysicalOp::WatermarkAssigner { .. } => "watermark-assigner",
        PhysicalOp::Exchange(_) => "exchange",
        PhysicalOp::WindowTableFunction(_) => "window-table-function",
        PhysicalOp::LocalWindowAggregate(_) => "local-window-aggregate",
        PhysicalOp::GlobalWindowAggregate(_) => "global-window-aggregate",
        PhysicalOp::WindowAggregate(_) => "window-aggregate",
        PhysicalOp::GroupWindowAggregate(_) => "group-window-aggregate",
        PhysicalOp::GroupAggregate { .. } => "group-aggregate",
        PhysicalOp::Rank { .. } => "rank",
        PhysicalOp::MiniBatchAssigner { .. } => "mini-batch-assigner",
        PhysicalOp::LocalGroupAggregate(_) => "local-group-aggregate",
        PhysicalOp::GlobalGroupAggregate { .. } => "global-group-aggregate",
        PhysicalOp::Deduplicate { .. } => "deduplicate",
        PhysicalOp::Join(_) => "join",
        PhysicalOp::IntervalJoin(_) => "interval-join",
        PhysicalOp::WindowJoin(_) => "window-join",
        PhysicalOp::LookupJoin { .. } => "lookup-join",
        PhysicalOp::Union => "union",
        PhysicalOp::Sink(_) => "sink",
    }
}

/// Stable operator ids, Flink's `table.exec.uid.generation = PLAN_ONLY` style
/// (`<id>_<transformation-name>`): nodes are numbered in post order (inputs first, as Flink
/// creates exec nodes), across the plan's trees in order, so the same SQL always gives the
/// same ids. Returned in pre order (each node before its inputs), one per node.
pub fn operator_uids(roots: &[PhysicalNode]) -> Vec<String> {
    fn walk(
        n: &PhysicalNode,
        next: &mut usize,
        out: &mut Vec<(usize, String)>,
        depth_first_slot: usize,
    ) {
        let _ = depth_first_slot;
        let slot = out.len();
        out.push((0, String::new()));
        for c in &n.inputs {
            walk(c, next, out, 0);
        }
        *next += 1;
        out[slot] = (*next, format!("{}_{}", *next, transformation_name(n)));
    }
    let mut next = 0;
    let mut out = Vec::new();
    for r in roots {
        walk(r, &mut next, &mut out, 0);
    }
    out.into_iter().map(|(_, s)| s).collect()
}

/// The uid of each node of one tree, in pre order (see [`operator_uids`]).
pub fn operator_uid(roots: &[PhysicalNode], preorder_index: usize) -> Option<String> {
    operator_uids(roots).get(preorder_index).cloned()
}

/// Draws a tree as Flink does: `+- ` before the last input, `:- ` before the others.
fn draw<T>(
    node: &T,
    text: &dyn Fn(&T) -> String,
    inputs: &dyn Fn(&T) -> Vec<&T>,
    out: &mut String,
) {
    fn rec<T>(
        n: &T,
        prefix: &str,
        text: &dyn Fn(&T) -> String,
        inputs: &dyn Fn(&T) -> Vec<&T>,
        out: &mut String,
    ) {
        let kids = inputs(n);
        for (i, k) in kids.iter().enumerate() {
            let last = i + 1 == kids.len();
            out.push_str(prefix);
            out.push_str(if last { "+- " } else { ":- " });
            out.push_str(&text(k));
            out.push('\n');
            let next = format!("{prefix}{}", if last { "   " } else { ":  " });
            rec(*k, &next, text, inputs, out);
        }
    }
    out.push_str(&text(node));
    out.push('\n');
    rec(node, "", text, inputs, out);
}

/// A physical tree in the given style.
pub fn physical_text(root: &PhysicalNode, style: Style) -> String {
    let mut out = String::new();
    draw(
        root,
        &|n: &PhysicalNode| describe(n, style),
        &|n: &PhysicalNode| n.inputs.iter().collect(),
        &mut out,
    );
    out
}

/// A subtree's digest: its nodes' exec descriptions, inputs nested.
fn digest(n: &PhysicalNode) -> String {
    let kids: Vec<String> = n.inputs.iter().map(digest).collect();
    format!("{}[{}]", describe(n, Style::Exec), kids.join(";"))
}

/// The execution plan with Flink's sub-plan reuse marks: a subtree that occurs more than once
/// (and is not inside a larger repeated subtree) prints `(reuse_id=[n])` where it first occurs
/// and `Reused(reference_id=[n])` at its later occurrences (Flink's
/// `table.optimizer.reuse-sub-plan-enabled`, on by default).
pub fn exec_text_with_reuse(roots: &[PhysicalNode]) -> String {
    use std::collections::BTreeMap;
    fn count(n: &PhysicalNode, counts: &mut BTreeMap<String, usize>) {
        *counts.entry(digest(n)).or_default() += 1;
        n.inputs.iter().for_each(|c| count(c, counts));
    }
    let mut counts = BTreeMap::new();
    roots.iter().for_each(|r| count(r, &mut counts));
    struct Printer<'a> {
        counts: &'a BTreeMap<String, usize>,
        ids: BTreeMap<String, usize>,
        out: String,
    }
    impl Printer<'_> {
        fn node(
            &mut self,
            n: &PhysicalNode,
            parent_count: usize,
            line_prefix: &str,
            child_prefix: &str,
        ) {
            let d = digest(n);
            let c = self.counts.get(&d).copied().unwrap_or(1);
            let reuse_point = c >= 2 && parent_count < c;
            if reuse_point {
                if let Some(id) = self.ids.get(&d) {
                    self.out
                        .push_str(&format!("{line_prefix}Reused(reference_id=[{id}])\n"));
                    return;
                }
                let id = self.ids.len() + 1;
                self.ids.insert(d, id);
                self.out.push_str(&format!(
                    "{line_prefix}{}(reuse_id=[{id}])\n",
                    describe(n, Style::Exec)
                ));
            } else {
                self.out
                    .push_str(&format!("{line_prefix}{}\n", describe(n, Style::Exec)));
            }
            for (i, k) in n.inputs.iter().enumerate() {
                let last = i + 1 == n.inputs.len();
                let lp = format!("{child_prefix}{}", if last { "+- " } else { ":- " });
                let cp = format!("{child_prefix}{}", if last { "   " } else { ":  " });
                self.node(k, c, &lp, &cp);
            }
        }
    }
    let mut p = Printer {
        counts: &counts,
        ids: BTreeMap::new(),
        out: String::new(),
    };
    for r in roots {
        p.node(r, 0, "", "");
    }
    p.out
}

fn dollar(e: &Expr) -> String {
    e.substitute_columns(&|i, _| Expr::Column {
        index: i,
        name: format!("${i}"),
        ty: crate::types::DataType::string(),
    })
    .to_string()
}

fn agg_logical(a: &AggCall) -> String {
    let args: Vec<String> = a.args.iter().map(|i| format!("${i}")).collect();
    format!("{}={}({})", a.name, a.kind.name(), args.join(", "))
}

/// The relational plan in Flink's `Logical*` vocabulary (the abstract syntax tree section;
/// Sluice prints its plan after its own pushdown, so it is not Calcite's tree node for node).
fn logical_lines(rel: &Rel) -> Vec<(String, Vec<&Rel>)> {
    match &rel.node {
        RelNode::TableScan(t) => {
            let scan = format!("LogicalTableScan(table=[[{}]])", t.path.join(", "));
            let computed = t
                .columns
                .iter()
                .any(|(_, s)| matches!(s, super::logical::ScanColumnSource::Computed(_)));
            let mut lines = Vec::new();
            if let Some(wm) = &t.watermark {
                lines.push((
                    format!(
                        "LogicalWatermarkAssigner(rowtime=[{}], watermark=[{}])",
                        wm.rowtime_name,
                        dollar(&wm.expr)
                    ),
                    vec![],
                ));
            }
            if computed {
                let proj: Vec<String> = t
                    .columns
                    .iter()
                    .map(|(f, s)| match s {
                        super::logical::ScanColumnSource::Computed(e) => {
                            format!("{}=[{}]", f.name, dollar(e))
                        }
                        super::logical::ScanColumnSource::Physical(p)
                        | super::logical::ScanColumnSource::Metadata { index: p, .. } => {
                            format!("{}=[${p}]", f.name)
                        }
                    })
                    .collect();
                lines.push((format!("LogicalProject({})", proj.join(", ")), vec![]));
            }
            lines.push((scan, vec![]));
            lines
        }
        RelNode::Calc(c) => {
            let proj: Vec<String> = c
                .projection
                .iter()
                .map(|(e, n)| format!("{n}=[{}]", dollar(e)))
                .collect();
            let mut lines = vec![(format!("LogicalProject({})", proj.join(", ")), vec![])];
            if let Some(w) = &c.condition {
                lines.push((format!("LogicalFilter(condition=[{}])", dollar(w)), vec![]));
            }
            if let Some(last) = lines.last_mut() {
                last.1 = rel.inputs.iter().collect();
            }
            lines
        }
        RelNode::WindowTableFunction(w) => {
            let (time, _) = match &w.time {
                WindowTime::TimeColumn { name, .. } => (name.clone(), 0),
                WindowTime::Bounds { start, .. } => (start.1.clone(), 0),
            };
            let sizes = match &w.kind {
                WindowKind::Tumble { size_ms } => format!("{size_ms}:INTERVAL SECOND"),
                WindowKind::Hop { slide_ms, size_ms } => {
                    format!("{slide_ms}:INTERVAL SECOND, {size_ms}:INTERVAL SECOND")
                }
                WindowKind::Cumulate { step_ms, size_ms } => {
                    format!("{step_ms}:INTERVAL SECOND, {size_ms}:INTERVAL SECOND")
                }
                WindowKind::Session { gap_ms, .. } => format!("{gap_ms}:INTERVAL SECOND"),
            };
            vec![(
                format!("LogicalTableFunctionScan(invocation=[{}(TABLE(#0), DESCRIPTOR(_UTF-16LE'{time}'), {sizes})])", w.function_name()),
                rel.inputs.iter().collect(),
            )]
        }
        RelNode::WindowAggregate(a) | RelNode::GroupWindowAggregate(a) => {
            let group: Vec<String> = a.group.iter().map(|i| i.to_string()).collect();
            let aggs: Vec<String> = a.aggs.iter().map(agg_logical).collect();
            let mut s = format!(
                "LogicalWindowAggregate(group=[{{{}}}], window=[{}]",
                group.join(", "),
                a.window
            );
            if !aggs.is_empty() {
                s.push_str(&format!(", {}", aggs.join(", ")));
            }
            s.push(')');
            vec![(s, rel.inputs.iter().collect())]
        }
        RelNode::GroupAggregate(a) => {
            let group: Vec<String> = a.group.iter().map(|i| i.to_string()).collect();
            let mut s = format!("LogicalAggregate(group=[{{{}}}]", group.join(", "));
            for c in &a.aggs {
                s.push_str(&format!(", {}", agg_logical(c)));
            }
            s.push(')');
            vec![(s, rel.inputs.iter().collect())]
        }
        RelNode::Rank(r) => {
            let part: Vec<String> = r.partition.iter().map(|i| format!("${i}")).collect();
            let order: Vec<String> = r
                .order
                .iter()
                .map(|k| {
                    let dir = if k.descending { " DESC" } else { "" };
                    format!("${}{dir}", k.column)
                })
                .collect();
            vec![(
                format!(
                    "FlinkLogicalRank(rankType=[ROW_NUMBER], rankRange=[rankStart={}, rankEnd={}], partitionBy=[{}], orderBy=[{}], select=[{}])",
                    r.start,
                    r.end.unwrap_or(i64::MAX),
                    part.join(","),
                    order.join(", "),
                    names(&rel.schema)
                ),
                rel.inputs.iter().collect(),
            )]
        }
        RelNode::Join(j) => {
            let lw = rel.inputs.first().map(|r| r.schema.len()).unwrap_or(0);
            let cond = join_where(j, &rel.schema, lw, Style::Physical);
            let (name, join_type) = match j.kind {
                JoinKind::Lookup {
                    left_outer: true, ..
                } => ("LogicalCorrelate", "left"),
                JoinKind::Lookup { .. } => ("LogicalCorrelate", "inner"),
                _ => ("LogicalJoin", "inner"),
            };
            vec![(
                format!("{name}(condition=[{cond}], joinType=[{join_type}])"),
                rel.inputs.iter().collect(),
            )]
        }
        RelNode::Union => vec![(
            "LogicalUnion(all=[true])".into(),
            rel.inputs.iter().collect(),
        )],
        RelNode::Sink(s) => vec![(
            format!(
                "LogicalSink(table=[{}], fields=[{}])",
                s.full_name(),
                names(
                    rel.inputs
                        .first()
                        .map(|r| r.schema.as_slice())
                        .unwrap_or(&[])
                )
            ),
            rel.inputs.iter().collect(),
        )],
    }
}

/// The abstract syntax tree section.
pub fn logical_text(rel: &Rel) -> String {
    // Expand each Rel into its chain of Logical* lines, then draw.
    struct Line<'r> {
        text: String,
        kids: Vec<Line<'r>>,
        _p: std::marker::PhantomData<&'r ()>,
    }
    fn build(rel: &Rel) -> Line<'_> {
        let chain = logical_lines(rel);
        let mut below: Option<Line> = None;
        for (text, kids) in chain.into_iter().rev() {
            let mut children: Vec<Line> = kids.into_iter().map(build).collect();
            if let Some(b) = below.take() {
                children.insert(0, b);
            }
            below = Some(Line {
                text,
                kids: children,
                _p: std::marker::PhantomData,
            });
        }
        below.unwrap_or(Line {
            text: String::new(),
            kids: Vec::new(),
            _p: std::marker::PhantomData,
        })
    }
    let root = build(rel);
    let mut out = String::new();
    draw(
        &root,
        &|l: &Line| l.text.clone(),
        &|l: &Line| l.kids.iter().collect(),
        &mut out,
    );
    out
}

/// The whole `EXPLAIN` text for planned trees (one per INSERT), as Flink lays it out.
pub fn explain_text(logical: &[Rel], physical: &[PhysicalNode]) -> String {
    explain_text_with(logical, physical, false)
}

/// [`explain_text`], each physical node followed by its `changelogMode=[…]` when
/// `changelog_mode` (Flink's `EXPLAIN CHANGELOG_MODE`; a sink's is `NONE`).
pub fn explain_text_with(
    logical: &[Rel],
    physical: &[PhysicalNode],
    changelog_mode: bool,
) -> String {
    let mut out = String::from("== Abstract Syntax Tree ==\n");
    for r in logical {
        out.push_str(&logical_text(r));
        out.push('\n');
    }
    out.push_str("== Optimized Physical Plan ==\n");
    for p in physical {
        if changelog_mode {
            draw(
                p,
                &|n: &PhysicalNode| {
                    let d = describe(n, Style::Physical);
                    let mode = match n.op {
                        PhysicalOp::Sink(_) => "NONE".to_string(),
                        _ => {
                            let m = super::changelog_mode::mode(n).to_string();
                            m.trim_start_matches('[').trim_end_matches(']').to_string()
                        }
                    };
                    match d.strip_suffix(')') {
                        Some(head) => format!("{head}, changelogMode=[{mode}])"),
                        None => d,
                    }
                },
                &|n: &PhysicalNode| n.inputs.iter().collect(),
                &mut out,
            );
        } else {
            out.push_str(&physical_text(p, Style::Physical));
        }
        out.push('\n');
    }
    out.push_str("== Optimized Execution Plan ==\n");
    out.push_str(&exec_text_with_reuse(physical));
    out
}

/// Whether a type is a time attribute (printed with its marker in row types).
pub fn is_time_attribute(ty: &crate::types::DataType) -> bool {
    matches!(
        ty.logical,
        LogicalType::Timestamp {
            kind: TimestampKind::Rowtime | TimestampKind::Proctime,
            ..
        } | LogicalType::TimestampLtz {
            kind: TimestampKind::Rowtime | TimestampKind::Proctime,
            ..
        }
    )
}

/// Flink's text for a duration (`10 s`), re-exported for the runtime's operator names.
pub fn window_duration(ms: i64) -> String {
    duration(ms)
}

impl super::physical::PhysicalPlan {
    /// Every operator of the plan in pre order (each node before its inputs, tree after tree):
    /// its stable uid ([`operator_uids`]) and its dashboard name ([`operator_name`]).
    pub fn operators(&self) -> Vec<(String, String)> {
        fn walk(n: &PhysicalNode, out: &mut Vec<String>) {
            out.push(operator_name(n));
            n.inputs.iter().for_each(|c| walk(c, out));
        }
        let mut names = Vec::new();
        self.roots.iter().for_each(|r| walk(r, &mut names));
        operator_uids(&self.roots).into_iter().zip(names).collect()
    }
}
