//! The lookup-join operator. Sync mode: each missing key is loaded on the task thread
//! (`block_on` of the subtask's current-thread runtime), one at a time. Async mode: loads run on
//! the subtask's I/O thread (the same runtime, driven there), at most `capacity` at once; the
//! task thread hands requests over, emits answers as they come back (in input order when
//! ordered) and waits only when the capacity is used up, so backpressure reaches upstream.
//! Before a watermark, a barrier and the end of input every request in flight is awaited, so
//! a checkpoint holds nothing in flight and no record moves across a watermark.

use std::collections::{HashMap, VecDeque};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Instant;

use sluice_types::{Collector, CollectorExt, Operator, OperatorContext, OperatorError, Watermark};

use crate::cache::Cache;
use crate::metrics::Metrics;
use crate::source::Client;
use crate::{LookupError, LookupKey, LookupMode, LookupOptions, LookupSource, Row};

pub(crate) type KeyFn<T> = Arc<dyn Fn(&T) -> LookupKey + Send + Sync>;
pub(crate) type JoinFn<T, U> = Arc<dyn Fn(&T, Option<&Row>) -> Option<U> + Send + Sync>;

pub(crate) struct LookupOp<T, U> {
    source: LookupSource,
    key_fn: KeyFn<T>,
    join_fn: JoinFn<T, U>,
    running: Option<Running<T>>,
}

impl<T, U> LookupOp<T, U> {
    pub(crate) fn new(source: LookupSource, key_fn: KeyFn<T>, join_fn: JoinFn<T, U>) -> Self {
        LookupOp {
            source,
            key_fn,
            join_fn,
            running: None,
        }
    }
}

/// Retries and timeouts of one subtask's loads.
struct Policy {
    source: String,
    attempts: u32,
    timeout: std::time::Duration,
    delay: std::time::Duration,
}

/// Loads `key`: up to `attempts` tries, each within the timeout.
async fn load(
    client: Client,
    key: LookupKey,
    policy: Arc<Policy>,
    metrics: Arc<Metrics>,
) -> Result<Vec<Row>, LookupError> {
    let mut last = None;
    for attempt in 0..policy.attempts {
        if attempt > 0 {
            tokio::time::sleep(policy.delay).await;
        }
        let t0 = Instant::now();
        match tokio::time::timeout(policy.timeout, client.get(&key)).await {
            Ok(Ok(rows)) => {
                metrics.loaded(t0.elapsed());
                return Ok(rows);
            }
            Ok(Err(e)) => last = Some(e),
            Err(_) => last = Some(LookupError::Timeout(policy.timeout)),
        }
        metrics.failed();
    }
    Err(LookupError::Exhausted {
        key: key.to_string(),
        source_name: policy.source.clone(),
        attempts: policy.attempts,
        last: Box::new(last.unwrap_or(LookupError::Request("no attempt made".into()))),
    })
}

