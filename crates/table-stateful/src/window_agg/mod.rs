//! Flink's window aggregation: `GROUP BY window_start, window_end, keys` over a window table
//! function (`WindowAggregate`), and the legacy `GROUP BY TUMBLE(…)` / `HOP(…)` / `SESSION(…)`
//! (`GroupWindowAggregate`), which is the same operator with another output layout
//! ([`WindowProperty`]), lateness judged per window ([`WindowAggSpec::legacy`]) and one phase.
//!
//! One keyed operator (keyed by the key columns packed in a [`KeyRow`], so that a one-column
//! key is hashed, compared and cloned without touching the heap) keeps one accumulator list per
//! key and open window and emits the window's row when it fires. Event-time windows other than
//! SESSION on the memory backend are kept by window (`aligned`: a table of keys per window,
//! drained whole as the watermark passes it, no timer per key); the rest (`global`) per key in
//! keyed map state, updated in place (one lookup per window, no copy; accumulators are serde,
//! so a checkpoint holds them), with a timer at each window's last millisecond. Both checkpoint
//! the same bytes. A window fires: with event time when the watermark passes `window_end - 1`
//! (a record whose slice the watermark has passed is dropped and counted in [`LateRecords`], as
//! Flink's slicing operator does), with processing time when the clock does. The output is
//! append-only.
//!
//! Two phases ([`WindowAggSpec::local`], Flink's `LocalWindowAggregate` +
//! `GlobalWindowAggregate`): before the keyed exchange a chained operator pre-aggregates per
//! (key, slice) — a slice being the window's step: TUMBLE's size, HOP's slide, CUMULATE's step
//! — and sends its partial accumulators at each watermark, checkpoint barrier, end of input,
//! or when it holds [`local::BUNDLE`] groups; the keyed step merges each slice into every
//! window containing it. Only for event time, sliceable windows (not SESSION) and mergeable
//! aggregates, as in Flink; otherwise refused.
//!
//! Output columns: the key columns (in [`WindowAggSpec::keys`] order), then one column per
//! aggregate call, then the window properties in [`WindowAggSpec::properties`] order. For the
//! window TVFs that is Flink's `WindowAggregate(groupBy=[k], window=[…], select=[k, aggs…,
//! start('w$) AS window_start, end('w$) AS window_end, rowtime('w$) AS window_time])`; the
//! legacy group window is `GroupWindowAggregate(…, properties=[w$start, w$end, w$rowtime],
//! select=[k, aggs…, start('w$) AS w$start, …])` with the properties the query names. Start and
//! end are `TIMESTAMP(3)`; with event time `window_time` is `window_end - 1 ms` and the output's
//! event timestamp (a rowtime attribute downstream); a processing-time property
//! ([`WindowProperty::ProcTime`]) is the wall-clock time the window fired.

mod aligned;
mod global;
pub mod kinds;
pub mod local;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_datastream::DataStream;
use sluice_sql::{AggregateCall, Result, Row, SqlError, Value};

pub use kinds::{Window, WindowKind};
pub use local::WindowPartial;

use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::rowtime::with_rowtime;
use crate::stateful::{LateRecords, OperatorIds};

/// Which clock assigns records to windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WindowTime {
    /// Event time: the input column at this index (a `TIMESTAMP(3)` rowtime attribute).
    RowTime(usize),
    /// Processing time (`PROCTIME()`): the subtask's clock when the record arrives.
    ProcTime,
    /// The input already carries its window (a window aggregation over a window TVF's or
    /// another window aggregation's output, Flink's `HOP(win_start=[…], win_end=[…], …)`):
    /// each row belongs to the window of its `window_start` and `window_end` columns, and it is
    /// event time (the window fires when the watermark passes `window_end - 1`).
    Windowed {
        /// The `window_start` column.
        start: usize,
        /// The `window_end` column.
        end: usize,
    },
}

