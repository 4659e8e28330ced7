//! # sluice-plan: what a job is, before anything runs
//!
//! The pure planning layer between the DataStream API (`sluice-datastream`) and the runtime:
//!
//! 1. **Stream graph** — [`StreamNode`] descriptors (id, name, kind, uid, parallelism, max
//!    parallelism, [`ChainingStrategy`], inputs with their ship strategy), one per operator as
//!    the user wrote it (Flink's `StreamGraph`).
//! 2. **Job graph** — [`job_graph::build`] resolves parallelism, max parallelism and ship
//!    strategies (FORWARD at equal parallelism, REBALANCE otherwise; an explicit FORWARD across
//!    different parallelisms is an error naming both operators), then chains operators by Flink's
//!    rules (docs/src/reference/flink-formats.md#chaining) into [`JobVertex`]es named `a -> b`; the
//!    result is a [`JobGraph`].
//! 3. **Plans** — [`plan`] renders Flink's `getExecutionPlan()` JSON, its REST `/plan` JSON, text
//!    and DOT (`serde_json` values; [`json`] prints them in Jackson's layout and holds the ordered
//!    [`Json`] builder REST uses).
//! 4. **Partitioning** — [`partition`] reproduces Flink's placement exactly: Java `hashCode`,
//!    murmur, key groups, rebalance/rescale channel choice and pointwise wiring.
//! 5. **Plan changes** — [`PlanChange`], the one named change to a plan (parallelism behind a
//!    ship strategy, two-phase aggregation, connector option, async capacity, lookup cache) that
//!    the doctor proposes and the fixer in `sluice-datastream` applies.
//! 6. **Query plans** — [`QueryPlan`], the SQL plan a job was compiled from, carried by its
//!    job graph as plain data (what `EXPLAIN ANALYZE` joins with the live metrics).
//!
//! ```
//! use sluice_plan::{job_graph, ChainingStrategy, NodeKind, PlanConfig, StreamEdge, StreamNode};
//! let node = |id, name: &str, kind, inputs: Vec<u32>| StreamNode {
//!     id,
//!     name: name.into(),
//!     kind,
//!     uid: None,
//!     parallelism: None,
//!     non_parallel: false,
//!     max_parallelism: None,
//!     chaining: ChainingStrategy::Always,
//!     inputs: inputs.into_iter().map(|from| StreamEdge { from, strategy: None }).collect(),
//!     identity: Default::default(),
//!     options: Vec::new(),
//! };
//! let nodes = vec![
//!     node(1, "Source: gen", NodeKind::Source, vec![]),
//!     node(2, "Map", NodeKind::Operator, vec![1]),
//!     node(3, "Sink: out", NodeKind::Sink, vec![2]),
//! ];
//! let cfg = PlanConfig { parallelism: 2, max_parallelism: None, chaining: true };
//! let g = job_graph::build("demo", &nodes, &cfg).unwrap();
//! assert_eq!(g.vertices[0].name, "Source: gen -> Map -> Sink: out");
//! ```
//!
//! Invariant: pure. No user code (no closures), no runtime types, no threads, no I/O; every
//! Flink-compatibility formula lives in [`partition`].

#![warn(missing_docs)]

pub mod change;
/// [`PlanError`]: why a graph cannot be planned.
pub mod error;
pub mod job_graph;
pub mod json;
pub mod partition;
pub mod plan;
pub mod query_plan;
pub mod stream_graph;

pub use change::{PlanChange, LOOKUP_CACHE_TTL};
pub use error::PlanError;
pub use job_graph::{JobEdge, JobGraph, JobVertex, PlanConfig, ResolvedNode};
pub use json::Json;
pub use query_plan::{QueryPlan, QueryPlanNode};
/// The edge partitioner a [`PlanChange::Parallelism`] names (re-exported from `sluice-types`).
pub use sluice_types::ShipStrategy;
pub use stream_graph::{ChainingStrategy, IdentityHint, NodeKind, StreamEdge, StreamNode};
