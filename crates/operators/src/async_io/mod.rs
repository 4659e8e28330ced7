//! Async I/O: the async wait operator (Flink's `AsyncDataStream.orderedWait / unorderedWait`).
//!
//! An [`AsyncFunction`] turns each input record into a future of its results; the
//! [`AsyncWaitOperator`] keeps up to `capacity` elements in flight per subtask, emits results in
//! input order ([`OutputMode::Ordered`]) or as they complete but never across a watermark
//! ([`OutputMode::Unordered`]), bounds each request by a timeout (the function's
//! [`timeout`](AsyncFunction::timeout) handler decides what a timed-out request yields; by
//! default the job fails with Flink's "Async function call has timed out."), retries by an
//! [`AsyncRetryStrategy`] ([`FixedDelayRetryStrategyBuilder`],
//! [`ExponentialBackoffDelayRetryStrategyBuilder`], [`RetryPredicates`]), and snapshots the
//! inputs it still holds so a restore re-issues them (exactly-once output).
//!
//! Main types: [`AsyncFunction`], [`AsyncError`], [`AsyncWaitOperator`], [`AsyncSettings`]
//! (mode, capacity, timeout, runtime: the node's plan options, so a plan change can rewrite
//! them), [`ElementQueue`] (the ordered / segmented unordered queue), the retry strategies.
//!
//! **Backpressure.** When the queue is full the operator blocks inside `process` (or
//! `on_watermark`) until a request completes, so its task stops reading its input gate and
//! returns no credits: upstream is backpressured exactly as by a slow operator. The wait is busy
//! time (as Flink's `yield` inside `processElement`), with low CPU: the doctor's "blocking"
//! signature, and the cue for a larger capacity.
//!
//! **Where futures run.** The task thread calls `async_invoke` (as Flink calls it on the task
//! thread) and hands the future to a tokio runtime; completions come back over a channel that
//! the task drains before each record, on every watermark, at its buffer-timeout tick, and while
//! it waits for room. By default each operator subtask has its own current-thread runtime on a
//! thread of its own ([`RuntimeKind::PerTask`], `sluice-async-<subtask>`), stopped and joined
//! when the operator is dropped, so no runtime thread outlives its job; plan option
//! `async.runtime = shared` puts every async operator of the process on one multi-threaded
//! runtime instead (as many `sluice-async-io-<n>` threads as cores, living as long as the
//! process). Measured (`cargo bench -p sluice-datastream --bench async_io`, release, 2 cores at load
//! average ~16, best of 3; README, "Async I/O"): at parallelism 1 the two are equal within noise
//! (e.g. capacity 256 at 1 ms: 94.2 k vs 95.0 k records/s; at 10 ms: 21.1 k vs 20.5 k); at
//! parallelism 4 (capacity 64, 1 ms) per-task reaches 109.8 k records/s at 2.5 µs of CPU per
//! record against the shared runtime's 89.1 k at 3.5 µs: the multi-threaded scheduler's
//! cross-thread wake-ups and work stealing cost more than one single-threaded runtime per
//! subtask, whose timers and wake-ups stay on one thread. Per-task also isolates subtasks (a
//! future that blocks its thread stalls only its own subtask). Its price is one thread per async
//! subtask (15 threads against 11 in that run).
//!
//! Completed results are emitted when the task next looks: before the next record, or at the
//! next buffer-timeout tick (default 100 ms) when no input arrives.

mod function;
mod io_runtime;
pub mod metrics;
mod operator;
mod queue;
mod retry;

use sluice_types::duration::parse_duration;
use std::time::Duration;

pub use function::{
    with_timeout_handler, AsyncError, AsyncFunction, AsyncResultFuture, WithTimeoutHandler,
    TIMEOUT_MESSAGE,
};
pub use io_runtime::RuntimeKind;
pub use operator::AsyncWaitOperator;
pub use queue::{Control, ElementQueue, OutputMode, Ready, Stored};
pub use retry::{
    AsyncRetryStrategy, ErrorPredicate, ExponentialBackoffDelayRetryStrategy,
    ExponentialBackoffDelayRetryStrategyBuilder, FixedDelayRetryStrategy,
    FixedDelayRetryStrategyBuilder, NoRetryStrategy, ResultPredicate, RetryPredicates,
};

