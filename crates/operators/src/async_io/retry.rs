//! Retries of asynchronous requests (Flink's `AsyncRetryStrategy`, `AsyncRetryStrategies` and
//! `RetryPredicates`).
//!
//! Semantics taken from Flink's sources: attempt 1 is the first call; after attempt `n`
//! completes, the request is retried when `can_retry(n)` (`n <= max_attempts`, so up to
//! `max_attempts` retries after the first call) and the strategy's result predicate matches the
//! result, or its error predicate matches the error. A request that may not retry completes
//! with what it got: a result that still matches the predicate is emitted, an error fails the
//! job. The operator's timeout covers the first call and every retry. When the input ends,
//! retries stop (Flink's `retryDisabledOnFinish`): requests complete with their current
//! attempt's outcome, so a bounded job finishes.
//!
//! Fixed delay waits `delay` before every retry. Exponential backoff waits
//! `min(initial_delay × multiplier^n, max_retry_delay)` before retry `n` (1-based): Flink's
//! `ExponentialBackoffDelayRetryStrategy` multiplies before its first retry too. Flink keeps that
//! delay in the strategy object, shared by every request of the operator; here each request
//! has its own sequence, which is what the formula describes for one request.

use std::sync::Arc;
use std::time::Duration;

use super::AsyncError;

/// A predicate on one request's results.
pub type ResultPredicate<Out> = Arc<dyn Fn(&[Out]) -> bool + Send + Sync>;
/// A predicate on one request's error.
pub type ErrorPredicate = Arc<dyn Fn(&AsyncError) -> bool + Send + Sync>;

/// When and how often a request is retried.
pub trait AsyncRetryStrategy<Out>: Send + Sync + 'static {
    /// Whether a request may be retried after its `current_attempts`-th call (1-based).
    fn can_retry(&self, current_attempts: u32) -> bool;
    /// How long to wait before retrying after the `current_attempts`-th call.
    fn backoff(&self, current_attempts: u32) -> Duration;
    /// Whether these results call for a retry (Flink's `resultPredicate`; none: never).
    fn retry_on_result(&self, _results: &[Out]) -> bool {
        false
    }
    /// Whether this error calls for a retry (Flink's `exceptionPredicate`; none: never).
    fn retry_on_error(&self, _error: &AsyncError) -> bool {
        false
    }
    /// Settings a job must not start with (Flink's builders' precondition checks), named.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Never retries (Flink's `AsyncRetryStrategies.NO_RETRY_STRATEGY`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRetryStrategy;

impl<Out> AsyncRetryStrategy<Out> for NoRetryStrategy {
    fn can_retry(&self, _current_attempts: u32) -> bool {
        false
    }
    fn backoff(&self, _current_attempts: u32) -> Duration {
        Duration::ZERO
    }
}

/// The result and error predicates of a strategy.
struct Predicates<Out> {
    result: Option<ResultPredicate<Out>>,
    error: Option<ErrorPredicate>,
}

impl<Out> Clone for Predicates<Out> {
    fn clone(&self) -> Self {
        Predicates {
            result: self.result.clone(),
            error: self.error.clone(),
        }
    }
}

impl<Out> Predicates<Out> {
    fn none() -> Self {
        Predicates {
            result: None,
            error: None,
        }
    }
    fn on_result(&self, results: &[Out]) -> bool {
        self.result.as_ref().is_some_and(|p| p(results))
    }
    fn on_error(&self, error: &AsyncError) -> bool {
        self.error.as_ref().is_some_and(|p| p(error))
    }
}

/// Retries up to `max_attempts` times, `delay` apart (Flink's `FixedDelayRetryStrategy`).
pub struct FixedDelayRetryStrategy<Out> {
    max_attempts: u32,
    delay: Duration,
    predicates: Predicates<Out>,
}

impl<Out> Clone for FixedDelayRetryStrategy<Out> {
    fn clone(&self) -> Self {
        FixedDelayRetryStrategy {
            max_attempts: self.max_attempts,
            delay: self.delay,
            predicates: self.predicates.clone(),
        }
    }
}

impl<Out: 'static> AsyncRetryStrategy<Out> for FixedDelayRetryStrategy<Out> {
    fn can_retry(&self, current_attempts: u32) -> bool {
        current_attempts <= self.max_attempts
    }
    fn backoff(&self, _current_attempts: u32) -> Duration {
        self.delay
    }
    fn retry_on_result(&self, results: &[Out]) -> bool {
        self.predicates.on_result(results)
    }
    fn retry_on_error(&self, error: &AsyncError) -> bool {
        self.predicates.on_error(error)
    }
    fn check(&self) -> Result<(), String> {
        if self.max_attempts == 0 {
            return Err("fixed-delay retry: maxAttempts should be greater than zero".into());
        }
        if self.delay.is_zero() {
            return Err("fixed-delay retry: the backoff time should be greater than zero".into());
        }
        Ok(())
    }
}

