//! Keyed windows (Flink's `WindowOperator` with the default triggers): tumbling, sliding and
//! session windows in event time, tumbling and sliding in processing time, with incremental
//! aggregation, allowed lateness and a late-data side output.

use std::marker::PhantomData;
use std::sync::Arc;

use super::aggregate::not_open;
use sluice_types::{Collector, CollectorExt, Operator, OperatorContext, OperatorError, Watermark};

use super::window_state::{self, WindowContents, WindowTimers};
use crate::keyed_process::{system_time_ms, ProcessingClock};
use crate::time::windows::{
    cleanup_time, is_element_late, window_start_with_offset, EventTimeSessionWindows,
    SlidingEventTimeWindows, TimeWindow, TumblingEventTimeWindows, WindowError,
};
use sluice_state::{AggregateFunction, KeyedStateConfig, StateKey, StateValue};

/// Which windows an element belongs to, and on which clock they close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowAssigner {
    /// Fixed-size, non-overlapping windows over event time.
    Tumbling(TumblingEventTimeWindows),
    /// Fixed-size windows starting every `slide` over event time (an element is in several).
    Sliding(SlidingEventTimeWindows),
    /// Windows over event time that close after a gap without elements, per key.
    Session(EventTimeSessionWindows),
    /// Tumbling windows over processing time (`size`, `offset` in ms).
    ProcessingTumbling {
        /// Window length, ms.
        size: i64,
        /// Shift of the window starts from the epoch, ms.
        offset: i64,
    },
    /// Sliding windows over processing time.
    ProcessingSliding {
        /// Window length, ms.
        size: i64,
        /// Time between window starts, ms.
        slide: i64,
        /// Shift of the window starts from the epoch, ms.
        offset: i64,
    },
}

impl WindowAssigner {
    /// `TumblingEventTimeWindows.of(size)`.
    pub fn tumbling(size_ms: i64) -> Result<Self, WindowError> {
        Ok(WindowAssigner::Tumbling(TumblingEventTimeWindows::of(
            size_ms,
        )?))
    }
    /// `SlidingEventTimeWindows.of(size, slide)`.
    pub fn sliding(size_ms: i64, slide_ms: i64) -> Result<Self, WindowError> {
        Ok(WindowAssigner::Sliding(SlidingEventTimeWindows::of(
            size_ms, slide_ms,
        )?))
    }
    /// `EventTimeSessionWindows.withGap(gap)`.
    pub fn session(gap_ms: i64) -> Result<Self, WindowError> {
        Ok(WindowAssigner::Session(EventTimeSessionWindows::with_gap(
            gap_ms,
        )?))
    }
    /// `TumblingProcessingTimeWindows.of(size)`.
    pub fn processing_tumbling(size_ms: i64) -> Result<Self, WindowError> {
        TumblingEventTimeWindows::of(size_ms)?;
        Ok(WindowAssigner::ProcessingTumbling {
            size: size_ms,
            offset: 0,
        })
    }
    /// `SlidingProcessingTimeWindows.of(size, slide)`.
    pub fn processing_sliding(size_ms: i64, slide_ms: i64) -> Result<Self, WindowError> {
        SlidingEventTimeWindows::of(size_ms, slide_ms)?;
        Ok(WindowAssigner::ProcessingSliding {
            size: size_ms,
            slide: slide_ms,
            offset: 0,
        })
    }

    /// Whether the windows close on the watermark (event time) rather than the wall clock.
    pub fn is_event_time(&self) -> bool {
        matches!(
            self,
            Self::Tumbling(_) | Self::Sliding(_) | Self::Session(_)
        )
    }

    /// Flink's assigner name, used in the operator name (`TumblingEventTimeWindows(10000)`).
    pub fn describe(&self) -> String {
        match self {
            Self::Tumbling(t) => format!("TumblingEventTimeWindows({})", t.size()),
            Self::Sliding(s) => format!("SlidingEventTimeWindows({}, {})", s.size(), s.slide()),
            Self::Session(s) => format!("EventTimeSessionWindows({})", s.gap()),
            Self::ProcessingTumbling { size, .. } => {
                format!("TumblingProcessingTimeWindows({size})")
            }
            Self::ProcessingSliding { size, slide, .. } => {
                format!("SlidingProcessingTimeWindows({size}, {slide})")
            }
        }
    }

