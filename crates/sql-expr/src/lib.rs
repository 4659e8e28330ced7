#![warn(missing_docs)]

//! # sluice-sql-expr: Flink SQL's expressions
//!
//! Pure (no I/O, no engine crate); built on `sluice-sql-front`'s types and values.
//!
//! * [`Expr`] (`expr`): a bound scalar expression — columns by index (name kept for printing),
//!   typed literals, calls of [`ScalarFunction`]s, `CAST`/`TRY_CAST`, `CASE`, `IN`, `LIKE`/`SIMILAR
//!   TO`, `IS …`, ROW fields, ARRAY/MAP elements, `AND`/`OR`/`NOT`, arithmetic and comparisons.
//!   Each node knows its `DataType`; `Display` prints it as Flink's `EXPLAIN` does
//!   (`=(MOD(auction, 123), 0)`, `*(0.908:DECIMAL(4, 3), price)`).
//! * [`bind_expr()`] (`bind_expr`): `sqlparser`'s `ast::Expr` → [`Expr`] against a [`Scope`] of
//!   visible columns (qualifier, name, type) in a [`BindContext`] (functions, the text's start in
//!   the script). Names resolve as in Calcite (`t.col` as table alias first, then ROW field);
//!   unknown names are refused with the nearest ones; aggregates are left to the planner
//!   ([`is_aggregate_call`], `Scope::pre_bind`). Type rules (`typing`) follow Flink's
//!   `LogicalTypeMerging` (DECIMAL precision and scale) and Calcite's common types.
//! * [`FunctionRegistry`] (`functions`): Flink's built-in scalar functions by case-insensitive
//!   name, each with its type rule and evaluation, plus Rust user functions
//!   ([`udf_by_identifier`] maps `CREATE FUNCTION … AS 'com.github.nexmark.flink.udf.CountChar'`).
//! * [`AggregateCall`] (`aggregates`): Flink's built-in aggregate functions (`COUNT`, `SUM`,
//!   `AVG`, `MIN`, `MAX`, `FIRST_VALUE`, `LAST_VALUE`, `LISTAGG`, `STDDEV_*`, `VAR_*`, with
//!   `DISTINCT`) resolved with Flink's result types ([`resolve_aggregate`]), computed by
//!   serializable, mergeable [`Accumulator`]s with Flink's overflow and division semantics.
//! * `eval`: [`Expr::eval`] over a `Row` with three-valued logic, Java's integer wrap-around,
//!   NULL on decimal overflow, and `CAST` (`cast`) with Flink's rules; `datetime` is the civil
//!   calendar and the `SimpleDateFormat` patterns, in UTC.
//! * [`CompiledExpr`] / [`CompiledPredicate`] (`compiled`): what operators evaluate per row —
//!   an `Expr` compiled once into specialised nodes (operands read in place, comparisons with
//!   literals on `Int`/`Str`/`Timestamp` done directly, conditions answered as `bool` without
//!   a `Value::Bool`, errors boxed) that run the walk's own code for anything else, so their
//!   answers are the walk's, value for value and error for error (`compiled/tests.rs`).

pub mod aggregates;
pub mod bind_expr;
pub mod cast;
pub mod compiled;
pub mod datetime;
pub mod eval;
pub mod expr;
pub mod functions;
pub mod typing;

// The front's modules under the paths this crate's code names them by (`crate::types` …).
#[cfg(test)]
use sluice_sql_front::dialect;
use sluice_sql_front::{error, types, value};

pub use aggregates::{resolve_aggregate, Accumulator, AggregateCall, AggregateFunction};
pub use bind_expr::{bind_expr, is_aggregate_call, BindContext, Scope, ScopeColumn};
pub use compiled::{CompiledExpr, CompiledPredicate, EvalError};
pub use expr::{BinaryOp, Expr, IsTest};
pub use functions::udf::udf_by_identifier;
pub use functions::{FunctionRegistry, ScalarFunction, SOURCE_WATERMARK, SOURCE_WATERMARK_MISUSED};