/// Builds a [`FixedDelayRetryStrategy`] (Flink's `FixedDelayRetryStrategyBuilder`).
pub struct FixedDelayRetryStrategyBuilder<Out> {
    strategy: FixedDelayRetryStrategy<Out>,
}

impl<Out: 'static> FixedDelayRetryStrategyBuilder<Out> {
    /// Up to `max_attempts` retries (> 0), `delay` (> 0) apart; checked when the job is built.
    pub fn new(max_attempts: u32, delay: Duration) -> Self {
        FixedDelayRetryStrategyBuilder {
            strategy: FixedDelayRetryStrategy {
                max_attempts,
                delay,
                predicates: Predicates::none(),
            },
        }
    }
    /// Retry when the results match `predicate` (e.g. [`RetryPredicates::empty_result`]).
    pub fn if_result(mut self, predicate: impl Fn(&[Out]) -> bool + Send + Sync + 'static) -> Self {
        self.strategy.predicates.result = Some(Arc::new(predicate));
        self
    }
    /// Retry when the error matches `predicate` (e.g. [`RetryPredicates::has_error`]).
    pub fn if_exception(
        mut self,
        predicate: impl Fn(&AsyncError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.strategy.predicates.error = Some(Arc::new(predicate));
        self
    }
    /// The strategy as configured.
    pub fn build(self) -> FixedDelayRetryStrategy<Out> {
        self.strategy
    }
}

/// Retries up to `max_attempts` times, waiting `min(initial × multiplier^n, max)` before retry
/// `n` (Flink's `ExponentialBackoffDelayRetryStrategy`; see the module docs).
pub struct ExponentialBackoffDelayRetryStrategy<Out> {
    max_attempts: u32,
    initial_delay: Duration,
    max_retry_delay: Duration,
    multiplier: f64,
    predicates: Predicates<Out>,
}

impl<Out> Clone for ExponentialBackoffDelayRetryStrategy<Out> {
    fn clone(&self) -> Self {
        ExponentialBackoffDelayRetryStrategy {
            max_attempts: self.max_attempts,
            initial_delay: self.initial_delay,
            max_retry_delay: self.max_retry_delay,
            multiplier: self.multiplier,
            predicates: self.predicates.clone(),
        }
    }
}

impl<Out: 'static> AsyncRetryStrategy<Out> for ExponentialBackoffDelayRetryStrategy<Out> {
    fn can_retry(&self, current_attempts: u32) -> bool {
        current_attempts <= self.max_attempts
    }
    fn backoff(&self, current_attempts: u32) -> Duration {
        let factor = self.multiplier.powi(current_attempts.min(1024) as i32);
        let ms = self.initial_delay.as_secs_f64() * 1e3 * factor;
        let cap = self.max_retry_delay.as_secs_f64() * 1e3;
        // Flink truncates the product to whole milliseconds before the cap.
        Duration::from_millis(ms.min(cap).max(0.0) as u64)
    }
    fn retry_on_result(&self, results: &[Out]) -> bool {
        self.predicates.on_result(results)
    }
    fn retry_on_error(&self, error: &AsyncError) -> bool {
        self.predicates.on_error(error)
    }
    fn check(&self) -> Result<(), String> {
        if self.max_attempts == 0 {
            return Err(
                "exponential-backoff retry: maxAttempts should be greater than zero".into(),
            );
        }
        if !(self.multiplier.is_finite() && self.multiplier >= 1.0) {
            return Err(format!(
                "exponential-backoff retry: the multiplier must be a finite number >= 1, got {}",
                self.multiplier
            ));
        }
        if self.max_retry_delay < self.initial_delay {
            return Err(format!(
                "exponential-backoff retry: maxRetryDelay ({:?}) is below initialDelay ({:?})",
                self.max_retry_delay, self.initial_delay
            ));
        }
        Ok(())
    }
}

/// Builds an [`ExponentialBackoffDelayRetryStrategy`] (Flink's
/// `ExponentialBackoffDelayRetryStrategyBuilder`).
pub struct ExponentialBackoffDelayRetryStrategyBuilder<Out> {
    strategy: ExponentialBackoffDelayRetryStrategy<Out>,
}

