//! The physical plan: Flink's stream operators for a relational plan, in the shape Flink 2.3's
//! optimizer gives them — adjacent Calcs merged, trivial projections removed, a table's
//! computed columns in a Calc below its `WatermarkAssigner` (pruned to the columns used above),
//! `Exchange`s where data is repartitioned, and two-phase (`LocalWindowAggregate` →
//! `Exchange` → `GlobalWindowAggregate`) event-time window aggregation. The runtime crate
//! translates each [`PhysicalNode`] into DataStream operators.

use crate::expr::Expr;
use crate::types::TimestampKind;

use super::agg_call::AggCall;
use super::bind_query::and_all;
use super::logical::{
    Calc, GroupAggregate, Join, JoinKind, Rank, Rel, RelNode, ScanColumnSource, Sink, TableScan,
    WindowAggregate,
};
use super::schema::Field;
use super::window::WindowTime;

/// How an `Exchange` redistributes rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// All rows to one instance.
    Single,
    /// By the hash of these columns.
    Hash(Vec<usize>),
}

/// What a physical node does (Flink's `StreamPhysical*` / `StreamExec*` node).
// A plan holds a few dozen of these, built once: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum PhysicalOp {
    /// Reads a table's connector (physical and metadata fields).
    TableSourceScan(TableScan),
    /// Projection and filter.
    Calc(Calc),
    /// Assigns event-time watermarks.
    WatermarkAssigner {
        /// The rowtime column (index).
        rowtime: usize,
        /// The watermark expression over the input row.
        expr: Expr,
    },
    /// Repartitions its input.
    Exchange(Distribution),
    /// A window table function not folded into an aggregate or join: assigns windows per row.
    WindowTableFunction(super::window::WindowSpec),
    /// The local (pre-shuffle) phase of a two-phase window aggregate: accumulators per slice.
    LocalWindowAggregate(WindowAggregate),
    /// The global phase: merges the local accumulators per key and window.
    GlobalWindowAggregate(WindowAggregate),
    /// A one-phase window aggregate (processing time, or not mergeable).
    WindowAggregate(WindowAggregate),
    /// The legacy group window aggregate.
    GroupWindowAggregate(WindowAggregate),
    /// An unbounded aggregate: a changelog of each key's aggregates.
    GroupAggregate {
        /// Keys and calls.
        agg: GroupAggregate,
        /// Whether an update is emitted as `-U` (the old row) and `+U`, or as `+U` alone (what
        /// an upsert sink needs): decided by the changelog inference ([`crate::changelog`]).
        update_before: bool,
        /// Whether its input carries updates or deletes, so that its accumulators retract.
        retract: bool,
    },
    /// Marks bundles of rows every `interval_ms` of processing time (Flink's mini-batch); the
    /// bundling operators above keep their own clock, so it passes rows through.
    MiniBatchAssigner {
        /// `table.exec.mini-batch.allow-latency`, in ms.
        interval_ms: i64,
    },
    /// The local phase of a two-phase unbounded aggregate: accumulators per key over a bundle
    /// (output: keys, then the accumulators of [`local_accumulators`]).
    LocalGroupAggregate(GroupAggregate),
    /// The global phase: merges the local accumulators per key (input: the local phase's
    /// output; `agg` keeps the calls' original columns for their names) into a changelog.
    GlobalGroupAggregate {
        /// Keys and calls.
        agg: GroupAggregate,
        /// Whether an update is emitted as `-U` and `+U`, or `+U` alone.
        update_before: bool,
    },
    /// Flink's `Rank`: a Top-N per partition, kept up to date (a changelog).
    Rank {
        /// Partition, order, range, whether the number is output.
        rank: Rank,
        /// Whether a changed row is retracted (`-U`) before its new content (`+U`).
        update_before: bool,
        /// Whether its input carries updates (Flink's `RetractStrategy`; else
        /// `AppendFastStrategy`).
        retract: bool,
    },
    /// Flink's `Deduplicate`: a Top-1 by a time attribute, without the number: per key the
    /// first row (ascending) or the last (descending).
    Deduplicate {
        /// The key columns.
        keys: Vec<usize>,
        /// The time attribute ordered by.
        order: usize,
        /// Keep the last row (else the first).
        keep_last: bool,
        /// By event time (else processing time).
        rowtime: bool,
        /// Whether a replaced row is retracted (`-U`) before its successor (`+U`).
        update_before: bool,
    },
    /// A regular inner join.
    Join(Join),
    /// An event-time interval join.
    IntervalJoin(Join),
    /// A window join.
    WindowJoin(Join),
    /// A lookup join into `table` (its scan; not an input of this node).
    LookupJoin {
        /// The join's keys and condition.
        join: Join,
        /// The table looked up.
        table: TableScan,
    },
    /// `UNION ALL`.
    Union,
    /// Writes into a table.
    Sink(Sink),
}

