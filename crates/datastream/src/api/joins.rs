//! Two-input keyed operations: `connect` + [`KeyedCoProcessFunction`] (regular joins),
//! windowed co-group / join, and the interval join.
//!
//! All three are built from one-input parts, as a user could: each side is mapped into
//! [`Either`] (chained to its producer), the two are unioned and keyed by their keys, and one
//! keyed operator sees both sides. The union's input gate takes the minimum watermark over every
//! channel of both inputs, which is Flink's two-input rule (`min(left, right)`).
//!
//! ```
//! use sluice_datastream::{StreamEnv, WatermarkStrategy};
//! let env = StreamEnv::new();
//! env.set_parallelism(2);
//! let ts = |e: &(u32, i64)| e.1;
//! let clicks = env.from_vec(vec![(1u32, 100i64), (1, 5_000), (2, 300)])
//!     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps(ts));
//! let views = env.from_vec(vec![(1u32, 50i64), (2, 2_000)])
//!     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps(ts));
//! // Each click joins the views of the same user at most 1 s earlier.
//! let joined = clicks
//!     .key_by(|c: &(u32, i64)| c.0)
//!     .interval_join(&views.key_by(|v: &(u32, i64)| v.0), -1_000, 0)
//!     .process(|c: &(u32, i64), v: &(u32, i64)| (c.0, c.1, v.1))
//!     .collect();
//! env.execute().unwrap();
//! assert_eq!(joined.handle.take(), vec![(1, 100, 50)]);
//! ```

use std::sync::Arc;

use sluice_runtime::operators::WindowAssigner;
use sluice_runtime::operators::{KeyedProcessFunction, OnTimerContext, ProcessContext};
use sluice_runtime::state::{AggregateFunction, StateKey, StateValue};
use sluice_runtime::time::windows::TimeWindow;
use sluice_types::{Collector, Data, OperatorContext, OperatorError};

use crate::partition::JavaHash;
use crate::{DataStream, KeySelector, KeyedStream};

/// A record of the first (`Left`) or second (`Right`) input of a two-input operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Either<L, R> {
    /// A record of the first input (the stream `connect` or `co_group` was called on).
    Left(L),
    /// A record of the second input (the argument of `connect` or `co_group`).
    Right(R),
}

/// A function over two keyed inputs with shared keyed state and timers (Flink's
/// `KeyedCoProcessFunction`). State and timers are the current key's, as in
/// [`KeyedProcessFunction`].
pub trait KeyedCoProcessFunction<K, L, R, O>: Send {
    /// Runs on the subtask's thread before the first record (Flink's `open`): where a function
    /// reaches its task's services (metrics) through `ctx`.
    fn open(&mut self, _ctx: &OperatorContext) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Handles one record of the first input, under its key.
    fn process_left(
        &mut self,
        value: L,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut dyn Collector<O>,
    ) -> Result<(), OperatorError>;

    /// Handles one record of the second input, under its key.
    fn process_right(
        &mut self,
        value: R,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut dyn Collector<O>,
    ) -> Result<(), OperatorError>;

    /// Called when a timer registered through the context fires (at `timestamp_ms`, for the
    /// key it was registered under). Default: does nothing.
    fn on_timer(
        &mut self,
        _timestamp_ms: i64,
        _ctx: &mut OnTimerContext<'_, K>,
        _out: &mut dyn Collector<O>,
    ) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// Runs a [`KeyedCoProcessFunction`] as a one-input function over [`Either`].
#[derive(Clone)]
struct CoAdapter<F>(F);

impl<K, L, R, O, F> KeyedProcessFunction<K, Either<L, R>, O> for CoAdapter<F>
where
    F: KeyedCoProcessFunction<K, L, R, O>,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.0.open(ctx)
    }

    fn process_element(
        &mut self,
        value: Either<L, R>,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut dyn Collector<O>,
    ) -> Result<(), OperatorError> {
        match value {
            Either::Left(l) => self.0.process_left(l, ctx, out),
            Either::Right(r) => self.0.process_right(r, ctx, out),
        }
    }

    fn on_timer(
        &mut self,
        ts: i64,
        ctx: &mut OnTimerContext<'_, K>,
        out: &mut dyn Collector<O>,
    ) -> Result<(), OperatorError> {
        self.0.on_timer(ts, ctx, out)
    }
}

