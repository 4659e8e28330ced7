#![warn(missing_docs)]

//! # sluice-sql-front: Flink SQL's statement layer
//!
//! Everything before expressions and queries are planned, pure (no I/O, no engine crate):
//!
//! * [`DataType`] / [`LogicalType`] (`types`): Flink's logical types with nullability and time
//!   attributes, printed as Flink's planner prints them.
//! * [`Value`] / [`Row`] (`value`): the dynamically typed values SQL jobs move; `Eq + Ord + Hash`
//!   so that they can be keys.
//! * [`RowKind`] / [`Change`] / [`ChangelogMode`] (`changelog`): Flink's changelogs; an
//!   updating stream carries `Change`s, an append-only one plain `Row`s.
//! * [`SqlError`] (`error`): every refusal names its place ([`Position`]: line and column) and,
//!   for an unknown name, the nearest known ones.
//! * [`split_statements`] / [`substitute`] (`script`): a script cut at its semicolons (quotes and
//!   comments respected), `${VAR}` variables substituted; [`Source`] maps every place back to
//!   the line and column the user wrote.
//! * [`Statement`] (`statement`): one statement read — `SET`, `RESET`, `CREATE TABLE | VIEW |
//!   FUNCTION`, `DROP`, `SHOW TABLES`, `DESCRIBE`, `INSERT`, a query, `EXPLAIN`, statement sets.
//!   Queries and expressions are sqlparser's AST (read with [`dialect::FlinkDialect`]); anything
//!   else is refused, with its place.
//! * [`TableDef`] (`ddl`): Flink's `CREATE TABLE` (computed and metadata columns, watermark,
//!   primary key, partitions, `WITH` options) by a parser of our own over sqlparser's tokens.
//! * [`Catalog`] (`catalog`): tables, views and functions with Flink's name resolution and
//!   duplicate rules; unknown names come with the nearest known ones. A program's own Rust
//!   functions are registered by identifier as opaque [`FunctionImpl`]s (the expression
//!   layer's functions, which this layer cannot name).
//! * [`SessionConfig`] (`config`): what `SET` set, Flink's known keys checked.
//! * [`Session`] (`session`): runs a script; returns [`PlannedStatement`]s for the planner.

pub mod catalog;
pub mod changelog;
pub mod config;
pub mod ddl;
pub mod dialect;
pub mod error;
pub mod script;
pub mod session;
pub mod sql_str;
pub mod statement;
pub mod tokens;
pub mod types;
pub mod value;

pub use catalog::{Catalog, CatalogTable, FunctionDef, FunctionImpl, ObjectPath, ViewDef};
pub use changelog::{Change, ChangelogMode, RowKind};
pub use config::SessionConfig;
pub use ddl::{ColumnDef, ColumnKind, TableDef, WatermarkDef};
pub use error::{Position, Result, SqlError};
pub use script::{split_statements, substitute, RawStatement, Source};
pub use session::{parse_script, PlannedStatement, Session};
pub use sql_str::SqlStr;
pub use statement::{
    ExplainDetail, ExplainStatement, Explained, InsertStatement, QueryStatement, Statement,
    StatementSet,
};
pub use types::{DataType, LogicalType, RowField, TimestampKind};
pub use value::{Decimal, Row, Timestamp, Value};