/// One physical operator with its inputs and output columns.
#[derive(Clone, Debug)]
pub struct PhysicalNode {
    /// What it does.
    pub op: PhysicalOp,
    /// Its inputs.
    pub inputs: Vec<PhysicalNode>,
    /// Its output columns.
    pub schema: Vec<Field>,
}

/// A planned job: its sinks (one per INSERT), as physical operator trees.
#[derive(Clone, Debug)]
pub struct PhysicalPlan {
    /// The relational plans, one per INSERT (or the query).
    pub logical: Vec<Rel>,
    /// The physical trees, one per INSERT (or the query).
    pub roots: Vec<PhysicalNode>,
}

fn column(index: usize, f: &Field) -> Expr {
    Expr::Column {
        index,
        name: f.name.clone(),
        ty: f.ty.clone(),
    }
}

/// Merges Calc chains bottom-up (Flink's `CalcMergeRule`).
pub fn merge_calcs(rel: Rel) -> Rel {
    let Rel {
        node,
        inputs,
        schema,
    } = rel;
    let inputs: Vec<Rel> = inputs.into_iter().map(merge_calcs).collect();
    if let RelNode::Calc(upper) = &node {
        if let [Rel {
            node: RelNode::Calc(lower),
            ..
        }] = inputs.as_slice()
        {
            let sub = |e: &Expr| e.substitute_columns(&|i, _| lower.projection[i].0.clone());
            let projection = upper
                .projection
                .iter()
                .map(|(e, n)| (sub(e), n.clone()))
                .collect();
            let mut conds = Vec::new();
            conds.extend(lower.condition.clone());
            conds.extend(upper.condition.as_ref().map(sub));
            let conds = conds
                .into_iter()
                .flat_map(super::bind_query::conjuncts)
                .collect();
            let merged = Calc {
                projection,
                condition: and_all(conds),
            };
            let below = inputs
                .into_iter()
                .next()
                .map(|c| c.inputs)
                .unwrap_or_default();
            return Rel {
                node: RelNode::Calc(merged),
                inputs: below,
                schema,
            };
        }
    }
    Rel {
        node,
        inputs,
        schema,
    }
}

fn is_identity(calc: &Calc, input: &[Field]) -> bool {
    calc.condition.is_none()
        && calc.projection.len() == input.len()
        && calc.projection.iter().enumerate().all(|(i, (e, _))| {
            matches!(e, Expr::Column { index, ty, .. } if *index == i && *ty == input[i].ty)
        })
}

/// The same expression with its columns named as in `input`.
fn rename_columns(e: &Expr, input: &[Field]) -> Expr {
    e.substitute_columns(&|i, name| Expr::Column {
        index: i,
        name: input
            .get(i)
            .map(|f| f.name.clone())
            .unwrap_or_else(|| name.to_string()),
        ty: input
            .get(i)
            .map(|f| f.ty.clone())
            .unwrap_or_else(crate::types::DataType::string),
    })
}

