//! Which columns, and which fields of `ROW` columns, the operators above each table scan read:
//! nested projection push-down into the source at run time, without changing the plan.
//!
//! Why here and not in the planner: Flink's plan for the official Nexmark queries keeps the
//! whole `TableSourceScan(…, fields=[event_type, person, auction, bid])` (its Nexmark source
//! does not push projections down), and Sluice's EXPLAIN prints Flink's plan. But the
//! `datagen` table's `ROW`s hold every field of an event, each string copied, where most
//! queries read a few. So the translator asks this module what is read above a scan and the
//! source builds the rest as NULL ([`crate::SourceConnector::pruned`]): values no operator
//! looks at, so no answer changes.
//!
//! Where a `ROW` column is read by field only, the scan goes further and emits those fields
//! as columns of their own ([`crate::layout`]).
//!
//! The analysis is conservative: a `Calc` (its projections and condition: every projection is
//! computed, read or not, so only a bare column passes its readers' demand through), a
//! `WatermarkAssigner`, an `Exchange` and a `Union` narrow what is read; every other node reads
//! all columns of its inputs whole. A rowtime column is read whole wherever it is (its value is
//! the rows' event timestamp).

use std::collections::{BTreeSet, HashMap};

use sluice_sql::plan::explain::{physical_text, Style};
use sluice_sql::plan::{Distribution, PhysicalNode, PhysicalOp};
use sluice_sql::{Expr, TimestampKind};

/// What the operators above read of one column.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Demand {
    /// Nothing: the column's value is never looked at.
    #[default]
    Unread,
    /// Only these fields of the `ROW` column (by index); the others are never looked at.
    Fields(BTreeSet<usize>),
    /// The value itself.
    Whole,
}

impl Demand {
    /// Both demands at once.
    fn merge(&mut self, other: &Demand) {
        *self = match (std::mem::take(self), other) {
            (Demand::Whole, _) | (_, Demand::Whole) => Demand::Whole,
            (Demand::Unread, o) => o.clone(),
            (s, Demand::Unread) => s,
            (Demand::Fields(mut a), Demand::Fields(b)) => {
                a.extend(b.iter().copied());
                Demand::Fields(a)
            }
        };
    }

    /// Whether field `f` of the column is read (everything is, of a value read whole).
    pub fn reads_field(&self, f: usize) -> bool {
        match self {
            Demand::Unread => false,
            Demand::Fields(fs) => fs.contains(&f),
            Demand::Whole => true,
        }
    }
}

/// Per table scan (by its plan text: a scan the plan holds twice is built once), what is read
/// of each of its output columns, over all the plan's trees.
pub fn scan_demands(roots: &[PhysicalNode]) -> HashMap<String, Vec<Demand>> {
    let mut out = HashMap::new();
    for root in roots {
        walk(root, vec![Demand::Whole; root.schema.len()], &mut out);
    }
    out
}

fn whole(n: usize) -> Vec<Demand> {
    vec![Demand::Whole; n]
}

fn walk(node: &PhysicalNode, mut read: Vec<Demand>, out: &mut HashMap<String, Vec<Demand>>) {
    // The rowtime column's value is the rows' event timestamp wherever it goes.
    for (i, f) in node.schema.iter().enumerate() {
        if f.ty.time_attribute() == TimestampKind::Rowtime {
            if let Some(d) = read.get_mut(i) {
                *d = Demand::Whole;
            }
        }
    }
    let width = |i: usize| node.inputs.get(i).map_or(0, |n| n.schema.len());
    match &node.op {
        PhysicalOp::TableSourceScan(_) => {
            let key = physical_text(node, Style::Exec);
            let entry = out
                .entry(key)
                .or_insert_with(|| vec![Demand::Unread; read.len()]);
            for (e, r) in entry.iter_mut().zip(&read) {
                e.merge(r);
            }
        }
        PhysicalOp::Calc(c) => {
            let mut below = vec![Demand::Unread; width(0)];
            for ((e, _), r) in c.projection.iter().zip(&read) {
                match e {
                    // Moved or cloned as it is: read as its readers read it.
                    Expr::Column { index, .. } => {
                        if let Some(b) = below.get_mut(*index) {
                            b.merge(r);
                        }
                    }
                    e => reads(e, &mut below),
                }
            }
            if let Some(cond) = &c.condition {
                reads(cond, &mut below);
            }
            if let Some(i) = node.inputs.first() {
                walk(i, below, out);
            }
        }
        PhysicalOp::WatermarkAssigner { rowtime, expr } => {
            reads(expr, &mut read);
            if let Some(d) = read.get_mut(*rowtime) {
                *d = Demand::Whole;
            }
            if let Some(i) = node.inputs.first() {
                walk(i, read, out);
            }
        }
        PhysicalOp::Exchange(d) => {
            if let Distribution::Hash(keys) = d {
                for k in keys {
                    if let Some(d) = read.get_mut(*k) {
                        *d = Demand::Whole;
                    }
                }
            }
            if let Some(i) = node.inputs.first() {
                walk(i, read, out);
            }
        }
        PhysicalOp::Union => {
            for i in &node.inputs {
                walk(i, read.clone(), out);
            }
        }
        _ => {
            for (k, i) in node.inputs.iter().enumerate() {
                walk(i, whole(width(k)), out);
            }
        }
    }
}

/// Adds what `e` reads of its input row to `row`: `column.field` reads that field, any other
/// use of a column reads it whole.
fn reads(e: &Expr, row: &mut [Demand]) {
    match e {
        Expr::Field { expr, index, .. } => match expr.as_ref() {
            Expr::Column { index: c, .. } => {
                if let Some(d) = row.get_mut(*c) {
                    d.merge(&Demand::Fields(BTreeSet::from([*index])));
                }
            }
            inner => reads(inner, row),
        },
        Expr::Column { index, .. } => {
            if let Some(d) = row.get_mut(*index) {
                *d = Demand::Whole;
            }
        }
        other => {
            for c in other.children() {
                reads(c, row);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demands_merge_to_what_either_reads() {
        let f = |v: &[usize]| Demand::Fields(v.iter().copied().collect());
        let mut d = Demand::Unread;
        d.merge(&f(&[1]));
        d.merge(&f(&[3]));
        assert_eq!(d, f(&[1, 3]));
        assert!(d.reads_field(3) && !d.reads_field(2));
        d.merge(&Demand::Unread);
        assert_eq!(d, f(&[1, 3]));
        d.merge(&Demand::Whole);
        assert_eq!(d, Demand::Whole);
        d.merge(&f(&[0]));
        assert_eq!(d, Demand::Whole);
    }
}
