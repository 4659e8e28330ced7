//! Stable operator identity: the id a checkpoint files an operator's state under.
//!
//! As in Flink (`StreamGraphHasherV2`), an operator with a user-set `uid("…")` is identified by a
//! hash of that uid, and any other operator by a deterministic hash of its position in the
//! stream graph. Sluice's position hash differs from Flink's on purpose, so that the plan changes
//! the doctor makes keep every operator's identity:
//!
//! - it covers the operator's kind, its inputs' ids (so its whole ancestry) and its index among
//!   the operators fed by exactly the same inputs (fan-out siblings), in creation order;
//! - it leaves out parallelism, ship strategies and chaining (Flink folds chaining in, so
//!   inserting a `rebalance()` would change every downstream id there), and the operator's name
//!   (renaming an operator keeps its state).
//!
//! Adding an operator that is not an ancestor (another source, another branch) therefore changes
//! no existing id; inserting one into an operator's ancestry changes that operator's id, as in
//! Flink — set `uid` where that must not happen.
//!
//! A plan rewrite that replaces one operator by several (two-phase aggregation) marks the
//! operators it adds with an [`IdentityHint`]: the one that takes over the old operator's state
//! hashes *as if fed by* the old operator's inputs, so it gets the old id; helpers get a role
//! that keeps them apart from it.

use std::collections::BTreeMap;

use sluice_types::{Id128, NodeId};

use crate::stream_graph::{NodeKind, StreamNode};

/// How a node without a uid derives its id (a field of the plan's node descriptor).
pub use sluice_plan::IdentityHint;

/// An operator's stable id: 32 lowercase hex digits (Flink's `OperatorID` form).
pub type OperatorId = Id128;

/// The id of an operator with the user-set `uid`.
pub fn uid_hash(uid: &str) -> OperatorId {
    let mut bytes = b"sluice-uid/".to_vec();
    bytes.extend_from_slice(uid.as_bytes());
    Id128::hash_of(&bytes)
}

fn kind_tag(k: NodeKind) -> u8 {
    match k {
        NodeKind::Source => 1,
        NodeKind::Operator => 2,
        NodeKind::Sink => 3,
    }
}

/// The stable id of every node. Nodes are visited in topological order, the lowest id first
/// among those whose inputs are done (creation order, except that a node a rewrite added comes
/// before the consumers it was spliced in front of), so a node's inputs always come first.
pub fn operator_ids(nodes: &[StreamNode]) -> BTreeMap<NodeId, OperatorId> {
    let by_id: BTreeMap<NodeId, &StreamNode> = nodes.iter().map(|n| (n.id, n)).collect();
    let mut waiting: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut consumers: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
    let mut ready = std::collections::BTreeSet::new();
    for n in nodes {
        let known: Vec<NodeId> = n
            .inputs
            .iter()
            .map(|e| e.from)
            .filter(|f| by_id.contains_key(f))
            .collect();
        for f in &known {
            consumers.entry(*f).or_default().push(n.id);
        }
        if known.is_empty() {
            ready.insert(n.id);
        } else {
            waiting.insert(n.id, known.len());
        }
    }
    let mut ids: BTreeMap<NodeId, OperatorId> = BTreeMap::new();
    // How many nodes so far had the same (kind, role, effective inputs): the sibling index.
    let mut seen: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    while let Some(id) = ready.pop_first() {
        let n = by_id[&id];
        ids.insert(id, node_id(n, &ids, &mut seen));
        for c in consumers.get(&id).into_iter().flatten() {
            if let Some(w) = waiting.get_mut(c) {
                *w -= 1;
                if *w == 0 {
                    waiting.remove(c);
                    ready.insert(*c);
                }
            }
        }
    }
    // A cycle cannot be built through the API; hash what is left in id order all the same.
    for id in waiting.keys().copied().collect::<Vec<_>>() {
        let n = by_id[&id];
        let v = node_id(n, &ids, &mut seen);
        ids.insert(id, v);
    }
    ids
}