/// A Calc with its columns named after its input, and time attributes read inside an
/// expression materialized as Flink does (`HOUR(dateTime)` reads `CAST(dateTime AS
/// TIMESTAMP(3))`; a bare column or a cast of one stays as is).
fn renamed_calc(c: &Calc, input: &[Field]) -> Calc {
    let fix = |e: &Expr| {
        let named = rename_columns(e, input);
        let bare = match &named {
            Expr::Column { .. } => true,
            Expr::Cast { expr, .. } => matches!(expr.as_ref(), Expr::Column { .. }),
            _ => false,
        };
        if bare {
            return named;
        }
        named.substitute_columns(&|i, name| {
            let f = input.get(i);
            let col = Expr::Column {
                index: i,
                name: name.to_string(),
                ty: f
                    .map(|f| f.ty.clone())
                    .unwrap_or_else(crate::types::DataType::string),
            };
            match f {
                Some(f) if f.ty.time_attribute() != TimestampKind::Regular => Expr::Cast {
                    expr: Box::new(col),
                    ty: f.ty.without_time_attribute(),
                    safe: false,
                },
                _ => col,
            }
        })
    };
    Calc {
        projection: c
            .projection
            .iter()
            .map(|(e, n)| (fix(e), n.clone()))
            .collect(),
        condition: c.condition.as_ref().map(|w| typed_equalities(&fix(w))),
    }
}

/// Calcite types the literal of a filter's `column = literal` as the column's wider integer
/// type (`=(auction.category, 10:BIGINT)`): the same test, printed as Flink prints it.
fn typed_equalities(cond: &Expr) -> Expr {
    let rank = |t: &crate::types::LogicalType| {
        use crate::types::LogicalType as L;
        match t {
            L::TinyInt => Some(1),
            L::SmallInt => Some(2),
            L::Int => Some(3),
            L::BigInt => Some(4),
            _ => None,
        }
    };
    let widen = |c: &Expr| -> Expr {
        if let Expr::Binary {
            op: crate::expr::BinaryOp::Eq,
            left,
            right,
            ty,
        } = c
        {
            if let Expr::Literal { value, ty: lt } = right.as_ref() {
                let ct = left.data_type();
                if matches!(left.as_ref(), Expr::Column { .. } | Expr::Field { .. })
                    && matches!((rank(&lt.logical), rank(&ct.logical)), (Some(a), Some(b)) if b > a)
                {
                    return Expr::Binary {
                        op: crate::expr::BinaryOp::Eq,
                        left: left.clone(),
                        right: Box::new(Expr::Literal {
                            value: value.clone(),
                            ty: crate::types::DataType {
                                logical: ct.logical.clone(),
                                nullable: lt.nullable,
                            },
                        }),
                        ty: ty.clone(),
                    };
                }
            }
        }
        c.clone()
    };
    match cond {
        Expr::And(args) => Expr::And(args.iter().map(widen).collect()),
        other => widen(other),
    }
}

