//! The planning half of a live plan change, pure (no job, no I/O): the per-vertex rescale of `PUT resource-requirements`, the log of applied
//! changes whose replay on a freshly built job gives the current plan — so the inverse of a
//! change (its rollback) is the replay without it, exact for every kind, the two-phase rewrite
//! included — and the per-vertex before/after of a change.

use std::collections::BTreeMap;

use sluice_datastream::fixer::PlanChange;
use sluice_datastream::{JobGraph, ShipStrategy};
use sluice_rest::live::VertexRescale;
use sluice_types::Id128;

/// The fixes that run each given vertex at its new parallelism: its head operator (by node id)
/// behind HASH when its input is keyed, else behind the redistributing strategy it already has
/// (REBALANCE / RESCALE / SHUFFLE), else REBALANCE. A source vertex has no input edge: only its
/// parallelism changes (its readers deal their splits out anew at the restore).
pub fn rescale_fixes(
    graph: &JobGraph,
    targets: &[(Id128, usize)],
) -> Result<Vec<PlanChange>, String> {
    let mut fixes = Vec::new();
    for (id, parallelism) in targets {
        let v = graph
            .vertices
            .iter()
            .find(|v| v.id == *id)
            .ok_or_else(|| format!("the job has no vertex {id}"))?;
        let head = graph
            .nodes
            .get(&v.head)
            .ok_or_else(|| format!("vertex {id} has no head operator"))?;
        let strategies: Vec<ShipStrategy> = head.inputs.iter().map(|(_, s)| *s).collect();
        let ship = if strategies.contains(&ShipStrategy::Hash) {
            ShipStrategy::Hash
        } else {
            strategies
                .iter()
                .copied()
                .find(|s| {
                    matches!(
                        s,
                        ShipStrategy::Rebalance | ShipStrategy::Rescale | ShipStrategy::Shuffle
                    )
                })
                .unwrap_or(ShipStrategy::Rebalance)
        };
        fixes.push(PlanChange::Parallelism {
            operator: v.head.to_string(),
            parallelism: *parallelism,
            ship,
        });
    }
    Ok(fixes)
}

/// One applied change in the [`ChangeLog`].
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The id the change was applied under.
    pub uuid: Id128,
    /// The plan changes it made.
    pub fixes: Vec<PlanChange>,
    /// Undone by a later rollback.
    pub undone: bool,
}

/// The changes applied to a live job, oldest first. The current plan is the job as built with
/// [`ChangeLog::active`]'s fixes replayed in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChangeLog {
    entries: Vec<Applied>,
}

impl ChangeLog {
    /// The fixes in force, in the order they were applied.
    pub fn active(&self) -> Vec<PlanChange> {
        self.entries
            .iter()
            .filter(|e| !e.undone)
            .flat_map(|e| e.fixes.iter().cloned())
            .collect()
    }

    /// The fixes in force after `fixes` are applied on top.
    pub fn with(&self, fixes: &[PlanChange]) -> Vec<PlanChange> {
        let mut all = self.active();
        all.extend_from_slice(fixes);
        all
    }

    /// The newest change not undone: what a rollback undoes, and the fixes in force without it.
    pub fn rollback(&self) -> Option<(Id128, Vec<PlanChange>)> {
        let i = self.entries.iter().rposition(|e| !e.undone)?;
        let fixes = self
            .entries
            .iter()
            .enumerate()
            .filter(|(j, e)| *j != i && !e.undone)
            .flat_map(|(_, e)| e.fixes.iter().cloned())
            .collect();
        Some((self.entries[i].uuid, fixes))
    }

    /// Records the change `fixes` applied under `uuid`.
    pub fn push(&mut self, uuid: Id128, fixes: Vec<PlanChange>) {
        self.entries.push(Applied {
            uuid,
            fixes,
            undone: false,
        });
    }

    /// Marks change `uuid` undone.
    pub fn undo(&mut self, uuid: Id128) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.uuid == uuid) {
            e.undone = true;
        }
    }
}

/// Every vertex of either graph with its parallelism before and after (by vertex id; `None`
/// where the vertex does not exist), in the order the graphs list them, changed ones only.
pub fn vertex_rescales(before: &JobGraph, after: &JobGraph) -> Vec<VertexRescale> {
    let mut out: BTreeMap<Id128, VertexRescale> = BTreeMap::new();
    let mut order = Vec::new();
    for v in &before.vertices {
        order.push(v.id);
        out.insert(
            v.id,
            VertexRescale {
                id: v.id,
                name: v.name.clone(),
                before: Some(v.parallelism),
                after: None,
            },
        );
    }
    for v in &after.vertices {
        let e = out.entry(v.id).or_insert_with(|| {
            order.push(v.id);
            VertexRescale {
                id: v.id,
                name: v.name.clone(),
                before: None,
                after: None,
            }
        });
        e.after = Some(v.parallelism);
        e.name = v.name.clone();
    }
    order
        .into_iter()
        .filter_map(|id| out.remove(&id))
        .filter(|v| v.before != v.after)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(op: &str) -> PlanChange {
        PlanChange::TwoPhase {
            operator: op.into(),
            buckets: 4,
        }
    }

    #[test]
    fn rollback_replays_everything_but_the_newest_change() {
        let mut log = ChangeLog::default();
        let (a, b) = (Id128::hash_of(b"a"), Id128::hash_of(b"b"));
        assert!(log.rollback().is_none());
        log.push(a, vec![fix("x")]);
        log.push(b, vec![fix("y"), fix("z")]);
        assert_eq!(log.active(), vec![fix("x"), fix("y"), fix("z")]);
        let (undo, rest) = log.rollback().unwrap();
        assert_eq!((undo, rest), (b, vec![fix("x")]));
        log.undo(b);
        assert_eq!(log.active(), vec![fix("x")]);
        assert_eq!(log.rollback().unwrap(), (a, vec![]));
        log.undo(a);
        assert!(log.active().is_empty() && log.rollback().is_none());
        assert_eq!(log.with(&[fix("w")]), vec![fix("w")]);
    }
}
