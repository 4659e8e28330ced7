//! Flat scan layouts: a scan whose `ROW` columns are read only field by field emits those
//! fields as columns of its rows, and the operators reading its rows are rebound to them.
//!
//! Why: the official Nexmark `datagen` table holds an event in a `ROW` column per kind, and
//! the queries read `bid.price`, `bid.auction`… through views ([`crate::demand`] finds which
//! fields). Building a `ROW` per event (one more allocation, every field behind it) and then
//! moving its fields out in the first `Calc` costs more than the query itself in the simple
//! queries. So where the plan allows, the source emits the read fields flat, side by side with
//! the other columns, and the translator rewrites `bid.price` (`Field(Column(bid), price)`)
//! into `Column(k)` in the operators between the scan and the first operator whose output is
//! the plan's layout again — the scan's computed-column `Calc`, the `WatermarkAssigner`,
//! `Exchange` keys, the view's `Calc`. A pure rewrite at translation time: the plan and
//! EXPLAIN are Flink's and unchanged, and the operators compute the same values (a field of a
//! NULL `ROW` is NULL, and so is the flat column of an event of another kind).
//!
//! A layout maps each column of a node's plan schema to where its value is in the rows: a
//! column index, a `ROW`'s fields (each at its own index, or not built), or nothing (no
//! operator reads it). The translator only uses one when every operator reading it can be
//! rebound: a `Calc` (a bare `ROW` column stays flat through it, anything else must read only
//! `row.field` of a flat column), a `WatermarkAssigner`, an `Exchange` (keys on plain columns)
//! and a `Union` of inputs of one layout; every other node, and every root, must see the
//! plan's layout. A scan for which that does not hold keeps the plan's layout
//! ([`choose`]: correctness first), as does every source but `nexmark`.

use std::collections::HashMap;

use sluice_sql::plan::explain::{physical_text, Style};
use sluice_sql::plan::{Distribution, PhysicalNode, PhysicalOp};
use sluice_sql::{DataType, Expr, LogicalType};

use crate::demand::Demand;

/// Where the value of one column of a node's plan schema is in its rows.
#[derive(Clone, Debug, PartialEq)]
pub enum Col {
    /// In the row's column at this index.
    At(usize),
    /// A `ROW` column, flattened: each field's index in the row (`None`: not built, nobody
    /// reads it).
    Flat(Vec<Option<usize>>),
    /// Not built at all (nobody reads it).
    Gone,
}

/// The rows' layout under a node whose columns are not the plan's.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Per plan column, where it is.
    pub cols: Vec<Col>,
    /// The rows' columns: name (as the plan prints the value: `bid.price`) and type.
    pub slots: Vec<(String, DataType)>,
}

impl Layout {
    /// The layout a scan of `schema` gets when `read` is what is read of it: a `ROW` column
    /// read only by field is flattened to those fields, an unread column is not built, other
    /// columns stay. `None` when that is the plan's layout.
    pub fn of_scan(schema: &[sluice_sql::plan::Field], read: &[Demand]) -> Option<Layout> {
        if schema.len() != read.len() {
            return None;
        }
        let mut layout = Layout {
            cols: Vec::with_capacity(schema.len()),
            slots: Vec::new(),
        };
        let mut changed = false;
        for (f, d) in schema.iter().zip(read) {
            match (d, &f.ty.logical) {
                (Demand::Unread, _) => {
                    changed = true;
                    layout.cols.push(Col::Gone);
                }
                (Demand::Fields(read), LogicalType::Row(fields)) => {
                    changed = true;
                    let at = fields
                        .iter()
                        .enumerate()
                        .map(|(k, field)| {
                            read.contains(&k).then(|| {
                                let ty = field
                                    .ty
                                    .clone()
                                    .with_nullable(field.ty.nullable || f.ty.nullable);
                                layout.push(format!("{}.{}", f.name, field.name), ty)
                            })
                        })
                        .collect();
                    layout.cols.push(Col::Flat(at));
                }
                _ => {
                    let k = layout.push(f.name.clone(), f.ty.clone());
                    layout.cols.push(Col::At(k));
                }
            }
        }
        changed.then_some(layout)
    }

    fn push(&mut self, name: String, ty: DataType) -> usize {
        self.slots.push((name, ty));
        self.slots.len() - 1
    }

    /// How many columns the rows have.
    pub fn width(&self) -> usize {
        self.slots.len()
    }

    /// The row index of plan column `c` when it is a plain column.
    pub fn at(&self, c: usize) -> Option<usize> {
        match self.cols.get(c) {
            Some(Col::At(k)) => Some(*k),
            _ => None,
        }
    }

    fn column(&self, k: usize) -> Expr {
        let (name, ty) = self.slots[k].clone();
        Expr::Column { index: k, name, ty }
    }