/// A Calc over a window table function: as Flink does, the function's input is first projected
/// to the columns read above it and the time attribute.
fn calc_over_window_function(
    c: &Calc,
    w: &super::window::WindowSpec,
    tvf: &Rel,
    schema: &[Field],
) -> PhysicalNode {
    let input = &tvf.inputs[0];
    let n = input.schema.len();
    let mut cols: Vec<usize> = c.projection.iter().flat_map(|(e, _)| e.columns()).collect();
    if let Some(cond) = &c.condition {
        cols.extend(cond.columns());
    }
    let time = match &w.time {
        WindowTime::TimeColumn { index, .. } => *index,
        WindowTime::Bounds { start, .. } => start.0,
    };
    cols.push(time);
    let mut below: Vec<usize> = cols.iter().copied().filter(|&i| i < n).collect();
    below.sort_unstable();
    below.dedup();
    let proj: Vec<(Expr, String)> = below
        .iter()
        .map(|&i| (column(i, &input.schema[i]), input.schema[i].name.clone()))
        .collect();
    let pruned = Rel {
        node: RelNode::Calc(Calc {
            projection: proj,
            condition: None,
        }),
        inputs: vec![input.clone()],
        schema: below.iter().map(|&i| input.schema[i].clone()).collect(),
    };
    let child = translate(&merge_calcs(pruned), None);
    let at = |i: usize| {
        if i < n {
            below.iter().position(|&b| b == i).unwrap_or(0)
        } else {
            below.len() + (i - n)
        }
    };
    let mut window = w.clone();
    if let WindowTime::TimeColumn { index, .. } = &mut window.time {
        *index = at(*index);
    }
    let mut tvf_schema = child.schema.clone();
    tvf_schema.extend(tvf.schema[n..].iter().cloned());
    let tvf_node = PhysicalNode {
        op: PhysicalOp::WindowTableFunction(window),
        inputs: vec![child],
        schema: tvf_schema,
    };
    let remap = |e: &Expr| e.substitute_columns(&|i, _| column(at(i), &tvf_node.schema[at(i)]));
    let calc = renamed_calc(
        &Calc {
            projection: c
                .projection
                .iter()
                .map(|(e, n)| (remap(e), n.clone()))
                .collect(),
            condition: c.condition.as_ref().map(remap),
        },
        &tvf_node.schema,
    );
    if is_identity(&calc, &tvf_node.schema) {
        return tvf_node;
    }
    PhysicalNode {
        op: PhysicalOp::Calc(calc),
        inputs: vec![tvf_node],
        schema: schema.to_vec(),
    }
}

/// Translates a relational plan into Flink's physical shape.
pub fn to_physical(rel: &Rel) -> PhysicalNode {
    translate(rel, None)
}

