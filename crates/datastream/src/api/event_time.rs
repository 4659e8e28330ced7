//! Event time in the DataStream API: watermark strategies, timestamps, and keyed windows.
//!
//! ```
//! use sluice_datastream::{StreamEnv, WatermarkStrategy, WindowAssigner};
//! let env = StreamEnv::new();
//! env.set_parallelism(1);
//! // (user, time in ms)
//! let clicks = env.from_vec(vec![(1u32, 1_000i64), (1, 4_000), (2, 9_999), (1, 12_000)]);
//! let counts = clicks
//!     .assign_timestamps_and_watermarks(WatermarkStrategy::for_bounded_out_of_orderness(
//!         1_000,
//!         |c: &(u32, i64)| c.1,
//!     ))
//!     .key_by(|c: &(u32, i64)| c.0)
//!     .window(WindowAssigner::tumbling(10_000).unwrap())
//!     .count()
//!     .collect();
//! env.execute().unwrap();
//! let mut got: Vec<_> = counts.handle.take().into_iter().map(|r| (r.key, r.window.start, r.value)).collect();
//! got.sort();
//! assert_eq!(got, vec![(1, 0, 2), (1, 10_000, 1), (2, 0, 1)]);
//! ```

use std::sync::Arc;
use std::time::Duration;

use sluice_runtime::operators::{
    LateOutput, TimestampFn, WatermarkAssignerOp, WindowAssigner, WindowOp,
};
use sluice_runtime::state::{AggregateFunction, StateKey, StateValue};
use sluice_runtime::time::watermarks::BoundedOutOfOrderness;
use sluice_runtime::time::windows::TimeWindow;
use sluice_types::{Collector, Data, OperatorError};

use super::keyed_state_api::state_config;
use crate::partition::JavaHash;
use crate::{DataStream, KeySelector, KeyedProcessFunction, KeyedStream};

/// Flink's default `pipeline.auto-watermark-interval`.
pub const DEFAULT_WATERMARK_INTERVAL: Duration = Duration::from_millis(200);

/// How a stream gets event time: a timestamp per record and a watermark generator
/// (Flink's `WatermarkStrategy`).
pub struct WatermarkStrategy<T> {
    out_of_orderness_ms: u64,
    idleness_ms: Option<u64>,
    interval: Duration,
    timestamp: TimestampFn<T>,
}

impl<T> Clone for WatermarkStrategy<T> {
    fn clone(&self) -> Self {
        WatermarkStrategy {
            out_of_orderness_ms: self.out_of_orderness_ms,
            idleness_ms: self.idleness_ms,
            interval: self.interval,
            timestamp: self.timestamp.clone(),
        }
    }
}

impl<T> WatermarkStrategy<T> {
    /// `forBoundedOutOfOrderness(d)`: the watermark trails the largest timestamp seen by
    /// `d + 1` ms, so records up to `d` ms out of order are still on time.
    pub fn for_bounded_out_of_orderness<F>(max_out_of_orderness_ms: u64, timestamp: F) -> Self
    where
        F: Fn(&T) -> i64 + Send + Sync + 'static,
    {
        WatermarkStrategy {
            out_of_orderness_ms: max_out_of_orderness_ms,
            idleness_ms: None,
            interval: DEFAULT_WATERMARK_INTERVAL,
            timestamp: Arc::new(timestamp),
        }
    }

    /// `forMonotonousTimestamps()`: timestamps never decrease (out-of-orderness 0).
    pub fn for_monotonous_timestamps<F>(timestamp: F) -> Self
    where
        F: Fn(&T) -> i64 + Send + Sync + 'static,
    {
        Self::for_bounded_out_of_orderness(0, timestamp)
    }

    /// `withIdleness(t)`: a subtask without records for `t` ms stops holding back the
    /// watermark downstream until it emits again.
    pub fn with_idleness(mut self, timeout_ms: u64) -> Self {
        self.idleness_ms = Some(timeout_ms);
        self
    }

    /// How often watermarks are emitted (processing time; default 200 ms).
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }
}