/// The key of either side of a connected stream: each side's own selector (statically called).
pub struct EitherKey<FL, FR> {
    left: Arc<FL>,
    right: Arc<FR>,
}

impl<K, L, R, FL, FR> KeySelector<Either<L, R>, K> for EitherKey<FL, FR>
where
    FL: KeySelector<L, K>,
    FR: KeySelector<R, K>,
{
    #[inline]
    fn key_of(&self, e: &Either<L, R>) -> K {
        match e {
            Either::Left(l) => self.left.key_of(l),
            Either::Right(r) => self.right.key_of(r),
        }
    }
}

/// Two keyed streams with the same key type, to be processed together.
pub struct ConnectedStreams<K, L, R, FL, FR> {
    both: KeyedStream<K, Either<L, R>, EitherKey<FL, FR>>,
}

impl<K, L, FL> KeyedStream<K, L, FL>
where
    K: JavaHash + StateKey + Sync,
    L: Data,
    FL: KeySelector<L, K>,
{
    /// Both streams, keyed, into one operator: each key's records of both sides meet on the
    /// same subtask (Flink's `connect` of two keyed streams).
    pub fn connect<R: Data, FR: KeySelector<R, K>>(
        &self,
        other: &KeyedStream<K, R, FR>,
    ) -> ConnectedStreams<K, L, R, FL, FR> {
        let left = self.unkeyed.map(Either::<L, R>::Left).name("Left");
        let right = other.unkeyed.map(Either::<L, R>::Right).name("Right");
        let mut both = left.union(&[&right]);
        both.timestamps = match (&self.stream.timestamps, &other.stream.timestamps) {
            (Some(tl), Some(tr)) => {
                let (tl, tr) = (tl.clone(), tr.clone());
                Some(Arc::new(move |e: &Either<L, R>| match e {
                    Either::Left(l) => tl(l),
                    Either::Right(r) => tr(r),
                }))
            }
            _ => None,
        };
        ConnectedStreams {
            both: both.key_by_selector(EitherKey {
                left: self.key.clone(),
                right: other.key.clone(),
            }),
        }
    }

    /// Windowed co-group: per key and window, `f(key, window, lefts, rights, out)` sees all
    /// elements of both sides in the window (either list may be empty).
    pub fn co_group<R, FR>(
        &self,
        other: &KeyedStream<K, R, FR>,
        assigner: WindowAssigner,
    ) -> CoGroupedStreams<K, L, R, FL, FR>
    where
        L: StateValue,
        R: Data + StateValue,
        FR: KeySelector<R, K>,
    {
        CoGroupedStreams {
            both: self.connect(other).both,
            assigner,
        }
    }

    /// Interval join (Flink's `intervalJoin(...).between(lower, upper)`): each left element `l`
    /// meets every right element `r` of the same key with
    /// `l.ts + lower <= r.ts <= l.ts + upper` (both bounds inclusive). Both sides need
    /// timestamps. Elements are buffered until the watermark passes the last time they can
    /// match; an element older than the watermark on arrival is dropped, as in Flink.
    pub fn interval_join<R, FR>(
        &self,
        other: &KeyedStream<K, R, FR>,
        lower_ms: i64,
        upper_ms: i64,
    ) -> IntervalJoin<K, L, R, FL, FR>
    where
        L: StateValue,
        R: Data + StateValue,
        FR: KeySelector<R, K>,
    {
        if lower_ms > upper_ms {
            self.stream.env.record_error(format!(
                "interval_join: lower bound {lower_ms} ms is above the upper bound {upper_ms} ms"
            ));
        }
        if self.stream.timestamps.is_none() || other.stream.timestamps.is_none() {
            self.stream.env.record_error(
                "interval_join needs timestamps on both sides: call assign_timestamps_and_watermarks() or with_timestamps() before key_by()".into(),
            );
        }
        IntervalJoin {
            both: self.connect(other).both,
            lower: lower_ms,
            upper: upper_ms,
        }
    }
}

