//! Flink SQL's row-time interval join (`IntervalJoin`, Flink's `RowTimeIntervalJoin`): rows of
//! equal keys with `left.ts + lower <= right.ts <= left.ts + upper` (Flink normalizes every
//! time-bounded condition to these bounds), INNER.
//!
//! Per key, each side's rows are cached by their time in keyed map state. A row joins every
//! cached row of the other side within its bounds — also a row behind the watermark, as in
//! Flink SQL (the DataStream API's interval join drops those) — and is cached only while rows
//! of the other side may still come for it (the watermark is below its bound). Event-time
//! timers drop the rows no future row can match: a left row at `t` once the watermark passed
//! `t + upper`, a right row once it passed `t - lower`. The output's watermark is held back by
//! `max(upper, -lower)` (Flink's `KeyedCoProcessOperatorWithWatermarkDelay`), so both inputs'
//! rowtime columns stay valid time attributes downstream.

use sluice_datastream::{DataStream, KeyedCoProcessFunction, OnTimerContext, ProcessContext};
use sluice_sql::{Expr, Result, Row, Value};
use sluice_types::{Collector, CollectorExt, Operator, OperatorError, Watermark};

use super::{drop_null_keys, joined, key_of, JoinType};
use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::stateful::OperatorIds;

/// A planned interval join.
#[derive(Clone, Debug)]
pub struct IntervalJoinSpec {
    /// INNER only so far.
    pub join_type: JoinType,
    /// The left input's equi-join columns.
    pub left_keys: Vec<usize>,
    /// The right input's equi-join columns, pairwise with `left_keys`.
    pub right_keys: Vec<usize>,
    /// The left input's rowtime column.
    pub left_time: usize,
    /// The right input's rowtime column.
    pub right_time: usize,
    /// The lower bound of `right.ts - left.ts`, ms (inclusive).
    pub lower: i64,
    /// The upper bound of `right.ts - left.ts`, ms (inclusive).
    pub upper: i64,
    /// The rest of the join condition, over `left ++ right`.
    pub condition: Option<Expr>,
}

impl IntervalJoinSpec {
    /// How far the output's watermark is held back behind the inputs' (Flink's
    /// `getMaxOutputDelay`).
    pub fn watermark_delay(&self) -> i64 {
        self.upper.max(self.lower.saturating_neg()).max(0)
    }
}

const LEFT: &str = "interval-join-left-cache";
const RIGHT: &str = "interval-join-right-cache";

#[derive(Clone)]
struct IntervalJoinFn {
    spec: IntervalJoinSpec,
    name: String,
    errors: RowErrors,
}

fn millis(row: &Row, column: usize) -> Option<i64> {
    match row.get(column) {
        Value::Timestamp(t) => Some(t.millis),
        _ => None,
    }
}

impl IntervalJoinFn {
    /// Joins `row` (at `ts`) with the other side's cached rows whose time is in
    /// `[from, to]`, then caches it if the watermark is below `to_keep` (the last time a row of
    /// the other side could match it), with a cleanup timer just after.
    fn on_row(
        &self,
        row: Row,
        ts: i64,
        (from, to): (i64, i64),
        row_is_left: bool,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let (own, other) = if row_is_left {
            (LEFT, RIGHT)
        } else {
            (RIGHT, LEFT)
        };
        // The other side's cached rows by reference, not copied out of the state.
        ctx.map_state::<i64, Vec<Row>>(other).for_each(|&t, rows| {
            if t < from || t > to {
                return Ok(());
            }
            for o in rows {
                let (l, r) = if row_is_left { (&row, o) } else { (o, &row) };
                if let Some(j) =
                    joined(l, r, self.spec.condition.as_ref(), &self.errors, &self.name)
                {
                    out.collect(j)?;
                }
            }
            Ok(())
        })?;
        let keep_until = if row_is_left {
            ts.saturating_add(self.spec.upper)
        } else {
            ts.saturating_sub(self.spec.lower)
        };
        if ctx.timer_service().current_watermark() < keep_until {
            ctx.map_state::<i64, Vec<Row>>(own)
                .upsert(ts, Vec::new, |at| at.push(row))?;
            ctx.timer_service()
                .register_event_time_timer(keep_until.saturating_add(1));
        }
        Ok(())
    }

