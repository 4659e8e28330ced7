//! The typed DataStream API: [`StreamEnv`], [`DataStream`], [`KeyedStream`], [`Sink`].

mod async_io;
mod checkpointing;
mod env;
mod event_time;
mod joins;
mod keyed;
mod keyed_state_api;
mod sink;
mod stream;
mod two_phase;

pub use env::StreamEnv;
pub use event_time::{
    CountAggregate, ListAggregate, ReduceAggregate, WatermarkStrategy, WindowFn, WindowResult,
    WindowedStream, DEFAULT_WATERMARK_INTERVAL,
};
pub use joins::{
    CoGroupedStreams, ConnectedStreams, Either, EitherKey, IntervalJoin, KeyedCoProcessFunction,
};
pub use keyed::{KeySelector, KeyedStream, Numeric};
pub use keyed_state_api::{
    AggregateFunction, KeyedProcessFunction, OnTimerContext, ProcessContext, StateBackendKind,
    TimerServiceRef,
};
pub use sink::{Sink, SinkDeployment};
pub use stream::DataStream;
pub use two_phase::DEFAULT_EMIT_EVERY;