/// A window property column of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WindowProperty {
    /// `window_start` / `TUMBLE_START(…)`.
    Start,
    /// `window_end` / `TUMBLE_END(…)`.
    End,
    /// `window_time` / `TUMBLE_ROWTIME(…)` of an event-time window: `window_end - 1 ms`.
    Time,
    /// `TUMBLE_PROCTIME(…)`, and `window_time` of a processing-time window: the wall-clock time
    /// the window fired (Flink's proctime attribute, materialized as the row is emitted), a
    /// `TIMESTAMP_LTZ(3)`.
    ProcTime,
}

/// One aggregate call and the input columns of its arguments (none for `COUNT(*)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowAggCall {
    /// The resolved call.
    pub call: AggregateCall,
    /// The input columns passed to it, in order.
    pub args: Vec<usize>,
}

/// A planned window aggregation.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowAggSpec {
    /// The grouping columns besides the window, in output order.
    pub keys: Vec<usize>,
    /// The window function.
    pub kind: WindowKind,
    /// The time attribute.
    pub time: WindowTime,
    /// The aggregate calls, in output order.
    pub aggs: Vec<WindowAggCall>,
    /// The window columns after the aggregates ([`WindowAggSpec::TVF_PROPERTIES`] for a window
    /// TVF; the ones a legacy group window's select names, in Flink's order).
    pub properties: Vec<WindowProperty>,
    /// Two-phase: the local step's name and uid (`None`: one phase).
    pub local: Option<OperatorIds>,
    /// A legacy group window (`GroupWindowAggregate`, one phase only): a record behind the
    /// watermark still goes to those of its windows that have not fired (Flink's
    /// `WindowOperator`), where a window TVF aggregation drops it once its slice has fired.
    pub legacy: bool,
}

impl WindowAggSpec {
    /// A window TVF aggregation's window columns: `window_start, window_end, window_time`.
    pub const TVF_PROPERTIES: [WindowProperty; 3] = [
        WindowProperty::Start,
        WindowProperty::End,
        WindowProperty::Time,
    ];

    /// Refuses what the operator cannot run: an invalid window, two phases for processing
    /// time, SESSION or an aggregate without `merge`, SESSION with an aggregate without
    /// `merge` (sessions merge their accumulators).
    pub fn validate(&self) -> Result<()> {
        self.kind.validate()?;
        let unmergeable = self.aggs.iter().find(|a| !a.call.is_mergeable());
        if let Some(a) = unmergeable {
            if matches!(self.kind, WindowKind::Session { .. }) {
                return Err(SqlError::unsupported(
                    None,
                    format!(
                        "{} in a SESSION window (sessions merge accumulators)",
                        a.call.function.name()
                    ),
                ));
            }
        }
        if self.local.is_some() {
            let why = if self.legacy {
                Some("a legacy group window".to_string())
            } else if self.time == WindowTime::ProcTime {
                Some("a processing-time window".to_string())
            } else if self.kind.slice_size().is_none()
                && !matches!(self.time, WindowTime::Windowed { .. })
            {
                Some("a SESSION window".to_string())
            } else {
                unmergeable.map(|a| format!("{} (it has no merge)", a.call.function.name()))
            };
            if let Some(why) = why {
                return Err(SqlError::unsupported(
                    None,
                    format!("two-phase window aggregation of {why}"),
                ));
            }
        }
        Ok(())
    }

    /// The output column of `property`, if the layout has it.
    pub fn property_index(&self, property: WindowProperty) -> Option<usize> {
        self.properties
            .iter()
            .position(|p| *p == property)
            .map(|i| self.keys.len() + self.aggs.len() + i)
    }

    /// The event-time slice of a row: its time's slice (`None` for SESSION), or with a
    /// windowed input its window; an error if a time column is not a timestamp.
    fn event_slice(&self, row: &Row) -> std::result::Result<Option<Window>, String> {
        let millis = |i: usize| match row.get(i) {
            Value::Timestamp(t) => Ok(t.millis),
            other => Err(format!("the time column is {other:?}, not a timestamp")),
        };
        match self.time {
            WindowTime::RowTime(i) => {
                let ts = millis(i)?;
                Ok(self
                    .kind
                    .slice_end(ts)
                    .zip(self.kind.slice_size())
                    .map(|(end, size)| Window {
                        start: end - size,
                        end,
                    }))
            }
            WindowTime::Windowed { start, end } => Ok(Some(Window {
                start: millis(start)?,
                end: millis(end)?,
            })),
            WindowTime::ProcTime => Ok(None),
        }
    }

