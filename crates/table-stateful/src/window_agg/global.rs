//! The keyed step of a window aggregation: per key, one accumulator list per open window in
//! map state, a timer at each window's last millisecond, the window's row when it fires. Its
//! input is either rows (one phase) or the local step's partial slices (two phases).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sluice_datastream::{KeyedProcessFunction, OnTimerContext, ProcessContext};
use sluice_sql::{Accumulator, Row, Value};
use sluice_types::{Collector, OperatorContext, OperatorError};

use super::kinds::{Window, WindowKind};
use super::local::WindowPartial;
use super::{timestamp, WindowAggSpec, WindowProperty, WindowTime};
use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::stateful::LateRecords;

/// The keyed map state: open window → its accumulators (one per aggregate call).
pub(super) const WINDOWS: &str = "window-accumulators";

/// What every subtask shares.
pub(super) struct Shared {
    pub spec: WindowAggSpec,
    pub errors: RowErrors,
}

/// The keyed process function (one clone per subtask).
#[derive(Clone)]
pub(super) struct GlobalWindowAgg {
    shared: Arc<Shared>,
    /// The job's late-row count; once opened, its subtask's `numLateRecordsDropped` too.
    late: LateRecords,
    /// Scratch: the current row's argument values, per call.
    args: Vec<Vec<Value>>,
    /// Processing time: the rows of each window not fired yet, by its last millisecond (a row
    /// under the last window it belongs to), and their total as the job's `open_at_end` reads
    /// it (set when the subtask opens).
    open_rows: BTreeMap<i64, u64>,
    open_total: Option<Arc<AtomicU64>>,
}

impl GlobalWindowAgg {
    pub(super) fn new(shared: Arc<Shared>, late: &LateRecords) -> GlobalWindowAgg {
        let args = vec![Vec::new(); shared.spec.aggs.len()];
        GlobalWindowAgg {
            shared,
            late: late.clone(),
            args,
            open_rows: BTreeMap::new(),
            open_total: None,
        }
    }

