//! Keyed windows (Flink's `WindowOperator` with the default triggers): tumbling, sliding and
//! session windows in event time, tumbling and sliding in processing time, with incremental
//! aggregation, allowed lateness and a late-data side output.

use std::marker::PhantomData;
use std::sync::Arc;

use super::aggregate::not_open;
use sluice_types::{Collector, CollectorExt, Operator, OperatorContext, OperatorError, Watermark};

use crate::operators::keyed_process::{system_time_ms, ProcessingClock};
use crate::state::{
    instance_dir_name, AggregateFunction, KeyedStateConfig, KeyedStateStore, StateKey, StateValue,
    TimerService,
};
use crate::time::windows::{
    cleanup_time, is_element_late, window_start_with_offset, EventTimeSessionWindows,
    SlidingEventTimeWindows, TimeWindow, TumblingEventTimeWindows, WindowError,
};

/// Which windows an element belongs to, and on which clock they close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowAssigner {
    Tumbling(TumblingEventTimeWindows),
    Sliding(SlidingEventTimeWindows),
    Session(EventTimeSessionWindows),
    /// Tumbling windows over processing time (`size`, `offset` in ms).
    ProcessingTumbling {
        size: i64,
        offset: i64,
    },
    /// Sliding windows over processing time.
    ProcessingSliding {
        size: i64,
        slide: i64,
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
            Self::Sliding(s) => out.extend(s.assign_windows(time)),
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

const CONTENTS: &str = "window-contents";

/// The operator's type parameters that no field holds.
type Types<IN, ACC, R, OUT> = PhantomData<fn(IN, ACC) -> (R, OUT)>;

/// The window operator. Per key, each window's accumulator lives in keyed state (a map from
/// `(start, end)` to the accumulator, so both backends hold it by key group); a timer per
/// `(key, window end − 1)` fires the window when the watermark (or the processing clock)
/// reaches it, and a timer at the cleanup time (`max timestamp + allowed lateness`) drops it.
///
/// Rules (Flink's `WindowOperator`, `EventTimeTrigger`):
/// - an element whose windows are all late (`cleanup time ≤ watermark`) is skipped; if it is
///   late itself (`ts + lateness ≤ watermark`) it goes to the late output, or is counted in
///   `numLateRecordsDropped`;
/// - an element added to a window whose end already passed the watermark, but within the
///   allowed lateness, fires that window again at once (with the updated result);
/// - session windows merge with every window of the key they overlap or touch; their
///   accumulators merge with [`AggregateFunction::merge`].
pub struct WindowOp<K, IN, ACC, R, OUT, KS, TS, A, F> {
    key_of: KS,
    time_of: TS,
    config: KeyedStateConfig<K>,
    assigner: WindowAssigner,
    allowed_lateness: i64,
    agg: A,
    func: F,
    late: Option<LateOutput<IN, OUT>>,
    store: Option<KeyedStateStore<K>>,
    timers: TimerService<K>,
    clock: ProcessingClock,
    watermark: i64,
    scratch: Vec<TimeWindow>,
    late_dropped: u64,
    metrics: Option<Arc<crate::TaskMetrics>>,
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
        let first = *config.key_groups.start();
        WindowOp {
            key_of,
            time_of,
            config,
            assigner,
            allowed_lateness: 0,
            agg,
            func,
            late: None,
            store: None,
            timers: TimerService::new(first),
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

    fn register(&mut self, key: &K, kg: u32, w: &TimeWindow) {
        self.timers.register(key, kg, w.max_timestamp());
        let cleanup = cleanup_time(w, self.lateness());
        if cleanup != w.max_timestamp() {
            self.timers.register(key, kg, cleanup);
        }
    }

    fn unregister(&mut self, key: &K, kg: u32, w: &TimeWindow) {
        self.timers.delete(key, kg, w.max_timestamp());
        self.timers
            .delete(key, kg, cleanup_time(w, self.lateness()));
    }

    fn emit(
        &mut self,
        key: &K,
        w: &TimeWindow,
        acc: &ACC,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError> {
        let result = self.agg.get_result(acc);
        self.func.apply(key, w, result, out)
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
        let store = self.store.as_mut().ok_or_else(not_open)?;
        let existing = store.map_state::<(i64, i64), ACC>(CONTENTS).entries()?;
        let mut merged = fresh;
        let mut absorbed = Vec::new();
        for ((start, end), acc) in existing {
            let w = TimeWindow::new(start, end);
            if w.intersects(&fresh) {
                merged = merged.cover(&w);
                absorbed.push((w, acc));
            }
        }
        if self.window_is_late(&merged) {
            return if is_element_late(time, self.watermark, self.lateness()) {
                self.on_late(record, out)
            } else {
                Ok(())
            };
        }
        let mut acc: Option<ACC> = None;
        for (w, a) in absorbed {
            self.store
                .as_mut()
                .ok_or_else(not_open)?
                .map_state::<(i64, i64), ACC>(CONTENTS)
                .remove(&(w.start, w.end))?;
            self.unregister(&key, kg, &w);
            acc = Some(match acc {
                None => a,
                Some(prev) => self.agg.merge(prev, a),
            });
        }
        let acc = self
            .agg
            .add(record, acc.unwrap_or_else(|| self.agg.create_accumulator()));
        self.register(&key, kg, &merged);
        let fire_now = merged.max_timestamp() <= self.watermark;
        if fire_now {
            self.emit(&key, &merged, &acc, out)?;
        }
        self.store
            .as_mut()
            .ok_or_else(not_open)?
            .map_state::<(i64, i64), ACC>(CONTENTS)
            .put((merged.start, merged.end), acc)?;
        Ok(())
    }

    /// Fires and cleans up every window whose timer is due at `now`.
    fn fire_timers(&mut self, now: i64, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        if self.timers.next_timestamp().is_none_or(|t| t > now) {
            return Ok(());
        }
        let lateness = self.lateness();
        for (ts, kg, key) in self.timers.take_due(now) {
            let store = self.store.as_mut().ok_or_else(not_open)?;
            store.set_current_key(key.clone(), kg)?;
            let entries = store.map_state::<(i64, i64), ACC>(CONTENTS).entries()?;
            for ((start, end), acc) in entries {
                let w = TimeWindow::new(start, end);
                if w.max_timestamp() == ts {
                    self.emit(&key, &w, &acc, out)?;
                }
                if cleanup_time(&w, lateness) <= ts {
                    self.store
                        .as_mut()
                        .ok_or_else(not_open)?
                        .map_state::<(i64, i64), ACC>(CONTENTS)
                        .remove(&(start, end))?;
                }
            }
        }
        Ok(())
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
        let mut store = KeyedStateStore::open(
            &self.config.backend,
            &instance_dir_name(&ctx.operator_name, ctx.subtask_index),
            self.config.key_groups.clone(),
        )?;
        let task = crate::services::task_metrics(ctx);
        store.attach_metrics(task.clone());
        self.metrics = task;
        self.store = Some(store);
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
        self.store
            .as_mut()
            .ok_or_else(not_open)?
            .set_current_key(key.clone(), kg)?;
        if matches!(self.assigner, WindowAssigner::Session(_)) {
            return self.process_merging(record, key, kg, time, out);
        }
        let mut windows = std::mem::take(&mut self.scratch);
        self.assigner.assign(time, &mut windows);
        let now = self.current_time();
        let mut record = Some(record);
        let last_live = windows.iter().rposition(|w| !self.window_is_late(w));
        let Some(last_live) = last_live else {
            self.scratch = windows;
            let record = record.take().expect("record not consumed");
            return if is_element_late(time, self.watermark, self.lateness()) {
                self.on_late(record, out)
            } else {
                Ok(())
            };
        };
        for (i, w) in windows.iter().enumerate() {
            if self.window_is_late(w) {
                continue;
            }
            let value = if i == last_live {
                record.take().expect("record used once")
            } else {
                record.clone().expect("record still here")
            };
            let store = self.store.as_mut().ok_or_else(not_open)?;
            let mut state = store.map_state::<(i64, i64), ACC>(CONTENTS);
            let slot = (w.start, w.end);
            let (acc, fresh) = match state.get(&slot)? {
                Some(acc) => (acc, false),
                None => (self.agg.create_accumulator(), true),
            };
            let acc = self.agg.add(value, acc);
            if event_time && w.max_timestamp() <= now {
                // Late but within the allowed lateness: fire again with the element.
                self.emit(&key, w, &acc, out)?;
            }
            self.store
                .as_mut()
                .ok_or_else(not_open)?
                .map_state::<(i64, i64), ACC>(CONTENTS)
                .put(slot, acc)?;
            if fresh {
                self.register(&key, kg, w);
            }
        }
        self.scratch = windows;
        Ok(())
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
        let store = self.store.as_ref().ok_or_else(not_open)?;
        crate::state::snapshot::snapshot_keyed(store, &[&self.timers]).map(Some)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        let store = self.store.as_mut().ok_or_else(not_open)?;
        crate::state::snapshot::restore_keyed(store, &mut [&mut self.timers], parts)
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
    use crate::state::StateBackendKind;
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
        );
        op.open(&ctx()).unwrap();
        op
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
}