impl<T: Data> DataStream<T> {
    /// Extracts timestamps and emits watermarks here (operator `Timestamps/Watermarks`, chained
    /// to its input). Upstream watermarks are replaced; a bounded input still ends with the
    /// maximal watermark, so every window fires.
    pub fn assign_timestamps_and_watermarks(
        &self,
        strategy: WatermarkStrategy<T>,
    ) -> DataStream<T> {
        let s = strategy.clone();
        let mut out = self.transform("Timestamps/Watermarks", move |_| {
            let mut generator = BoundedOutOfOrderness::new(s.out_of_orderness_ms);
            if let Some(idle) = s.idleness_ms {
                generator = generator.with_idleness(idle);
            }
            let ts = s.timestamp.clone();
            WatermarkAssignerOp::new(move |r: &T| ts(r), generator, s.interval)
        });
        out.timestamps = Some(strategy.timestamp);
        out
    }

    /// Declares how to read each record's event timestamp without generating watermarks (the
    /// watermarks from upstream keep flowing). Use it after a `map` that kept the time in the
    /// record, or on window results.
    pub fn with_timestamps<F>(&self, timestamp: F) -> DataStream<T>
    where
        F: Fn(&T) -> i64 + Send + Sync + 'static,
    {
        let mut out = self.clone();
        out.timestamps = Some(Arc::new(timestamp));
        out
    }

    /// The stream's timestamp function, if it has event time.
    pub fn timestamps(&self) -> Option<TimestampFn<T>> {
        self.timestamps.clone()
    }
}

/// What `aggregate_with` and friends call per window firing: `f(key, window, result, out)`
/// (Flink's `ProcessWindowFunction` over an incremental result). Any such closure is one.
pub trait WindowFn<K, R, O>:
    FnMut(&K, &TimeWindow, R, &mut dyn Collector<O>) -> Result<(), OperatorError>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<K, R, O, F> WindowFn<K, R, O> for F where
    F: FnMut(&K, &TimeWindow, R, &mut dyn Collector<O>) -> Result<(), OperatorError>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// One window's result: its key, the window and the aggregate. Its event timestamp is the
/// window's `max_timestamp()` (`end − 1`), as Flink stamps window results.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WindowResult<K, R> {
    /// The key whose records the window holds.
    pub key: K,
    /// The window's time span, `[start, end)`.
    pub window: TimeWindow,
    /// What the window function made of the window's records.
    pub value: R,
}

/// A keyed stream cut into windows (Flink's `WindowedStream`).
pub struct WindowedStream<K, T, KS> {
    keyed: KeyedStream<K, T, KS>,
    assigner: WindowAssigner,
    allowed_lateness: i64,
}

/// Main output or late element, before the side output is split off.
#[derive(Clone)]
enum Tagged<O, T> {
    Main(O),
    Late(T),
}

impl<K, T, KS> KeyedStream<K, T, KS>
where
    K: JavaHash + StateKey + Sync,
    T: Data,
    KS: KeySelector<T, K>,
{
    /// Windows over this keyed stream. Event-time assigners need the stream to have timestamps
    /// (`assign_timestamps_and_watermarks` or `with_timestamps` upstream).
    pub fn window(&self, assigner: WindowAssigner) -> WindowedStream<K, T, KS> {
        if assigner.is_event_time() && self.stream.timestamps.is_none() {
            self.stream.env.record_error(format!(
                "window({}) needs event timestamps: call assign_timestamps_and_watermarks() or with_timestamps() before key_by()",
                assigner.describe()
            ));
        }
        WindowedStream {
            keyed: self.clone(),
            assigner,
            allowed_lateness: 0,
        }
    }

    /// [`process`](Self::process) with event time: the function sees each element's timestamp
    /// and the watermark, and may register event-time timers, which fire as the watermark
    /// passes them (all remaining ones at the end of a bounded input).
    pub fn process_event_time<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Data,
        F: KeyedProcessFunction<K, T, O> + Clone + Sync + 'static,
    {
        self.process_with_timestamps(f, self.stream.timestamps.clone())
    }
}