/// `used`: the columns the parent reads (a Calc above a scan prunes the scan's Calc).
fn translate(rel: &Rel, used: Option<&[usize]>) -> PhysicalNode {
    match &rel.node {
        RelNode::TableScan(scan) => scan_nodes(scan, &rel.schema, used).0,
        RelNode::Calc(c) => {
            let input = &rel.inputs[0];
            if let RelNode::TableScan(scan) = &input.node {
                let mut cols: Vec<usize> =
                    c.projection.iter().flat_map(|(e, _)| e.columns()).collect();
                if let Some(cond) = &c.condition {
                    cols.extend(cond.columns());
                }
                cols.sort_unstable();
                cols.dedup();
                let (node, map) = scan_nodes(scan, &input.schema, Some(&cols));
                let remap = |e: &Expr| {
                    e.substitute_columns(&|i, _| {
                        let j = map[i].unwrap_or(0);
                        column(j, &node.schema[j])
                    })
                };
                let calc = renamed_calc(
                    &Calc {
                        projection: c
                            .projection
                            .iter()
                            .map(|(e, n)| (remap(e), n.clone()))
                            .collect(),
                        condition: c.condition.as_ref().map(remap),
                    },
                    &node.schema,
                );
                if is_identity(&calc, &node.schema) {
                    return node;
                }
                return PhysicalNode {
                    op: PhysicalOp::Calc(calc),
                    inputs: vec![node],
                    schema: rel.schema.clone(),
                };
            }
            if let RelNode::WindowTableFunction(w) = &input.node {
                return calc_over_window_function(c, w, input, &rel.schema);
            }
            let child = translate(input, None);
            let c = renamed_calc(c, &input.schema);
            if is_identity(&c, &child.schema) {
                return child;
            }
            PhysicalNode {
                op: PhysicalOp::Calc(c),
                inputs: vec![child],
                schema: rel.schema.clone(),
            }
        }
        RelNode::WindowTableFunction(w) => PhysicalNode {
            op: PhysicalOp::WindowTableFunction(w.clone()),
            inputs: vec![translate(&rel.inputs[0], None)],
            schema: rel.schema.clone(),
        },
        RelNode::WindowAggregate(agg) => {
            window_aggregate(agg, translate(&rel.inputs[0], None), &rel.schema)
        }
        RelNode::GroupWindowAggregate(agg) => {
            let child = exchange(translate(&rel.inputs[0], None), &agg.group);
            PhysicalNode {
                op: PhysicalOp::GroupWindowAggregate(agg.clone()),
                inputs: vec![child],
                schema: rel.schema.clone(),
            }
        }
        RelNode::GroupAggregate(agg) => {
            let child = exchange(translate(&rel.inputs[0], None), &agg.group);
            PhysicalNode {
                op: PhysicalOp::GroupAggregate {
                    agg: agg.clone(),
                    update_before: true,
                    retract: false,
                },
                inputs: vec![child],
                schema: rel.schema.clone(),
            }
        }
        RelNode::Rank(rank) => {
            let child = translate(&rel.inputs[0], None);
            let key = rank.order.first().map(|k| k.column);
            let time = key
                .and_then(|k| child.schema.get(k))
                .map(|f| f.ty.time_attribute())
                .unwrap_or(TimestampKind::Regular);
            let dedup = rank.start == 1
                && rank.end == Some(1)
                && !rank.output_rank
                && rank.order.len() == 1
                && time != TimestampKind::Regular;
            let child = exchange(child, &rank.partition);
            let op = match (dedup, key) {
                (true, Some(order)) => PhysicalOp::Deduplicate {
                    keys: rank.partition.clone(),
                    order,
                    keep_last: rank.order[0].descending,
                    rowtime: time == TimestampKind::Rowtime,
                    update_before: true,
                },
                _ => PhysicalOp::Rank {
                    rank: rank.clone(),
                    update_before: true,
                    retract: false,
                },
            };
            PhysicalNode {
                op,
                inputs: vec![child],
                schema: rel.schema.clone(),
            }
        }
        RelNode::Join(j) => {
            let left = translate(&rel.inputs[0], None);
            if let JoinKind::Lookup { .. } = &j.kind {
                let table = match &rel.inputs[1].node {
                    RelNode::TableScan(t) => t.clone(),
                    _ => TableScan {
                        path: Vec::new(),
                        physical: Vec::new(),
                        columns: Vec::new(),
                        watermark: None,
                        options: Vec::new(),
                    },
                };
                return PhysicalNode {
                    op: PhysicalOp::LookupJoin {
                        join: j.clone(),
                        table,
                    },
                    inputs: vec![left],
                    schema: rel.schema.clone(),
                };
            }
            let right = translate(&rel.inputs[1], None);
            // Names come from the inputs as planned (a removed projection's renames are gone).
            let mut names: Vec<String> = left
                .schema
                .iter()
                .chain(&right.schema)
                .map(|f| f.name.clone())
                .collect();
            super::schema::uniquify(&mut names);
            let mut schema = rel.schema.clone();
            for (f, n) in schema.iter_mut().zip(names) {
                f.name = n;
            }
            let mut j = j.clone();
            j.condition = j.condition.as_ref().map(|e| rename_columns(e, &schema));
            let j = &j;
            let lkeys: Vec<usize> = j.equi.iter().map(|k| k.0).collect();
            let rkeys: Vec<usize> = j.equi.iter().map(|k| k.1).collect();
            let inputs = vec![exchange(left, &lkeys), exchange(right, &rkeys)];
            let op = match &j.kind {
                JoinKind::Window { .. } => PhysicalOp::WindowJoin(j.clone()),
                JoinKind::Interval { .. } => PhysicalOp::IntervalJoin(j.clone()),
                _ => PhysicalOp::Join(j.clone()),
            };
            PhysicalNode { op, inputs, schema }
        }
        RelNode::Union => PhysicalNode {
            op: PhysicalOp::Union,
            inputs: rel.inputs.iter().map(|r| translate(r, None)).collect(),
            schema: rel.schema.clone(),
        },
        RelNode::Sink(s) => {
            let child = translate(&rel.inputs[0], None);
            let schema = child.schema.clone();
            PhysicalNode {
                op: PhysicalOp::Sink(s.clone()),
                inputs: vec![child],
                schema,
            }
        }
    }
}

