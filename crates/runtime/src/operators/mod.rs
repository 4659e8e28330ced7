//! Built-in one-input operators. Each is a thin struct over a user closure; the closure type is a
//! generic parameter so the call is inlined into the operator's `process`.

mod aggregate;
pub mod async_io;
mod basic;
mod keyed_process;
mod keyed_reduce;
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
