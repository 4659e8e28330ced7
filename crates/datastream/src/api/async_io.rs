//! Async I/O on a stream (Flink's `AsyncDataStream.orderedWait / unorderedWait` and their
//! `...WithRetry` forms): one asynchronous request per record, up to `capacity` in flight per
//! subtask. The operator is `sluice-runtime`'s `AsyncWaitOperator`; its mode, capacity, timeout
//! and runtime are the node's plan options (`async.output-mode`, `async.capacity`,
//! `async.timeout`, `async.runtime`), read by each subtask when it is deployed, so a plan
//! change (`PlanChange::SinkOption` on these keys) rewrites them in any job.

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_runtime::operators::async_io::{
    AsyncFunction, AsyncRetryStrategy, AsyncSettings, AsyncWaitOperator, OutputMode,
    ASYNC_OPERATOR_NAME,
};
use sluice_types::Data;

use crate::DataStream;

impl<T: Data + Serialize + DeserializeOwned> DataStream<T> {
    /// Results in input order (Flink's `AsyncDataStream.orderedWait`). `timeout` bounds each
    /// request, retries included (zero: no timeout); `capacity` (> 0) elements are in flight per
    /// subtask, and a full operator stops reading its input (backpressure).
    pub fn ordered_wait<U, F>(
        &self,
        function: F,
        timeout: Duration,
        capacity: usize,
    ) -> DataStream<U>
    where
        U: Data,
        F: AsyncFunction<T, U> + Clone,
    {
        self.async_wait(
            function,
            AsyncSettings::new(OutputMode::Ordered, timeout, capacity),
            None,
        )
    }

    /// Results as they complete, never across a watermark (Flink's
    /// `AsyncDataStream.unorderedWait`).
    pub fn unordered_wait<U, F>(
        &self,
        function: F,
        timeout: Duration,
        capacity: usize,
    ) -> DataStream<U>
    where
        U: Data,
        F: AsyncFunction<T, U> + Clone,
    {
        self.async_wait(
            function,
            AsyncSettings::new(OutputMode::Unordered, timeout, capacity),
            None,
        )
    }

    /// [`ordered_wait`](Self::ordered_wait) with retries (Flink's `orderedWaitWithRetry`).
    pub fn ordered_wait_with_retry<U, F, R>(
        &self,
        function: F,
        timeout: Duration,
        capacity: usize,
        strategy: R,
    ) -> DataStream<U>
    where
        U: Data,
        F: AsyncFunction<T, U> + Clone,
        R: AsyncRetryStrategy<U>,
    {
        self.async_wait(
            function,
            AsyncSettings::new(OutputMode::Ordered, timeout, capacity),
            Some(Arc::new(strategy)),
        )
    }

    /// [`unordered_wait`](Self::unordered_wait) with retries (Flink's `unorderedWaitWithRetry`).
    pub fn unordered_wait_with_retry<U, F, R>(
        &self,
        function: F,
        timeout: Duration,
        capacity: usize,
        strategy: R,
    ) -> DataStream<U>
    where
        U: Data,
        F: AsyncFunction<T, U> + Clone,
        R: AsyncRetryStrategy<U>,
    {
        self.async_wait(
            function,
            AsyncSettings::new(OutputMode::Unordered, timeout, capacity),
            Some(Arc::new(strategy)),
        )
    }

    /// The async wait operator with explicit settings (all four plan options) and an optional
    /// retry strategy: what the four methods above call, and what a lookup join builds on.
    pub fn async_wait<U, F>(
        &self,
        function: F,
        settings: AsyncSettings,
        retry: Option<Arc<dyn AsyncRetryStrategy<U>>>,
    ) -> DataStream<U>
    where
        U: Data,
        F: AsyncFunction<T, U> + Clone,
    {
        if let Err(e) = settings.check() {
            self.env.record_error(format!("{ASYNC_OPERATOR_NAME}: {e}"));
        }
        if let Some(Err(e)) = retry.as_ref().map(|r| r.check()) {
            self.env.record_error(format!("{ASYNC_OPERATOR_NAME}: {e}"));
        }
        let out = self.transform(ASYNC_OPERATOR_NAME, move |_| {
            AsyncWaitOperator::new(function.clone(), settings, retry.clone())
        });
        if let Some(id) = out.node {
            self.env
                .with_node(id, |n| n.options.extend(settings.to_options()));
        }
        out
    }
}
