//! # sluice-operators: the built-in operators, event time, and what a task offers them
//!
//! Built-in one-input operators. Each is a thin struct over a user closure; the closure type is a
//! generic parameter so the call is inlined into the operator's `process`.
//!
//! Main types:
//! - [`MapOp`], [`FilterOp`], [`FlatMapOp`]: stateless; [`KeyedProcessOp`] (keyed state and
//!   timers, Flink's `KeyedProcessFunction`), [`KeyedReduceOp`], [`AggregateOp`]; [`WindowOp`]
//!   over the assigners of [`time::windows`]; [`WatermarkAssignerOp`] with the strategies of
//!   [`time::watermarks`]; two-phase aggregation against skew ([`PreAggregateOp`],
//!   [`SaltOp`], [`AdaptiveSaltOp`], [`CombineOp`]).
//! - [`async_io`]: the async wait operator (Flink's Async I/O) on tokio, one current-thread
//!   runtime per subtask by default (the module docs give the benchmark that chose it).
//! - [`hotkeys`]: the sampled Space-Saving sketch a keyed operator feeds, published into its
//!   subtask's metrics.
//! - [`services::TaskServices`]: what a task offers the operators of its chain (metrics,
//!   checkpoint reporting and restore data, cancellation, input wake-ups), reached through the
//!   handle in their `OperatorContext`; the runtime creates one per task.
//!
//! Invariant: an operator computes on the records, timers and state of its own subtask. This
//! crate must NOT spawn task threads, touch network channels or decide placement: running a
//! chain of operators is `sluice-runtime`'s job, deciding what runs where `sluice-plan`'s.
#![warn(missing_docs)]

mod aggregate;
pub mod async_io;
mod basic;
pub mod hotkeys;
mod keyed_process;
mod keyed_reduce;
pub mod services;
pub mod time;
mod two_phase;
mod watermark_assigner;
mod window;
mod window_state;

pub use aggregate::{AggregateEmit, AggregateOp, ReduceFinalOp};
pub use basic::{FilterOp, FlatMapOp, MapOp};
pub use keyed_process::{
    system_time_ms, KeyedProcessFunction, KeyedProcessOp, OnTimerContext, ProcessContext,
    ProcessingClock, TimeDomain, TimerServiceRef, TimestampFn,
};
pub use keyed_reduce::KeyedReduceOp;
pub use two_phase::{AdaptiveSaltOp, CombineOp, PreAggregateOp, SaltOp, ADAPTIVE_REFRESH};
pub use watermark_assigner::WatermarkAssignerOp;
pub use window::{LateOutput, WindowAssigner, WindowFunction, WindowOp};

pub use services::TaskServices;