/// The operator's name in plans, as Flink names the transformation.
pub const ASYNC_OPERATOR_NAME: &str = "async wait operator";
/// Plan option: `ORDERED` or `UNORDERED` (Flink's `AsyncDataStream.OutputMode`).
pub const OPTION_OUTPUT_MODE: &str = "async.output-mode";
/// Plan option: elements in flight per subtask (> 0).
pub const OPTION_CAPACITY: &str = "async.capacity";
/// Plan option: per-request timeout, retries included, in Flink's duration syntax (`sluice_types::duration`; `0`: none).
pub const OPTION_TIMEOUT: &str = "async.timeout";
/// Plan option: `shared` or `per-task` (see the module docs).
pub const OPTION_RUNTIME: &str = "async.runtime";

/// The async wait operator's settings: what the node's plan options say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncSettings {
    /// Whether results leave in input order or as they complete.
    pub mode: OutputMode,
    /// Elements the operator holds at most (waiting or done); input blocks beyond.
    pub capacity: usize,
    /// `None`: no timeout (Flink: a timeout of 0).
    pub timeout: Option<Duration>,
    /// Which tokio runtime the requests run on.
    pub runtime: RuntimeKind,
}

impl AsyncSettings {
    /// `timeout` zero means none.
    pub fn new(mode: OutputMode, timeout: Duration, capacity: usize) -> AsyncSettings {
        AsyncSettings {
            mode,
            capacity,
            timeout: (!timeout.is_zero()).then_some(timeout),
            runtime: RuntimeKind::PerTask,
        }
    }

    /// What a job must not start with, named (Flink: "The number of concurrent async
    /// operation should be greater than 0.").
    pub fn check(&self) -> Result<(), String> {
        if self.capacity == 0 {
            return Err(format!(
                "{OPTION_CAPACITY} must be greater than 0 (the number of concurrent async operations)"
            ));
        }
        Ok(())
    }

    /// The plan options that describe these settings.
    pub fn to_options(&self) -> Vec<(String, String)> {
        vec![
            (OPTION_OUTPUT_MODE.into(), self.mode.as_str().into()),
            (OPTION_CAPACITY.into(), self.capacity.to_string()),
            (
                OPTION_TIMEOUT.into(),
                format!("{} ms", self.timeout.map_or(0, |t| t.as_millis())),
            ),
            (OPTION_RUNTIME.into(), self.runtime.as_str().into()),
        ]
    }

    /// These settings with what `option` sets overriding them; a bad value is named.
    pub fn with_options<'a>(
        &self,
        option: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<AsyncSettings, String> {
        let mut s = *self;
        if let Some(v) = option(OPTION_OUTPUT_MODE) {
            s.mode = OutputMode::parse(v).ok_or_else(|| {
                format!("{OPTION_OUTPUT_MODE} = '{v}': expected ORDERED or UNORDERED")
            })?;
        }
        if let Some(v) = option(OPTION_CAPACITY) {
            s.capacity = v.trim().parse().map_err(|_| {
                format!("{OPTION_CAPACITY} = '{v}': expected a whole number greater than 0")
            })?;
        }
        if let Some(v) = option(OPTION_TIMEOUT) {
            let t = parse_duration(v).map_err(|e| {
                format!("{OPTION_TIMEOUT} = '{v}': {e}; expected a duration such as '500 ms', '30 s' or '3 min'")
            })?;
            s.timeout = (!t.is_zero()).then_some(t);
        }
        if let Some(v) = option(OPTION_RUNTIME) {
            s.runtime = RuntimeKind::parse(v)
                .ok_or_else(|| format!("{OPTION_RUNTIME} = '{v}': expected shared or per-task"))?;
        }
        s.check()?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_through_plan_options() {
        let s = AsyncSettings::new(OutputMode::Unordered, Duration::from_secs(3), 64);
        let opts = s.to_options();
        let back = AsyncSettings::new(OutputMode::Ordered, Duration::ZERO, 1)
            .with_options(|k| opts.iter().find(|(o, _)| o == k).map(|(_, v)| v.as_str()))
            .unwrap();
        assert_eq!(back, s);
        let bad = s.with_options(|k| (k == OPTION_CAPACITY).then_some("0"));
        assert!(bad.unwrap_err().contains("greater than 0"));
        let bad = s.with_options(|k| (k == OPTION_TIMEOUT).then_some("soon"));
        assert!(bad.unwrap_err().contains("async.timeout = 'soon'"));
        let three_min = s.with_options(|k| (k == OPTION_TIMEOUT).then_some("3 min"));
        assert_eq!(three_min.unwrap().timeout, Some(Duration::from_secs(180)));
        let none = s.with_options(|k| (k == OPTION_TIMEOUT).then_some("0 ms"));
        assert_eq!(none.unwrap().timeout, None);
    }
}