/// Counts elements (the accumulator of [`WindowedStream::count`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct CountAggregate;

impl<T> AggregateFunction<T, u64, u64> for CountAggregate {
    fn create_accumulator(&self) -> u64 {
        0
    }
    fn add(&self, _: T, acc: u64) -> u64 {
        acc + 1
    }
    fn merge(&self, a: u64, b: u64) -> u64 {
        a + b
    }
    fn get_result(&self, acc: &u64) -> u64 {
        *acc
    }
}

/// Reduces elements with a function (the accumulator of [`WindowedStream::reduce`]).
pub struct ReduceAggregate<F>(pub F);

impl<T: Clone, F: Fn(T, T) -> T + Send + Sync> AggregateFunction<T, Option<T>, T>
    for ReduceAggregate<F>
{
    fn create_accumulator(&self) -> Option<T> {
        None
    }
    fn add(&self, v: T, acc: Option<T>) -> Option<T> {
        Some(match acc {
            None => v,
            Some(a) => (self.0)(a, v),
        })
    }
    fn merge(&self, a: Option<T>, b: Option<T>) -> Option<T> {
        match (a, b) {
            (Some(a), Some(b)) => Some((self.0)(a, b)),
            (a, b) => a.or(b),
        }
    }
    #[allow(
        clippy::expect_used,
        reason = "a window exists only once an element was added, and `add` always yields Some"
    )]
    fn get_result(&self, acc: &Option<T>) -> T {
        acc.clone().expect("a window holds at least one element")
    }
}

/// Collects a window's elements (the accumulator of [`WindowedStream::process`]).
pub struct ListAggregate;

impl<T: Clone> AggregateFunction<T, Vec<T>, Vec<T>> for ListAggregate {
    fn create_accumulator(&self) -> Vec<T> {
        Vec::new()
    }
    fn add(&self, v: T, mut acc: Vec<T>) -> Vec<T> {
        acc.push(v);
        acc
    }
    fn merge(&self, mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
        a.extend(b);
        a
    }
    fn get_result(&self, acc: &Vec<T>) -> Vec<T> {
        acc.clone()
    }
}

