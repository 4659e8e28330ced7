//! # sluice-graph: from a typed DataStream program to running subtasks
//!
//! This crate is what a Sluice user programs against, and the compiler between that program and
//! the runtime:
//!
//! 1. **API** — [`StreamEnv`] (settings, sources), [`DataStream<T>`] (map, filter, flat_map,
//!    union, partitioning, sinks) and [`KeyedStream<K, T>`] (rolling reduce/sum/min/max). Every
//!    call adds a node to the **stream graph** ([`StreamNode`]), Flink's `StreamGraph`, with ids
//!    handed out like Flink's transformation ids (virtual nodes such as `key_by` take an id too).
//! 2. **Job graph** — [`job_graph::build`] resolves parallelism, max parallelism and ship
//!    strategies (FORWARD at equal parallelism, REBALANCE otherwise; an explicit FORWARD across
//!    different parallelisms is an error naming both operators), then chains operators by Flink's
//!    rules (spec §2) into [`JobVertex`]es named `a -> b`.
//! 3. **Plans** — [`plan`] renders Flink's `getExecutionPlan()` JSON, its REST `/plan` JSON, text
//!    and DOT.
//! 4. **Partitioning** — [`partition`] reproduces Flink's placement exactly: Java `hashCode`,
//!    murmur, key groups, rebalance/rescale channel choice and pointwise wiring.
//! 5. **Deployment** — `deploy` creates a credit-based input gate per downstream subtask and a
//!    record writer per upstream subtask and edge, and hands the runtime one closure per subtask.
//!
//! ```
//! use sluice_graph::StreamEnv;
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
pub mod config;
pub mod deploy;
pub mod error;
pub mod fixer;
pub mod job_graph;
pub mod json;
pub mod operator_id;
pub mod partition;
pub mod plan;
pub mod selectors;
pub mod stream_graph;
mod typeops;

pub use api::{
    AggregateFunction, KeyedProcessFunction, OnTimerContext, ProcessContext, StateBackendKind,
    TimerServiceRef,
};
pub use api::{CoGroupedStreams, ConnectedStreams, Either, IntervalJoin, KeyedCoProcessFunction};
pub use api::{
    CountAggregate, ListAggregate, ReduceAggregate, WatermarkStrategy, WindowFn, WindowResult,
    WindowedStream, DEFAULT_WATERMARK_INTERVAL,
};
pub use api::{DataStream, KeyedStream, Numeric, Sink, StreamEnv};
pub use config::{EnvConfig, FaultSpec};
pub use deploy::{JobExecution, JobHandle, JobMonitor, JobOutcome};
pub use error::GraphError;
pub use job_graph::{JobEdge, JobGraph, JobVertex, ResolvedNode};
pub use json::{to_jackson_pretty, JacksonPretty, Json};
pub use sluice_runtime::checkpoint::{CheckpointConfig, RestartStrategy};
pub use sluice_runtime::fasthash::FastHashMap;
pub use sluice_runtime::operators::{TimeDomain, WindowAssigner};
pub use sluice_runtime::sinks::{CollectHandle, DiscardHandle};
pub use sluice_runtime::time::windows::TimeWindow;
pub use sluice_runtime::JobResult;
pub use sluice_types::Watermark;
pub use sluice_types::{
    Collector, CollectorExt, ControlEvent, Data, Operator, OperatorContext, OperatorError,
    ShipStrategy,
};
pub use stream_graph::{ChainingStrategy, NodeKind, StreamNode};