fn exchange(input: PhysicalNode, keys: &[usize]) -> PhysicalNode {
    let d = if keys.is_empty() {
        Distribution::Single
    } else {
        Distribution::Hash(keys.to_vec())
    };
    let schema = input.schema.clone();
    PhysicalNode {
        op: PhysicalOp::Exchange(d),
        inputs: vec![input],
        schema,
    }
}

/// TableSourceScan → [Calc of the used physical and computed columns] → [WatermarkAssigner].
/// Returns the top node and where each table column ended up.
fn scan_nodes(
    scan: &TableScan,
    table_schema: &[Field],
    used: Option<&[usize]>,
) -> (PhysicalNode, Vec<Option<usize>>) {
    let source = PhysicalNode {
        op: PhysicalOp::TableSourceScan(scan.clone()),
        inputs: Vec::new(),
        schema: scan.physical.clone(),
    };
    let n = scan.columns.len();
    let has_computed = scan
        .columns
        .iter()
        .any(|(_, s)| matches!(s, ScanColumnSource::Computed(_)));
    // Flink 2.3 prunes the computed-column Calc below a WatermarkAssigner only when the rowtime
    // is read above it (its projection transposes through the assigner then); otherwise the
    // Calc keeps every column. Done the same way so that plans read alike.
    let rowtime_used = match (&scan.watermark, used) {
        (Some(wm), Some(u)) => u.contains(&wm.rowtime),
        (None, Some(_)) => true,
        _ => false,
    };
    let mut keep: Vec<bool> = match used {
        Some(u) if rowtime_used => (0..n).map(|i| u.contains(&i)).collect(),
        _ => vec![true; n],
    };
    if let Some(wm) = &scan.watermark {
        keep[wm.rowtime] = true;
        for c in wm.expr.columns() {
            if c < n {
                keep[c] = true;
            }
        }
    }
    // Without computed columns the source feeds the WatermarkAssigner directly; the Calc
    // above picks the columns (as in Flink's plans of plain tables).
    let all_physical_in_order = !has_computed;
    let (mut node, map) = if all_physical_in_order {
        (source, (0..n).map(Some).collect::<Vec<_>>())
    } else if !has_computed {
        // Flink pushes the projection into a source that supports it; the scan keeps all
        // fields here and a Calc picks the used ones.
        let mut map = vec![None; n];
        let mut proj = Vec::new();
        for (i, (f, s)) in scan.columns.iter().enumerate() {
            if keep[i] {
                let (ScanColumnSource::Physical(p) | ScanColumnSource::Metadata { index: p, .. }) =
                    s
                else {
                    continue;
                };
                map[i] = Some(proj.len());
                proj.push((column(*p, &scan.physical[*p]), f.name.clone()));
            }
        }
        let schema = proj
            .iter()
            .map(|(e, n): &(Expr, String)| Field::new(n.clone(), e.data_type()))
            .collect();
        (
            PhysicalNode {
                op: PhysicalOp::Calc(Calc {
                    projection: proj,
                    condition: None,
                }),
                inputs: vec![source],
                schema,
            },
            map,
        )
    } else {
        let mut map = vec![None; n];
        let mut proj = Vec::new();
        for (i, (f, s)) in scan.columns.iter().enumerate() {
            if !keep[i] {
                continue;
            }
            let e = match s {
                ScanColumnSource::Physical(p) | ScanColumnSource::Metadata { index: p, .. } => {
                    column(*p, &scan.physical[*p])
                }
                ScanColumnSource::Computed(e) => e.clone(),
            };
            map[i] = Some(proj.len());
            proj.push((e, f.name.clone()));
        }
        let schema = proj
            .iter()
            .map(|(e, n): &(Expr, String)| Field::new(n.clone(), e.data_type()))
            .collect();
        (
            PhysicalNode {
                op: PhysicalOp::Calc(Calc {
                    projection: proj,
                    condition: None,
                }),
                inputs: vec![source],
                schema,
            },
            map,
        )
    };
    if let Some(wm) = &scan.watermark {
        let Some(rt) = map[wm.rowtime] else {
            return (node, map);
        };
        let expr = wm.expr.substitute_columns(&|i, _| {
            let j = map.get(i).copied().flatten().unwrap_or(0);
            column(j, &node.schema[j])
        });
        let mut schema = node.schema.clone();
        schema[rt] = table_schema[wm.rowtime].clone();
        node = PhysicalNode {
            op: PhysicalOp::WatermarkAssigner { rowtime: rt, expr },
            inputs: vec![node],
            schema,
        };
    }
    (node, map)
}

