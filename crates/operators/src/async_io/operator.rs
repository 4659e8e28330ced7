//! The async wait operator (Flink's `AsyncWaitOperator`): issues one request per record,
//! keeps at most `capacity` elements in its queue, emits results in input order or on
//! completion (within watermark-delimited segments), and snapshots what it still holds.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_types::{
    Collector, CollectorExt, Data, Operator, OperatorContext, OperatorError, ServicesHandle,
    Watermark,
};

use super::io_runtime::IoRuntime;
use super::metrics::AsyncMetrics;
use super::queue::{Control, ElementQueue, Ready, Stored};
use super::retry::AsyncRetryStrategy;
use super::{AsyncError, AsyncFunction, AsyncResultFuture, AsyncSettings};
use crate::services::TaskServices;
use sluice_metrics::OperatorGauge;
use sluice_state::fasthash::FastHashMap;

/// How long a task thread waiting for a completion sleeps between checks for cancellation.
const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// One request's outcome, sent from the runtime to the task thread.
struct Completion<Out> {
    seq: u64,
    outcome: Result<Vec<Out>, AsyncError>,
    timed_out: bool,
    latency_us: u64,
}

/// What a request's future needs to retry itself.
struct RetryCtx<In, Out, F> {
    strategy: Arc<dyn AsyncRetryStrategy<Out>>,
    function: Arc<F>,
    input: In,
    finishing: Arc<AtomicBool>,
    retries: Option<Arc<OperatorGauge>>,
}

/// See the module docs. Built by the DataStream API's `ordered_wait` / `unordered_wait`
/// (`sluice-datastream`); `settings` are the defaults the node's plan options override at `open`.
pub struct AsyncWaitOperator<In, Out, F> {
    function: Option<F>,
    opened: Option<Arc<F>>,
    retry: Option<Arc<dyn AsyncRetryStrategy<Out>>>,
    settings: AsyncSettings,
    queue: ElementQueue<In, Out>,
    /// Requests issued and not yet completed.
    in_flight: usize,
    handles: FastHashMap<u64, tokio::task::JoinHandle<()>>,
    tx: mpsc::Sender<Completion<Out>>,
    rx: mpsc::Receiver<Completion<Out>>,
    runtime: Option<IoRuntime>,
    finishing: Arc<AtomicBool>,
    /// The task's input-loop waker (found on the first request) and whether a completion has
    /// already woken it since the last drain: one wake-up per drain, not per completion.
    waker: Option<sluice_channel::GateWaker>,
    wake_pending: Arc<AtomicBool>,
    /// Restored elements not yet admitted (they go before any new input).
    backlog: VecDeque<Stored<In>>,
    metrics: Option<AsyncMetrics>,
    services: ServicesHandle,
    name: String,
    subtask: usize,
    parallelism: usize,
}