    /// The windows of an element at `time` (event or processing time), latest start first.
    fn assign(&self, time: i64, out: &mut Vec<TimeWindow>) {
        out.clear();
        match self {
            Self::Tumbling(t) => out.push(t.assign_window(time)),
            Self::Sliding(s) => s.assign_windows_into(time, out),
            Self::Session(s) => out.push(s.assign_window(time)),
            Self::ProcessingTumbling { size, offset } => {
                let start = window_start_with_offset(time, *offset, *size);
                out.push(TimeWindow::new(start, start.saturating_add(*size)));
            }
            Self::ProcessingSliding {
                size,
                slide,
                offset,
            } => {
                let mut start = window_start_with_offset(time, *offset, *slide);
                while start > time.saturating_sub(*size) {
                    out.push(TimeWindow::new(start, start.saturating_add(*size)));
                    start -= slide;
                }
            }
        }
    }
}

/// What happens to a window's result: called once per firing with the key, the window and
/// the aggregate's result (Flink's `ProcessWindowFunction` over an incremental aggregate).
pub trait WindowFunction<K, R, OUT>: Send {
    /// Turns `result`, the aggregate of `key`'s elements in `window`, into output records.
    fn apply(
        &mut self,
        key: &K,
        window: &TimeWindow,
        result: R,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError>;
}

impl<K, R, OUT, F> WindowFunction<K, R, OUT> for F
where
    F: FnMut(&K, &TimeWindow, R, &mut dyn Collector<OUT>) -> Result<(), OperatorError> + Send,
{
    fn apply(
        &mut self,
        key: &K,
        window: &TimeWindow,
        result: R,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError> {
        self(key, window, result, out)
    }
}

/// Turns a late element into an output record (the late-data side output), if configured.
pub type LateOutput<IN, OUT> = Arc<dyn Fn(IN) -> OUT + Send + Sync>;

/// The operator's type parameters that no field holds.
type Types<IN, ACC, R, OUT> = PhantomData<fn(IN, ACC) -> (R, OUT)>;

/// The window operator. Per key, its windows with their accumulators
/// (`WindowContents`: a typed list per key on the memory backend, the map state
/// `window-contents` `(start, end)` → accumulator on the LSM backend, the same snapshot bytes);
/// when the watermark (or the processing clock) reaches a window's end − 1 the window fires,
/// and at its cleanup time (`max timestamp + allowed lateness`) it is dropped.
///
/// Rules (Flink's `WindowOperator`, `EventTimeTrigger`):
/// - an element whose windows are all late (`cleanup time ≤ watermark`) is skipped; if it is
///   late itself (`ts + lateness ≤ watermark`) it goes to the late output, or is counted in
///   `numLateRecordsDropped`;
/// - an element added to a window whose end already passed the watermark, but within the
///   allowed lateness, fires that window again at once (with the updated result);
/// - session windows merge with every window of the key they overlap or touch; their
///   accumulators merge with [`AggregateFunction::merge`].
///
/// Timers (`WindowTimers`) are candidates checked against the key's windows when due: a new
/// window queues its end − 1; a window that fired and is kept for lateness queues its cleanup
/// time; a session that absorbed others inherits their entries (each lies inside it) and, when
/// one comes due early, queues its own end − 1. So a record that extends a session touches no
/// timer at all.
pub struct WindowOp<K, IN, ACC, R, OUT, KS, TS, A, F> {
    key_of: KS,
    time_of: TS,
    config: KeyedStateConfig<K>,
    assigner: WindowAssigner,
    allowed_lateness: i64,
    agg: A,
    func: F,
    late: Option<LateOutput<IN, OUT>>,
    contents: Option<WindowContents<K, ACC>>,
    timers: WindowTimers<K>,
    clock: ProcessingClock,
    watermark: i64,
    scratch: Vec<TimeWindow>,
    late_dropped: u64,
    metrics: Option<Arc<sluice_metrics::TaskMetrics>>,
    _t: Types<IN, ACC, R, OUT>,
}

impl<K, IN, ACC, R, OUT, KS, TS, A, F> WindowOp<K, IN, ACC, R, OUT, KS, TS, A, F>
where
    K: StateKey,
    IN: Clone + Send,
    ACC: StateValue,
    OUT: Send,
    KS: Fn(&IN) -> K + Send,
    TS: Fn(&IN) -> i64 + Send,
    A: AggregateFunction<IN, ACC, R>,
    F: WindowFunction<K, R, OUT>,
{
    /// `time_of` gives an element's event timestamp (ignored by processing-time assigners).
    pub fn new(
        key_of: KS,
        time_of: TS,
        config: KeyedStateConfig<K>,
        assigner: WindowAssigner,
        agg: A,
        func: F,
    ) -> Self {
        WindowOp {
            key_of,
            time_of,
            config,
            assigner,
            allowed_lateness: 0,
            agg,
            func,
            late: None,
            contents: None,
            timers: WindowTimers::new(),
            clock: Arc::new(system_time_ms),
            watermark: i64::MIN,
            scratch: Vec::new(),
            late_dropped: 0,
            metrics: None,
            _t: PhantomData,
        }
    }

    /// Keeps windows `lateness` ms past their end for late elements (event time only).
    pub fn with_allowed_lateness(mut self, lateness: i64) -> Self {
        self.allowed_lateness = lateness.max(0);
        self
    }

    /// Sends late elements to the output, converted by `late`, instead of dropping them.
    pub fn with_late_output(mut self, late: LateOutput<IN, OUT>) -> Self {
        self.late = Some(late);
        self
    }

    /// Uses `clock` for processing time (tests).
    pub fn with_clock(mut self, clock: ProcessingClock) -> Self {
        self.clock = clock;
        self
    }

    /// Elements dropped as late so far.
    pub fn late_dropped(&self) -> u64 {
        self.late_dropped
    }

    fn lateness(&self) -> i64 {
        if self.assigner.is_event_time() {
            self.allowed_lateness
        } else {
            0
        }
    }

    fn window_is_late(&self, w: &TimeWindow) -> bool {
        self.assigner.is_event_time() && cleanup_time(w, self.lateness()) <= self.watermark
    }

    fn on_late(&mut self, record: IN, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        match &self.late {
            Some(f) => out.collect(f(record)),
            None => {
                self.late_dropped += 1;
                if let Some(m) = &self.metrics {
                    m.late_records_dropped
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(())
            }
        }
    }

    /// The "now" against which windows close: the watermark or the processing clock.
    fn current_time(&self) -> i64 {
        if self.assigner.is_event_time() {
            self.watermark
        } else {
            (self.clock)()
        }
    }

    /// Session windows: the element's window merges with every window of the key it overlaps
    /// or touches.
    fn process_merging(
        &mut self,
        record: IN,
        key: K,
        kg: u32,
        time: i64,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError> {
        let WindowAssigner::Session(s) = self.assigner else {
            unreachable!("only session windows merge")
        };
        let fresh = s.assign_window(time);
        let (watermark, lateness) = (self.watermark, self.lateness());
        let mut record = Some(record);
        let WindowOp {
            contents,
            agg,
            func,
            timers,
            ..
        } = self;
        let contents = contents.as_mut().ok_or_else(not_open)?;
        let late = contents.update(&key, kg, |list| {
            let mut merged = fresh;
            let mut absorbed = 0;
            for (w, _) in list.iter() {
                if w.intersects(&fresh) {
                    merged = merged.cover(w);
                    absorbed += 1;
                }
            }
            if cleanup_time(&merged, lateness) <= watermark {
                return Ok(true);
            }
            let value = record.take().ok_or_else(record_gone)?;
            let fire_now = merged.max_timestamp() <= watermark;
            if absorbed == 0 {
                let acc = agg.add(value, agg.create_accumulator());
                if fire_now {
                    func.apply(&key, &merged, agg.get_result(&acc), out)?;
                }
                timers.push(next_due(&merged, watermark, lateness), kg, key.clone());
                list.push((merged, acc));
                return Ok(false);
            }
            // Merge the absorbed accumulators in the key's window order, then add the element.
            let (all_unfired, acc) = if absorbed == 1 {
                // The common case (an element extends its session): no allocation.
                let i = list
                    .iter()
                    .position(|(w, _)| w.intersects(&fresh))
                    .ok_or_else(|| OperatorError::failed("session window to merge not found"))?;
                let (w, a) = list.swap_remove(i);
                (w.max_timestamp() > watermark, a)
            } else {
                let mut taken: Vec<(TimeWindow, ACC)> = Vec::with_capacity(absorbed);
                let mut i = 0;
                while i < list.len() {
                    if list[i].0.intersects(&fresh) {
                        taken.push(list.swap_remove(i));
                    } else {
                        i += 1;
                    }
                }
                // Accumulators merge in window order.
                taken.sort_by_key(|(w, _)| *w);
                let all_unfired = taken.iter().all(|(w, _)| w.max_timestamp() > watermark);
                let acc = taken
                    .into_iter()
                    .map(|(_, a)| a)
                    .reduce(|prev, a| agg.merge(prev, a))
                    .ok_or_else(|| OperatorError::failed("session windows to merge not found"))?;
                (all_unfired, acc)
            };
            let acc = agg.add(value, acc);
            if fire_now {
                func.apply(&key, &merged, agg.get_result(&acc), out)?;
            }
            // Absorbed windows that had not fired left entries inside `merged`, which re-arm
            // it when due; otherwise it needs its own.
            if fire_now || !all_unfired {
                timers.push(next_due(&merged, watermark, lateness), kg, key.clone());
            }
            list.push((merged, acc));
            Ok(false)
        })?;
        match record {
            Some(record) if late && is_element_late(time, self.watermark, self.lateness()) => {
                self.on_late(record, out)
            }
            _ => Ok(()),
        }
    }

    /// Fires and cleans up every window that is due at `now`.
    fn fire_timers(&mut self, now: i64, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        let lateness = self.lateness();
        let merging = matches!(self.assigner, WindowAssigner::Session(_));
        let WindowOp {
            contents,
            agg,
            func,
            timers,
            ..
        } = self;
        let contents = contents.as_mut().ok_or_else(not_open)?;
        while let Some((ts, due)) = timers.pop_due(now, merging) {
            for (kg, key) in due {
                contents.update(&key, kg, |list| {
                    let mut i = 0;
                    while i < list.len() {
                        let (w, acc) = &list[i];
                        let (end, clean) = (w.max_timestamp(), cleanup_time(w, lateness));
                        if end == ts {
                            func.apply(&key, w, agg.get_result(acc), out)?;
                        }
                        if clean <= ts {
                            list.swap_remove(i);
                            continue;
                        }
                        if end == ts {
                            // Kept for late elements until its cleanup time.
                            timers.push(clean, kg, key.clone());
                        } else if merging && w.start <= ts && ts < end {
                            // The entry of a session this one absorbed: due at its own end.
                            timers.push(end, kg, key.clone());
                        }
                        i += 1;
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }
}

/// The element was handed to a window already: a bug in the assignment loop, which fails the
/// task rather than drop the element.
fn record_gone() -> OperatorError {
    OperatorError::failed("window operator: the element was already used")
}

/// When a live window is next due: its end − 1 until that passed, then its cleanup time.
fn next_due(w: &TimeWindow, now: i64, lateness: i64) -> i64 {
    if w.max_timestamp() > now {
        w.max_timestamp()
    } else {
        cleanup_time(w, lateness)
    }
}

impl<K, IN, ACC, R, OUT, KS, TS, A, F> Operator<IN, OUT>
    for WindowOp<K, IN, ACC, R, OUT, KS, TS, A, F>
where
    K: StateKey,
    IN: Clone + Send,
    ACC: StateValue,
    OUT: Send,
    R: Send,
    KS: Fn(&IN) -> K + Send,
    TS: Fn(&IN) -> i64 + Send,
    A: AggregateFunction<IN, ACC, R>,
    F: WindowFunction<K, R, OUT>,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.contents = Some(WindowContents::open(&self.config, ctx)?);
        self.metrics = crate::services::task_metrics(ctx);
        Ok(())
    }

    fn process(&mut self, record: IN, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        let event_time = self.assigner.is_event_time();
        if !event_time && !self.timers.is_empty() {
            let now = (self.clock)();
            self.fire_timers(now, out)?;
        }
        let time = if event_time {
            (self.time_of)(&record)
        } else {
            (self.clock)()
        };
        let key = (self.key_of)(&record);
        let kg = (self.config.key_group_of)(&key);
        if matches!(self.assigner, WindowAssigner::Session(_)) {
            return self.process_merging(record, key, kg, time, out);
        }
        let mut windows = std::mem::take(&mut self.scratch);
        self.assigner.assign(time, &mut windows);
        let Some(last_live) = windows.iter().rposition(|w| !self.window_is_late(w)) else {
            self.scratch = windows;
            return if is_element_late(time, self.watermark, self.lateness()) {
                self.on_late(record, out)
            } else {
                Ok(())
            };
        };
        let now = self.current_time();
        let (watermark, lateness) = (self.watermark, self.lateness());
        let WindowOp {
            contents,
            agg,
            func,
            timers,
            ..
        } = self;
        let contents = contents.as_mut().ok_or_else(not_open)?;
        let mut record = Some(record);
        let r = contents.update_some(&key, kg, Some(&windows), |list| {
            for (i, w) in windows.iter().enumerate() {
                if event_time && cleanup_time(w, lateness) <= watermark {
                    continue;
                }
                let value = if i == last_live {
                    record.take().ok_or_else(record_gone)?
                } else {
                    record.clone().ok_or_else(record_gone)?
                };
                // Late but within the allowed lateness: fire again with the element.
                let fire_now = event_time && w.max_timestamp() <= now;
                match list.iter_mut().find(|(x, _)| x == w) {
                    Some((_, acc)) => {
                        let old = std::mem::replace(acc, agg.create_accumulator());
                        *acc = agg.add(value, old);
                        if fire_now {
                            func.apply(&key, w, agg.get_result(acc), out)?;
                        }
                    }
                    None => {
                        let acc = agg.add(value, agg.create_accumulator());
                        if fire_now {
                            func.apply(&key, w, agg.get_result(&acc), out)?;
                        }
                        let due = if event_time {
                            next_due(w, now, lateness)
                        } else {
                            w.max_timestamp()
                        };
                        timers.push(due, kg, key.clone());
                        list.push((*w, acc));
                    }
                }
            }
            Ok(())
        });
        self.scratch = windows;
        r
    }

    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError> {
        if self.assigner.is_event_time() && watermark.0 > self.watermark {
            self.watermark = watermark.0;
            self.fire_timers(watermark.0, out)?;
        }
        out.emit_watermark(watermark)
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        let contents = self.contents.as_ref().ok_or_else(not_open)?;
        let fired_up_to = if self.assigner.is_event_time() {
            self.watermark
        } else {
            i64::MIN
        };
        let lateness = self.lateness();
        window_state::snapshot(contents, fired_up_to, |w| cleanup_time(w, lateness)).map(Some)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        let contents = self.contents.as_mut().ok_or_else(not_open)?;
        window_state::restore(contents, &mut self.timers, &self.config.key_groups, parts)
    }

    fn tick(&mut self, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        if !self.assigner.is_event_time() && !self.timers.is_empty() {
            let now = (self.clock)();
            self.fire_timers(now, out)?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        // Event-time windows all fired at the final watermark; processing-time windows that are
        // due fire, later ones are dropped (Flink quiesces processing time at end of input).
        self.tick(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_state::StateBackendKind;
    use sluice_types::VecCollector;

    type Out = (u32, i64, i64, u64); // key, start, end, count

    fn emit(
        k: &u32,
        w: &TimeWindow,
        n: u64,
        out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        out.collect((*k, w.start, w.end, n))
    }

    struct Count;
    impl AggregateFunction<(u32, i64), u64, u64> for Count {
        fn create_accumulator(&self) -> u64 {
            0
        }
        fn add(&self, _: (u32, i64), a: u64) -> u64 {
            a + 1
        }
        fn merge(&self, a: u64, b: u64) -> u64 {
            a + b
        }
        fn get_result(&self, a: &u64) -> u64 {
            *a
        }
    }

    fn op(assigner: WindowAssigner, backend: StateBackendKind) -> impl Operator<(u32, i64), Out> {
        // No allowed lateness: the operator's default.
        lateness_op(assigner, backend, 0)
    }

    fn ctx() -> OperatorContext {
        OperatorContext {
            operator_name: "Window".into(),
            task_name: "Window".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 4,
            operator_id: "op".into(),
            services: sluice_types::ServicesHandle::none(),
            options: Vec::new(),
        }
    }

    fn backends() -> Vec<StateBackendKind> {
        let dir = std::env::temp_dir().join(format!("sluice-window-test-{}", std::process::id()));
        vec![StateBackendKind::Memory, StateBackendKind::Lsm { dir }]
    }

    #[test]
    fn tumbling_windows_fire_when_the_watermark_reaches_end_minus_one() {
        for backend in backends() {
            let a = WindowAssigner::Tumbling(TumblingEventTimeWindows::of(10).unwrap());
            let mut op = op(a, backend);
            let mut out = VecCollector::default();
            for r in [(1, 0), (1, 9), (1, 10), (2, 5)] {
                op.process(r, &mut out).unwrap();
            }
            op.on_watermark(Watermark(8), &mut out).unwrap();
            assert!(out.records.is_empty(), "window [0,10) ends at 9");
            op.on_watermark(Watermark(9), &mut out).unwrap();
            out.records.sort();
            assert_eq!(out.records, vec![(1, 0, 10, 2), (2, 0, 10, 1)]);
            op.on_watermark(Watermark::MAX, &mut out).unwrap();
            assert_eq!(out.records[2], (1, 10, 20, 1));
            assert_eq!(
                out.watermarks,
                vec![Watermark(8), Watermark(9), Watermark::MAX]
            );
        }
    }

    #[test]
    fn sliding_windows_count_an_element_in_each_of_its_windows() {
        let a = WindowAssigner::Sliding(SlidingEventTimeWindows::of(10, 5).unwrap());
        let mut op = op(a, StateBackendKind::Memory);
        let mut out = VecCollector::default();
        op.process((1, 7), &mut out).unwrap();
        op.on_watermark(Watermark::MAX, &mut out).unwrap();
        assert_eq!(out.records, vec![(1, 0, 10, 1), (1, 5, 15, 1)]);
    }

    #[test]
    fn late_elements_are_dropped_and_counted_or_refire_within_lateness() {
        let a = WindowAssigner::Tumbling(TumblingEventTimeWindows::of(10).unwrap());
        let mut op = op(a, StateBackendKind::Memory);
        let mut out = VecCollector::default();
        op.process((1, 3), &mut out).unwrap();
        op.on_watermark(Watermark(9), &mut out).unwrap();
        op.process((1, 4), &mut out).unwrap(); // window [0,10) closed: dropped
        assert_eq!(out.records, vec![(1, 0, 10, 1)]);

        let config = KeyedStateConfig {
            backend: StateBackendKind::Memory,
            key_group_of: Arc::new(|k: &u32| *k % 4),
            key_groups: 0..=3,
        };
        let mut op = WindowOp::new(
            |r: &(u32, i64)| r.0,
            |r: &(u32, i64)| r.1,
            config,
            a,
            Count,
            emit,
        )
        .with_allowed_lateness(5);
        op.open(&ctx()).unwrap();
        let mut out = VecCollector::default();
        op.process((1, 3), &mut out).unwrap();
        op.on_watermark(Watermark(9), &mut out).unwrap();
        op.process((1, 4), &mut out).unwrap(); // within lateness: fires again with 2
        op.on_watermark(Watermark(14), &mut out).unwrap(); // cleanup at 9 + 5
        op.process((1, 5), &mut out).unwrap(); // now late: dropped
        op.on_watermark(Watermark::MAX, &mut out).unwrap();
        assert_eq!(out.records, vec![(1, 0, 10, 1), (1, 0, 10, 2)]);
        assert_eq!(op.late_dropped(), 1);
    }

    #[test]
    fn sessions_merge_when_they_touch_and_not_across_a_larger_gap() {
        let a = WindowAssigner::Session(EventTimeSessionWindows::with_gap(10).unwrap());
        for backend in backends() {
            let mut op = op(a, backend);
            let mut out = VecCollector::default();
            // 0 -> [0,10); 10 touches it -> [0,20); 31 -> [31,41), apart; 25 -> [25,35) stays
            // clear of [0,20) but overlaps [31,41) -> [25,41).
            for r in [(1, 0), (1, 10), (1, 31), (1, 25)] {
                op.process(r, &mut out).unwrap();
            }
            op.on_watermark(Watermark::MAX, &mut out).unwrap();
            assert_eq!(out.records, vec![(1, 0, 20, 2), (1, 25, 41, 2)]);
        }
    }

    #[test]
    fn a_session_bridging_two_sessions_merges_all_three() {
        let a = WindowAssigner::Session(EventTimeSessionWindows::with_gap(10).unwrap());
        let mut op = op(a, StateBackendKind::Memory);
        let mut out = VecCollector::default();
        // [0,10) and [20,30); the element at 10 opens [10,20), which touches both.
        for r in [(1, 0), (1, 20), (1, 10)] {
            op.process(r, &mut out).unwrap();
        }
        op.on_watermark(Watermark::MAX, &mut out).unwrap();
        assert_eq!(out.records, vec![(1, 0, 30, 3)]);
    }

    #[test]
    fn processing_time_windows_fire_on_the_clock() {
        let now = Arc::new(std::sync::atomic::AtomicI64::new(100));
        let n2 = now.clone();
        let config = KeyedStateConfig {
            backend: StateBackendKind::Memory,
            key_group_of: Arc::new(|k: &u32| *k % 4),
            key_groups: 0..=3,
        };
        let mut op = WindowOp::new(
            |r: &(u32, i64)| r.0,
            |r: &(u32, i64)| r.1,
            config,
            WindowAssigner::ProcessingTumbling {
                size: 50,
                offset: 0,
            },
            Count,
            emit,
        )
        .with_clock(Arc::new(move || {
            n2.load(std::sync::atomic::Ordering::Relaxed)
        }));
        op.open(&ctx()).unwrap();
        let mut out = VecCollector::default();
        op.process((1, -5), &mut out).unwrap();
        op.process((1, 999), &mut out).unwrap();
        op.tick(&mut out).unwrap();
        assert!(out.records.is_empty());
        now.store(150, std::sync::atomic::Ordering::Relaxed);
        op.tick(&mut out).unwrap();
        assert_eq!(out.records, vec![(1, 100, 150, 2)]);
    }

    fn lateness_op(
        assigner: WindowAssigner,
        backend: StateBackendKind,
        lateness: i64,
    ) -> impl Operator<(u32, i64), Out> {
        let config = KeyedStateConfig {
            backend,
            key_group_of: Arc::new(|k: &u32| *k % 4),
            key_groups: 0..=3,
        };
        let mut op = WindowOp::new(
            |r: &(u32, i64)| r.0,
            |r: &(u32, i64)| r.1,
            config,
            assigner,
            Count,
            emit,
        )
        .with_allowed_lateness(lateness);
        op.open(&ctx()).unwrap();
        op
    }

    #[test]
    fn a_late_element_merging_a_fired_session_fires_the_merged_session_once_at_its_end() {
        let a = WindowAssigner::Session(EventTimeSessionWindows::with_gap(10).unwrap());
        for backend in backends() {
            let mut op = lateness_op(a, backend, 5);
            let mut out = VecCollector::default();
            op.process((1, 0), &mut out).unwrap(); // [0,10)
            op.on_watermark(Watermark(9), &mut out).unwrap(); // fires [0,10), kept until 14
            op.process((1, 12), &mut out).unwrap(); // [12,22), apart
            op.process((1, 5), &mut out).unwrap(); // [5,15) bridges both: [0,22)
            op.on_watermark(Watermark(20), &mut out).unwrap();
            assert_eq!(out.records, vec![(1, 0, 10, 1)]);
            op.on_watermark(Watermark(21), &mut out).unwrap();
            assert_eq!(out.records, vec![(1, 0, 10, 1), (1, 0, 22, 3)]);
            op.on_watermark(Watermark::MAX, &mut out).unwrap();
            assert_eq!(out.records.len(), 2, "fired once: {:?}", out.records);
        }
    }

    #[test]
    fn a_late_element_in_a_new_window_within_lateness_fires_it_once() {
        let a = WindowAssigner::Tumbling(TumblingEventTimeWindows::of(10).unwrap());
        let mut op = lateness_op(a, StateBackendKind::Memory, 20);
        let mut out = VecCollector::default();
        op.on_watermark(Watermark(15), &mut out).unwrap();
        op.process((1, 3), &mut out).unwrap(); // [0,10) is past its end: fires at once
        assert_eq!(out.records, vec![(1, 0, 10, 1)]);
        op.on_watermark(Watermark(16), &mut out).unwrap();
        op.on_watermark(Watermark::MAX, &mut out).unwrap();
        assert_eq!(
            out.records,
            vec![(1, 0, 10, 1)],
            "not again at the next watermark"
        );
    }

    /// Runs `input` (then a watermark) on `backend`, returns the snapshot.
    fn snapshot_after(
        assigner: WindowAssigner,
        backend: StateBackendKind,
        input: &[(u32, i64)],
        watermark: i64,
    ) -> (Vec<u8>, Vec<Out>) {
        let mut op = lateness_op(assigner, backend, 3);
        let mut out = VecCollector::default();
        for r in input {
            op.process(*r, &mut out).unwrap();
        }
        op.on_watermark(Watermark(watermark), &mut out).unwrap();
        (op.snapshot_state(1).unwrap().unwrap(), out.records)
    }

    #[test]
    fn snapshots_are_the_same_bytes_on_both_backends_and_restore_across_them() {
        let input: Vec<(u32, i64)> = (0..200u32)
            .map(|i| (i % 7, i64::from(i * 37 % 101)))
            .collect();
        for assigner in [
            WindowAssigner::Sliding(SlidingEventTimeWindows::of(20, 5).unwrap()),
            WindowAssigner::Session(EventTimeSessionWindows::with_gap(4).unwrap()),
        ] {
            let mut snaps = Vec::new();
            for backend in backends() {
                snaps.push(snapshot_after(assigner, backend, &input, 50));
            }
            assert_eq!(
                snaps[0].0, snaps[1].0,
                "{assigner:?}: snapshot bytes differ"
            );
            let mut fired = snaps[0].1.clone();
            fired.sort();
            let mut other = snaps[1].1.clone();
            other.sort();
            assert_eq!(fired, other);
            // The whole run's output equals the output before the snapshot plus that of a
            // restored operator (on the other backend) finishing the run.
            let (mut whole, mut whole_out) = (
                lateness_op(assigner, StateBackendKind::Memory, 3),
                VecCollector::default(),
            );
            for r in &input {
                whole.process(*r, &mut whole_out).unwrap();
            }
            whole.on_watermark(Watermark(50), &mut whole_out).unwrap();
            whole.on_watermark(Watermark::MAX, &mut whole_out).unwrap();
            for (i, backend) in backends().into_iter().enumerate() {
                let mut restored = lateness_op(assigner, backend, 3);
                restored
                    .restore_state(&[(0, snaps[1 - i].0.clone())])
                    .unwrap();
                let mut out = VecCollector::default();
                restored.on_watermark(Watermark(50), &mut out).unwrap();
                restored.on_watermark(Watermark::MAX, &mut out).unwrap();
                let mut all = snaps[1 - i].1.clone();
                all.extend(out.records);
                all.sort();
                let mut expected = whole_out.records.clone();
                expected.sort();
                assert_eq!(all, expected, "{assigner:?} restored on backend {i}");
            }
        }
    }
}