    /// Counts a row into the processing-time window `last` (the last one it belongs to).
    fn count_open(&mut self, last: &Window) {
        *self.open_rows.entry(last.max_timestamp()).or_default() += 1;
        if let Some(t) = &self.open_total {
            t.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Uncounts the rows of the processing-time windows due at `time`: they fire now.
    fn uncount_fired(&mut self, time: i64) {
        let later = self.open_rows.split_off(&time.saturating_add(1));
        let fired: u64 = std::mem::replace(&mut self.open_rows, later).values().sum();
        if let Some(t) = &self.open_total {
            t.fetch_sub(fired, Ordering::Relaxed);
        }
    }

    fn fresh(&self) -> Vec<Accumulator> {
        self.shared
            .spec
            .aggs
            .iter()
            .map(|a| a.call.create_accumulator())
            .collect()
    }

    /// Whether a slice ending at `slice_end` is late: the watermark passed its last
    /// millisecond (event time only).
    fn is_late(&self, slice_end: i64, ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>) -> bool {
        self.shared.spec.time != WindowTime::ProcTime
            && slice_end - 1 <= ctx.timer_service().current_watermark()
    }

    fn register(&self, w: &Window, ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>) {
        match self.shared.spec.time {
            WindowTime::RowTime(_) | WindowTime::Windowed { .. } => ctx
                .timer_service()
                .register_event_time_timer(w.max_timestamp()),
            WindowTime::ProcTime => ctx
                .timer_service()
                .register_processing_time_timer(w.max_timestamp()),
        }
    }

    /// Adds the scratch arguments to `accs`, counting a failure.
    fn add_args(&self, accs: &mut [Accumulator]) {
        for (acc, args) in accs.iter_mut().zip(&self.args) {
            if let Err(e) = acc.add(args) {
                let name = &self.shared.spec;
                self.shared
                    .errors
                    .record(|| format!("window aggregate over {:?}: {e}", name.kind));
            }
        }
    }

    fn merge_into(&self, accs: &mut [Accumulator], other: &[Accumulator]) {
        for (acc, o) in accs.iter_mut().zip(other) {
            if let Err(e) = acc.merge(o) {
                self.shared
                    .errors
                    .record(|| format!("window aggregate merge: {e}"));
            }
        }
    }

    /// A session window from a record at `ts`, merged with the key's sessions it touches.
    fn add_to_session(
        &mut self,
        ts: i64,
        gap: i64,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
    ) -> Result<(), OperatorError> {
        let new = Window {
            start: ts,
            end: ts.saturating_add(gap),
        };
        if self.is_late(new.end, ctx) {
            self.late.add(1);
            return Ok(());
        }
        // The touching sessions are moved out of the state (not copied), merged in order of
        // their windows into the first one (a fresh accumulator merged with one is that one),
        // and the merged session put back.
        let mut state = ctx.map_state::<Window, Vec<Accumulator>>(WINDOWS);
        let mut touching = state.take_where(|w| w.start <= new.end && w.end >= new.start)?;
        touching.sort_unstable_by_key(|(w, _)| *w);
        let mut merged = new;
        let mut sessions = touching.into_iter();
        let (mut accs, created) = match sessions.next() {
            Some((w, accs)) => {
                merged.start = merged.start.min(w.start);
                merged.end = merged.end.max(w.end);
                (accs, false)
            }
            None => (self.fresh(), true),
        };
        for (w, a) in sessions {
            merged.start = merged.start.min(w.start);
            merged.end = merged.end.max(w.end);
            self.merge_into(&mut accs, &a);
        }
        self.add_args(&mut accs);
        state.put(merged, accs)?;
        // Timers are lazy: a session merged from others keeps their timers (each at or before
        // its end), and `fire` times the sessions it leaves open at their ends; so a session
        // that grows by every record costs a timer per gap, not per record.
        if created {
            self.register(&merged, ctx);
        }
        Ok(())
    }

    /// Folds `update` into each window's accumulators in place, creating (and timing) new
    /// windows: one state lookup per window, the accumulators neither read out nor written
    /// back.
    fn update_windows(
        &self,
        windows: &[Window],
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        update: impl Fn(&Self, &mut Vec<Accumulator>),
    ) -> Result<(), OperatorError> {
        for w in windows {
            let (created, ()) = ctx.map_state::<Window, Vec<Accumulator>>(WINDOWS).upsert(
                *w,
                || self.fresh(),
                |accs| update(self, accs),
            )?;
            if created {
                self.register(w, ctx);
            }
        }
        Ok(())
    }

    /// Emits and clears every window of the current key whose last millisecond is at or
    /// before `time`, by growing end.
    fn fire(
        &mut self,
        time: i64,
        ctx: &mut OnTimerContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        if self.shared.spec.time == WindowTime::ProcTime {
            self.uncount_fired(time);
        }
        let fired_at = ctx.timer_service().current_processing_time();
        // The due windows' accumulators are moved out of the state as they are removed.
        let mut due = ctx
            .map_state::<Window, Vec<Accumulator>>(WINDOWS)
            .take_where(|w| w.max_timestamp() <= time)?;
        due.sort_unstable_by_key(|(w, _)| (w.end, w.start));
        if matches!(self.shared.spec.kind, WindowKind::Session { .. }) {
            // The sessions left open (grown past this timer) get a timer at their end.
            let open = ctx.map_state::<Window, Vec<Accumulator>>(WINDOWS).keys()?;
            for w in &open {
                self.register(w, ctx);
            }
        }
        let key = ctx.current_key().0.values();
        let spec = &self.shared.spec;
        for (w, accs) in due {
            let mut row = Vec::with_capacity(key.len() + accs.len() + spec.properties.len());
            row.extend(key.iter().cloned());
            row.extend(accs.iter().map(Accumulator::result));
            row.extend(spec.properties.iter().map(|p| match p {
                WindowProperty::Start => timestamp(w.start),
                WindowProperty::End => timestamp(w.end),
                WindowProperty::Time => timestamp(w.max_timestamp()),
                WindowProperty::ProcTime => timestamp(fired_at),
            }));
            out.collect(Row(row))?;
        }
        Ok(())
    }
}

impl KeyedProcessFunction<SqlKey<KeyRow>, Row, Row> for GlobalWindowAgg {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.late.open(ctx);
        if self.shared.spec.time == WindowTime::ProcTime {
            self.open_total = Some(self.late.open_windows_slot(ctx));
        }
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        for (slot, a) in self.args.iter_mut().zip(&self.shared.spec.aggs) {
            slot.clear();
            slot.extend(a.args.iter().map(|&i| row.get(i).clone()));
        }
        let spec = &self.shared.spec;
        let windows = match (spec.time, spec.kind) {
            (WindowTime::ProcTime, kind) => {
                let now = ctx.timer_service().current_processing_time();
                let windows = match (kind, kind.slice_end(now)) {
                    (WindowKind::Session { gap }, _) => return self.add_to_session(now, gap, ctx),
                    (_, Some(end)) => kind.windows_of_slice(end),
                    (_, None) => return Ok(()),
                };
                if let Some(last) = windows.iter().max_by_key(|w| w.end) {
                    self.count_open(last);
                }
                windows
            }
            (WindowTime::RowTime(i), WindowKind::Session { gap }) => {
                match row.get(i) {
                    Value::Timestamp(t) => return self.add_to_session(t.millis, gap, ctx),
                    other => {
                        let other = other.clone();
                        self.shared.errors.record(|| {
                        format!("window aggregate: the time attribute is {other:?}, not a timestamp")
                    });
                        return Ok(());
                    }
                }
            }
            _ => {
                let slice = match spec.event_slice(&row) {
                    Ok(Some(slice)) => slice,
                    Ok(None) => return Ok(()),
                    Err(e) => {
                        self.shared
                            .errors
                            .record(|| format!("window aggregate: {e}"));
                        return Ok(());
                    }
                };
                let mut windows = spec.windows_of_slice(slice);
                if spec.legacy {
                    let watermark = ctx.timer_service().current_watermark();
                    windows.retain(|w| w.max_timestamp() > watermark);
                    if windows.is_empty() {
                        self.late.add(1);
                        return Ok(());
                    }
                } else if self.is_late(slice.end, ctx) {
                    self.late.add(1);
                    return Ok(());
                }
                windows
            }
        };
        self.update_windows(&windows, ctx, |me, accs| me.add_args(accs))
    }

    fn on_timer(
        &mut self,
        time: i64,
        ctx: &mut OnTimerContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.fire(time, ctx, out)
    }
}

impl KeyedProcessFunction<SqlKey<KeyRow>, WindowPartial, Row> for GlobalWindowAgg {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.late.open(ctx);
        Ok(())
    }