/// Flink's window aggregate shape: two phases for an event-time window (all of this planner's
/// aggregates are mergeable), one phase over processing time.
fn window_aggregate(agg: &WindowAggregate, input: PhysicalNode, schema: &[Field]) -> PhysicalNode {
    let rowtime = match &agg.window.time {
        WindowTime::TimeColumn { index, .. } => input
            .schema
            .get(*index)
            .is_some_and(|f| f.ty.time_attribute() == TimestampKind::Rowtime),
        WindowTime::Bounds { .. } => true,
    };
    let distinct = agg.aggs.iter().any(|a| a.distinct);
    if !rowtime || distinct {
        let child = exchange(input, &agg.group);
        return PhysicalNode {
            op: PhysicalOp::WindowAggregate(agg.clone()),
            inputs: vec![child],
            schema: schema.to_vec(),
        };
    }
    // Local: keys, accumulators, the slice (or window) end.
    let mut local_schema: Vec<Field> = agg.group.iter().map(|&i| input.schema[i].clone()).collect();
    for (name, ty) in local_accumulators(&agg.aggs) {
        local_schema.push(Field::new(name, ty));
    }
    let end_name = match agg.window.time {
        WindowTime::TimeColumn { .. } => "$slice_end",
        WindowTime::Bounds { .. } => "$window_end",
    };
    local_schema.push(Field::new(
        end_name,
        crate::types::DataType::bigint().not_null(),
    ));
    let local = PhysicalNode {
        op: PhysicalOp::LocalWindowAggregate(agg.clone()),
        inputs: vec![input],
        schema: local_schema,
    };
    let nkeys = agg.group.len();
    let shuffled = exchange(local, &(0..nkeys).collect::<Vec<_>>());
    PhysicalNode {
        op: PhysicalOp::GlobalWindowAggregate(agg.clone()),
        inputs: vec![shuffled],
        schema: schema.to_vec(),
    }
}

/// The local phase's accumulator columns: `count1$0`, `max$1`, … (AVG has a sum and a count).
pub fn local_accumulators(aggs: &[AggCall]) -> Vec<(String, crate::types::DataType)> {
    let mut out = Vec::new();
    for a in aggs {
        for prefix in a.kind.accumulators() {
            let ty = if prefix.starts_with("count") {
                crate::types::DataType::bigint().not_null()
            } else {
                a.ty.clone()
            };
            out.push((format!("{prefix}{}", out.len()), ty));
        }
    }
    out
}