impl<K, L, R, FL, FR> ConnectedStreams<K, L, R, FL, FR>
where
    K: JavaHash + StateKey + Sync,
    L: Data,
    R: Data,
    FL: KeySelector<L, K>,
    FR: KeySelector<R, K>,
{
    /// Applies `f` (operator name `KeyedCoProcess`). With timestamps on both sides the
    /// function sees them and may use event-time timers.
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Data,
        F: KeyedCoProcessFunction<K, L, R, O> + Clone + Sync + 'static,
    {
        self.both
            .process_event_time(CoAdapter(f))
            .name("KeyedCoProcess")
    }
}

/// Collects both sides of a window (the accumulator of a co-group).
struct CoGroupAggregate;

impl<L: Clone, R: Clone> AggregateFunction<Either<L, R>, (Vec<L>, Vec<R>), (Vec<L>, Vec<R>)>
    for CoGroupAggregate
{
    fn create_accumulator(&self) -> (Vec<L>, Vec<R>) {
        (Vec::new(), Vec::new())
    }
    fn add(&self, v: Either<L, R>, mut acc: (Vec<L>, Vec<R>)) -> (Vec<L>, Vec<R>) {
        match v {
            Either::Left(l) => acc.0.push(l),
            Either::Right(r) => acc.1.push(r),
        }
        acc
    }
    fn merge(&self, mut a: (Vec<L>, Vec<R>), b: (Vec<L>, Vec<R>)) -> (Vec<L>, Vec<R>) {
        a.0.extend(b.0);
        a.1.extend(b.1);
        a
    }
    fn get_result(&self, acc: &(Vec<L>, Vec<R>)) -> (Vec<L>, Vec<R>) {
        acc.clone()
    }
}

/// Two keyed streams cut into the same windows.
pub struct CoGroupedStreams<K, L, R, FL, FR> {
    both: KeyedStream<K, Either<L, R>, EitherKey<FL, FR>>,
    assigner: WindowAssigner,
}

impl<K, L, R, FL, FR> CoGroupedStreams<K, L, R, FL, FR>
where
    K: JavaHash + StateKey + Sync,
    L: Data + StateValue,
    R: Data + StateValue,
    FL: KeySelector<L, K>,
    FR: KeySelector<R, K>,
{
    /// `f(key, window, lefts, rights, out)` once per window that holds any element.
    pub fn apply<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Data,
        F: FnMut(
                &K,
                &TimeWindow,
                Vec<L>,
                Vec<R>,
                &mut dyn Collector<O>,
            ) -> Result<(), OperatorError>
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let mut f = f;
        self.both
            .window(self.assigner)
            .aggregate_with(
                CoGroupAggregate,
                move |k: &K,
                      w: &TimeWindow,
                      (ls, rs): (Vec<L>, Vec<R>),
                      out: &mut dyn Collector<O>| { f(k, w, ls, rs, out) },
            )
            .name("CoGroup")
    }

    /// Windowed inner join: `f(left, right)` for every pair of the same key and window
    /// (Flink's `join(...).where(...).equalTo(...).window(...).apply(JoinFunction)`).
    pub fn join<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Data,
        F: Fn(&L, &R) -> O + Clone + Send + Sync + 'static,
    {
        self.apply(
            move |_k: &K, _w: &TimeWindow, ls: Vec<L>, rs: Vec<R>, out: &mut dyn Collector<O>| {
                for l in &ls {
                    for r in &rs {
                        out.collect(f(l, r))?;
                    }
                }
                Ok(())
            },
        )
        .name("Window Join")
    }
}

/// An interval join awaiting its function.
pub struct IntervalJoin<K, L, R, FL, FR> {
    both: KeyedStream<K, Either<L, R>, EitherKey<FL, FR>>,
    lower: i64,
    upper: i64,
}