enum Driver {
    /// The task thread drives the runtime while it waits for each load.
    Sync(tokio::runtime::Runtime),
    /// The subtask's I/O thread drives the runtime; loads are spawned onto it.
    Async {
        handle: tokio::runtime::Handle,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        thread: Option<JoinHandle<()>>,
    },
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Driver::Async { stop, thread, .. } = self {
            if let Some(s) = stop.take() {
                let _ = s.send(());
            }
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// A record waiting for its rows (ordered mode: also those answered, behind an unanswered one).
struct Slot<T> {
    record: T,
    rows: Option<Arc<Vec<Row>>>,
}

/// An answer from the I/O thread.
struct Done {
    seq: u64,
    key: LookupKey,
    result: Result<Vec<Row>, LookupError>,
}

struct Running<T> {
    mode: LookupMode,
    policy: Arc<Policy>,
    metrics: Arc<Metrics>,
    cache: Option<Cache>,
    client: Client,
    driver: Driver,
    /// Ordered mode: sequence number of `ordered[0]`.
    front_seq: u64,
    next_seq: u64,
    ordered: VecDeque<Slot<T>>,
    unordered: HashMap<u64, T>,
    in_flight: usize,
    done_tx: mpsc::Sender<Done>,
    done_rx: mpsc::Receiver<Done>,
}

fn emit<T, U>(
    join: &JoinFn<T, U>,
    record: &T,
    rows: &[Row],
    out: &mut dyn Collector<U>,
) -> Result<(), OperatorError> {
    if rows.is_empty() {
        if let Some(u) = join(record, None) {
            out.collect(u)?;
        }
    }
    for r in rows {
        if let Some(u) = join(record, Some(r)) {
            out.collect(u)?;
        }
    }
    Ok(())
}

impl<T: Send + 'static> Running<T> {
    fn open(source: &LookupSource, ctx: &OperatorContext) -> Result<Running<T>, LookupError> {
        let opts = LookupOptions::from_plan_options(&ctx.options)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let client = rt.block_on(source.connect())?;
        let metrics = Arc::new(Metrics::new(source.stats.clone(), ctx, opts.capacity()));
        let driver = match opts.mode {
            LookupMode::Sync => Driver::Sync(rt),
            LookupMode::Async { .. } => {
                let handle = rt.handle().clone();
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let thread = std::thread::Builder::new()
                    .name(format!("lookup-io {}", ctx.task_display_name()))
                    .spawn(move || {
                        rt.block_on(async {
                            let _ = stopped.await;
                        });
                    })?;
                Driver::Async {
                    handle,
                    stop: Some(stop),
                    thread: Some(thread),
                }
            }
        };
        let (done_tx, done_rx) = mpsc::channel();
        Ok(Running {
            mode: opts.mode,
            policy: Arc::new(Policy {
                source: source.describe(),
                attempts: opts.max_retries.saturating_add(1),
                timeout: opts.timeout,
                delay: opts.retry_delay,
            }),
            metrics,
            cache: Cache::new(&opts.cache),
            client,
            driver,
            front_seq: 0,
            next_seq: 0,
            ordered: VecDeque::new(),
            unordered: HashMap::new(),
            in_flight: 0,
            done_tx,
            done_rx,
        })
    }

    fn remember(&mut self, key: LookupKey, rows: &Arc<Vec<Row>>) {
        if let Some(c) = &mut self.cache {
            c.put(key, rows.clone(), Instant::now());
            self.metrics.cached(c.len());
        }
    }

    fn process<U>(
        &mut self,
        key: LookupKey,
        record: T,
        join: &JoinFn<T, U>,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        // Take in what came back first, so a key answered meanwhile is a cache hit.
        self.poll(join, out)?;
        let cached = self
            .cache
            .as_mut()
            .and_then(|c| c.get(&key, Instant::now()));
        if let Some(rows) = cached {
            self.metrics.hit();
            if matches!(self.mode, LookupMode::Async { ordered: true, .. })
                && !self.ordered.is_empty()
            {
                // Behind records still waiting: keep its place.
                self.ordered.push_back(Slot {
                    record,
                    rows: Some(rows),
                });
                self.next_seq += 1;
                return Ok(());
            }
            return emit(join, &record, &rows, out);
        }
        self.metrics.miss();
        match (&self.driver, self.mode) {
            (Driver::Sync(rt), _) => {
                self.metrics.in_flight(1);
                let rows = rt.block_on(load(
                    self.client.clone(),
                    key.clone(),
                    self.policy.clone(),
                    self.metrics.clone(),
                ));
                self.metrics.in_flight(0);
                let rows = Arc::new(rows?);
                self.remember(key, &rows);
                emit(join, &record, &rows, out)
            }
            (Driver::Async { handle, .. }, LookupMode::Async { capacity, ordered }) => {
                let handle = handle.clone();
                while self.in_flight >= capacity {
                    self.wait_one(join, out)?;
                }
                let seq = self.next_seq;
                self.next_seq += 1;
                if ordered {
                    self.ordered.push_back(Slot { record, rows: None });
                } else {
                    self.unordered.insert(seq, record);
                }
                let (client, policy, metrics, tx) = (
                    self.client.clone(),
                    self.policy.clone(),
                    self.metrics.clone(),
                    self.done_tx.clone(),
                );
                handle.spawn(async move {
                    let result = load(client, key.clone(), policy, metrics).await;
                    let _ = tx.send(Done { seq, key, result });
                });
                self.in_flight += 1;
                self.metrics.in_flight(self.in_flight);
                self.poll(join, out)
            }
            (Driver::Async { .. }, LookupMode::Sync) => Err(OperatorError::failed(
                "lookup: an async driver in sync mode (a bug)",
            )),
        }
    }

    fn complete<U>(
        &mut self,
        done: Done,
        join: &JoinFn<T, U>,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        self.in_flight -= 1;
        self.metrics.in_flight(self.in_flight);
        let rows = Arc::new(done.result?);
        self.remember(done.key, &rows);
        if let Some(record) = self.unordered.remove(&done.seq) {
            return emit(join, &record, &rows, out);
        }
        let i = (done.seq - self.front_seq) as usize;
        if let Some(slot) = self.ordered.get_mut(i) {
            slot.rows = Some(rows);
        }
        while self.ordered.front().is_some_and(|s| s.rows.is_some()) {
            if let Some(Slot {
                record,
                rows: Some(rows),
            }) = self.ordered.pop_front()
            {
                self.front_seq += 1;
                emit(join, &record, &rows, out)?;
            }
        }
        Ok(())
    }

    /// Emits what has come back, without waiting.
    fn poll<U>(
        &mut self,
        join: &JoinFn<T, U>,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        while let Ok(done) = self.done_rx.try_recv() {
            self.complete(done, join, out)?;
        }
        Ok(())
    }

    /// Waits for one answer and emits what it releases.
    fn wait_one<U>(
        &mut self,
        join: &JoinFn<T, U>,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        let done = self.done_rx.recv().map_err(|_| {
            OperatorError::failed("lookup: the I/O thread stopped with requests in flight")
        })?;
        self.complete(done, join, out)
    }

    /// Waits for every request in flight.
    fn drain<U>(
        &mut self,
        join: &JoinFn<T, U>,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        while self.in_flight > 0 {
            self.wait_one(join, out)?;
        }
        Ok(())
    }
}

impl<T: Send + 'static, U: Send + 'static> Operator<T, U> for LookupOp<T, U> {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        let running = Running::open(&self.source, ctx)
            .map_err(|e| OperatorError::failed(format!("{}: {e}", ctx.task_display_name())))?;
        self.running = Some(running);
        Ok(())
    }

    fn process(&mut self, record: T, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        let key = (self.key_fn)(&record);
        let r = self
            .running
            .as_mut()
            .ok_or_else(|| OperatorError::failed("lookup: process before open"))?;
        r.process(key, record, &self.join_fn, out)
    }

    fn tick(&mut self, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        match self.running.as_mut() {
            Some(r) => r.poll(&self.join_fn, out),
            None => Ok(()),
        }
    }

    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        if let Some(r) = self.running.as_mut() {
            r.drain(&self.join_fn, out)?;
        }
        out.emit_watermark(watermark)
    }

    fn prepare_snapshot_pre_barrier(
        &mut self,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        match self.running.as_mut() {
            Some(r) => r.drain(&self.join_fn, out),
            None => Ok(()),
        }
    }

    fn finish(&mut self, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        match self.running.as_mut() {
            Some(r) => r.drain(&self.join_fn, out),
            None => Ok(()),
        }
    }
}
