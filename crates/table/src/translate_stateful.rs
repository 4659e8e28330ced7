//! The stateful nodes of a physical plan onto this crate's operators: window aggregates
//! ([`window_aggregate`]) and the joins ([`regular_join`], [`interval_join`], [`window_join`]).
//!
//! Both kinds key their inputs themselves (`key_by` on their grouping or equi-join columns), so
//! the plan's `Exchange(hash[…])` right below them is not built: its uid is consumed (the uids
//! of the other nodes stay the plan's) and its input is read directly. Flink's two-phase
//! `LocalWindowAggregate → Exchange → GlobalWindowAggregate` becomes one [`window_aggregate`]
//! call whose [`WindowAggSpec::local`] carries the local node's name and uid: the runtime
//! operator chains its local step before its own keyed exchange.
//!
//! The planner's aggregate calls (`AggCall`, a stand-in with the function's kind) are resolved
//! here into the real [`AggregateCall`]s by name and argument types
//! ([`sluice_sql::resolve_aggregate`]). The operators emit keys, aggregates, then window
//! properties, which is the order of the plan's aggregate schema; joins emit `left ++ right`,
//! which is the plan's join schema.

use sluice_datastream::DataStream;
use sluice_sql::plan::logical::{Join, JoinKind, WindowAggregate};
use sluice_sql::plan::schema::WindowPropertyKind;
use sluice_sql::plan::window::{WindowKind as PlanWindowKind, WindowTime as PlanWindowTime};
use sluice_sql::plan::{operator_name, PhysicalNode, PhysicalOp};
use sluice_sql::{resolve_aggregate, Result, Row, SqlError, TimestampKind};

use super::Translator;
use crate::joins::{
    interval_join, regular_join, window_join, IntervalJoinSpec, JoinType, RegularJoinSpec,
    WindowJoinSpec,
};
use crate::scan::with_rowtime;
use crate::stateful::OperatorIds;
use crate::window_agg::{
    window_aggregate, WindowAggCall, WindowAggSpec, WindowKind, WindowProperty, WindowTime,
};

fn internal(what: &str) -> SqlError {
    SqlError::validation(None, format!("internal plan error: {what}"))
}

impl Translator<'_> {
    /// The stream of `node`'s input `i`, an `Exchange` under a keyed operator not built (the
    /// operator keys its input itself); its uid is consumed all the same.
    fn keyed_input(&mut self, node: &PhysicalNode, i: usize) -> Result<DataStream<Row>> {
        let input = node
            .inputs
            .get(i)
            .ok_or_else(|| internal("a stateful node without its input"))?;
        match &input.op {
            PhysicalOp::Exchange(_) => {
                self.uid();
                let below = input
                    .inputs
                    .first()
                    .ok_or_else(|| internal("an Exchange without input"))?;
                self.stream(below)
            }
            _ => self.stream(input),
        }
    }

    /// A window aggregate node (`ids` its own name and uid, already taken).
    pub(super) fn window_agg(
        &mut self,
        node: &PhysicalNode,
        ids: OperatorIds,
    ) -> Result<DataStream<Row>> {
        let (agg, legacy) = match &node.op {
            PhysicalOp::WindowAggregate(a) | PhysicalOp::GlobalWindowAggregate(a) => (a, false),
            PhysicalOp::GroupWindowAggregate(a) => (a, true),
            _ => return Err(internal("not a window aggregate")),
        };
        let (input_node, input, local) = if let PhysicalOp::GlobalWindowAggregate(_) = &node.op {
            // Global ← Exchange ← Local ← input: one operator with its local step.
            let exchange = node
                .inputs
                .first()
                .ok_or_else(|| internal("a GlobalWindowAggregate without input"))?;
            let local = match &exchange.op {
                PhysicalOp::Exchange(_) => exchange.inputs.first(),
                _ => Some(exchange),
            }
            .filter(|l| matches!(l.op, PhysicalOp::LocalWindowAggregate(_)))
            .ok_or_else(|| internal("a GlobalWindowAggregate not over its local phase"))?;
            if matches!(exchange.op, PhysicalOp::Exchange(_)) {
                self.uid();
            }
            let local_ids = OperatorIds::new(operator_name(local), self.uid());
            let below = local
                .inputs
                .first()
                .ok_or_else(|| internal("a LocalWindowAggregate without input"))?;
            (below, self.stream(below)?, Some(local_ids))
        } else {
            let below = node
                .inputs
                .first()
                .ok_or_else(|| internal("a window aggregate without input"))?;
            let below = match &below.op {
                PhysicalOp::Exchange(_) => below.inputs.first().unwrap_or(below),
                _ => below,
            };
            (below, self.keyed_input(node, 0)?, None)
        };
        let spec = window_agg_spec(agg, input_node, local, legacy)?;
        window_aggregate(&input, &spec, &ids, &self.errors, &self.late)
    }

    /// A join node (`ids` its own name and uid, already taken).
    pub(super) fn join(
        &mut self,
        node: &PhysicalNode,
        ids: OperatorIds,
    ) -> Result<DataStream<Row>> {
        let j: &Join = match &node.op {
            PhysicalOp::Join(j) | PhysicalOp::IntervalJoin(j) | PhysicalOp::WindowJoin(j) => j,
            _ => return Err(internal("not a join")),
        };
        let left = self.keyed_input(node, 0)?;
        let right = self.keyed_input(node, 1)?;
        let left_keys: Vec<usize> = j.equi.iter().map(|k| k.0).collect();
        let right_keys: Vec<usize> = j.equi.iter().map(|k| k.1).collect();
        let condition = j.condition.clone();
        let out = match (&node.op, &j.kind) {
            (
                PhysicalOp::IntervalJoin(_),
                JoinKind::Interval {
                    left_time,
                    right_time,
                    lower_ms,
                    upper_ms,
                },
            ) => {
                // The plan bounds `left - right` in [lower, upper]; the operator bounds
                // `right - left`.
                let spec = IntervalJoinSpec {
                    join_type: JoinType::Inner,
                    left_keys,
                    right_keys,
                    left_time: *left_time,
                    right_time: *right_time,
                    lower: upper_ms.saturating_neg(),
                    upper: lower_ms.saturating_neg(),
                    condition,
                };
                interval_join(&left, &right, &spec, &ids, &self.errors)?
            }
            (
                PhysicalOp::WindowJoin(_),
                JoinKind::Window {
                    left_bounds,
                    right_bounds,
                    ..
                },
            ) => {
                let spec = WindowJoinSpec {
                    join_type: JoinType::Inner,
                    left_keys,
                    right_keys,
                    left_window: *left_bounds,
                    right_window: *right_bounds,
                    condition,
                };
                window_join(&left, &right, &spec, &ids, &self.errors, &self.late)?
            }
            (PhysicalOp::Join(_), _) => {
                let spec = RegularJoinSpec {
                    join_type: JoinType::Inner,
                    left_keys,
                    right_keys,
                    condition,
                    state_ttl: self.session.config.state_ttl(),
                };
                // Flink materializes time attributes through a regular join.
                return regular_join(&left, &right, &spec, &ids, &self.errors);
            }
            _ => return Err(internal("a join node and its join kind disagree")),
        };
        // Event time stays readable downstream where the plan keeps a rowtime column.
        Ok(
            match node
                .schema
                .iter()
                .position(|f| f.ty.time_attribute() == TimestampKind::Rowtime)
            {
                Some(i) => with_rowtime(out, i),
                None => out,
            },
        )
    }
}

