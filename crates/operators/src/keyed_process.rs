//! `KeyedStream::process`: a user function with keyed state and processing-time timers
//! (Flink's `KeyedProcessFunction` / `KeyedProcessOperator`).

use std::marker::PhantomData;
use std::sync::Arc;

use super::aggregate::not_open;
use sluice_types::{Collector, CollectorExt, Operator, OperatorContext, OperatorError, Watermark};

use sluice_state::{
    instance_dir_name, AggregateFunction, AggregatingState, KeyedStateConfig, KeyedStateStore,
    ListOf, ListState, MapOf, MapState, ReducingState, StateHandle, StateKey, StateValue,
    TimerService, ValueOf, ValueState,
};

/// Processing time in ms since the Unix epoch (Flink's `currentProcessingTime()`).
pub type ProcessingClock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// An element's event timestamp, ms since the epoch.
pub type TimestampFn<T> = Arc<dyn Fn(&T) -> i64 + Send + Sync>;

/// Which clock a timer was registered on (Flink's `TimeDomain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeDomain {
    /// Fires when the watermark passes the timer's time.
    EventTime,
    /// Fires when the wall clock passes the timer's time.
    ProcessingTime,
}

/// The wall clock, ms since the Unix epoch.
pub fn system_time_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A function over a keyed stream with per-key state and timers.
///
/// `process_element` is called per record with the record's key as the current key; state
/// handles from the context read and write that key's state. `on_timer` is called when a
/// processing-time timer registered through [`ProcessContext::timer_service`] fires, with the
/// timer's key as the current key.
///
/// ```
/// use sluice_operators::{KeyedProcessFunction, OnTimerContext, ProcessContext};
/// use sluice_types::{Collector, OperatorError};
///
/// /// Counts per key; emits `(key, count)` 100 ms after the key's first record.
/// #[derive(Clone)]
/// struct CountThenEmit;
/// impl KeyedProcessFunction<String, String, (String, u64)> for CountThenEmit {
///     fn process_element(
///         &mut self,
///         _word: String,
///         ctx: &mut ProcessContext<'_, String>,
///         _out: &mut dyn Collector<(String, u64)>,
///     ) -> Result<(), OperatorError> {
///         let mut count = ctx.value_state::<u64>("count");
///         let n = count.value()?.unwrap_or(0) + 1;
///         count.update(n)?;
///         if n == 1 {
///             let mut timers = ctx.timer_service();
///             let at = timers.current_processing_time() + 100;
///             timers.register_processing_time_timer(at);
///         }
///         Ok(())
///     }
///     fn on_timer(
///         &mut self,
///         _timestamp_ms: i64,
///         ctx: &mut OnTimerContext<'_, String>,
///         out: &mut dyn Collector<(String, u64)>,
///     ) -> Result<(), OperatorError> {
///         let n = ctx.value_state::<u64>("count").value()?.unwrap_or(0);
///         out.collect((ctx.current_key().clone(), n))
///     }
/// }
/// ```
pub trait KeyedProcessFunction<K, IN, OUT>: Send {
    /// Runs on the subtask's thread before the first record.
    fn open(&mut self, _ctx: &OperatorContext) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Registers the function's states once, after `open` (Flink's `getState(descriptor)` in
    /// `open`): keep the returned [`StateHandle`]s and reach the states with
    /// [`ProcessContext::value`], [`list`](ProcessContext::list) and
    /// [`map`](ProcessContext::map), which skip the lookup by name and the type check of
    /// `value_state("name")`.
    fn register_states(&mut self, _states: &mut KeyedStateStore<K>) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Handles one record of the current key (`ctx` is that key's state and timers); emits
    /// into `out`.
    fn process_element(
        &mut self,
        value: IN,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError>;

    /// A timer of the current key fired at `timestamp_ms` (its registered time); the context's
    /// [`ProcessContext::time_domain`] says whether it was an event-time or processing-time one.
    fn on_timer(
        &mut self,
        _timestamp_ms: i64,
        _ctx: &mut OnTimerContext<'_, K>,
        _out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// What `process_element` and `on_timer` see: the current key, its state, its timers.
///
/// A state handle borrows the context: use one at a time (`ctx.value_state::<u64>("n")` is a
/// short lookup by name, cheap to repeat).
pub struct ProcessContext<'a, K> {
    store: &'a mut KeyedStateStore<K>,
    timers: &'a mut TimerService<K>,
    event_timers: &'a mut TimerService<K>,
    clock: &'a ProcessingClock,
    watermark: i64,
    timestamp: Option<i64>,
    timer: Option<(i64, TimeDomain)>,
}

/// The context of [`KeyedProcessFunction::on_timer`] (the same type: the current key is the
/// timer's, and [`ProcessContext::timer_timestamp`] is set).
pub type OnTimerContext<'a, K> = ProcessContext<'a, K>;

impl<'a, K: StateKey> ProcessContext<'a, K> {
    /// The key of the record (or timer) being processed.
    #[allow(
        clippy::expect_used,
        reason = "the operator sets the key before it builds a context"
    )]
    pub fn current_key(&self) -> &K {
        self.store
            .current_key()
            .expect("the operator sets the key before calling the function")
    }

    /// The current key's key group.
    #[allow(
        clippy::expect_used,
        reason = "the operator sets the key before it builds a context"
    )]
    pub fn current_key_group(&self) -> u32 {
        self.store
            .current_key_group()
            .expect("the operator sets the key before calling the function")
    }

    /// In `on_timer`: the firing timer's timestamp; `None` in `process_element`.
    pub fn timer_timestamp(&self) -> Option<i64> {
        self.timer.map(|t| t.0)
    }

    /// In `on_timer`: the clock of the firing timer; `None` in `process_element`.
    pub fn time_domain(&self) -> Option<TimeDomain> {
        self.timer.map(|t| t.1)
    }

    /// The element's event timestamp (when the stream has timestamps), or in `on_timer` for
    /// an event-time timer, the timer's time (Flink sets the output timestamp to it).
    pub fn timestamp(&self) -> Option<i64> {
        match self.timer {
            Some((t, TimeDomain::EventTime)) => Some(t),
            Some(_) => None,
            None => self.timestamp,
        }
    }

    /// The current key's value state named `name` (looked up by name on each call; see
    /// [`ProcessContext::value`] for the faster handle).
    pub fn value_state<'b, V: StateValue>(&'b mut self, name: &'b str) -> ValueState<'b, K, V> {
        self.store.value_state(name)
    }

    /// The value state of a handle from [`KeyedProcessFunction::register_states`].
    #[inline]
    pub fn value<V: StateValue>(&mut self, h: &StateHandle<ValueOf<V>>) -> ValueState<'_, K, V> {
        self.store.value(h)
    }

    /// The list state of a handle from [`KeyedProcessFunction::register_states`].
    #[inline]
    pub fn list<V: StateValue>(&mut self, h: &StateHandle<ListOf<V>>) -> ListState<'_, K, V> {
        self.store.list(h)
    }

    /// The map state of a handle from [`KeyedProcessFunction::register_states`].
    #[inline]
    pub fn map<UK: StateKey, UV: StateValue>(
        &mut self,
        h: &StateHandle<MapOf<UK, UV>>,
    ) -> MapState<'_, K, UK, UV> {
        self.store.map(h)
    }

    /// The current key's list state named `name`.
    pub fn list_state<'b, V: StateValue>(&'b mut self, name: &'b str) -> ListState<'b, K, V> {
        self.store.list_state(name)
    }

    /// The current key's map state named `name`.
    pub fn map_state<'b, UK: StateKey, UV: StateValue>(
        &'b mut self,
        name: &'b str,
    ) -> MapState<'b, K, UK, UV> {
        self.store.map_state(name)
    }

    /// The current key's reducing state named `name`, folding added values with `reduce`.
    pub fn reducing_state<'b, V, F>(
        &'b mut self,
        name: &'b str,
        reduce: F,
    ) -> ReducingState<'b, K, V, F>
    where
        V: StateValue,
        F: Fn(V, V) -> V,
    {
        self.store.reducing_state(name, reduce)
    }

    /// The current key's aggregating state named `name`, accumulating with `agg`.
    pub fn aggregating_state<'b, IN, ACC, OUT, A>(
        &'b mut self,
        name: &'b str,
        agg: &'b A,
    ) -> AggregatingState<'b, K, IN, ACC, OUT, A>
    where
        ACC: StateValue,
        A: AggregateFunction<IN, ACC, OUT>,
    {
        self.store.aggregating_state(name, agg)
    }

    /// Registers and deletes the current key's timers.
    #[allow(
        clippy::expect_used,
        reason = "the operator sets the key before it builds a context"
    )]
    pub fn timer_service(&mut self) -> TimerServiceRef<'_, K> {
        TimerServiceRef {
            key: self
                .store
                .current_key()
                .expect("the operator sets the key before calling the function"),
            key_group: self
                .store
                .current_key_group()
                .expect("the operator sets the key before calling the function"),
            timers: &mut *self.timers,
            event_timers: &mut *self.event_timers,
            clock: self.clock,
            watermark: self.watermark,
        }
    }
}

