//! What the user gives the async wait operator: a function from one input to a future of its
//! results (Flink's `AsyncFunction.asyncInvoke`), with an overridable timeout handler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use sluice_types::{OperatorContext, OperatorError};

/// The future an [`AsyncFunction`] returns for one input: its results (0..n records, Flink's
/// `ResultFuture.complete(Collection)`) or an error (`completeExceptionally`).
pub type AsyncResultFuture<Out> =
    Pin<Box<dyn Future<Output = Result<Vec<Out>, AsyncError>> + Send + 'static>>;

/// The message of the default timeout handler, as Flink's `AsyncFunction.timeout` words it.
pub const TIMEOUT_MESSAGE: &str = "Async function call has timed out.";

/// Why one asynchronous request failed: a message, and the error it wraps when there is one
/// (so a retry predicate can test its type, Flink's `RetryPredicates.exceptionTypePredicate`).
#[derive(Debug, Clone)]
pub struct AsyncError {
    message: String,
    timeout: bool,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl AsyncError {
    /// A failure described by `message`.
    pub fn new(message: impl Into<String>) -> AsyncError {
        AsyncError {
            message: message.into(),
            timeout: false,
            source: None,
        }
    }

    /// A failure caused by `error` (kept, so [`AsyncError::downcast_ref`] finds it).
    pub fn from_error<E: std::error::Error + Send + Sync + 'static>(error: E) -> AsyncError {
        AsyncError {
            message: error.to_string(),
            timeout: false,
            source: Some(Arc::new(error)),
        }
    }

    /// The default timeout handler's error: [`TIMEOUT_MESSAGE`] (Flink's `TimeoutException`).
    pub fn timeout() -> AsyncError {
        AsyncError {
            message: TIMEOUT_MESSAGE.to_string(),
            timeout: true,
            source: None,
        }
    }

    /// What went wrong, as the function (or the timeout) put it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this is the timeout handler's timeout error.
    pub fn is_timeout(&self) -> bool {
        self.timeout
    }

    /// The wrapped error, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.source.as_deref()?.downcast_ref::<E>()
    }
}

impl std::fmt::Display for AsyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AsyncError {}

impl From<String> for AsyncError {
    fn from(message: String) -> AsyncError {
        AsyncError::new(message)
    }
}

impl From<&str> for AsyncError {
    fn from(message: &str) -> AsyncError {
        AsyncError::new(message)
    }
}

/// One request per input record, answered by a future (Flink's `AsyncFunction` /
/// `RichAsyncFunction`). Each subtask gets its own clone of the function (the DataStream API
/// requires `Clone`), opened on the subtask's thread before the first record; the futures it
/// returns run on the async I/O runtime (see the module docs), so they must own what they use
/// (clone an `Arc` of a client into them).
///
/// Any `Fn(In) -> impl Future<Output = Result<Vec<Out>, AsyncError>>` closure is an
/// `AsyncFunction` with the default timeout handler; implement the trait on a type of your own
/// to override [`timeout`](AsyncFunction::timeout) or [`open`](AsyncFunction::open).
pub trait AsyncFunction<In, Out>: Send + Sync + 'static {
    /// Starts the request for `input` (Flink's `asyncInvoke`).
    fn async_invoke(&self, input: In) -> AsyncResultFuture<Out>;

    /// The request for `input` did not complete within the operator's timeout (retries
    /// included). The default fails the job with [`TIMEOUT_MESSAGE`], as Flink's does; return
    /// `Ok(records)` to emit those instead (e.g. a default value, or none). Runs on the task's
    /// thread.
    fn timeout(&self, _input: &In) -> Result<Vec<Out>, AsyncError> {
        Err(AsyncError::timeout())
    }

    /// Called once per subtask, on its thread, before the first request (Flink's
    /// `RichAsyncFunction.open`): connect clients here.
    fn open(&mut self, _ctx: &OperatorContext) -> Result<(), OperatorError> {
        Ok(())
    }
}

impl<In, Out, F, Fut> AsyncFunction<In, Out> for F
where
    F: Fn(In) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Out>, AsyncError>> + Send + 'static,
{
    fn async_invoke(&self, input: In) -> AsyncResultFuture<Out> {
        Box::pin(self(input))
    }
}

/// A closure with a timeout handler of its own: `with_timeout_handler(f, |input| Ok(vec![]))`
/// emits nothing for a request that timed out instead of failing the job.
pub fn with_timeout_handler<In, Out, F, H>(function: F, handler: H) -> WithTimeoutHandler<F, H>
where
    F: AsyncFunction<In, Out>,
    H: Fn(&In) -> Result<Vec<Out>, AsyncError> + Send + Sync + 'static,
{
    WithTimeoutHandler { function, handler }
}

/// See [`with_timeout_handler`].
#[derive(Clone)]
pub struct WithTimeoutHandler<F, H> {
    function: F,
    handler: H,
}

impl<In, Out, F, H> AsyncFunction<In, Out> for WithTimeoutHandler<F, H>
where
    F: AsyncFunction<In, Out>,
    H: Fn(&In) -> Result<Vec<Out>, AsyncError> + Send + Sync + 'static,
{
    fn async_invoke(&self, input: In) -> AsyncResultFuture<Out> {
        self.function.async_invoke(input)
    }

    fn timeout(&self, input: &In) -> Result<Vec<Out>, AsyncError> {
        (self.handler)(input)
    }

    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.function.open(ctx)
    }
}