fn node_id(
    n: &StreamNode,
    ids: &BTreeMap<NodeId, OperatorId>,
    seen: &mut BTreeMap<Vec<u8>, u32>,
) -> OperatorId {
    let fed_by: Vec<NodeId> = match &n.identity.as_if_fed_by {
        Some(v) => v.clone(),
        None => n.inputs.iter().map(|e| e.from).collect(),
    };
    let mut position = vec![kind_tag(n.kind)];
    let role = n.identity.role.unwrap_or("");
    position.extend_from_slice(&(role.len() as u32).to_be_bytes());
    position.extend_from_slice(role.as_bytes());
    for from in &fed_by {
        let up = ids.get(from).map_or(u128::from(*from), |i| i.0);
        position.extend_from_slice(&up.to_be_bytes());
    }
    let sibling = seen.entry(position.clone()).or_insert(0);
    let index = *sibling;
    *sibling += 1;
    match &n.uid {
        Some(uid) => uid_hash(uid),
        None => {
            let mut bytes = b"sluice-operator/v1/".to_vec();
            bytes.extend_from_slice(&position);
            bytes.extend_from_slice(&index.to_be_bytes());
            Id128::hash_of(&bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::StreamEnv;

    fn ids_by_name(env: &StreamEnv) -> std::collections::BTreeMap<String, String> {
        let nodes = env.stream_nodes();
        let ids = super::operator_ids(&nodes);
        nodes
            .iter()
            .map(|n| (n.name.clone(), ids[&n.id].to_string()))
            .collect()
    }

    fn job(env: &StreamEnv, rebalance: bool, extra_source: bool) {
        if extra_source {
            env.from_vec(vec![1i64]).map(|x| x).name("other").discard();
        }
        let s = env.generate(10, |i| (i as i64 % 3, 1i64)).name("gen");
        let s = if rebalance { s.rebalance() } else { s };
        s.map(|r| r)
            .name("map")
            .key_by(|r: &(i64, i64)| r.0)
            .sum(|r: &mut (i64, i64)| &mut r.1)
            .name("sum")
            .discard()
            .name("out");
    }

    #[test]
    fn ids_ignore_ship_strategies_parallelism_and_unrelated_operators() {
        let a = StreamEnv::new();
        job(&a, false, false);
        let b = StreamEnv::new();
        job(&b, true, false);
        b.set_parallelism(3);
        let c = StreamEnv::new();
        job(&c, false, true);
        let d = StreamEnv::new();
        job(&d, false, false);
        d.from_vec(vec![1i64]).map(|x| x).name("other").discard();
        let (a, b, c, d) = (
            ids_by_name(&a),
            ids_by_name(&b),
            ids_by_name(&c),
            ids_by_name(&d),
        );
        for op in ["Source: gen", "map", "sum", "Sink: out"] {
            assert_eq!(a[op], b[op], "{op}: rebalance/parallelism keep ids");
            assert_eq!(a[op], d[op], "{op}: a source added after keeps ids");
        }
        assert_eq!(a["map"].len(), 32);
        assert_ne!(a["map"], a["sum"]);
        assert_ne!(c["other"], c["Source: gen"]);
        assert_ne!(
            a["Source: gen"], c["Source: gen"],
            "sources are told apart by creation order"
        );
    }

    #[test]
    fn a_uid_fixes_the_id_and_siblings_differ() {
        let env = StreamEnv::new();
        let s = env.generate(10, |i| i as i64);
        s.map(|x| x).name("a").discard();
        s.map(|x| x).name("b").discard();
        s.map(|x| x).name("c").uid("my-c").discard();
        let ids = ids_by_name(&env);
        assert_ne!(ids["a"], ids["b"]);
        assert_eq!(ids["c"], super::uid_hash("my-c").to_string());
    }
}
