//! The table check run before any record flows: every mapped column exists with a type the
//! mapping writes, nothing the mapping leaves out is required, and for upserts the key columns
//! are the table's primary key (or a unique index on exactly them).

use postgres::Client;

use crate::connect::quote_table;
use crate::mapping::Column;
use crate::{Mode, PostgresError};

/// A table column as PostgreSQL reports it.
#[derive(Debug, Clone)]
pub struct TableColumn {
    pub name: String,
    /// `format_type` (e.g. `bigint`, `character varying(20)`).
    pub pg_type: String,
    pub not_null: bool,
    pub has_default: bool,
}

/// Checks `table` against `columns` and `mode`; returns the PostgreSQL type of each mapped
/// column, in mapping order.
pub fn check_table(
    client: &mut Client,
    table: &str,
    columns: &[Column],
    mode: &Mode,
) -> Result<Vec<String>, PostgresError> {
    let schema_err = |problem: String| PostgresError::Schema {
        table: table.to_string(),
        problem,
    };
    let stmt_err = |source| PostgresError::Statement {
        table: table.to_string(),
        what: "reading the table's columns".into(),
        source,
    };
    let qualified = quote_table(table);
    let rows = client
        .query(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, \
                    a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '' \
             FROM pg_attribute a \
             WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped \
             ORDER BY a.attnum",
            &[&qualified],
        )
        .map_err(stmt_err)?;
    if rows.is_empty() {
        return Err(schema_err(
            "does not exist (or has no columns) in this database".into(),
        ));
    }
    let table_cols: Vec<TableColumn> = rows
        .iter()
        .map(|r| TableColumn {
            name: r.get(0),
            pg_type: r.get(1),
            not_null: r.get(2),
            has_default: r.get(3),
        })
        .collect();
    if columns.is_empty() {
        return Err(schema_err("the row mapping has no columns".into()));
    }
    let mut types = Vec::with_capacity(columns.len());
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|p| p.name == c.name) {
            return Err(schema_err(format!("column {} is mapped twice", c.name)));
        }
        let Some(tc) = table_cols.iter().find(|t| t.name == c.name) else {
            return Err(schema_err(format!(
                "column {} of the row mapping does not exist (the table has: {})",
                c.name,
                table_cols
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if !c.ty.accepts(&tc.pg_type) {
            return Err(schema_err(format!(
                "column {} has type {}, but the row mapping writes {}",
                c.name,
                tc.pg_type,
                c.ty.sql_name()
            )));
        }
        if c.nullable && tc.not_null {
            return Err(schema_err(format!(
                "column {} is NOT NULL, but the row mapping can write NULL (an Option)",
                c.name
            )));
        }
        types.push(tc.pg_type.clone());
    }
    for tc in &table_cols {
        if tc.not_null && !tc.has_default && !columns.iter().any(|c| c.name == tc.name) {
            return Err(schema_err(format!(
                "column {} is NOT NULL without a default, and the row mapping does not write it",
                tc.name
            )));
        }
    }
    if let Mode::Upsert { key } = mode {
        if key.is_empty() {
            return Err(schema_err("an upsert needs at least one key column".into()));
        }
        for k in key {
            if !columns.iter().any(|c| &c.name == k) {
                return Err(schema_err(format!(
                    "key column {k} is not written by the row mapping"
                )));
            }
        }
        let indexes = client
            .query(
                "SELECT array_agg(a.attname::text ORDER BY a.attname) \
                 FROM pg_index i JOIN pg_attribute a \
                   ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) \
                 WHERE i.indrelid = to_regclass($1) AND (i.indisprimary OR i.indisunique) \
                   AND i.indpred IS NULL \
                 GROUP BY i.indexrelid",
                &[&qualified],
            )
            .map_err(stmt_err)?;
        let mut want: Vec<&str> = key.iter().map(String::as_str).collect();
        want.sort_unstable();
        let found = indexes.iter().any(|r| {
            let cols: Vec<String> = r.get(0);
            cols.iter().map(String::as_str).eq(want.iter().copied())
        });
        if !found {
            return Err(schema_err(format!(
                "has no primary key or unique index on ({}), which an upsert by that key needs \
                 (ON CONFLICT)",
                key.join(", ")
            )));
        }
    }
    Ok(types)
}