    /// `e` (over the plan's columns) over these rows; `None` when it reads a flattened or
    /// unbuilt column whole, or a field that is not built.
    pub fn rewrite(&self, e: &Expr) -> Option<Expr> {
        let mut e = e.clone();
        self.rewrite_in(&mut e).then_some(e)
    }

    fn rewrite_in(&self, e: &mut Expr) -> bool {
        if let Expr::Field { expr, index, .. } = e {
            if let Expr::Column { index: c, .. } = expr.as_ref() {
                if let Some(Col::Flat(fields)) = self.cols.get(*c) {
                    return match fields.get(*index).copied().flatten() {
                        Some(k) => {
                            *e = self.column(k);
                            true
                        }
                        None => false,
                    };
                }
            }
        }
        if let Expr::Column { index, .. } = e {
            return match self.at(*index) {
                Some(k) => {
                    *index = k;
                    true
                }
                None => false,
            };
        }
        e.children_mut().into_iter().all(|c| self.rewrite_in(c))
    }
}

/// A node's expressions rebound to its input's layout.
#[derive(Clone, Debug)]
pub enum Rebound {
    /// The node's own (its inputs have the plan's layout, or it has no expressions).
    Same,
    /// A `Calc`'s projections (a flat column's fields projected one by one) and condition.
    Calc {
        /// One per output row column.
        projection: Vec<Expr>,
        /// The condition.
        condition: Option<Expr>,
    },
    /// A `WatermarkAssigner`'s rowtime index and watermark expression.
    Watermark {
        /// The rowtime column's index in the rows.
        rowtime: usize,
        /// The watermark expression.
        expr: Expr,
    },
    /// An `Exchange`'s hash key indexes in the rows.
    Keys(Vec<usize>),
}

/// What [`derive`] gives: the node's output layout (`None`: the plan's) and its rebound
/// expressions.
#[derive(Clone, Debug)]
pub struct Derived {
    /// The output rows' layout.
    pub layout: Option<Layout>,
    /// The node's expressions over its input rows.
    pub rebound: Rebound,
}

fn same(layout: Option<Layout>) -> Derived {
    Derived {
        layout,
        rebound: Rebound::Same,
    }
}

/// The layout of `node`'s output given its inputs' (`None`: the plan's), and its expressions
/// rebound to them; `None` when the node cannot read them (see the module's docs). A scan is
/// not derived: its layout is chosen ([`choose`]).
pub fn derive(node: &PhysicalNode, inputs: &[Option<&Layout>]) -> Option<Derived> {
    if inputs.iter().all(Option::is_none) {
        return Some(same(None));
    }
    let input = inputs.first().copied().flatten();
    match (&node.op, input) {
        (PhysicalOp::Calc(c), Some(l)) => {
            let condition = match &c.condition {
                Some(e) => Some(l.rewrite(e)?),
                None => None,
            };
            let mut out = Layout {
                cols: Vec::with_capacity(c.projection.len()),
                slots: Vec::new(),
            };
            let mut projection = Vec::with_capacity(c.projection.len());
            let mut put = |out: &mut Layout, e: Expr| {
                projection.push(e.clone());
                let name = e.to_string();
                out.push(name, e.data_type())
            };
            for (e, _) in &c.projection {
                let col = match e {
                    Expr::Column { index, .. } => match l.cols.get(*index)? {
                        Col::At(k) => Col::At(put(&mut out, l.column(*k))),
                        Col::Flat(fields) => Col::Flat(
                            fields
                                .iter()
                                .map(|f| f.map(|k| put(&mut out, l.column(k))))
                                .collect(),
                        ),
                        Col::Gone => Col::Gone,
                    },
                    e => Col::At(put(&mut out, l.rewrite(e)?)),
                };
                out.cols.push(col);
            }
            let plain = out.cols.len() == out.slots.len()
                && out.cols.iter().enumerate().all(|(i, c)| *c == Col::At(i));
            Some(Derived {
                layout: (!plain).then_some(out),
                rebound: Rebound::Calc {
                    projection,
                    condition,
                },
            })
        }
        (PhysicalOp::WatermarkAssigner { rowtime, expr }, Some(l)) => Some(Derived {
            layout: Some(l.clone()),
            rebound: Rebound::Watermark {
                rowtime: l.at(*rowtime)?,
                expr: l.rewrite(expr)?,
            },
        }),
        (PhysicalOp::Exchange(Distribution::Single), Some(l)) => Some(same(Some(l.clone()))),
        (PhysicalOp::Exchange(Distribution::Hash(keys)), Some(l)) => Some(Derived {
            layout: Some(l.clone()),
            rebound: Rebound::Keys(keys.iter().map(|&k| l.at(k)).collect::<Option<_>>()?),
        }),
        (PhysicalOp::Union, Some(l)) if inputs.iter().all(|i| *i == Some(l)) => {
            Some(same(Some(l.clone())))
        }
        _ => None,
    }
}

