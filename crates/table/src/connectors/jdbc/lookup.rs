//! A jdbc table as a lookup source: sluice-lookup's PostgreSQL lookup (one `SELECT` of the
//! table's columns `WHERE key = $1` per key, every matching row a result), with Flink's lookup
//! options:
//! `lookup.cache` (`NONE`, `PARTIAL`; `FULL` is refused), `lookup.partial-cache.max-rows`,
//! `lookup.partial-cache.expire-after-write`, `lookup.partial-cache.expire-after-access`,
//! `lookup.partial-cache.cache-missing-key`, `lookup.max-retries`, and the deprecated
//! `lookup.cache.max-rows` + `lookup.cache.ttl` (a partial cache, as Flink reads them) and
//! `lookup.cache.caching-missing-key`.
//!
//! Column types read: `BOOLEAN` (boolean), `TINYINT`/`SMALLINT` (smallint), `INT` (smallint,
//! integer), `BIGINT` (any integer), `FLOAT` (real), `DOUBLE` (real, double precision),
//! `CHAR`/`VARCHAR`/`STRING` (text, varchar, char, name). The database's table is checked
//! while the job is built: it exists and every column is there with a type listed here.

use sluice_lookup::{LookupError, LookupOptions, LookupSource, PostgresLookup};
use sluice_sql::{DataType, LogicalType, Result, SqlError, TableDef};

use super::JdbcTable;
use crate::connectors::lookup::LookupTable;
use crate::options::Options;
use crate::schema::PhysicalSchema;

/// The PostgreSQL types (`pg_type.typname`) a column of `ty` is read from, or `None` when the
/// lookup does not read `ty`.
fn readable_from(ty: &DataType) -> Option<&'static [&'static str]> {
    use LogicalType as L;
    Some(match ty.logical {
        L::Boolean => &["bool"],
        L::TinyInt | L::SmallInt => &["int2"],
        L::Int => &["int2", "int4"],
        L::BigInt => &["int2", "int4", "int8"],
        L::Float => &["float4"],
        L::Double => &["float4", "float8"],
        L::Char { .. } | L::Varchar { .. } => &["text", "varchar", "bpchar", "name"],
        _ => return None,
    })
}

/// The lookup options as sluice-lookup's plan options (Flink's keys; deprecated ones mapped).
fn plan_options(options: &Options) -> Result<LookupOptions> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: &str| pairs.push((k.to_string(), v.to_string()));
    // Deprecated first: the current keys, when given too, win (last value wins).
    if let (Some(rows), Some(ttl)) = (
        options.get("lookup.cache.max-rows"),
        options.get("lookup.cache.ttl"),
    ) {
        let rows_n = options.parse::<i64>("lookup.cache.max-rows", "a row count")?;
        if rows_n.is_some_and(|n| n > 0) {
            put("lookup.cache", "PARTIAL");
            put("lookup.partial-cache.max-rows", rows);
            put("lookup.partial-cache.expire-after-write", ttl);
        }
    }
    if let Some(v) = options.get("lookup.cache.caching-missing-key") {
        put("lookup.partial-cache.cache-missing-key", v);
    }
    for k in [
        "lookup.cache",
        "lookup.partial-cache.max-rows",
        "lookup.partial-cache.expire-after-write",
        "lookup.partial-cache.expire-after-access",
        "lookup.partial-cache.cache-missing-key",
        "lookup.max-retries",
    ] {
        if let Some(v) = options.get(k) {
            put(k, v);
        }
    }
    LookupOptions::from_plan_options(&pairs).map_err(|e| match e {
        LookupError::Option { key, value, reason } => {
            options.bad(&key, format!("'{value}': {reason}"))
        }
        other => options.bad("lookup.cache", other.to_string()),
    })
}

/// `def` as a lookup table by its column `key`, its database table checked.
pub fn lookup_table(
    options: &Options,
    schema: &PhysicalSchema,
    def: &TableDef,
    key: usize,
) -> Result<LookupTable> {
    let table = JdbcTable::new(options, schema)?;
    for (name, ty) in schema.names.iter().zip(&schema.types) {
        if readable_from(ty).is_none() {
            let pos = def.column(name).map(|c| c.pos).unwrap_or(def.pos);
            return Err(SqlError::unsupported(
                Some(pos),
                format!(
                    "column '{name}' {ty} of jdbc table '{}': a jdbc lookup reads BOOLEAN, TINYINT, \
                     SMALLINT, INT, BIGINT, FLOAT, DOUBLE, CHAR and VARCHAR/STRING columns",
                    def.name
                ),
            ));
        }
    }
    let lookup_options = plan_options(options)?;
    let bad_table = |why: String| {
        options.bad(
            "table-name",
            format!(
                "table {} in the database at {}: {why}",
                table.table, table.connection.display
            ),
        )
    };
    let columns: Vec<&str> = table.columns.iter().map(String::as_str).collect();
    let pg = PostgresLookup::new(&table.connection.conn, &table.table, &table.columns[key])
        .map_err(|e| options.bad("url", e.to_string()))?
        .columns(&columns);
    let found = pg.table_columns().map_err(|e| match e {
        LookupError::Source(_) => bad_table(e.to_string()),
        other => options.bad("url", format!("{} ({})", other, table.connection.display)),
    })?;
    for (name, ty) in table.columns.iter().zip(&table.types) {
        let Some((_, pg_type)) = found.iter().find(|(n, _)| n == name) else {
            let have: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
            return Err(bad_table(format!(
                "no column {name} (it has: {}; Flink's PostgreSQL dialect folds unquoted names to lower case)",
                have.join(", ")
            )));
        };
        let ok = readable_from(ty).unwrap_or(&[]);
        if !ok.contains(&pg_type.as_str()) {
            return Err(bad_table(format!(
                "column {name} is {pg_type}, which the table's {ty} column does not read (reads: {})",
                ok.join(", ")
            )));
        }
    }
    Ok(LookupTable::by_name(
        LookupSource::from(pg),
        lookup_options,
        table.columns.clone(),
        table.types.clone(),
    ))
}