    fn time_of(&self, row: &Row, column: usize) -> Option<i64> {
        let t = millis(row, column);
        if t.is_none() {
            self.errors
                .record(|| format!("{}: a NULL or non-timestamp rowtime", self.name));
        }
        t
    }
}

impl KeyedCoProcessFunction<SqlKey<KeyRow>, Row, Row, Row> for IntervalJoinFn {
    fn process_left(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let Some(ts) = self.time_of(&row, self.spec.left_time) else {
            return Ok(());
        };
        let bounds = (
            ts.saturating_add(self.spec.lower),
            ts.saturating_add(self.spec.upper),
        );
        self.on_row(row, ts, bounds, true, ctx, out)
    }

    fn process_right(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let Some(ts) = self.time_of(&row, self.spec.right_time) else {
            return Ok(());
        };
        let bounds = (
            ts.saturating_sub(self.spec.upper),
            ts.saturating_sub(self.spec.lower),
        );
        self.on_row(row, ts, bounds, false, ctx, out)
    }

    /// Drops the cached rows no future row can match: left rows at `t` with
    /// `t + upper < watermark`, right rows with `t - lower < watermark`.
    fn on_timer(
        &mut self,
        _time: i64,
        ctx: &mut OnTimerContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let wm = ctx.timer_service().current_watermark();
        let (lower, upper) = (self.spec.lower, self.spec.upper);
        for (side, reach) in [(LEFT, upper), (RIGHT, lower.saturating_neg())] {
            ctx.map_state::<i64, Vec<Row>>(side)
                .take_where(|t| t.saturating_add(reach) < wm)?;
        }
        Ok(())
    }
}

/// Holds the watermark back by a fixed delay (the end-of-input watermark passes as it is).
struct WatermarkDelay(i64);

impl Operator<Row, Row> for WatermarkDelay {
    fn process(&mut self, row: Row, out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
        out.collect(row)
    }

    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let held = if watermark.0 == i64::MAX {
            watermark
        } else {
            Watermark(watermark.0.saturating_sub(self.0))
        };
        out.emit_watermark(held)
    }
}

/// Adds the interval join of `left` and `right` (named and uid'd by `ids`). Output: the left
/// columns, then the right ones, with the watermark held back by
/// [`IntervalJoinSpec::watermark_delay`]; no event-time reader is set (the caller sets the one
/// the plan keeps with [`crate::rowtime::with_rowtime`]).
pub fn interval_join(
    left: &DataStream<Row>,
    right: &DataStream<Row>,
    spec: &IntervalJoinSpec,
    ids: &OperatorIds,
    errors: &RowErrors,
) -> Result<DataStream<Row>> {
    spec.join_type.require_inner("interval join")?;
    let (lk, rk) = (spec.left_keys.clone(), spec.right_keys.clone());
    let (lt, rt) = (spec.left_time, spec.right_time);
    let l = drop_null_keys(left, &lk)
        .with_timestamps(move |r: &Row| millis(r, lt).unwrap_or(i64::MIN))
        .key_by(move |r: &Row| key_of(&lk, r));
    let r = drop_null_keys(right, &rk)
        .with_timestamps(move |r: &Row| millis(r, rt).unwrap_or(i64::MIN))
        .key_by(move |r: &Row| key_of(&rk, r));
    let f = IntervalJoinFn {
        spec: spec.clone(),
        name: ids.name.clone(),
        errors: errors.clone(),
    };
    let delay = spec.watermark_delay();
    Ok(l.connect(&r)
        .process(f)
        .name(&ids.name)
        .uid(&ids.uid)
        .transform("WatermarkDelay", move |_| WatermarkDelay(delay)))
}
