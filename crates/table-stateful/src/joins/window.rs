//! Flink's window join (`WindowJoin`): both inputs carry `window_start` and `window_end`
//! columns (of a window TVF or window aggregation); rows of equal keys and the same window meet
//! when the watermark passes the window's last millisecond, then the window's rows are
//! cleared. A row whose window the watermark has already passed is dropped and counted in
//! [`LateRecords`], as Flink's operator does. On the memory backend the rows are kept by window
//! (`by_window`, one pass per window as the watermark passes it); otherwise per key in keyed
//! state with a timer per key and window (below). Both checkpoint the same bytes.

use std::collections::BTreeMap;

use sluice_datastream::{KeyedCoProcessFunction, OnTimerContext, ProcessContext};
use sluice_sql::{Expr, Result, Row, Value};
use sluice_types::{Collector, OperatorContext, OperatorError};

use super::{drop_null_keys, joined, key_of, JoinType};
use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::stateful::{LateRecords, OperatorIds};
use crate::window_agg::Window;
use sluice_datastream::{DataStream, Either};

/// A planned window join.
#[derive(Clone, Debug)]
pub struct WindowJoinSpec {
    /// INNER only so far.
    pub join_type: JoinType,
    /// The left input's equi-join columns (besides the window).
    pub left_keys: Vec<usize>,
    /// The right input's equi-join columns, pairwise with `left_keys`.
    pub right_keys: Vec<usize>,
    /// The left input's `window_start` and `window_end` columns.
    pub left_window: (usize, usize),
    /// The right input's `window_start` and `window_end` columns.
    pub right_window: (usize, usize),
    /// The rest of the join condition, over `left ++ right`.
    pub condition: Option<Expr>,
}

// Each side's rows, one map entry per row (appending to a list value would copy the window's
// rows on every arrival), and how many rows each window has so far (the next row's number).
pub(super) const LEFT: &str = "window-join-left";
pub(super) const RIGHT: &str = "window-join-right";
pub(super) const LEFT_COUNT: &str = "window-join-left-count";
pub(super) const RIGHT_COUNT: &str = "window-join-right-count";

/// A side's state names: its rows and its windows' row counts.
type Side = (&'static str, &'static str);

/// The window of a row (`None` if a bound is not a timestamp).
pub(super) fn window_of(row: &Row, (start, end): (usize, usize)) -> Option<Window> {
    match (row.get(start), row.get(end)) {
        (Value::Timestamp(s), Value::Timestamp(e)) => Some(Window {
            start: s.millis,
            end: e.millis,
        }),
        _ => None,
    }
}

#[derive(Clone)]
struct WindowJoinFn {
    spec: WindowJoinSpec,
    name: String,
    errors: RowErrors,
    late: LateRecords,
}

impl WindowJoinFn {
    fn buffer(
        &self,
        row: Row,
        columns: (usize, usize),
        (rows_state, counts_state): Side,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
    ) -> Result<(), OperatorError> {
        let Some(w) = window_of(&row, columns) else {
            self.errors
                .record(|| format!("{}: a window bound is not a timestamp", self.name));
            return Ok(());
        };
        if w.max_timestamp() <= ctx.timer_service().current_watermark() {
            self.late.add(1);
            return Ok(());
        }
        // The window's row count, bumped in place: the new row's number.
        let (_, n) = ctx.map_state::<Window, u64>(counts_state).upsert(
            w,
            || 0,
            |n| std::mem::replace(n, *n + 1),
        )?;
        ctx.map_state::<(Window, u64), Row>(rows_state)
            .put((w, n), row)?;
        if n == 0 {
            ctx.timer_service()
                .register_event_time_timer(w.max_timestamp());
        }
        Ok(())
    }
}