impl PhysicalNode {
    /// Checks that every expression reads columns its input has, with the input's types (time
    /// attributes and nullability aside), and that keys and indexes are in range: what the
    /// runtime relies on when it evaluates a node's expressions over its input rows. The
    /// global phase of a window aggregate reads the local phase's output (keys first, then the
    /// accumulators, then the slice end), not the aggregate's own `group`/`args` indexes.
    pub fn check(&self) -> crate::error::Result<()> {
        let bad = |what: String| {
            Err(crate::error::SqlError::validation(
                None,
                format!("internal plan error: {what}"),
            ))
        };
        let check_expr = |e: &Expr, input: &[Field], node: &str| -> crate::error::Result<()> {
            let mut err = None;
            e.visit(&mut |x| {
                if let Expr::Column { index, name, ty } = x {
                    match input.get(*index) {
                        None => {
                            err = Some(format!(
                                "{node}: column {name} (#{index}) of {} inputs",
                                input.len()
                            ))
                        }
                        Some(f)
                            if f.ty.without_time_attribute().logical
                                != ty.without_time_attribute().logical =>
                        {
                            err = Some(format!(
                                "{node}: column {name} (#{index}) typed {ty}, input has {}",
                                f.ty
                            ))
                        }
                        _ => {}
                    }
                }
            });
            match err {
                Some(e) => bad(e),
                None => Ok(()),
            }
        };
        let input = |i: usize| {
            self.inputs
                .get(i)
                .map(|n| n.schema.as_slice())
                .unwrap_or(&[])
        };
        let name = super::explain::transformation_name(self);
        match &self.op {
            PhysicalOp::Calc(c) => {
                for (e, _) in &c.projection {
                    check_expr(e, input(0), name)?;
                }
                if let Some(w) = &c.condition {
                    check_expr(w, input(0), name)?;
                }
            }
            PhysicalOp::WatermarkAssigner { rowtime, expr } => {
                check_expr(expr, input(0), name)?;
                if *rowtime >= input(0).len() {
                    return bad(format!("{name}: rowtime #{rowtime}"));
                }
            }
            PhysicalOp::Exchange(Distribution::Hash(keys))
                if keys.iter().any(|k| *k >= input(0).len()) =>
            {
                return bad(format!("{name}: key out of range"));
            }
            PhysicalOp::LocalWindowAggregate(a)
            | PhysicalOp::WindowAggregate(a)
            | PhysicalOp::GroupWindowAggregate(a) => {
                let n = input(0).len();
                let args = a.aggs.iter().flat_map(|c| c.args.iter());
                if a.group.iter().chain(args).any(|i| *i >= n) {
                    return bad(format!("{name}: key or argument out of range"));
                }
                let time = match &a.window.time {
                    WindowTime::TimeColumn { index, .. } => vec![*index],
                    WindowTime::Bounds { start, end } => vec![start.0, end.0],
                };
                if time.iter().any(|i| *i >= n) {
                    return bad(format!("{name}: window time out of range"));
                }
            }
            PhysicalOp::GroupAggregate { agg, .. } => {
                let n = input(0).len();
                let args = agg
                    .aggs
                    .iter()
                    .flat_map(|c| c.args.iter().chain(c.filter.iter().map(|f| &f.0)));
                if agg.group.iter().chain(args).any(|i| *i >= n) {
                    return bad(format!("{name}: key or argument out of range"));
                }
            }
            PhysicalOp::Rank { rank, .. } => {
                let n = input(0).len();
                let order = rank.order.iter().map(|k| &k.column);
                if rank.partition.iter().chain(order).any(|i| *i >= n) {
                    return bad(format!("{name}: key out of range"));
                }
            }
            PhysicalOp::Deduplicate { keys, order, .. } => {
                let n = input(0).len();
                if keys.iter().chain(std::iter::once(order)).any(|i| *i >= n) {
                    return bad(format!("{name}: key out of range"));
                }
            }
            PhysicalOp::Join(j) | PhysicalOp::IntervalJoin(j) | PhysicalOp::WindowJoin(j) => {
                let (l, r) = (input(0).len(), input(1).len());
                if j.equi.iter().any(|(a, b)| *a >= l || *b >= r) {
                    return bad(format!("{name}: key out of range"));
                }
                if let Some(c) = &j.condition {
                    check_expr(c, &self.schema, name)?;
                }
            }
            PhysicalOp::LookupJoin { join, table } => {
                if let JoinKind::Lookup { keys, .. } = &join.kind {
                    if keys
                        .iter()
                        .any(|(r, l)| *r >= table.columns.len() || *l >= input(0).len())
                    {
                        return bad(format!("{name}: key out of range"));
                    }
                }
            }
            PhysicalOp::Sink(s) if s.columns.len() != input(0).len() => {
                return bad(format!(
                    "{name}: {} columns into {}",
                    input(0).len(),
                    s.columns.len()
                ));
            }
            _ => {}
        }
        self.inputs.iter().try_for_each(PhysicalNode::check)
    }
}