impl<K, L, R, FL, FR> IntervalJoin<K, L, R, FL, FR>
where
    K: JavaHash + StateKey + Sync,
    L: Data + StateValue,
    R: Data + StateValue,
    FL: KeySelector<L, K>,
    FR: KeySelector<R, K>,
{
    /// `f(left, right)` for every matching pair (operator name `IntervalJoin`).
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Data,
        F: Fn(&L, &R) -> O + Clone + Send + Sync + 'static,
    {
        self.both
            .process_event_time(IntervalJoinFn {
                lower: self.lower,
                upper: self.upper,
                f,
                _t: std::marker::PhantomData,
            })
            .name("IntervalJoin")
    }
}

struct IntervalJoinFn<L, R, F> {
    lower: i64,
    upper: i64,
    f: F,
    _t: std::marker::PhantomData<fn(L, R)>,
}

impl<L, R, F: Clone> Clone for IntervalJoinFn<L, R, F> {
    fn clone(&self) -> Self {
        IntervalJoinFn {
            lower: self.lower,
            upper: self.upper,
            f: self.f.clone(),
            _t: std::marker::PhantomData,
        }
    }
}

const LEFT: &str = "interval-join-left";
const RIGHT: &str = "interval-join-right";

impl<K, L, R, O, F> KeyedProcessFunction<K, Either<L, R>, O> for IntervalJoinFn<L, R, F>
where
    K: StateKey,
    L: StateValue,
    R: StateValue,
    F: Fn(&L, &R) -> O + Send,
{
    fn process_element(
        &mut self,
        value: Either<L, R>,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut dyn Collector<O>,
    ) -> Result<(), OperatorError> {
        let ts = ctx.timestamp().ok_or_else(|| {
            OperatorError::failed("interval join: an element without a timestamp")
        })?;
        let watermark = ctx.timer_service().current_watermark();
        if ts < watermark {
            return Ok(()); // late, as Flink's IntervalJoinOperator drops it
        }
        match value {
            Either::Left(l) => {
                for (rt, rs) in ctx.map_state::<i64, Vec<R>>(RIGHT).entries()? {
                    if ts.saturating_add(self.lower) <= rt && rt <= ts.saturating_add(self.upper) {
                        for r in &rs {
                            out.collect((self.f)(&l, r))?;
                        }
                    }
                }
                let mut buf = ctx.map_state::<i64, Vec<L>>(LEFT);
                let mut at = buf.get(&ts)?.unwrap_or_default();
                at.push(l);
                buf.put(ts, at)?;
                ctx.timer_service()
                    .register_event_time_timer(ts.saturating_add(self.upper.max(0)));
            }
            Either::Right(r) => {
                for (lt, ls) in ctx.map_state::<i64, Vec<L>>(LEFT).entries()? {
                    if lt.saturating_add(self.lower) <= ts && ts <= lt.saturating_add(self.upper) {
                        for l in &ls {
                            out.collect((self.f)(l, &r))?;
                        }
                    }
                }
                let mut buf = ctx.map_state::<i64, Vec<R>>(RIGHT);
                let mut at = buf.get(&ts)?.unwrap_or_default();
                at.push(r);
                buf.put(ts, at)?;
                ctx.timer_service()
                    .register_event_time_timer(ts.saturating_sub(self.lower.min(0)));
            }
        }
        Ok(())
    }

    /// Drops the buffered elements that can no longer match: a left element at `t` once the
    /// watermark passed `t + upper`, a right one once it passed `t − lower`.
    fn on_timer(
        &mut self,
        now: i64,
        ctx: &mut OnTimerContext<'_, K>,
        _out: &mut dyn Collector<O>,
    ) -> Result<(), OperatorError> {
        for lt in ctx.map_state::<i64, Vec<L>>(LEFT).keys()? {
            if lt.saturating_add(self.upper.max(0)) <= now {
                ctx.map_state::<i64, Vec<L>>(LEFT).remove(&lt)?;
            }
        }
        for rt in ctx.map_state::<i64, Vec<R>>(RIGHT).keys()? {
            if rt.saturating_sub(self.lower.min(0)) <= now {
                ctx.map_state::<i64, Vec<R>>(RIGHT).remove(&rt)?;
            }
        }
        Ok(())
    }
}
