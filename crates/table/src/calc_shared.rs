//! Common subexpressions of a Calc, computed once per row (Flink's code generator reuses them
//! as well): the official q21 reads `lower(channel)` five times and `REGEXP_EXTRACT(url, …)`
//! twice per row.
//!
//! A repeated deterministic subexpression becomes a *slot*: a value computed once and appended
//! to the input row, which the rewritten expressions read as a column. Evaluation must not do
//! more than the plain walk did — a slot computed for a row the plain walk would not have
//! computed it for could fail that row (a division by zero in a `CASE` branch not taken) — so a
//! slot is computed only where the plain walk certainly computes it: slots *before* the
//! condition are subexpressions the condition always evaluates; slots *after* it (the row
//! passed) are those the projections always evaluate. A subexpression in a position evaluated
//! only sometimes (a later `AND`/`OR` operand, a `CASE` branch, an `IN` candidate, a `LIKE`
//! pattern) is read from a slot where one is ready, and computed as before where not.

use std::collections::HashMap;

use sluice_sql::{Expr, Row, Value};

/// Slot columns are numbered from here while planning, then renumbered after the input's.
const PLACEHOLDER: usize = 1 << 40;

/// A Calc's expressions with their common subexpressions shared.
#[derive(Clone, Debug)]
pub(crate) struct Shared {
    /// How many input columns the expressions read (the row is cut or padded to this width,
    /// so that the slots land at known indexes).
    pub width: usize,
    /// Slots computed before the condition, in order (each may read the ones before).
    pub before: Vec<Expr>,
    /// Slots computed after the condition held, in order.
    pub after: Vec<Expr>,
    /// The condition, over the row and the `before` slots.
    pub condition: Option<Expr>,
    /// The projections, over the row and all slots.
    pub projections: Vec<Expr>,
}

impl Shared {
    /// Makes room for the slots: the row cut or padded (NULL, as [`Row::get`] reads a missing
    /// column) to the width the expressions read.
    #[inline]
    pub fn prepare(&self, row: &mut Row) {
        row.0.truncate(self.width);
        row.0.resize(self.width, Value::Null);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Before,
    After,
}

/// The Calc's expressions with their repeated subexpressions in slots, or `None` when nothing
/// is worth sharing.
pub(crate) fn share(projections: &[Expr], condition: Option<&Expr>) -> Option<Shared> {
    let width = projections
        .iter()
        .chain(condition)
        .flat_map(Expr::columns)
        .max()
        .map_or(0, |m| m + 1);
    let mut condition = condition.cloned();
    let mut projections = projections.to_vec();
    // Slot bodies in creation order (largest first) with their phase.
    let mut slots: Vec<(Expr, Phase)> = Vec::new();
    loop {
        let next = candidate(&condition, &projections, &slots, Phase::Before)
            .or_else(|| candidate(&condition, &projections, &slots, Phase::After));
        let Some((body, phase)) = next else { break };
        let key = key_of(&body);
        let slot = Expr::Column {
            index: PLACEHOLDER + slots.len(),
            name: format!("$slot{}", slots.len()),
            ty: body.data_type(),
        };
        let rewrite = |e: &mut Expr| replace(e, &key, &slot);
        if phase == Phase::Before {
            condition.iter_mut().for_each(rewrite);
        }
        projections.iter_mut().for_each(rewrite);
        for (b, p) in &mut slots {
            if phase == Phase::Before || *p == Phase::After {
                replace(b, &key, &slot);
            }
        }
        slots.push((body, phase));
    }
    if slots.is_empty() {
        return None;
    }
    // Each slot after the slots it reads, the condition's before the projections'.
    let reads_slots = |e: &Expr| -> Vec<usize> {
        e.columns()
            .into_iter()
            .filter(|&c| c >= PLACEHOLDER)
            .map(|c| c - PLACEHOLDER)
            .collect()
    };
    let mut order: Vec<usize> = Vec::with_capacity(slots.len());
    for phase in [Phase::Before, Phase::After] {
        loop {
            let ready = (0..slots.len()).find(|&i| {
                slots[i].1 == phase
                    && !order.contains(&i)
                    && reads_slots(&slots[i].0).iter().all(|d| order.contains(d))
            });
            match ready {
                Some(i) => order.push(i),
                None => break,
            }
        }
    }
    if order.len() != slots.len() {
        // Not expected (a slot reads only smaller ones); share nothing rather than guess.
        return None;
    }
    let mut index = vec![0; slots.len()];
    for (pos, &i) in order.iter().enumerate() {
        index[i] = width + pos;
    }
    let renumber = |e: &Expr| {
        e.map_columns(&|c| {
            if c >= PLACEHOLDER {
                index[c - PLACEHOLDER]
            } else {
                c
            }
        })
    };
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for &i in &order {
        let (body, phase) = &slots[i];
        match phase {
            Phase::Before => before.push(renumber(body)),
            Phase::After => after.push(renumber(body)),
        }
    }
    Some(Shared {
        width,
        before,
        after,
        condition: condition.as_ref().map(renumber),
        projections: projections.iter().map(renumber).collect(),
    })
}

/// The structural identity of an expression (its debug form: columns by index, types,
/// functions by name, literals by value).
fn key_of(e: &Expr) -> String {
    format!("{e:?}")
}

/// Whether computing `e` once is worth a slot: not a column, literal or field of one (those
/// are read in place), and deterministic.
fn worth_sharing(e: &Expr) -> bool {
    fn operand(e: &Expr) -> bool {
        match e {
            Expr::Column { .. } | Expr::Literal { .. } => true,
            Expr::Field { expr, .. } => operand(expr),
            _ => false,
        }
    }
    !operand(e) && e.is_deterministic()
}

/// Pushes every subexpression of `e` the plain walk evaluates whenever it evaluates `e` (the
/// positions that are not conditional).
fn certain<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    out.push(e);
    match e {
        Expr::And(args) | Expr::Or(args) => {
            if let Some(first) = args.first() {
                certain(first, out);
            }
        }
        Expr::Case {
            branches,
            otherwise,
            ..
        } => match branches.first() {
            Some((c, _)) => certain(c, out),
            None => certain(otherwise, out),
        },
        Expr::InList { expr, .. } | Expr::Like { expr, .. } => certain(expr, out),
        other => {
            for c in other.children() {
                certain(c, out);
            }
        }
    }
}

