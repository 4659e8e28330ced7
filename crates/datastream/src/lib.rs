#![warn(missing_docs)]

//! # sluice-datastream: the DataStream API
//!
//! This crate is what a Sluice user programs against:
//!
//! 1. **API** — [`StreamEnv`] (settings, sources), [`DataStream<T>`] (map, filter, flat_map,
//!    union, partitioning, sinks, Async I/O: `ordered_wait` / `unordered_wait`, see
//!    [`async_io`]) and [`KeyedStream<K, T, F>`] (rolling reduce/sum/min/max; `F` the key
//!    selector's own type, a [`KeySelector`], called statically by keyed operators). Every
//!    call adds a node to the **stream graph** ([`StreamNode`], a `sluice-plan` descriptor), with
//!    ids handed out like Flink's transformation ids (virtual nodes such as `key_by` take an id
//!    too), and keeps what the node runs (typed factories, `typeops`) beside it by node id.
//! 2. **Planning** is `sluice-plan`'s (stream graph → chained [`JobGraph`], Flink's partitioners
//!    and key groups, plan renderers), re-exported here as [`job_graph`], [`partition`],
//!    [`plan`] and [`json`].
//! 3. **Deployment** — `deploy` creates a credit-based input gate per downstream subtask and a
//!    record writer per upstream subtask and edge, and hands the runtime one closure per subtask.
//!    Before that, [`launch_checks`] refuses a job above the thread and buffer-memory ceilings
//!    or with an injected fault that names no subtask able to fail.
//! 4. **Plan fixes** — [`fixer`] rewrites the stream graph to remove a bottleneck.
//!
//! ```
//! use sluice_datastream::StreamEnv;
//! let env = StreamEnv::new();
//! env.set_parallelism(2);
//! let sums = env
//!     .generate(1000, |i| ((i % 3) as i64, 1i64))
//!     .map(|(k, v)| (k, v * 2))
//!     .key_by(|r: &(i64, i64)| r.0)
//!     .sum(|r: &mut (i64, i64)| &mut r.1)
//!     .collect();
//! env.execute().unwrap();
//! let mut last = std::collections::BTreeMap::new();
//! for (k, s) in sums.handle.take() { last.insert(k, s); }
//! assert_eq!(last[&0], 2 * 334);
//! ```
//!
//! Invariant: this crate decides *what* runs *where*; it never blocks on data or touches threads
//! itself beyond starting the job (that is `sluice-runtime`), and never does I/O except through
//! sources and sinks the user asked for.

pub mod api;
pub mod deploy;
/// The crate's error type, [`GraphError`].
pub mod error;
pub mod fixer;
pub mod launch_checks;
mod node_body;
pub mod operator_id;
pub mod placement;
mod process_link;
pub mod selectors;
mod typeops;

// The plan layer, re-exported under the paths users know.
pub use sluice_plan::{job_graph, json, partition, plan, stream_graph};

pub use api::{
    AggregateFunction, KeyedProcessFunction, OnTimerContext, ProcessContext, StateBackendKind,
    TimerServiceRef,
};
pub use api::{
    CoGroupedStreams, ConnectedStreams, Either, EitherKey, IntervalJoin, KeyedCoProcessFunction,
};
pub use api::{
    CountAggregate, ListAggregate, ReduceAggregate, WatermarkStrategy, WindowFn, WindowResult,
    WindowedStream, DEFAULT_WATERMARK_INTERVAL,
};
pub use api::{DataStream, KeySelector, KeyedStream, Numeric, Sink, SinkDeployment, StreamEnv};
pub use sluice_runtime::job_master::{
    EnvConfig, FaultSpec, JobExecution, JobHandle, JobMonitor, JobOutcome,
};
/// The job's settings (moved to the runtime's job master; this path is kept for users).
pub mod config {
    pub use sluice_runtime::job_master::{EnvConfig, FaultSpec};
}
/// Async I/O (`DataStream::ordered_wait` / `unordered_wait`): the function trait, errors,
/// settings and retry strategies.
pub mod async_io {
    pub use sluice_runtime::operators::async_io::*;
}
pub use error::GraphError;
pub use job_graph::{JobEdge, JobGraph, JobVertex, ResolvedNode};
pub use json::{to_jackson_pretty, JacksonPretty, Json};
pub use placement::Placement;
/// Buffer debloating settings (`StreamEnv::set_buffer_debloat`).
pub use sluice_channel::DebloatConfig;
pub use sluice_net::{Liveness, NetEndpoint};
pub use sluice_plan::{QueryPlan, QueryPlanNode};
pub use sluice_runtime::checkpoint::{CheckpointConfig, RestartStrategy};
pub use sluice_runtime::fasthash::{FastBuildHasher, FastHashMap};
pub use sluice_runtime::operators::{TimeDomain, WindowAssigner};
pub use sluice_runtime::sinks::{CollectHandle, DiscardHandle};
pub use sluice_runtime::sources::SocketSourceConfig;
pub use sluice_runtime::time::windows::TimeWindow;
pub use sluice_runtime::JobResult;
pub use sluice_types::Watermark;
pub use sluice_types::{
    Collector, CollectorExt, ControlEvent, Data, Operator, OperatorContext, OperatorError,
    ShipStrategy,
};
pub use stream_graph::{ChainingStrategy, NodeKind, StreamNode};