impl<Out: 'static> ExponentialBackoffDelayRetryStrategyBuilder<Out> {
    /// Up to `max_attempts` retries, waiting `min(initial_delay × multiplier^n,
    /// max_retry_delay)` before retry `n`; the values are checked when the job is built.
    pub fn new(
        max_attempts: u32,
        initial_delay: Duration,
        max_retry_delay: Duration,
        multiplier: f64,
    ) -> Self {
        ExponentialBackoffDelayRetryStrategyBuilder {
            strategy: ExponentialBackoffDelayRetryStrategy {
                max_attempts,
                initial_delay,
                max_retry_delay,
                multiplier,
                predicates: Predicates::none(),
            },
        }
    }
    /// Retry when the results match `predicate`.
    pub fn if_result(mut self, predicate: impl Fn(&[Out]) -> bool + Send + Sync + 'static) -> Self {
        self.strategy.predicates.result = Some(Arc::new(predicate));
        self
    }
    /// Retry when the error matches `predicate`.
    pub fn if_exception(
        mut self,
        predicate: impl Fn(&AsyncError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.strategy.predicates.error = Some(Arc::new(predicate));
        self
    }
    /// The strategy as configured.
    pub fn build(self) -> ExponentialBackoffDelayRetryStrategy<Out> {
        self.strategy
    }
}

/// Ready-made predicates (Flink's `RetryPredicates`).
#[derive(Debug)]
pub struct RetryPredicates;

impl RetryPredicates {
    /// Matches an empty result (Flink's `EMPTY_RESULT_PREDICATE`).
    pub fn empty_result<Out>() -> impl Fn(&[Out]) -> bool + Send + Sync + 'static {
        |r: &[Out]| r.is_empty()
    }
    /// Matches every error (Flink's `HAS_EXCEPTION_PREDICATE`).
    pub fn has_error() -> impl Fn(&AsyncError) -> bool + Send + Sync + 'static {
        |_: &AsyncError| true
    }
    /// Matches an error that wraps an `E` (Flink's `exceptionTypePredicate(Class)`).
    pub fn error_type<E: std::error::Error + 'static>(
    ) -> impl Fn(&AsyncError) -> bool + Send + Sync + 'static {
        |e: &AsyncError| e.downcast_ref::<E>().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_delay_retries_max_attempts_times_on_matching_outcomes_only() {
        let s = FixedDelayRetryStrategyBuilder::<u8>::new(3, Duration::from_millis(5))
            .if_result(RetryPredicates::empty_result())
            .if_exception(RetryPredicates::has_error())
            .build();
        assert!(s.check().is_ok());
        assert!(s.can_retry(1) && s.can_retry(3) && !s.can_retry(4));
        assert_eq!(s.backoff(2), Duration::from_millis(5));
        assert!(s.retry_on_result(&[]));
        assert!(!s.retry_on_result(&[1]));
        assert!(s.retry_on_error(&AsyncError::new("x")));
        let plain = FixedDelayRetryStrategyBuilder::<u8>::new(3, Duration::from_millis(5)).build();
        assert!(!plain.retry_on_result(&[]) && !plain.retry_on_error(&AsyncError::new("x")));
        assert!(
            FixedDelayRetryStrategyBuilder::<u8>::new(0, Duration::from_millis(5))
                .build()
                .check()
                .is_err()
        );
        assert!(FixedDelayRetryStrategyBuilder::<u8>::new(1, Duration::ZERO)
            .build()
            .check()
            .is_err());
    }

    #[test]
    fn exponential_backoff_multiplies_from_the_first_retry_and_caps() {
        let s = ExponentialBackoffDelayRetryStrategyBuilder::<u8>::new(
            5,
            Duration::from_millis(10),
            Duration::from_millis(70),
            2.0,
        )
        .build();
        let delays: Vec<u64> = (1..=4).map(|n| s.backoff(n).as_millis() as u64).collect();
        assert_eq!(delays, vec![20, 40, 70, 70]);
        assert!(s.check().is_ok());
        let bad = ExponentialBackoffDelayRetryStrategyBuilder::<u8>::new(
            5,
            Duration::from_millis(10),
            Duration::from_millis(70),
            0.5,
        )
        .build();
        assert!(bad.check().is_err());
    }

    #[test]
    fn error_type_predicate_finds_the_wrapped_error() {
        let io = AsyncError::from_error(std::io::Error::other("refused"));
        assert!(RetryPredicates::error_type::<std::io::Error>()(&io));
        assert!(!RetryPredicates::error_type::<std::fmt::Error>()(&io));
        assert!(!RetryPredicates::error_type::<std::io::Error>()(
            &AsyncError::new("x")
        ));
    }
}
