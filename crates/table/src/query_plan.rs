//! The [`QueryPlan`] a translated SQL job hands its environment (and so its job graph and the
//! REST server's `EXPLAIN ANALYZE`): the `== Optimized Physical Plan ==` section of `EXPLAIN`,
//! line for line, each node with the stream-graph node its operator became.
//!
//! A node finds its operator by uid (the translator gives every operator the uid of its plan
//! node, [`operator_uids`]). A subtree the plan holds more than once is built once (Flink's
//! `Reused`): its later occurrences point at the first one's operators. Nodes that run no
//! operator of their own (an `Exchange` is an edge, a `Union` merges streams, a watermark
//! pushed into its source) have none; the operators of a scan chain fused into its source
//! ([`crate::fused`]) are pass-throughs, said in a note.

use std::collections::HashMap;

use sluice_datastream::{QueryPlan, QueryPlanNode, StreamNode};
use sluice_sql::plan::explain::{describe, physical_text, Style};
use sluice_sql::plan::{PhysicalNode, PhysicalOp, PhysicalPlan};

/// What a fused operator's figures are.
pub const FUSED_NOTE: &str =
    "runs fused in its source: the operator passes on the rows the source's fused chain emits";

/// The plan of `plan`, its operators found among `nodes` by the translator's `uids` (pre
/// order, as [`operator_uids`] numbers them); `fused` are the uids of fused pass-throughs.
///
/// [`operator_uids`]: sluice_sql::plan::operator_uids
pub fn query_plan(
    plan: &PhysicalPlan,
    uids: &[String],
    fused: &[String],
    nodes: &[StreamNode],
) -> QueryPlan {
    let by_uid: HashMap<&str, u32> = nodes
        .iter()
        .filter_map(|n| n.uid.as_deref().map(|u| (u, n.id)))
        .collect();
    // Pre-order index of each subtree's first occurrence, by its plan text.
    let mut first: HashMap<String, usize> = HashMap::new();
    let mut flat: Vec<(usize, &PhysicalNode, Option<usize>)> = Vec::new();
    fn walk<'p>(
        n: &'p PhysicalNode,
        depth: usize,
        alias: Option<usize>,
        first: &mut HashMap<String, usize>,
        flat: &mut Vec<(usize, &'p PhysicalNode, Option<usize>)>,
    ) {
        let index = flat.len();
        let alias = alias.or_else(|| {
            if matches!(n.op, PhysicalOp::Sink(_)) {
                return None;
            }
            let key = physical_text(n, Style::Exec);
            match first.get(&key) {
                Some(&f) => Some(f),
                None => {
                    first.insert(key, index);
                    None
                }
            }
        });
        flat.push((depth, n, alias));
        // Inside a reused subtree, node `k` after its root is the first occurrence's node `k`.
        let mut offset = 1;
        for c in &n.inputs {
            walk(c, depth + 1, alias.map(|a| a + offset), first, flat);
            offset += size(c);
        }
    }
    for r in &plan.roots {
        walk(r, 0, None, &mut first, &mut flat);
    }
    let lines: Vec<String> = plan
        .roots
        .iter()
        .flat_map(|r| {
            physical_text(r, Style::Physical)
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    let nodes = flat
        .iter()
        .enumerate()
        .map(|(i, (depth, n, alias))| {
            let uid = uids.get(alias.unwrap_or(i)).cloned();
            let node = uid.as_deref().and_then(|u| by_uid.get(u).copied());
            let note = match (&n.op, node, &uid) {
                (_, Some(_), Some(u)) if fused.contains(u) => Some(FUSED_NOTE.to_string()),
                (PhysicalOp::Exchange(_), _, _) => Some(
                    "an exchange: no operator, the network edge into the operator above".into(),
                ),
                (PhysicalOp::Union, _, _) => {
                    Some("no operator: its inputs' rows go on to the operator above".into())
                }
                (PhysicalOp::WatermarkAssigner { .. }, None, _) => Some(
                    "no operator: the watermark is generated in the source (pushed down)".into(),
                ),
                (_, None, _) => Some("no operator of its own".into()),
                _ => None,
            };
            QueryPlanNode {
                depth: *depth,
                line: lines.get(i).cloned().unwrap_or_default(),
                text: describe(n, Style::Physical),
                uid: node.and(uid),
                node,
                note,
            }
        })
        .collect();
    QueryPlan { nodes }
}

fn size(n: &PhysicalNode) -> usize {
    1 + n.inputs.iter().map(size).sum::<usize>()
}