impl KeyedCoProcessFunction<SqlKey<KeyRow>, Row, Row, Row> for WindowJoinFn {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.late.open(ctx);
        Ok(())
    }

    fn process_left(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.buffer(row, self.spec.left_window, (LEFT, LEFT_COUNT), ctx)
    }

    fn process_right(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.buffer(row, self.spec.right_window, (RIGHT, RIGHT_COUNT), ctx)
    }

    /// Joins and clears every window of the key whose last millisecond is at or before `time`.
    fn on_timer(
        &mut self,
        time: i64,
        ctx: &mut OnTimerContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let left = take_due(ctx, (LEFT, LEFT_COUNT), time)?;
        let mut right = take_due(ctx, (RIGHT, RIGHT_COUNT), time)?;
        for (w, lefts) in left {
            let Some(rights) = right.remove(&w) else {
                continue;
            };
            for l in &lefts {
                for r in &rights {
                    if let Some(row) =
                        joined(l, r, self.spec.condition.as_ref(), &self.errors, &self.name)
                    {
                        out.collect(row)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Removes and returns one side's rows of the windows whose last millisecond is at or before
/// `time`, per window in arrival order.
fn take_due(
    ctx: &mut OnTimerContext<'_, SqlKey<KeyRow>>,
    (rows_state, counts_state): Side,
    time: i64,
) -> Result<BTreeMap<Window, Vec<Row>>, OperatorError> {
    let mut due: BTreeMap<Window, Vec<Row>> = ctx
        .map_state::<Window, u64>(counts_state)
        .take_where(|w| w.max_timestamp() <= time)?
        .into_iter()
        .map(|(w, _)| (w, Vec::new()))
        .collect();
    if due.is_empty() {
        return Ok(due);
    }
    // Each row moved out of the state as it is removed (not cloned), then put in arrival
    // order.
    let mut taken = ctx
        .map_state::<(Window, u64), Row>(rows_state)
        .take_where(|(w, _)| due.contains_key(w))?;
    taken.sort_unstable_by_key(|(k, _)| *k);
    for ((w, _), row) in taken {
        if let Some(v) = due.get_mut(&w) {
            v.push(row);
        }
    }
    Ok(due)
}

/// Adds the window join of `left` and `right` (named and uid'd by `ids`). Output: the left
/// columns, then the right ones; no event time set (the caller sets the one it keeps with
/// [`crate::rowtime::with_rowtime`]).
pub fn window_join(
    left: &DataStream<Row>,
    right: &DataStream<Row>,
    spec: &WindowJoinSpec,
    ids: &OperatorIds,
    errors: &RowErrors,
    late: &LateRecords,
) -> Result<DataStream<Row>> {
    spec.join_type.require_inner("window join")?;
    // Both sides' event time is their window's last millisecond: the timers need timestamps.
    let end_of = |columns: (usize, usize)| {
        move |r: &Row| window_of(r, columns).map_or(i64::MIN, |w| w.max_timestamp())
    };
    let (lk, rk) = (spec.left_keys.clone(), spec.right_keys.clone());
    if left.env().state_backend() == sluice_runtime::state::StateBackendKind::Memory {
        let l = drop_null_keys(left, &lk)
            .map(Either::<Row, Row>::Left)
            .name("Left");
        let r = drop_null_keys(right, &rk)
            .map(Either::<Row, Row>::Right)
            .name("Right");
        let (spec, name, errors, late) =
            (spec.clone(), ids.name.clone(), errors.clone(), late.clone());
        return Ok(l
            .union(&[&r])
            .key_by(move |e: &Either<Row, Row>| match e {
                Either::Left(l) => key_of(&lk, l),
                Either::Right(r) => key_of(&rk, r),
            })
            .as_stream()
            .transform(&ids.name, move |_| {
                super::by_window::WindowJoinOp::new(
                    spec.clone(),
                    name.clone(),
                    errors.clone(),
                    &late,
                )
            })
            .name(&ids.name)
            .uid(&ids.uid));
    }
    let l = drop_null_keys(left, &lk)
        .with_timestamps(end_of(spec.left_window))
        .key_by(move |r: &Row| key_of(&lk, r));
    let r = drop_null_keys(right, &rk)
        .with_timestamps(end_of(spec.right_window))
        .key_by(move |r: &Row| key_of(&rk, r));
    let f = WindowJoinFn {
        spec: spec.clone(),
        name: ids.name.clone(),
        errors: errors.clone(),
        late: late.clone(),
    };
    Ok(l.connect(&r).process(f).name(&ids.name).uid(&ids.uid))
}
