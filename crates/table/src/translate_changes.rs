//! The updating part of a plan: nodes whose output is a changelog (`DataStream<Change>`), as
//! the planner's changelog inference (`changelog_mode`) marked them.
//!
//! A `GroupAggregate` becomes [`group_aggregate`] over its input's rows (insertions) or changes
//! (retracting), keyed by its group (the plan's `Exchange` below it consumed, as for the
//! window aggregates); a `Calc`, `Exchange` or `Union` over changes keeps each change's kind.
//! Anything else over a changelog was refused by the planner or is refused here, naming it.

use sluice_datastream::DataStream;
use sluice_sql::plan::changelog_mode::produced;
use sluice_sql::plan::explain::{physical_text, Style};
use sluice_sql::plan::logical::GroupAggregate;
use sluice_sql::plan::mini_batch::MiniBatch;
use sluice_sql::plan::{operator_name, Distribution, PhysicalNode, PhysicalOp};
use sluice_sql::{resolve_aggregate, Change, Result, SqlError};

use super::{flink_node_name, size, Translator};
use crate::calc::{calc_changes, Calc};
use crate::group_agg::{group_aggregate, GroupAggCall, GroupAggSpec};
use crate::group_agg_two_phase::{two_phase_group_aggregate, Bundle};
use crate::joins::{regular_join_changes, JoinType, RegularJoinSpec};
use crate::key::{KeyRow, SqlKey};
use crate::rank::{deduplicate, rank, DedupSpec, RankOrder, RankSpec};
use crate::stateful::OperatorIds;

fn internal(what: &str) -> SqlError {
    SqlError::validation(None, format!("internal plan error: {what}"))
}

/// Whether `node` emits a changelog rather than insertions only.
pub(super) fn updating(node: &PhysicalNode) -> bool {
    !produced(node).is_insert_only()
}