/// The flat layouts of a plan's scans, by their plan text, and the widest rows each one's
/// layout reaches before the plan's layout again (what the source allocates its rows for).
#[derive(Clone, Debug, Default)]
pub struct ScanLayouts {
    /// The layout of each flattened scan.
    pub layouts: HashMap<String, Layout>,
    /// The widest rows each flattened scan's rows become on the way up.
    pub widths: HashMap<String, usize>,
}

/// The scans of `roots` (each scan's plan text and node) that `flattenable` accepts and whose
/// columns `demands` says are read by field only or not at all, flattened where every
/// operator above can be rebound; the others keep the plan's layout. Scans are tried one by
/// one and kept when the plan still rebinds with them (two scans that only work together,
/// under one `Union`, stay as they are). A scan the plan reuses (q3's persons and auctions)
/// keeps its `ROW`s: its rows are copied to each reader, and a `ROW` copies cheaper.
pub fn choose(
    roots: &[PhysicalNode],
    demands: &HashMap<String, Vec<Demand>>,
    flattenable: &dyn Fn(&PhysicalNode) -> bool,
) -> ScanLayouts {
    let mut candidates: Vec<(String, Layout)> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in roots {
        scans(r, &mut |n| {
            *seen.entry(physical_text(n, Style::Exec)).or_default() += 1;
        });
    }
    for r in roots {
        scans(r, &mut |n| {
            let key = physical_text(n, Style::Exec);
            // A scan the plan reuses sends each row to several readers, each a copy: a ROW
            // is copied as one pointer, its flat fields one by one (measured slower, q3).
            if seen.get(&key) != Some(&1) || !flattenable(n) {
                return;
            }
            if let Some(l) = demands
                .get(&key)
                .and_then(|d| Layout::of_scan(&n.schema, d))
            {
                candidates.push((key, l));
            }
        });
    }
    let mut chosen = ScanLayouts::default();
    for (key, layout) in candidates {
        chosen.layouts.insert(key.clone(), layout);
        let mut widths = HashMap::new();
        if !roots.iter().all(|r| check(r, &chosen.layouts, &mut widths)) {
            chosen.layouts.remove(&key);
        } else {
            chosen.widths = widths;
        }
    }
    chosen
}

/// Calls `f` on every scan under `node`.
fn scans<'a>(node: &'a PhysicalNode, f: &mut dyn FnMut(&'a PhysicalNode)) {
    if let PhysicalOp::TableSourceScan(_) = node.op {
        f(node);
    }
    for i in &node.inputs {
        scans(i, f);
    }
}

/// Whether the tree under `root` rebinds to `layouts` and ends in the plan's layout.
fn check(
    root: &PhysicalNode,
    layouts: &HashMap<String, Layout>,
    widths: &mut HashMap<String, usize>,
) -> bool {
    matches!(output(root, layouts, widths), Some((None, _)))
}

/// The layout of `node`'s output and the scan it comes from (`None` when it cannot be
/// rebound).
fn output(
    node: &PhysicalNode,
    layouts: &HashMap<String, Layout>,
    widths: &mut HashMap<String, usize>,
) -> Option<(Option<Layout>, Option<String>)> {
    if let PhysicalOp::TableSourceScan(_) = node.op {
        let key = physical_text(node, Style::Exec);
        return Some(match layouts.get(&key) {
            Some(l) => {
                let w = widths.entry(key.clone()).or_default();
                *w = (*w).max(l.width());
                (Some(l.clone()), Some(key))
            }
            None => (None, None),
        });
    }
    let mut inputs = Vec::with_capacity(node.inputs.len());
    let mut origin = None;
    for i in &node.inputs {
        let (l, o) = output(i, layouts, widths)?;
        origin = origin.or(o);
        inputs.push(l);
    }
    let refs: Vec<Option<&Layout>> = inputs.iter().map(Option::as_ref).collect();
    let d = derive(node, &refs)?;
    match (&d.layout, &origin) {
        (Some(l), Some(o)) => {
            let w = widths.entry(o.clone()).or_default();
            *w = (*w).max(l.width());
        }
        _ => origin = None,
    }
    Some((d.layout, origin))
}

/// [`derive`] for `node` with its inputs' layouts worked out from the scans' `layouts` (what
/// the translator asks at each node; `None` when it cannot be rebound, which [`choose`] rules
/// out).
pub fn derive_over(node: &PhysicalNode, layouts: &HashMap<String, Layout>) -> Option<Derived> {
    let mut widths = HashMap::new();
    let inputs = node
        .inputs
        .iter()
        .map(|i| output(i, layouts, &mut widths).map(|(l, _)| l))
        .collect::<Option<Vec<_>>>()?;
    let refs: Vec<Option<&Layout>> = inputs.iter().map(Option::as_ref).collect();
    derive(node, &refs)
}
