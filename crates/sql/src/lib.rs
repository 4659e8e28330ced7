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
//! * [`Expr`] (`expr`): a bound scalar expression — columns by index (name kept for printing),
//!   typed literals, calls of [`ScalarFunction`]s, `CAST`/`TRY_CAST`, `CASE`, `IN`, `LIKE`/`SIMILAR
//!   TO`, `IS …`, ROW fields, ARRAY/MAP elements, `AND`/`OR`/`NOT`, arithmetic and comparisons.
//!   Each node knows its [`DataType`]; `Display` prints it as Flink's `EXPLAIN` does
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
//! * `eval`: [`Expr::eval`] over a [`Row`] with three-valued logic, Java's integer wrap-around,
//!   NULL on decimal overflow, and `CAST` (`cast`) with Flink's rules; `datetime` is the civil
//!   calendar and the `SimpleDateFormat` patterns, in UTC.
//!
//! The statement layer (everything before query planning):
//!
//! * [`split_statements`] / [`substitute`] (`script`): a script cut at its semicolons (quotes and
//!   comments respected), `${VAR}` variables substituted; [`Source`] maps every place back to
//!   the line and column the user wrote.
//! * [`Statement`] (`statement`): one statement read — `SET`, `RESET`, `CREATE TABLE | VIEW |
//!   FUNCTION`, `DROP`, `SHOW TABLES`, `DESCRIBE`, `INSERT`, a query, `EXPLAIN`, statement sets.
//!   Queries and expressions are sqlparser's AST; anything else is refused, with its place.
//! * [`TableDef`] (`ddl`): Flink's `CREATE TABLE` (computed and metadata columns, watermark,
//!   primary key, partitions, `WITH` options) by a parser of our own over sqlparser's tokens.
//! * [`Catalog`] (`catalog`): tables, views and functions with Flink's name resolution and
//!   duplicate rules; unknown names come with the nearest known ones.
//! * [`SessionConfig`] (`config`): what `SET` set, Flink's known keys checked.
//! * [`Session`] (`session`): runs a script; returns [`PlannedStatement`]s for the planner.
//!
//! Invariant: nothing here depends on the engine (no runtime, channel or DataStream crate): a
//! plan is data, and the same text always gives the same plan.

pub mod aggregates;
pub mod bind_expr;
pub mod cast;
pub mod catalog;
pub mod config;
pub mod datetime;
pub mod ddl;
pub mod dialect;
pub mod error;
pub mod eval;
pub mod expr;
pub mod functions;
pub mod plan;
pub mod script;
pub mod session;
pub mod statement;
pub mod tokens;
pub mod types;
pub mod typing;
pub mod value;

pub use aggregates::{resolve_aggregate, Accumulator, AggregateCall, AggregateFunction};
pub use bind_expr::{bind_expr, is_aggregate_call, BindContext, Scope, ScopeColumn};
pub use catalog::{Catalog, CatalogTable, FunctionDef, ObjectPath, ViewDef};
pub use config::SessionConfig;
pub use ddl::{ColumnDef, ColumnKind, TableDef, WatermarkDef};
pub use error::{Position, Result, SqlError};
pub use expr::{BinaryOp, Expr, IsTest};
pub use functions::udf::udf_by_identifier;
pub use functions::{FunctionRegistry, ScalarFunction};
pub use script::{split_statements, substitute, RawStatement, Source};
pub use session::{parse_script, PlannedStatement, Session};
pub use statement::{
    ExplainDetail, ExplainStatement, Explained, InsertStatement, QueryStatement, Statement,
    StatementSet,
};
pub use types::{DataType, LogicalType, RowField, TimestampKind};
pub use value::{Decimal, Row, Timestamp, Value};
