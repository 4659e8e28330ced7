//! Flink's mini-batch options on a physical plan (`table.exec.mini-batch.enabled`,
//! `.allow-latency`, `.size`, `table.optimizer.agg-phase-strategy`).
//!
//! With mini-batch on, each scan feeding an unbounded aggregate gets a `MiniBatchAssigner`
//! above its watermark (or the scan), and an aggregate over insertions whose calls all merge
//! is split into Flink's two phases: `LocalGroupAggregate` (accumulators per key over a bundle
//! of rows, before the shuffle) → `Exchange` → `GlobalGroupAggregate` (merges them per key): a
//! hot key's rows are pre-aggregated where they arrive instead of all meeting on one subtask.
//! `ONE_PHASE` keeps one phase; `DISTINCT` calls and updating inputs keep one phase in this
//! version. Without mini-batch the plan is unchanged (Flink's two phases need it).

use crate::error::{Result, SqlError};
use crate::session::Session;

use super::changelog_mode::produced;
use super::physical::{local_accumulators, Distribution, PhysicalNode, PhysicalOp};
use super::schema::Field;

/// The mini-batch settings of a session, if mini-batch is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiniBatch {
    /// `table.exec.mini-batch.allow-latency`, in ms: the longest a row waits in a bundle.
    pub latency_ms: i64,
    /// `table.exec.mini-batch.size`: the most rows a bundle holds.
    pub size: i64,
    /// Whether aggregates may be split into two phases (`agg-phase-strategy` not `ONE_PHASE`).
    pub two_phase: bool,
}

impl MiniBatch {
    /// The session's mini-batch settings: `None` when off; refused (naming the key) when on
    /// without a positive latency and size, as Flink refuses it.
    pub fn of(session: &Session) -> Result<Option<MiniBatch>> {
        let c = &session.config;
        let on = c
            .get("table.exec.mini-batch.enabled")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if !on {
            return Ok(None);
        }
        let latency = c
            .duration("table.exec.mini-batch.allow-latency")
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        if latency <= 0 {
            return Err(SqlError::validation(
                None,
                "'table.exec.mini-batch.allow-latency' must be greater than 0 when 'table.exec.mini-batch.enabled' is true",
            ));
        }
        let size = c
            .get("table.exec.mini-batch.size")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(-1);
        if size <= 0 {
            return Err(SqlError::validation(
                None,
                "'table.exec.mini-batch.size' must be greater than 0 when 'table.exec.mini-batch.enabled' is true",
            ));
        }
        let two_phase = !c
            .get("table.optimizer.agg-phase-strategy")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("ONE_PHASE"));
        Ok(Some(MiniBatch {
            latency_ms: latency,
            size,
            two_phase,
        }))
    }
}

fn has_group_aggregate(n: &PhysicalNode) -> bool {
    matches!(n.op, PhysicalOp::GroupAggregate { .. }) || n.inputs.iter().any(has_group_aggregate)
}

/// Applies `mb` to one planned tree (before the changelog inference).
pub fn apply(root: &mut PhysicalNode, mb: MiniBatch) {
    if !has_group_aggregate(root) {
        return;
    }
    split(root, mb);
    assign(root, mb);
}

/// Puts a `MiniBatchAssigner` above each scan's watermark (or the scan, without one).
fn assign(node: &mut PhysicalNode, mb: MiniBatch) {
    for i in &mut node.inputs {
        if matches!(
            i.op,
            PhysicalOp::WatermarkAssigner { .. } | PhysicalOp::TableSourceScan(_)
        ) {
            let schema = i.schema.clone();
            let below = std::mem::replace(
                i,
                PhysicalNode {
                    op: PhysicalOp::MiniBatchAssigner {
                        interval_ms: mb.latency_ms,
                    },
                    inputs: Vec::new(),
                    schema,
                },
            );
            i.inputs.push(below);
        } else {
            assign(i, mb);
        }
    }
}

/// Splits the aggregates that can run in two phases.
fn split(node: &mut PhysicalNode, mb: MiniBatch) {
    for i in &mut node.inputs {
        split(i, mb);
    }
    if !mb.two_phase {
        return;
    }
    let PhysicalOp::GroupAggregate { agg, .. } = &node.op else {
        return;
    };
    if agg.aggs.iter().any(|a| a.distinct) {
        return;
    }
    let Some(exchange) = node.inputs.first() else {
        return;
    };
    let below = match &exchange.op {
        PhysicalOp::Exchange(_) => exchange.inputs.first(),
        _ => Some(exchange),
    };
    let Some(below) = below else { return };
    if !produced(below).is_insert_only() {
        return;
    }
    let agg = agg.clone();
    let mut local_schema: Vec<Field> = agg.group.iter().map(|&i| below.schema[i].clone()).collect();
    for (name, ty) in local_accumulators(&agg.aggs) {
        local_schema.push(Field::new(name, ty));
    }
    let local = PhysicalNode {
        op: PhysicalOp::LocalGroupAggregate(agg.clone()),
        inputs: vec![below.clone()],
        schema: local_schema.clone(),
    };
    let keys: Vec<usize> = (0..agg.group.len()).collect();
    let shuffled = PhysicalNode {
        op: PhysicalOp::Exchange(if keys.is_empty() {
            Distribution::Single
        } else {
            Distribution::Hash(keys)
        }),
        inputs: vec![local],
        schema: local_schema,
    };
    node.op = PhysicalOp::GlobalGroupAggregate {
        agg,
        update_before: true,
    };
    node.inputs = vec![shuffled];
}
