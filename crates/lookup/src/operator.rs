//! The lookup-join operator, chosen per subtask at deployment from the node's plan options:
//! sync mode is [`SyncLookup`] (each missing key loaded on the task thread, `block_on` of the
//! subtask's current-thread runtime, one at a time); async mode is sluice-runtime's
//! [`AsyncWaitOperator`] (Flink's async wait operator: capacity, ordered or watermark-segmented
//! unordered output, held inputs in checkpoints re-issued on restore) over
//! [`crate::async_fn::LookupAsync`]. The same load (retries, per-attempt timeout) and the same
//! cache and metrics serve both.

use std::sync::Arc;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_runtime::operators::async_io::{AsyncSettings, AsyncWaitOperator, OutputMode, Stored};
use sluice_types::{Collector, Data, Operator, OperatorContext, OperatorError, Watermark};

use crate::async_fn::LookupAsync;
use crate::cache::Cache;
use crate::metrics::Metrics;
use crate::source::Client;
use crate::{LookupError, LookupKey, LookupMode, LookupOptions, LookupSource, Row};

pub(crate) type KeyFn<T> = Arc<dyn Fn(&T) -> LookupKey + Send + Sync>;
/// The join over all rows of a record's key (none: an empty slice).
pub(crate) type JoinFn<T, U> = Arc<dyn Fn(&T, &[Row]) -> Vec<U> + Send + Sync>;

/// Retries and timeouts of one subtask's loads.
pub(crate) struct Policy {
    pub source: String,
    pub attempts: u32,
    pub timeout: std::time::Duration,
    pub delay: std::time::Duration,
}

impl Policy {
    pub(crate) fn new(source: &LookupSource, opts: &LookupOptions) -> Policy {
        Policy {
            source: source.describe(),
            attempts: opts.max_retries.saturating_add(1),
            timeout: opts.timeout,
            delay: opts.retry_delay,
        }
    }
}

/// Loads `key`: up to `attempts` tries, each within the timeout.
pub(crate) async fn load(
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

/// The join's output for `record` and its rows (empty: the key has none).
pub(crate) fn joined<T, U>(join: &JoinFn<T, U>, record: &T, rows: &[Row]) -> Vec<U> {
    join(record, rows)
}

/// Sync mode: one load at a time on the task thread.
pub(crate) struct SyncLookup<T, U> {
    source: LookupSource,
    key_fn: KeyFn<T>,
    join_fn: JoinFn<T, U>,
    running: Option<Running>,
    /// This subtask's index and parallelism (from `open`), to pick its share of a restore.
    subtask: usize,
    parallelism: usize,
    /// Inputs async mode held in flight at the checkpoint this subtask restored from (a change
    /// from async back to sync: the rollback of the doctor's fix), with the control elements
    /// between them; processed, in order, before anything that arrives after the restore.
    restored: std::collections::VecDeque<Stored<T>>,
}

impl<T: Send + 'static, U: Send + 'static> SyncLookup<T, U> {
    /// Processes what the restore handed over, in stream order.
    fn drain_restored(&mut self, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        while let Some(e) = self.restored.pop_front() {
            match e {
                Stored::Record(r) => self.process(r, out)?,
                Stored::Watermark(w) => self.on_watermark(Watermark(w), out)?,
                Stored::Idleness(i) => self.on_idleness(i, out)?,
            }
        }
        Ok(())
    }
}

struct Running {
    rt: tokio::runtime::Runtime,
    client: Client,
    policy: Arc<Policy>,
    metrics: Arc<Metrics>,
    cache: Option<Cache>,
}

impl<T: Send + 'static, U: Send + 'static> Operator<T, U> for SyncLookup<T, U> {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.subtask = ctx.subtask_index;
        self.parallelism = ctx.parallelism.max(1);
        let open = || -> Result<Running, LookupError> {
            let opts = LookupOptions::from_plan_options(&ctx.options)?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()?;
            let client = rt.block_on(self.source.connect())?;
            Ok(Running {
                rt,
                client,
                policy: Arc::new(Policy::new(&self.source, &opts)),
                metrics: Arc::new(Metrics::new(self.source.stats.clone(), ctx, 1)),
                cache: Cache::new(&opts.cache),
            })
        };
        self.running = Some(
            open()
                .map_err(|e| OperatorError::failed(format!("{}: {e}", ctx.task_display_name())))?,
        );
        Ok(())
    }

    fn process(&mut self, record: T, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        let key = (self.key_fn)(&record);
        let r = self
            .running
            .as_mut()
            .ok_or_else(|| OperatorError::failed("lookup: process before open"))?;
        r.metrics.looked_up(&key);
        let cached = r.cache.as_mut().and_then(|c| c.get(&key, Instant::now()));
        let rows = match cached {
            Some(rows) => {
                r.metrics.hit();
                rows
            }
            None => {
                r.metrics.miss();
                if let Client::Memory(m) = &r.client {
                    // No I/O: answered on the task thread, never through the runtime (and
                    // never cached: the table is memory already).
                    let t0 = Instant::now();
                    let rows = m.get(&key);
                    r.metrics.loaded(t0.elapsed());
                    rows
                } else {
                    r.metrics.in_flight(1);
                    let rows = r.rt.block_on(load(
                        r.client.clone(),
                        key.clone(),
                        r.policy.clone(),
                        r.metrics.clone(),
                    ));
                    r.metrics.in_flight(0);
                    let rows = Arc::new(rows?);
                    if let Some(c) = &mut r.cache {
                        c.put(key, rows.clone(), Instant::now());
                        r.metrics.cached(c.len());
                    }
                    rows
                }
            }
        };
        for u in joined(&self.join_fn, &record, &rows) {
            out.collect(u)?;
        }
        Ok(())
    }
}

