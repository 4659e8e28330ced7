//! # sluice-types: the vocabulary every other Sluice crate speaks
//!
//! This crate holds the small, dependency-free types that cross crate borders:
//!
//! - [`Data`]: what a record must be (owned, cloneable, sendable). It is blanket-implemented, so any
//!   `Clone + Send + 'static` type is a record; nothing is serialized between subtasks of one process.
//! - [`Collector`]: where an operator puts its output (records, and [`ControlEvent`]s through
//!   one required method, so no wrapper can drop a barrier by omission; [`CollectorExt`] names
//!   them). A chain of operators is a chain of collectors.
//! - [`Operator`]: the one-required-method trait every transformation implements, with defaulted
//!   lifecycle hooks (`open`, `finish`).
//! - [`ShipStrategy`]: how an edge redistributes records, printed exactly as Flink prints it.
//! - [`ids`]: job, vertex and subtask identifiers, including Flink's 32-hex vertex id format.
//! - [`duration`]: Flink's duration syntax (`10 s`, `2min`, `250`), one parser for every option.
//! - [`event`]: the control events that travel with data (end of partition, watermarks, barriers).
//! - [`ServicesHandle`]: the opaque handle in an [`OperatorContext`] through which an operator
//!   reaches its task's services (the runtime defines them).
//!
//! Invariant: no I/O, no threads, no allocation-heavy logic. Everything here is plain data or a trait.
//!
//! ```
//! use sluice_types::{Collector, Operator, OperatorError, VecCollector};
//!
//! struct Double;
//! impl Operator<i64, i64> for Double {
//!     fn process(&mut self, r: i64, out: &mut dyn Collector<i64>) -> Result<(), OperatorError> {
//!         out.collect(r * 2)
//!     }
//! }
//! let mut out = VecCollector::default();
//! Double.process(21, &mut out).unwrap();
//! assert_eq!(out.records, vec![42]);
//! ```

#![warn(missing_docs)]

pub mod collector;
pub mod duration;
pub mod error;
pub mod event;
pub mod ids;
pub mod operator;
pub mod output_batch;
pub mod services;
pub mod ship;

pub use collector::{Collector, CollectorExt, ControlEvent, VecCollector};
pub use duration::DurationError;
pub use error::OperatorError;
pub use event::{Barrier, CheckpointKind, Watermark};
pub use ids::{Id128, JobId, JobVertexId, NodeId, SubtaskIndex};
pub use operator::{Operator, OperatorContext};
pub use output_batch::OutputBatch;
pub use services::ServicesHandle;
pub use ship::ShipStrategy;

/// A record. Records move between subtasks as owned values in typed buffers, never serialized,
/// so the only requirements are ownership transfer across threads and cloning for fan-out.
pub trait Data: Clone + Send + 'static {}
impl<T: Clone + Send + 'static> Data for T {}

/// Estimated in-memory size of a record, used to fill buffers "by estimated size"
/// (docs/src/reference/flink-formats.md#credit-flow-control):
/// the shallow size of the type. Heap parts (a `String`'s bytes) are not counted, which keeps
/// the estimate free to compute on the hot path.
#[inline]
pub const fn estimated_record_size<T>() -> usize {
    let s = std::mem::size_of::<T>();
    if s == 0 {
        1
    } else {
        s
    }
}
