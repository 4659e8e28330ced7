//! [`Schema`]: the columns a program declares for a table of its stream (Flink's
//! `Schema.newBuilder()`), written as the elements of a `CREATE TABLE` and read by the same
//! parser, so types, computed columns and the watermark mean what they mean in SQL.

use std::collections::BTreeMap;

use sluice_sql::{parse_script, Position, SqlError, Statement, TableDef};

/// The columns of a table made from a stream: physical columns (filled, in order, by the
/// program's conversion), computed columns, the `rowtime` metadata column (the stream's record
/// timestamps) and a watermark.
///
/// ```
/// use sluice::table::Schema;
/// let schema = Schema::new()
///     .column("auction", "BIGINT")
///     .column("price", "BIGINT")
///     .column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
///     .watermark("rowtime", "SOURCE_WATERMARK()");
/// ```
///
/// Types and expressions are SQL text. An error in a schema names the element (the n-th call
/// of the builder) as its line, and the column within the element written as
/// ``` `name` TYPE ``` (or ``` `name` AS expr ```, ``` WATERMARK FOR `column` AS expr ```).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    elements: Vec<String>,
}

/// A name as a quoted SQL identifier.
pub(crate) fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

impl Schema {
    /// No columns yet.
    pub fn new() -> Schema {
        Schema::default()
    }

    /// A physical column of SQL type `ty` (`"BIGINT"`, `"STRING NOT NULL"`, `"TIMESTAMP(3)"`…).
    pub fn column(mut self, name: &str, ty: &str) -> Schema {
        self.elements.push(format!("{} {ty}", quoted(name)));
        self
    }

    /// A computed column: `expr` over the columns before it (Flink's `columnByExpression`).
    pub fn column_by_expression(mut self, name: &str, expr: &str) -> Schema {
        self.elements.push(format!("{} AS {expr}", quoted(name)));
        self
    }

    /// A metadata column (Flink's `columnByMetadata`): the only key a stream's table has is
    /// `rowtime`, the record's event timestamp, of type `TIMESTAMP_LTZ(3)`.
    pub fn column_by_metadata(mut self, name: &str, ty: &str) -> Schema {
        self.elements
            .push(format!("{} {ty} METADATA", quoted(name)));
        self
    }

    /// `WATERMARK FOR column AS expr`: `SOURCE_WATERMARK()` keeps the stream's own watermarks;
    /// another expression makes Flink SQL's periodic watermark from the rows, as a table of a
    /// connector does.
    pub fn watermark(mut self, column: &str, expr: &str) -> Schema {
        self.elements
            .push(format!("WATERMARK FOR {} AS {expr}", quoted(column)));
        self
    }

    /// The schema as the `CREATE TEMPORARY TABLE` of `table` (no connector: the translator
    /// reads the program's stream).
    pub(crate) fn table_def(&self, table: &str) -> Result<TableDef, SqlError> {
        if self.elements.is_empty() {
            return Err(SqlError::validation(
                None,
                format!("the schema of {table} has no column"),
            ));
        }
        let text = format!(
            "CREATE TEMPORARY TABLE {} (\n{}\n)",
            quoted(table),
            self.elements.join(",\n")
        );
        let mut statements = parse_script(&text, &BTreeMap::new()).map_err(in_schema)?;
        match (statements.pop(), statements.is_empty()) {
            (Some(Statement::CreateTable(def)), true) => Ok(def),
            _ => Err(SqlError::validation(
                None,
                format!("the schema of {table} is not a list of columns: {self:?}"),
            )),
        }
    }
}

/// An error in the generated `CREATE TABLE` with its place counted in the schema's elements
/// (line n = element n).
pub(crate) fn in_schema(e: SqlError) -> SqlError {
    let shift = |p: Position| Position {
        line: p.line.saturating_sub(1).max(1),
        column: p.column,
    };
    match e {
        SqlError::Syntax { pos, message } => SqlError::Syntax {
            pos: shift(pos),
            message,
        },
        SqlError::UnknownName {
            pos,
            kind,
            name,
            nearest_names,
        } => SqlError::UnknownName {
            pos: pos.map(shift),
            kind,
            name,
            nearest_names,
        },
        SqlError::Unsupported { pos, what } => SqlError::Unsupported {
            pos: pos.map(shift),
            what,
        },
        SqlError::Validation { pos, message } => SqlError::Validation {
            pos: pos.map(shift),
            message,
        },
        other => other,
    }
}