/// The timers of the current key (Flink's `TimerService`).
pub struct TimerServiceRef<'a, K> {
    key: &'a K,
    key_group: u32,
    timers: &'a mut TimerService<K>,
    event_timers: &'a mut TimerService<K>,
    clock: &'a ProcessingClock,
    watermark: i64,
}

impl<K: StateKey> TimerServiceRef<'_, K> {
    /// Processing time now, ms since the Unix epoch.
    pub fn current_processing_time(&self) -> i64 {
        (self.clock)()
    }

    /// Calls `on_timer` for the current key once processing time reaches `timestamp_ms`. A key
    /// has at most one timer per timestamp: registering it again does nothing.
    pub fn register_processing_time_timer(&mut self, timestamp_ms: i64) {
        self.timers.register(self.key, self.key_group, timestamp_ms);
    }

    /// Deletes the current key's timer at `timestamp_ms`, if any.
    pub fn delete_processing_time_timer(&mut self, timestamp_ms: i64) {
        self.timers.delete(self.key, self.key_group, timestamp_ms);
    }

    /// The operator's current event time: the last watermark it received (`i64::MIN` before).
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// Calls `on_timer` for the current key once the watermark reaches `timestamp_ms` (all
    /// remaining event-time timers fire at the end of a bounded input). One timer per
    /// `(key, timestamp)`.
    pub fn register_event_time_timer(&mut self, timestamp_ms: i64) {
        self.event_timers
            .register(self.key, self.key_group, timestamp_ms);
    }

    /// Deletes the current key's event-time timer at `timestamp_ms`, if any.
    pub fn delete_event_time_timer(&mut self, timestamp_ms: i64) {
        self.event_timers
            .delete(self.key, self.key_group, timestamp_ms);
    }
}