    fn process_element(
        &mut self,
        partial: WindowPartial,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        if self.is_late(partial.slice.end, ctx) {
            self.late.add(partial.records);
            return Ok(());
        }
        let windows = self.shared.spec.windows_of_slice(partial.slice);
        self.update_windows(&windows, ctx, |me, accs| {
            me.merge_into(accs, &partial.accumulators)
        })
    }

    fn on_timer(
        &mut self,
        time: i64,
        ctx: &mut OnTimerContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.fire(time, ctx, out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use sluice_runtime::operators::KeyedProcessOp;
    use sluice_runtime::state::{KeyedStateConfig, StateBackendKind};
    use sluice_sql::{resolve_aggregate, Timestamp};
    use sluice_types::{Operator, ServicesHandle, VecCollector};

    use super::*;
    use crate::window_agg::{WindowAggCall, WindowKind, WindowProperty, WindowTime};

    fn ts(ms: i64) -> Value {
        Value::Timestamp(Timestamp::from_millis(ms))
    }

    /// A legacy processing-time TUMBLE of 1 s with COUNT(*) and `properties`, its clock `now`.
    fn proctime_window(
        properties: Vec<WindowProperty>,
        now: Arc<AtomicI64>,
    ) -> impl Operator<Row, Row> {
        let spec = WindowAggSpec {
            keys: vec![0],
            kind: WindowKind::Tumble { size: 1_000 },
            time: WindowTime::ProcTime,
            aggs: vec![WindowAggCall {
                call: resolve_aggregate("COUNT", &[], false, true, None).unwrap(),
                args: vec![],
            }],
            properties,
            local: None,
            legacy: true,
        };
        let shared = Arc::new(Shared {
            spec: spec.clone(),
            errors: RowErrors::new(),
        });
        let config = KeyedStateConfig {
            backend: StateBackendKind::Memory,
            key_group_of: Arc::new(|_: &SqlKey<KeyRow>| 0),
            key_groups: 0..=0,
        };
        let f = GlobalWindowAgg::new(shared, &LateRecords::new());
        let mut op = KeyedProcessOp::new(move |r: &Row| spec.key_of(r), config, f)
            .with_clock(Arc::new(move || now.load(Ordering::Relaxed)));
        let ctx = sluice_types::OperatorContext {
            operator_name: "GroupWindowAggregate".into(),
            task_name: "GroupWindowAggregate".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 1,
            operator_id: "op".into(),
            services: ServicesHandle::none(),
            options: Vec::new(),
        };
        op.open(&ctx).unwrap();
        op
    }

    #[test]
    fn a_processing_time_property_is_the_time_the_window_fired() {
        let now = Arc::new(AtomicI64::new(10_200));
        let mut op = proctime_window(
            vec![
                WindowProperty::Start,
                WindowProperty::End,
                WindowProperty::ProcTime,
            ],
            now.clone(),
        );
        let mut out = VecCollector::default();
        for _ in 0..3 {
            op.process(Row(vec![Value::Int(7)]), &mut out).unwrap();
        }
        now.store(10_998, Ordering::Relaxed);
        op.tick(&mut out).unwrap();
        assert!(out.records.is_empty(), "the window has not ended");
        // The task gets to the timer (due at 10 999) 700 ms late: the row says when it fired.
        now.store(11_699, Ordering::Relaxed);
        op.tick(&mut out).unwrap();
        assert_eq!(
            out.records,
            [Row(vec![
                Value::Int(7),
                Value::Int(3),
                ts(10_000),
                ts(11_000),
                ts(11_699)
            ])]
        );
    }
}