impl<In, Out, F> AsyncWaitOperator<In, Out, F>
where
    In: Data,
    Out: Data,
    F: AsyncFunction<In, Out>,
{
    /// An operator calling `function` per record under `settings`, retrying as `retry` says
    /// (`None`: no retries).
    pub fn new(
        function: F,
        settings: AsyncSettings,
        retry: Option<Arc<dyn AsyncRetryStrategy<Out>>>,
    ) -> Self {
        let (tx, rx) = mpsc::channel();
        AsyncWaitOperator {
            function: Some(function),
            opened: None,
            retry,
            queue: ElementQueue::new(settings.mode),
            settings,
            in_flight: 0,
            handles: FastHashMap::default(),
            tx,
            rx,
            runtime: None,
            finishing: Arc::new(AtomicBool::new(false)),
            waker: None,
            wake_pending: Arc::new(AtomicBool::new(false)),
            backlog: VecDeque::new(),
            metrics: None,
            services: ServicesHandle::none(),
            name: "async wait operator".to_string(),
            subtask: 0,
            parallelism: 1,
        }
    }

    /// The settings in force (after `open`: the plan's).
    pub fn settings(&self) -> &AsyncSettings {
        &self.settings
    }

    fn fail(&self, what: impl std::fmt::Display) -> OperatorError {
        OperatorError::failed(format!("{}: {what}", self.name))
    }

    fn cancelled(&self) -> bool {
        self.services
            .get::<TaskServices>()
            .is_some_and(|s| s.is_cancelled())
    }

    /// Starts the request for `input`: its first call on this thread (as Flink calls
    /// `asyncInvoke` on the task thread), the rest (timeout, retries) on the runtime.
    fn issue(&mut self, input: In) -> Result<(), OperatorError> {
        let (Some(function), Some(runtime)) = (&self.opened, &self.runtime) else {
            return Err(self.fail("used before open"));
        };
        let issued = Instant::now();
        let retry = self.retry.as_ref().map(|strategy| RetryCtx {
            strategy: strategy.clone(),
            function: function.clone(),
            input: input.clone(),
            finishing: self.finishing.clone(),
            retries: self.metrics.as_ref().and_then(|m| m.retries.clone()),
        });
        // In the runtime's context, so a function that creates a tokio resource eagerly (not
        // inside its `async` block) finds one.
        let first = {
            let _enter = runtime.enter();
            function.async_invoke(input.clone())
        };
        let seq = self.queue.push_record(input);
        let tx = self.tx.clone();
        if self.waker.is_none() {
            self.waker = self
                .services
                .get::<TaskServices>()
                .and_then(|s| s.input_waker().cloned());
        }
        let wake = self.waker.clone().map(|w| (w, self.wake_pending.clone()));
        let deadline = self
            .settings
            .timeout
            .map(|t| tokio::time::Instant::from_std(issued + t));
        let handle = runtime.spawn(async move {
            let work = attempts(first, retry);
            let (outcome, timed_out) = match deadline {
                Some(d) => match tokio::time::timeout_at(d, work).await {
                    Ok(r) => (r, false),
                    Err(_) => (Err(AsyncError::timeout()), true),
                },
                None => (work.await, false),
            };
            let _ = tx.send(Completion {
                seq,
                outcome,
                timed_out,
                latency_us: issued.elapsed().as_micros() as u64,
            });
            // A task waiting for input emits this result now, not at its next tick.
            if let Some((waker, pending)) = wake {
                if !pending.swap(true, std::sync::atomic::Ordering::AcqRel) {
                    waker.wake();
                }
            }
        });
        self.handles.insert(seq, handle);
        self.in_flight += 1;
        Ok(())
    }

    /// A request completed: its results join the queue (a timeout goes through the function's
    /// timeout handler; an error fails the job, as in Flink).
    fn on_completion(&mut self, c: Completion<Out>) -> Result<(), OperatorError> {
        self.handles.remove(&c.seq);
        self.in_flight -= 1;
        if let Some(m) = &mut self.metrics {
            m.completed(c.latency_us, c.timed_out);
        }
        let results = match c.outcome {
            Ok(r) => r,
            Err(_) if c.timed_out => {
                let (Some(f), Some(input)) = (&self.opened, self.queue.input(c.seq)) else {
                    return Err(self.fail("a timed-out request is not in the queue"));
                };
                f.timeout(input).map_err(|e| self.fail(e))?
            }
            Err(e) => return Err(self.fail(format!("async request failed: {e}"))),
        };
        if !self.queue.complete(c.seq, results) {
            return Err(self.fail(format!("request {} completed twice", c.seq)));
        }
        Ok(())
    }

    /// Emits everything that may leave the queue now.
    fn emit(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        while let Some(ready) = self.queue.pop_ready() {
            match ready {
                Ready::Results(records) => {
                    for r in records {
                        out.collect(r)?;
                    }
                }
                Ready::Control(Control::Watermark(w)) => out.emit_watermark(w)?,
                Ready::Control(Control::Idleness(i)) => out.emit_idleness(i)?,
            }
        }
        Ok(())
    }

    /// Takes every completion that arrived, without waiting, and emits what it can.
    fn drain(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        // Reset before looking, so a completion after the last `try_recv` wakes the task again.
        self.wake_pending
            .store(false, std::sync::atomic::Ordering::Release);
        while let Ok(c) = self.rx.try_recv() {
            self.on_completion(c)?;
        }
        self.emit(out)
    }

    /// Blocks until one more request completes (the task reads no input meanwhile, so its
    /// input buffers keep their credits: backpressure), then drains.
    fn wait_one(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        if self.in_flight == 0 {
            return Err(self.fail("waiting for a completion with no request in flight"));
        }
        loop {
            match self.rx.recv_timeout(CANCEL_CHECK) {
                Ok(c) => {
                    self.on_completion(c)?;
                    return self.drain(out);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.cancelled() {
                        return Err(OperatorError::Cancelled);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(self.fail("the completion channel closed"));
                }
            }
        }
    }

    /// Waits until the queue has a free slot.
    fn make_room(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        self.emit(out)?;
        while self.queue.len() >= self.settings.capacity {
            self.wait_one(out)?;
        }
        Ok(())
    }

    fn push_control(
        &mut self,
        c: Control,
        out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        self.make_room(out)?;
        self.queue.push_control(c);
        self.emit(out)
    }

    /// Re-issues restored elements, in their order, before any new input.
    fn admit_backlog(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        while !self.backlog.is_empty() {
            self.make_room(out)?;
            match self.backlog.pop_front() {
                Some(Stored::Record(input)) => self.issue(input)?,
                Some(Stored::Watermark(w)) => {
                    self.push_control(Control::Watermark(Watermark(w)), out)?
                }
                Some(Stored::Idleness(i)) => self.push_control(Control::Idleness(i), out)?,
                None => {}
            }
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        self.drain(out)?;
        self.admit_backlog(out)
    }

    fn publish_sizes(&self) {
        if let Some(m) = &self.metrics {
            m.set_sizes(self.in_flight, self.queue.len());
        }
    }
}

/// The first call's future, then retries as the strategy allows.
async fn attempts<In, Out, F>(
    first: AsyncResultFuture<Out>,
    retry: Option<RetryCtx<In, Out, F>>,
) -> Result<Vec<Out>, AsyncError>
where
    In: Clone,
    Out: 'static,
    F: AsyncFunction<In, Out>,
{
    let mut outcome = first.await;
    let Some(rc) = retry else {
        return outcome;
    };
    let mut attempt = 1u32;
    loop {
        let wanted = match &outcome {
            Ok(r) => rc.strategy.retry_on_result(r),
            Err(e) => rc.strategy.retry_on_error(e),
        };
        if !wanted || !rc.strategy.can_retry(attempt) || rc.finishing.load(Relaxed) {
            return outcome;
        }
        tokio::time::sleep(rc.strategy.backoff(attempt)).await;
        if rc.finishing.load(Relaxed) {
            return outcome;
        }
        if let Some(g) = &rc.retries {
            g.add(1);
        }
        attempt += 1;
        outcome = rc.function.async_invoke(rc.input.clone()).await;
    }
}

impl<In, Out, F> Operator<In, Out> for AsyncWaitOperator<In, Out, F>
where
    In: Data + Serialize + DeserializeOwned,
    Out: Data,
    F: AsyncFunction<In, Out>,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.name = ctx.operator_name.clone();
        self.settings = self
            .settings
            .with_options(|k| ctx.option(k))
            .map_err(|e| OperatorError::failed(format!("{}: {e}", ctx.operator_name)))?;
        self.queue = ElementQueue::new(self.settings.mode);
        self.subtask = ctx.subtask_index;
        self.parallelism = ctx.parallelism.max(1);
        self.services = ctx.services.clone();
        let mut f = self
            .function
            .take()
            .ok_or_else(|| self.fail("opened twice"))?;
        f.open(ctx)?;
        self.opened = Some(Arc::new(f));
        self.runtime = Some(IoRuntime::start(self.settings.runtime, ctx.subtask_index)?);
        let task = TaskServices::of(ctx).map(|s| s.metrics().as_ref());
        self.metrics = Some(AsyncMetrics::new(
            task,
            &ctx.operator_name,
            self.settings.capacity,
        ));
        Ok(())
    }

    fn process(&mut self, record: In, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        self.poll(out)?;
        self.make_room(out)?;
        self.issue(record)?;
        self.publish_sizes();
        Ok(())
    }

    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        self.poll(out)?;
        self.push_control(Control::Watermark(watermark), out)
    }

    fn on_idleness(
        &mut self,
        idle: bool,
        out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        self.poll(out)?;
        self.push_control(Control::Idleness(idle), out)
    }

    fn tick(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        self.poll(out)?;
        self.publish_sizes();
        if let Some(m) = &mut self.metrics {
            m.publish();
        }
        Ok(())
    }

    /// End of input: retries stop, every element still held completes and leaves.
    fn finish(&mut self, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        self.finishing.store(true, Relaxed);
        self.poll(out)?;
        while !self.queue.is_empty() {
            self.wait_one(out)?;
        }
        self.publish_sizes();
        if let Some(m) = &mut self.metrics {
            m.publish();
        }
        Ok(())
    }

    fn prepare_snapshot_pre_barrier(
        &mut self,
        out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        // What already completed leaves before the barrier (a smaller snapshot); nothing waits.
        self.drain(out)
    }

    /// The inputs of every record still held (in flight, or completed and not emitted) and the
    /// control elements between them, in stream order; restored ones not yet admitted last.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        let mut stored = self.queue.stored();
        stored.extend(self.backlog.iter().cloned());
        postcard::to_allocvec(&stored)
            .map(Some)
            .map_err(|e| self.fail(format!("cannot encode the in-flight elements: {e}")))
    }

    /// Old subtask `j`'s elements go to new subtask `j mod parallelism`, in subtask order, and
    /// are re-issued before the first new input.
    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        for (old, bytes) in parts {
            if old % self.parallelism != self.subtask {
                continue;
            }
            let stored: Vec<Stored<In>> = postcard::from_bytes(bytes).map_err(|e| {
                self.fail(format!(
                    "cannot decode the in-flight elements of old subtask {old}: {e}"
                ))
            })?;
            if let Some(g) = self.metrics.as_ref().and_then(|m| m.restored.as_ref()) {
                g.add(stored.len() as i64);
            }
            self.backlog.extend(stored);
        }
        Ok(())
    }
}

impl<In, Out, F> Drop for AsyncWaitOperator<In, Out, F> {
    fn drop(&mut self) {
        // A failed or cancelled attempt: its requests stop here (restore re-issues them).
        for (_, h) in self.handles.drain() {
            h.abort();
        }
    }
}