/// The runtime spec of a planned window aggregate over `input`.
fn window_agg_spec(
    agg: &WindowAggregate,
    input: &PhysicalNode,
    local: Option<OperatorIds>,
    legacy: bool,
) -> Result<WindowAggSpec> {
    let kind = match &agg.window.kind {
        PlanWindowKind::Tumble { size_ms } => WindowKind::Tumble { size: *size_ms },
        PlanWindowKind::Hop { slide_ms, size_ms } => WindowKind::Hop {
            slide: *slide_ms,
            size: *size_ms,
        },
        PlanWindowKind::Cumulate { step_ms, size_ms } => WindowKind::Cumulate {
            step: *step_ms,
            size: *size_ms,
        },
        PlanWindowKind::Session { gap_ms, .. } => WindowKind::Session { gap: *gap_ms },
    };
    let time = match &agg.window.time {
        PlanWindowTime::TimeColumn { proctime: true, .. } => WindowTime::ProcTime,
        PlanWindowTime::TimeColumn { index, .. } => WindowTime::RowTime(*index),
        PlanWindowTime::Bounds { start, end } => WindowTime::Windowed {
            start: start.0,
            end: end.0,
        },
    };
    let mut aggs = Vec::with_capacity(agg.aggs.len());
    for a in &agg.aggs {
        let types = a
            .args
            .iter()
            .map(|&i| {
                input
                    .schema
                    .get(i)
                    .map(|f| f.ty.without_time_attribute())
                    .ok_or_else(|| internal("an aggregate argument out of range"))
            })
            .collect::<Result<Vec<_>>>()?;
        let call = resolve_aggregate(a.kind.name(), &types, a.distinct, true, None)?;
        aggs.push(WindowAggCall {
            call,
            args: a.args.clone(),
        });
    }
    let properties = agg
        .properties
        .iter()
        .map(|p| match p {
            WindowPropertyKind::Start => WindowProperty::Start,
            WindowPropertyKind::End => WindowProperty::End,
            WindowPropertyKind::Time if agg.window.is_proctime() => WindowProperty::ProcTime,
            WindowPropertyKind::Time => WindowProperty::Time,
            WindowPropertyKind::Proctime => WindowProperty::ProcTime,
        })
        .collect();
    Ok(WindowAggSpec {
        keys: agg.group.clone(),
        kind,
        time,
        aggs,
        properties,
        local,
        legacy,
    })
}