/// Counts every subexpression of `e` by key.
fn count(e: &Expr, counts: &mut HashMap<String, usize>) {
    e.visit(&mut |x| {
        if worth_sharing(x) {
            *counts.entry(key_of(x)).or_default() += 1;
        }
    });
}

/// The largest subexpression worth a slot of `phase`: certainly evaluated in that phase and
/// read at least twice where that phase's slots are read.
fn candidate(
    condition: &Option<Expr>,
    projections: &[Expr],
    slots: &[(Expr, Phase)],
    phase: Phase,
) -> Option<(Expr, Phase)> {
    let mut sure = Vec::new();
    let mut counts = HashMap::new();
    match phase {
        Phase::Before => {
            condition.iter().for_each(|c| certain(c, &mut sure));
            condition.iter().for_each(|c| count(c, &mut counts));
        }
        Phase::After => projections.iter().for_each(|p| certain(p, &mut sure)),
    }
    projections.iter().for_each(|p| count(p, &mut counts));
    for (b, p) in slots {
        if *p == phase {
            certain(b, &mut sure);
        }
        if phase == Phase::Before || *p == Phase::After {
            count(b, &mut counts);
        }
    }
    sure.into_iter()
        .filter(|e| worth_sharing(e))
        .map(|e| (key_of(e), e))
        .filter(|(k, _)| counts.get(k).is_some_and(|&n| n >= 2))
        .max_by_key(|(k, _)| k.len())
        .map(|(_, e)| (e.clone(), phase))
}

/// Replaces every occurrence of the expression keyed `key` in `e` by `slot`.
fn replace(e: &mut Expr, key: &str, slot: &Expr) {
    if worth_sharing(e) && key_of(e) == key {
        *e = slot.clone();
        return;
    }
    for c in e.children_mut() {
        replace(c, key, slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::tests::bind;
    use sluice_sql::{DataType, Scope};

    #[test]
    fn q21_computes_each_repeated_call_once_where_it_is_certain() {
        let scope = Scope::of(&[("channel", DataType::string()), ("url", DataType::string())]);
        let re = "REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)";
        let cond = bind(
            &format!("{re} IS NOT NULL OR lower(channel) IN ('apple', 'google')"),
            &scope,
        );
        let proj = bind(
            &format!("CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1' ELSE {re} END"),
            &scope,
        );
        let s = share(&[proj], Some(&cond)).unwrap();
        assert_eq!(s.width, 2);
        // The regex before the condition (its first operand), lower() after it.
        assert_eq!(s.before.len(), 1, "{:?}", s.before);
        assert!(s.before[0].to_string().starts_with("REGEXP_EXTRACT"));
        assert_eq!(s.after.len(), 1);
        assert_eq!(s.after[0].to_string(), "LOWER(channel)");
        let text = s.projections[0].to_string();
        assert!(
            !text.contains("REGEXP") && !text.contains("LOWER"),
            "{text}"
        );
        // lower() stays in the condition's second operand: a slot is not ready there.
        assert!(s.condition.unwrap().to_string().contains("LOWER"));
    }

    #[test]
    fn nothing_conditional_is_computed_ahead() {
        let scope = Scope::of(&[("a", DataType::bigint()), ("b", DataType::bigint())]);
        // `10 / a` only in CASE branches: never a slot (it could fail a row it did not before).
        let p = bind(
            "CASE WHEN a = 0 THEN 0 WHEN a > 5 THEN 10 / a ELSE 10 / a + 1 END",
            &scope,
        );
        assert!(share(&[p], None).is_none());
        // Read twice, always: one slot, after the condition.
        let q = [bind("b * 2 + 1", &scope), bind("b * 2 - 1", &scope)];
        let s = share(&q, Some(&bind("a > 0", &scope))).unwrap();
        assert!(s.before.is_empty());
        assert_eq!(s.after.len(), 1);
        assert_eq!(s.projections[0].to_string(), "+($slot0, 1)");
    }
}