/// What a lookup node deploys: chosen per subtask from its plan options.
pub(crate) enum LookupOperator<T: Data, U: Data> {
    Sync(Box<SyncLookup<T, U>>),
    Async(Box<AsyncWaitOperator<T, U, LookupAsync<T, U>>>),
    /// The options are invalid: `open` fails with the reason, naming the option.
    Invalid(String),
}

impl<T: Data, U: Data> LookupOperator<T, U> {
    pub(crate) fn new(
        source: &LookupSource,
        key_fn: &KeyFn<T>,
        join_fn: &JoinFn<T, U>,
        ctx: &OperatorContext,
    ) -> Self {
        let opts = match LookupOptions::from_plan_options(&ctx.options) {
            Ok(o) => o,
            Err(e) => return LookupOperator::Invalid(e.to_string()),
        };
        match opts.mode {
            LookupMode::Sync => LookupOperator::Sync(Box::new(SyncLookup {
                source: source.clone(),
                key_fn: key_fn.clone(),
                join_fn: join_fn.clone(),
                running: None,
                subtask: 0,
                parallelism: 1,
                restored: Default::default(),
            })),
            LookupMode::Async { capacity, ordered } => {
                let mode = if ordered {
                    OutputMode::Ordered
                } else {
                    OutputMode::Unordered
                };
                // No overall timeout: each attempt has `lookup.timeout`, retries inside.
                let settings = AsyncSettings::new(mode, std::time::Duration::ZERO, capacity);
                LookupOperator::Async(Box::new(AsyncWaitOperator::new(
                    LookupAsync::new(source.clone(), key_fn.clone(), join_fn.clone()),
                    settings,
                    None,
                )))
            }
        }
    }
}

impl<T, U> Operator<T, U> for LookupOperator<T, U>
where
    T: Data + Serialize + DeserializeOwned,
    U: Data,
{
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Sync(o) => o.open(ctx),
            LookupOperator::Async(o) => o.open(ctx),
            LookupOperator::Invalid(e) => Err(OperatorError::failed(format!(
                "{}: {e}",
                ctx.task_display_name()
            ))),
        }
    }

    fn process(&mut self, record: T, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Sync(o) => {
                o.drain_restored(out)?;
                o.process(record, out)
            }
            LookupOperator::Async(o) => o.process(record, out),
            LookupOperator::Invalid(e) => Err(OperatorError::failed(e.clone())),
        }
    }

    fn finish(&mut self, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Sync(o) => {
                o.drain_restored(out)?;
                o.finish(out)
            }
            LookupOperator::Async(o) => o.finish(out),
            LookupOperator::Invalid(_) => Ok(()),
        }
    }

    fn tick(&mut self, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Async(o) => o.tick(out),
            _ => Ok(()),
        }
    }

    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Async(o) => o.on_watermark(watermark, out),
            LookupOperator::Sync(o) => {
                o.drain_restored(out)?;
                o.on_watermark(watermark, out)
            }
            LookupOperator::Invalid(_) => Ok(()),
        }
    }

    fn on_idleness(&mut self, idle: bool, out: &mut dyn Collector<U>) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Async(o) => o.on_idleness(idle, out),
            LookupOperator::Sync(o) => {
                o.drain_restored(out)?;
                o.on_idleness(idle, out)
            }
            LookupOperator::Invalid(_) => Ok(()),
        }
    }

    fn prepare_snapshot_pre_barrier(
        &mut self,
        out: &mut dyn Collector<U>,
    ) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Async(o) => o.prepare_snapshot_pre_barrier(out),
            // What the restore handed over leaves before the next barrier (sync mode keeps
            // nothing in a checkpoint).
            LookupOperator::Sync(o) => o.drain_restored(out),
            LookupOperator::Invalid(_) => Ok(()),
        }
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        match self {
            LookupOperator::Async(o) => o.snapshot_state(checkpoint_id),
            _ => Ok(None),
        }
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        match self {
            LookupOperator::Async(o) => o.restore_state(parts),
            // From async mode's checkpoint (a change back to sync): its held inputs, old
            // subtask `j`'s to new subtask `j mod parallelism` as async mode deals them.
            LookupOperator::Sync(o) => {
                for (old, bytes) in parts {
                    if bytes.is_empty() || old % o.parallelism != o.subtask {
                        continue;
                    }
                    let stored: Vec<Stored<T>> = postcard::from_bytes(bytes).map_err(|e| {
                        OperatorError::failed(format!(
                            "lookup: cannot decode the in-flight inputs of old subtask {old} \
                             (async mode's checkpoint): {e}"
                        ))
                    })?;
                    o.restored.extend(stored);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