impl<K, T, KS> WindowedStream<K, T, KS>
where
    K: JavaHash + StateKey + Sync,
    T: Data,
    KS: KeySelector<T, K>,
{
    /// Keeps each window `lateness_ms` past its end: later elements within it update and re-fire
    /// the window; elements later than that are dropped (or go to the late output).
    pub fn allowed_lateness(mut self, lateness_ms: i64) -> Self {
        self.allowed_lateness = lateness_ms.max(0);
        self
    }

    fn operator_name(&self, function: &str) -> String {
        let trigger = if self.assigner.is_event_time() {
            "EventTimeTrigger"
        } else {
            "ProcessingTimeTrigger"
        };
        format!(
            "Window({}, {trigger}, {function})",
            self.assigner.describe()
        )
    }

    fn build<ACC, R, O, A, F>(
        &self,
        function: &str,
        agg: A,
        f: F,
        late: Option<LateOutput<T, O>>,
    ) -> DataStream<O>
    where
        ACC: StateValue,
        R: Send + 'static,
        O: Data,
        A: AggregateFunction<T, ACC, R> + 'static,
        F: WindowFn<K, R, O>,
    {
        let key = self.keyed.key.clone();
        let backend = self.keyed.stream.env.state_backend();
        let timestamps = self.keyed.stream.timestamps.clone();
        let assigner = self.assigner;
        let lateness = self.allowed_lateness;
        let agg = Arc::new(agg);
        self.keyed
            .stream
            .transform(&self.operator_name(function), move |ctx| {
                let key = key.clone();
                let ts = timestamps.clone();
                let op = WindowOp::new(
                    move |r: &T| key.key_of(r),
                    move |r: &T| ts.as_ref().map_or(i64::MIN, |f| f(r)),
                    state_config::<K>(&backend, ctx),
                    assigner,
                    agg.clone(),
                    f.clone(),
                )
                .with_allowed_lateness(lateness);
                match &late {
                    Some(l) => op.with_late_output(l.clone()),
                    None => op,
                }
            })
    }

    /// Incremental aggregation per window; emits one [`WindowResult`] per window firing.
    /// The result stream has timestamps (`window.max_timestamp()`).
    pub fn aggregate<ACC, R, A>(&self, agg: A) -> DataStream<WindowResult<K, R>>
    where
        ACC: StateValue,
        R: Data,
        A: AggregateFunction<T, ACC, R> + 'static,
    {
        self.build("Aggregate", agg, emit_result::<K, R>, None)
            .with_timestamps(|r: &WindowResult<K, R>| r.window.max_timestamp())
    }

    /// Incremental aggregation, then `f(key, window, result, out)` per firing (Flink's
    /// `aggregate(AggregateFunction, ProcessWindowFunction)`).
    pub fn aggregate_with<ACC, R, O, A, F>(&self, agg: A, f: F) -> DataStream<O>
    where
        ACC: StateValue,
        R: Send + 'static,
        O: Data,
        A: AggregateFunction<T, ACC, R> + 'static,
        F: WindowFn<K, R, O>,
    {
        self.build("Aggregate", agg, f, None)
    }

    /// [`aggregate_with`](Self::aggregate_with) plus the late-data side output (Flink's
    /// `sideOutputLateData`): returns `(results, late elements)`.
    pub fn aggregate_with_late<ACC, R, O, A, F>(
        &self,
        agg: A,
        mut f: F,
    ) -> (DataStream<O>, DataStream<T>)
    where
        ACC: StateValue,
        R: Send + 'static,
        O: Data,
        A: AggregateFunction<T, ACC, R> + 'static,
        F: WindowFn<K, R, O>,
    {
        let tagged = self.build(
            "Aggregate",
            agg,
            move |k: &K, w: &TimeWindow, r: R, out: &mut dyn Collector<Tagged<O, T>>| {
                let mut buf = sluice_types::VecCollector::default();
                f(k, w, r, &mut buf)?;
                for o in buf.records {
                    out.collect(Tagged::Main(o))?;
                }
                Ok(())
            },
            Some(Arc::new(|t: T| Tagged::Late(t))),
        );
        let main = tagged
            .flat_map(|t: Tagged<O, T>| match t {
                Tagged::Main(o) => Some(o),
                Tagged::Late(_) => None,
            })
            .name("Main Output");
        let mut late = tagged
            .flat_map(|t: Tagged<O, T>| match t {
                Tagged::Late(l) => Some(l),
                Tagged::Main(_) => None,
            })
            .name("Late Data");
        late.timestamps = self.keyed.stream.timestamps.clone();
        (main, late)
    }

    /// Counts elements per window.
    pub fn count(&self) -> DataStream<WindowResult<K, u64>> {
        self.aggregate(CountAggregate)
    }

    /// Reduces elements per window with `f`.
    pub fn reduce<F>(&self, f: F) -> DataStream<WindowResult<K, T>>
    where
        T: StateValue,
        F: Fn(T, T) -> T + Send + Sync + 'static,
    {
        self.aggregate(ReduceAggregate(f))
    }

    /// Gives `f` all elements of each window at once (Flink's `process(ProcessWindowFunction)`).
    /// Keeps every element in state until the window fires: prefer `aggregate`.
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        T: StateValue,
        O: Data,
        F: FnMut(&K, &TimeWindow, Vec<T>, &mut dyn Collector<O>) -> Result<(), OperatorError>
            + Clone
            + Send
            + Sync
            + 'static,
    {
        self.build("Process", ListAggregate, f, None)
    }
}

fn emit_result<K: Clone, R>(
    key: &K,
    window: &TimeWindow,
    value: R,
    out: &mut dyn Collector<WindowResult<K, R>>,
) -> Result<(), OperatorError> {
    out.collect(WindowResult {
        key: key.clone(),
        window: *window,
        value,
    })
}