    /// The windows an event-time slice belongs to (with a windowed input: its own window).
    fn windows_of_slice(&self, slice: Window) -> Vec<Window> {
        match self.time {
            WindowTime::Windowed { .. } => vec![slice],
            _ => self.kind.windows_of_slice(slice.end),
        }
    }

    /// The key of an input row.
    fn key_of(&self, row: &Row) -> SqlKey<KeyRow> {
        SqlKey(KeyRow::of(row, &self.keys))
    }
}

/// The timestamp value of a window bound.
fn timestamp(millis: i64) -> Value {
    Value::Timestamp(sluice_sql::Timestamp::from_millis(millis))
}

/// Adds the window aggregation `spec` after `input` (named and uid'd by `ids`; the local step
/// by `spec.local`). Rows whose accumulation fails are counted in `errors`, late ones in
/// `late`. With event time the input's rowtime column must be a `TIMESTAMP(3)` (a NULL one is
/// an error row); the output's event timestamp is its `window_time` column if it has one.
pub fn window_aggregate(
    input: &DataStream<Row>,
    spec: &WindowAggSpec,
    ids: &OperatorIds,
    errors: &RowErrors,
    late: &LateRecords,
) -> Result<DataStream<Row>> {
    spec.validate()?;
    let shared = Arc::new(global::Shared {
        spec: spec.clone(),
        errors: errors.clone(),
    });
    let timed = match spec.time {
        WindowTime::RowTime(t) => with_rowtime(input.clone(), t),
        WindowTime::Windowed { end, .. } => {
            input.with_timestamps(move |r: &Row| match r.get(end) {
                Value::Timestamp(t) => t.millis - 1,
                _ => i64::MIN,
            })
        }
        WindowTime::ProcTime => input.clone(),
    };
    // Event-time windows other than SESSION on the memory backend are kept by window
    // (`aligned`); the rest per key in keyed state (`global`).
    let aligned = !matches!(
        (spec.time, spec.kind),
        (WindowTime::ProcTime, _) | (WindowTime::RowTime(_), WindowKind::Session { .. })
    ) && input.env().state_backend()
        == sluice_runtime::state::StateBackendKind::Memory;
    let out = match (spec.time, &spec.local) {
        (WindowTime::ProcTime, _) => {
            let key = spec.clone();
            timed
                .key_by(move |r: &Row| key.key_of(r))
                .process(global::GlobalWindowAgg::new(shared, late))
        }
        (_, Some(local_ids)) => {
            let partials = local::local_window_aggregate(&timed, spec, local_ids, errors);
            let keyed = partials.key_by(|p: &WindowPartial| p.key.clone());
            if aligned {
                let late = late.clone();
                keyed.as_stream().transform(&ids.name, move |_| {
                    aligned::AlignedWindowAgg::new(shared.clone(), &late)
                })
            } else {
                keyed.process_event_time(global::GlobalWindowAgg::new(shared, late))
            }
        }
        (_, None) if aligned => {
            let key = spec.clone();
            let late = late.clone();
            timed
                .key_by(move |r: &Row| key.key_of(r))
                .as_stream()
                .transform(&ids.name, move |_| {
                    aligned::AlignedWindowAgg::new(shared.clone(), &late)
                })
        }
        (_, None) => {
            let key = spec.clone();
            timed
                .key_by(move |r: &Row| key.key_of(r))
                .process_event_time(global::GlobalWindowAgg::new(shared, late))
        }
    };
    let out = out.name(&ids.name).uid(&ids.uid);
    Ok(
        match (spec.time, spec.property_index(WindowProperty::Time)) {
            (WindowTime::ProcTime, _) | (_, None) => out,
            (_, Some(i)) => with_rowtime(out, i),
        },
    )
}
