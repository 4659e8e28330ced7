//! The lookup as an [`AsyncFunction`] for sluice-runtime's async wait operator (async mode): a
//! cache hit is answered at once on the task thread; a miss is a future on the async I/O
//! runtime that connects the subtask's client on first use, loads with the lookup's retries and
//! per-attempt timeout, fills the cache and applies the join.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sluice_runtime::operators::async_io::{AsyncError, AsyncFunction, AsyncResultFuture};
use sluice_types::{OperatorContext, OperatorError};

use crate::cache::Cache;
use crate::metrics::Metrics;
use crate::operator::{joined, load, JoinFn, KeyFn, Policy};
use crate::source::Client;
use crate::{LookupOptions, LookupSource};

pub(crate) struct LookupAsync<T, U> {
    source: LookupSource,
    key_fn: KeyFn<T>,
    join_fn: JoinFn<T, U>,
    shared: Option<Arc<Shared>>,
}

/// One subtask's state, shared by its request futures.
struct Shared {
    source: LookupSource,
    client: tokio::sync::OnceCell<Client>,
    cache: Mutex<Option<Cache>>,
    policy: Arc<Policy>,
    metrics: Arc<Metrics>,
    in_flight: AtomicUsize,
}

impl<T, U> LookupAsync<T, U> {
    pub(crate) fn new(source: LookupSource, key_fn: KeyFn<T>, join_fn: JoinFn<T, U>) -> Self {
        LookupAsync {
            source,
            key_fn,
            join_fn,
            shared: None,
        }
    }
}

impl<T: Send + 'static, U: Send + 'static> AsyncFunction<T, U> for LookupAsync<T, U> {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        let opts = LookupOptions::from_plan_options(&ctx.options)
            .map_err(|e| OperatorError::failed(format!("{}: {e}", ctx.task_display_name())))?;
        self.shared = Some(Arc::new(Shared {
            source: self.source.clone(),
            client: tokio::sync::OnceCell::new(),
            cache: Mutex::new(Cache::new(&opts.cache)),
            policy: Arc::new(Policy::new(&self.source, &opts)),
            metrics: Arc::new(Metrics::new(
                self.source.stats.clone(),
                ctx,
                opts.capacity(),
            )),
            in_flight: AtomicUsize::new(0),
        }));
        Ok(())
    }

    fn async_invoke(&self, input: T) -> AsyncResultFuture<U> {
        let Some(sh) = self.shared.clone() else {
            return Box::pin(async { Err(AsyncError::new("lookup: invoked before open")) });
        };
        let key = (self.key_fn)(&input);
        sh.metrics.looked_up(&key);
        let cached = sh
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
            .and_then(|c| c.get(&key, Instant::now()));
        if let Some(rows) = cached {
            sh.metrics.hit();
            let out = joined(&self.join_fn, &input, &rows);
            return Box::pin(async move { Ok(out) });
        }
        sh.metrics.miss();
        sh.metrics.in_flight(sh.in_flight.fetch_add(1, Relaxed) + 1);
        let join = self.join_fn.clone();
        Box::pin(async move {
            let result = async {
                let client = sh
                    .client
                    .get_or_try_init(|| sh.source.connect())
                    .await?
                    .clone();
                load(client, key.clone(), sh.policy.clone(), sh.metrics.clone()).await
            }
            .await;
            sh.metrics
                .in_flight(sh.in_flight.fetch_sub(1, Relaxed).saturating_sub(1));
            let rows = Arc::new(result.map_err(|e| AsyncError::new(e.to_string()))?);
            if let Some(c) = sh.cache.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                c.put(key, rows.clone(), Instant::now());
                sh.metrics.cached(c.len());
            }
            Ok(joined(&join, &input, &rows))
        })
    }
}
