#![warn(missing_docs)]

//! # sluice-sql: Flink's SQL dialect, planned for Sluice
//!
//! This crate turns Flink SQL text into plans Sluice can run. It is pure: it parses, resolves,
//! types, plans and evaluates expressions, but starts no thread and does no I/O; the crate that
//! runs a plan on the DataStream API and the connectors sits above it.
//!
//! The main types:
//!
//! * [`DataType`] / [`LogicalType`] (`types`): Flink's logical types with nullability and time
//!   attributes, printed as Flink's planner prints them.
//! * [`Value`] / [`Row`] (`value`): the dynamically typed values SQL jobs move; `Eq + Ord + Hash`
//!   so that they can be keys.
//! * [`SqlError`] (`error`): every refusal names its place ([`Position`]: line and column) and,
//!   for an unknown name, the nearest known ones.
//!
//! Invariant: nothing here depends on the engine (no runtime, channel or DataStream crate): a
//! plan is data, and the same text always gives the same plan.

pub mod bind_expr;
pub mod cast;
pub mod datetime;
pub mod dialect;
pub mod error;
pub mod eval;
pub mod expr;
pub mod functions;
pub mod types;
pub mod typing;
pub mod value;

pub use bind_expr::{bind_expr, is_aggregate_call, BindContext, Scope, ScopeColumn};
pub use error::{Position, Result, SqlError};
pub use expr::{BinaryOp, Expr, IsTest};
pub use functions::udf::udf_by_identifier;
pub use functions::{FunctionRegistry, ScalarFunction};
pub use types::{DataType, LogicalType, RowField, TimestampKind};
pub use value::{Decimal, Row, Timestamp, Value};