/// Runs a [`KeyedProcessFunction`]: sets the current key per record, owns the subtask's keyed
/// state and timers.
///
/// Timers fire (in timestamp order) when processing time has reached them, checked before each
/// record while timers are pending and on every [`Operator::tick`] (each buffer timeout, busy or
/// idle). So a timer fires at most about one buffer timeout late; with a buffer timeout of 0 the
/// task has no idle wake-ups and timers fire only when records arrive.
///
/// At end of input, timers that are already due fire; later ones are dropped, as in Flink,
/// which quiesces its processing-time service when the input ends. Event-time timers fire when
/// a watermark reaches them, so all of them fire at the final `Watermark::MAX` of a bounded
/// input.
pub struct KeyedProcessOp<K, IN, OUT, KS, F> {
    key_of: KS,
    config: KeyedStateConfig<K>,
    func: F,
    store: Option<KeyedStateStore<K>>,
    timers: TimerService<K>,
    event_timers: TimerService<K>,
    clock: ProcessingClock,
    watermark: i64,
    time_of: Option<TimestampFn<IN>>,
    _t: PhantomData<fn(IN) -> OUT>,
}

impl<K, IN, OUT, KS, F> KeyedProcessOp<K, IN, OUT, KS, F>
where
    K: StateKey,
{
    /// Keys records by `key_of` and runs `func` per record and timer, with state and timers
    /// for the key groups of `config`; clock: the system's.
    pub fn new(key_of: KS, config: KeyedStateConfig<K>, func: F) -> Self {
        let first = *config.key_groups.start();
        KeyedProcessOp {
            key_of,
            config,
            func,
            store: None,
            timers: TimerService::new(first),
            event_timers: TimerService::new(first),
            clock: Arc::new(system_time_ms),
            watermark: i64::MIN,
            time_of: None,
            _t: PhantomData,
        }
    }

    /// Gives the function each element's event timestamp ([`ProcessContext::timestamp`]).
    pub fn with_timestamps(mut self, time_of: Option<TimestampFn<IN>>) -> Self {
        self.time_of = time_of;
        self
    }

    /// Uses `clock` for processing time instead of the wall clock (for tests).
    pub fn with_clock(mut self, clock: ProcessingClock) -> Self {
        self.clock = clock;
        self
    }

    /// The subtask's state (after `open`).
    pub fn state(&self) -> Option<&KeyedStateStore<K>> {
        self.store.as_ref()
    }

    /// The pending timers.
    pub fn timers(&self) -> &TimerService<K> {
        &self.timers
    }

    /// Fires every timer due at `now`, in timestamp order. Timers registered while firing fire
    /// at the next check, so a function re-registering `now` cannot loop forever.
    fn fire_due(&mut self, now: i64, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError>
    where
        F: KeyedProcessFunction<K, IN, OUT>,
    {
        if self.timers.next_timestamp().is_none_or(|t| t > now) {
            return Ok(());
        }
        self.fire(now, TimeDomain::ProcessingTime, out)
    }

    fn fire(
        &mut self,
        now: i64,
        domain: TimeDomain,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError>
    where
        F: KeyedProcessFunction<K, IN, OUT>,
    {
        let store = self.store.as_mut().ok_or_else(not_open)?;
        let due = match domain {
            TimeDomain::ProcessingTime => self.timers.take_due(now),
            TimeDomain::EventTime => self.event_timers.take_due(now),
        };
        for (ts, kg, key) in due {
            store.set_current_key(key, kg)?;
            let mut ctx = ProcessContext {
                store: &mut *store,
                timers: &mut self.timers,
                event_timers: &mut self.event_timers,
                clock: &self.clock,
                watermark: self.watermark,
                timestamp: None,
                timer: Some((ts, domain)),
            };
            self.func.on_timer(ts, &mut ctx, out)?;
        }
        Ok(())
    }
}

impl<K, IN, OUT, KS, F> Operator<IN, OUT> for KeyedProcessOp<K, IN, OUT, KS, F>
where
    K: StateKey,
    IN: Send,
    OUT: Send,
    KS: Fn(&IN) -> K + Send,
    F: KeyedProcessFunction<K, IN, OUT>,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        let mut store = KeyedStateStore::open(
            &self.config.backend,
            &instance_dir_name(&ctx.operator_name, ctx.subtask_index),
            self.config.key_groups.clone(),
        )?;
        store.attach_metrics(crate::services::task_metrics(ctx));
        self.func.open(ctx)?;
        self.func.register_states(&mut store)?;
        self.store = Some(store);
        Ok(())
    }

    #[inline]
    fn process(&mut self, record: IN, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        if !self.timers.is_empty() {
            let now = (self.clock)();
            self.fire_due(now, out)?;
        }
        let key = (self.key_of)(&record);
        let kg = (self.config.key_group_of)(&key);
        let timestamp = self.time_of.as_ref().map(|f| f(&record));
        let store = self.store.as_mut().ok_or_else(not_open)?;
        store.set_current_key(key, kg)?;
        let mut ctx = ProcessContext {
            store,
            timers: &mut self.timers,
            event_timers: &mut self.event_timers,
            clock: &self.clock,
            watermark: self.watermark,
            timestamp,
            timer: None,
        };
        self.func.process_element(record, &mut ctx, out)
    }

    /// Fires the event-time timers the watermark passed (in timestamp order; timers registered
    /// while firing at or below it fire in the same pass), then forwards the watermark.
    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<OUT>,
    ) -> Result<(), OperatorError> {
        if watermark.0 > self.watermark {
            self.watermark = watermark.0;
            while self
                .event_timers
                .next_timestamp()
                .is_some_and(|t| t <= watermark.0)
            {
                self.fire(watermark.0, TimeDomain::EventTime, out)?;
            }
        }
        out.emit_watermark(watermark)
    }

    fn tick(&mut self, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        if !self.timers.is_empty() {
            let now = (self.clock)();
            self.fire_due(now, out)?;
        }
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        let store = self.store.as_ref().ok_or_else(not_open)?;
        sluice_state::snapshot::snapshot_keyed(store, &[&self.timers, &self.event_timers]).map(Some)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        let store = self.store.as_mut().ok_or_else(not_open)?;
        sluice_state::snapshot::restore_keyed(
            store,
            &mut [&mut self.timers, &mut self.event_timers],
            parts,
        )
    }

    fn finish(&mut self, out: &mut dyn Collector<OUT>) -> Result<(), OperatorError> {
        self.tick(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_state::StateBackendKind;
    use sluice_types::VecCollector;
    use std::sync::atomic::{AtomicI64, Ordering};

    /// Sums per key; on the first record of a key, a timer 10 ms later emits `(key, sum)`.
    #[derive(Clone)]
    struct SumThenEmit;
    impl KeyedProcessFunction<u32, (u32, i64), (u32, i64)> for SumThenEmit {
        fn process_element(
            &mut self,
            v: (u32, i64),
            ctx: &mut ProcessContext<'_, u32>,
            out: &mut dyn Collector<(u32, i64)>,
        ) -> Result<(), OperatorError> {
            let mut sum = ctx.reducing_state("sum", |a: i64, b| a + b);
            let is_first = sum.get()?.is_none();
            let s = sum.add_and_get(v.1)?;
            if is_first {
                let mut t = ctx.timer_service();
                let at = t.current_processing_time() + 10;
                t.register_processing_time_timer(at);
            }
            out.collect((v.0, -s))
        }
        fn on_timer(
            &mut self,
            ts: i64,
            ctx: &mut OnTimerContext<'_, u32>,
            out: &mut dyn Collector<(u32, i64)>,
        ) -> Result<(), OperatorError> {
            assert_eq!(ctx.timer_timestamp(), Some(ts));
            let s = ctx.reducing_state("sum", |a: i64, b| a + b).get()?;
            ctx.reducing_state("sum", |a: i64, b| a + b).clear()?;
            out.collect((*ctx.current_key(), s.unwrap_or(0)))
        }
    }

    fn op_ctx() -> OperatorContext {
        OperatorContext {
            operator_name: "KeyedProcess".into(),
            task_name: "KeyedProcess".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 4,
            operator_id: "op".into(),
            services: sluice_types::ServicesHandle::none(),
            options: Vec::new(),
        }
    }

    #[test]
    fn timers_fire_when_processing_time_passes_them_before_records_and_on_tick() {
        let now = Arc::new(AtomicI64::new(1000));
        let n2 = now.clone();
        let config = KeyedStateConfig {
            backend: StateBackendKind::Memory,
            key_group_of: Arc::new(|k: &u32| *k % 4),
            key_groups: 0..=3,
        };
        let mut op = KeyedProcessOp::new(|r: &(u32, i64)| r.0, config, SumThenEmit)
            .with_clock(Arc::new(move || n2.load(Ordering::Relaxed)));
        op.open(&op_ctx()).unwrap();
        let mut out = VecCollector::default();
        op.process((1, 5), &mut out).unwrap();
        op.process((2, 7), &mut out).unwrap();
        op.process((1, 1), &mut out).unwrap();
        assert_eq!(op.timers().len(), 2);
        op.tick(&mut out).unwrap();
        assert_eq!(out.records, vec![(1, -5), (2, -7), (1, -6)], "not due yet");
        now.store(1010, Ordering::Relaxed);
        // Due timers fire before the next record is processed.
        op.process((3, 2), &mut out).unwrap();
        assert_eq!(out.records[3..], [(1, 6), (2, 7), (3, -2)]);
        now.store(1020, Ordering::Relaxed);
        op.tick(&mut out).unwrap();
        assert_eq!(out.records[6..], [(3, 2)]);
        assert!(op.timers().is_empty());
        // A timer not yet due at end of input is dropped.
        op.process((1, 1), &mut out).unwrap();
        op.finish(&mut out).unwrap();
        assert_eq!(out.records.len(), 8);
        assert!(op.state().unwrap().access_ns() > 0);
    }

    #[test]
    fn a_key_outside_the_subtask_key_groups_is_an_error() {
        let config = KeyedStateConfig {
            backend: StateBackendKind::Memory,
            key_group_of: Arc::new(|k: &u32| *k),
            key_groups: 0..=1,
        };
        let mut op = KeyedProcessOp::new(|r: &(u32, i64)| r.0, config, SumThenEmit);
        op.open(&op_ctx()).unwrap();
        let mut out = VecCollector::default();
        let e = op.process((7, 1), &mut out).unwrap_err().to_string();
        assert!(e.contains("key group 7"), "{e}");
    }
}