impl Translator<'_> {
    /// The changelog of an updating node (built once per distinct subtree).
    pub(super) fn changes(&mut self, node: &PhysicalNode) -> Result<DataStream<Change>> {
        let key = physical_text(node, Style::Exec);
        if let Some(s) = self.built_changes.get(&key) {
            self.next += size(node);
            return Ok(s.clone());
        }
        let s = self.translate_changes(node)?;
        self.built_changes.insert(key, s.clone());
        Ok(s)
    }

    /// The input of `node` as changes: an insert-only input's rows become `+I` changes.
    fn changes_of_input(&mut self, input: &PhysicalNode) -> Result<DataStream<Change>> {
        if updating(input) {
            self.changes(input)
        } else {
            Ok(self.stream(input)?.map(Change::insert))
        }
    }

    /// A keyed node's input below the plan's `Exchange` (not built: the operator keys its
    /// input itself; the Exchange's uid is consumed all the same).
    pub(super) fn below_exchange<'n>(
        &mut self,
        node: &'n PhysicalNode,
    ) -> Result<&'n PhysicalNode> {
        let below = node
            .inputs
            .first()
            .ok_or_else(|| internal("a keyed node without input"))?;
        Ok(match &below.op {
            PhysicalOp::Exchange(_) => {
                self.uid();
                below
                    .inputs
                    .first()
                    .ok_or_else(|| internal("an Exchange without input"))?
            }
            _ => below,
        })
    }

    /// An aggregate's calls resolved over the types of its input `below`.
    fn group_calls(&self, agg: &GroupAggregate, below: &PhysicalNode) -> Result<Vec<GroupAggCall>> {
        let mut aggs = Vec::with_capacity(agg.aggs.len());
        for a in &agg.aggs {
            let types: Vec<_> = a
                .args
                .iter()
                .map(|&i| below.schema[i].ty.without_time_attribute())
                .collect();
            let call = resolve_aggregate(
                a.kind.name(),
                &types,
                a.distinct,
                !agg.group.is_empty(),
                None,
            )?;
            aggs.push(GroupAggCall {
                call,
                args: a.args.clone(),
                filter: a.filter.as_ref().map(|f| f.0),
            });
        }
        Ok(aggs)
    }

    /// A stateful node's state TTL: its `STATE_TTL` hint (ms), else `table.exec.state.ttl`.
    pub(super) fn state_ttl(&self, hint_ms: Option<i64>) -> Option<std::time::Duration> {
        match hint_ms {
            Some(ms) => Some(std::time::Duration::from_millis(
                u64::try_from(ms).unwrap_or(0),
            )),
            None => self.session.config.state_ttl(),
        }
    }

    /// The session's mini-batch bundle (the planner split an aggregate only with one).
    fn bundle(&self) -> Result<Bundle> {
        let mb = MiniBatch::of(self.session)?
            .ok_or_else(|| internal("a two-phase aggregate without mini-batch"))?;
        Ok(Bundle {
            size: usize::try_from(mb.size).unwrap_or(usize::MAX),
            latency: std::time::Duration::from_millis(u64::try_from(mb.latency_ms).unwrap_or(0)),
        })
    }

    fn translate_changes(&mut self, node: &PhysicalNode) -> Result<DataStream<Change>> {
        let uid = self.uid();
        let name = operator_name(node);
        match &node.op {
            PhysicalOp::GroupAggregate {
                agg, update_before, ..
            } => {
                let below = self.below_exchange(node)?;
                let spec = GroupAggSpec {
                    keys: agg.group.clone(),
                    aggs: self.group_calls(agg, below)?,
                    update_before: *update_before,
                    state_ttl: self.state_ttl(agg.state_ttl_ms),
                };
                let ids = OperatorIds::new(name, uid);
                if updating(below) {
                    let input = self.changes(below)?;
                    group_aggregate(&input, &spec, &ids)
                } else {
                    let input = self.stream(below)?;
                    group_aggregate(&input, &spec, &ids)
                }
            }
            PhysicalOp::GlobalGroupAggregate { agg, update_before } => {
                // Global ← Exchange ← Local ← input: the local phase's name and uid, then its
                // input (the Exchange is the keyed shuffle between them).
                let local = self.below_exchange(node)?;
                let PhysicalOp::LocalGroupAggregate(_) = &local.op else {
                    return Err(internal("a GlobalGroupAggregate not over its local phase"));
                };
                let local_ids = OperatorIds::new(operator_name(local), self.uid());
                let below = local
                    .inputs
                    .first()
                    .ok_or_else(|| internal("a LocalGroupAggregate without input"))?;
                let spec = GroupAggSpec {
                    keys: agg.group.clone(),
                    aggs: self.group_calls(agg, below)?,
                    update_before: *update_before,
                    state_ttl: self.state_ttl(agg.state_ttl_ms),
                };
                let bundle = self.bundle()?;
                let input = self.stream(below)?;
                two_phase_group_aggregate(
                    &input,
                    &spec,
                    bundle,
                    &local_ids,
                    &OperatorIds::new(name, uid),
                )
            }
            PhysicalOp::Rank {
                rank: r,
                update_before,
                ..
            } => {
                let below = self.below_exchange(node)?;
                let spec = RankSpec {
                    partition: r.partition.clone(),
                    order: r
                        .order
                        .iter()
                        .map(|k| RankOrder {
                            column: k.column,
                            descending: k.descending,
                            nulls_first: k.nulls_first,
                        })
                        .collect(),
                    start: r.start,
                    end: r.end.ok_or_else(|| internal("an unbounded rank"))?,
                    output_rank: r.output_rank,
                    update_before: *update_before,
                    state_ttl: self.state_ttl(None),
                };
                let ids = OperatorIds::new(name, uid);
                Ok(if updating(below) {
                    rank(&self.changes(below)?, &spec, &ids)
                } else {
                    rank(&self.stream(below)?, &spec, &ids)
                })
            }
            PhysicalOp::Deduplicate {
                keys,
                order,
                keep_last,
                rowtime,
                update_before,
            } => {
                let below = self.below_exchange(node)?;
                let spec = DedupSpec {
                    keys: keys.clone(),
                    order: *order,
                    keep_last: *keep_last,
                    rowtime: *rowtime,
                    update_before: *update_before,
                    state_ttl: self.state_ttl(None),
                };
                let input = self.stream(below)?;
                Ok(deduplicate(&input, &spec, &OperatorIds::new(name, uid)))
            }
            PhysicalOp::Join(j) => {
                // Each side below its Exchange (the operator keys its inputs), as changes.
                let mut sides = Vec::with_capacity(2);
                for i in 0..2 {
                    let side = node
                        .inputs
                        .get(i)
                        .ok_or_else(|| internal("a join without its two inputs"))?;
                    let below = match &side.op {
                        PhysicalOp::Exchange(_) => {
                            self.uid();
                            side.inputs
                                .first()
                                .ok_or_else(|| internal("an Exchange without input"))?
                        }
                        _ => side,
                    };
                    sides.push(self.changes_of_input(below)?);
                }
                let spec = RegularJoinSpec {
                    join_type: JoinType::Inner,
                    left_keys: j.equi.iter().map(|k| k.0).collect(),
                    right_keys: j.equi.iter().map(|k| k.1).collect(),
                    condition: j.condition.clone(),
                    state_ttl: self.session.config.state_ttl(),
                };
                regular_join_changes(
                    &sides[0],
                    &sides[1],
                    &spec,
                    &OperatorIds::new(name, uid),
                    &self.errors,
                )
            }
            PhysicalOp::Calc(c) => {
                let input = self.changes(&node.inputs[0])?;
                let (exprs, names): (Vec<_>, Vec<_>) = c.projection.iter().cloned().unzip();
                let op = Calc::new(exprs, c.condition.clone());
                let flink = op.flink_name(&names);
                Ok(calc_changes(&input, &op, &flink, &self.errors)
                    .name(&name)
                    .uid(&uid))
            }
            PhysicalOp::Exchange(d) => {
                let input = self.changes(&node.inputs[0])?;
                Ok(match d {
                    Distribution::Single => input.global(),
                    Distribution::Hash(keys) => {
                        let keys = keys.clone();
                        input
                            .key_by(move |c: &Change| SqlKey(KeyRow::of(&c.row, &keys)))
                            .as_stream()
                            .clone()
                    }
                })
            }
            PhysicalOp::Union => {
                let mut inputs = Vec::with_capacity(node.inputs.len());
                for i in &node.inputs {
                    inputs.push(self.changes_of_input(i)?);
                }
                let (first, rest) = inputs
                    .split_first()
                    .ok_or_else(|| internal("a Union without inputs"))?;
                Ok(first.union(&rest.iter().collect::<Vec<_>>()))
            }
            _ => Err(SqlError::unsupported(
                None,
                format!(
                    "{} over an updating input does not run yet in this version: {name}",
                    flink_node_name(node)
                ),
            )),
        }
    }
}
