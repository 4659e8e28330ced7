//! `'connector' = 'jdbc'` for PostgreSQL, with Flink's option names: a sink (upsert by the
//! table's `PRIMARY KEY … NOT ENFORCED`, else append) on sluice-postgres and a lookup source
//! (`JOIN … FOR SYSTEM_TIME AS OF`) on sluice-lookup. Neither is re-implemented here: this
//! module reads the options, maps the SQL types onto what those crates write and read, and
//! checks the database's table before the job starts.
//!
//! Options (Flink's `JdbcConnectorOptions` and lookup options): `url`
//! (`jdbc:postgresql://HOST:PORT/DB`, see [`url`]), `table-name`, `username` and `password`
//! (both or neither, as Flink checks), `driver` (only `org.postgresql.Driver`),
//! `connection.max-retry-timeout`; `sink.buffer-flush.max-rows`, `sink.buffer-flush.interval`,
//! `sink.max-retries`, `sink.parallelism`; `lookup.cache` (`NONE` or `PARTIAL`),
//! `lookup.partial-cache.max-rows`, `lookup.partial-cache.expire-after-write`,
//! `lookup.partial-cache.expire-after-access`, `lookup.partial-cache.cache-missing-key`,
//! `lookup.max-retries`, and the deprecated `lookup.cache.max-rows` / `lookup.cache.ttl` /
//! `lookup.cache.caching-missing-key`. The `scan.*` options are accepted (Flink's names) but a
//! jdbc table cannot be scanned yet: reading one other than by a lookup join is refused.
//!
//! Names: Flink's PostgreSQL dialect writes table and column names unquoted, so PostgreSQL
//! folds them to lower case; Sluice folds them the same way (a `table-name` holding `"` is
//! taken as written), so a DDL column `itemName` is the database's `itemname` in both.

pub mod lookup;
mod sink;
pub mod url;

pub use sink::JdbcSink;

use sluice_sql::{DataType, Result};

use crate::options::Options;
use crate::schema::PhysicalSchema;

/// Every option the connector knows.
pub(crate) const KNOWN: &[&str] = &[
    "connector",
    "url",
    "table-name",
    "driver",
    "username",
    "password",
    "connection.max-retry-timeout",
    "scan.partition.column",
    "scan.partition.num",
    "scan.partition.lower-bound",
    "scan.partition.upper-bound",
    "scan.fetch-size",
    "scan.auto-commit",
    "lookup.cache",
    "lookup.partial-cache.max-rows",
    "lookup.partial-cache.expire-after-write",
    "lookup.partial-cache.expire-after-access",
    "lookup.partial-cache.cache-missing-key",
    "lookup.max-retries",
    "lookup.cache.max-rows",
    "lookup.cache.ttl",
    "lookup.cache.caching-missing-key",
    "sink.buffer-flush.max-rows",
    "sink.buffer-flush.interval",
    "sink.max-retries",
    "sink.parallelism",
];

/// The PostgreSQL driver, the one `driver` Sluice accepts.
const DRIVER: &str = "org.postgresql.Driver";

/// A jdbc table: where it is and what its columns are called in the database.
#[derive(Clone, Debug)]
pub struct JdbcTable {
    /// The SQL table's name (for messages).
    pub name: String,
    /// How to connect (no password in its `display`).
    pub connection: url::PgConnection,
    /// The database's table name (folded as PostgreSQL folds an unquoted name).
    pub table: String,
    /// The database's column names, in the SQL table's physical order (folded).
    pub columns: Vec<String>,
    /// The SQL types of those columns.
    pub types: Vec<DataType>,
    /// `connection.max-retry-timeout`: the limit of each connection attempt (unset: the
    /// PostgreSQL sink's own 10 s).
    pub connect_timeout: Option<std::time::Duration>,
}

/// `name` as PostgreSQL reads it unquoted: ASCII letters lower-cased.
pub(crate) fn fold(name: &str) -> String {
    name.to_ascii_lowercase()
}

impl JdbcTable {
    /// Reads and checks the options every jdbc table needs (unknown keys refused naming the
    /// nearest known ones).
    pub fn new(options: &Options, schema: &PhysicalSchema) -> Result<JdbcTable> {
        options.check_known("jdbc", KNOWN)?;
        let url_text = options.required("url")?;
        let table = options.required("table-name")?;
        if let Some(d) = options.get("driver") {
            if d.trim() != DRIVER {
                return Err(options.bad(
                    "driver",
                    format!("'{d}': Sluice's jdbc connector speaks PostgreSQL only ('{DRIVER}')"),
                ));
            }
        }
        all_or_none(options, &["username", "password"])?;
        all_or_none(
            options,
            &[
                "scan.partition.column",
                "scan.partition.num",
                "scan.partition.lower-bound",
                "scan.partition.upper-bound",
            ],
        )?;
        all_or_none(options, &["lookup.cache.max-rows", "lookup.cache.ttl"])?;
        let connection = url::parse(url_text, options.get("username"), options.get("password"))
            .map_err(|e| options.bad("url", e))?;
        let connect_timeout = match options.get("connection.max-retry-timeout") {
            None => None,
            Some(v) => match sluice_types::duration::parse_duration(v) {
                Ok(d) if d.as_secs() >= 1 && d.subsec_nanos() == 0 => Some(d),
                _ => {
                    return Err(options.bad(
                        "connection.max-retry-timeout",
                        format!("The value of 'connection.max-retry-timeout' option must be in second granularity and shouldn't be smaller than 1 second, but is {v}."),
                    ))
                }
            },
        };
        for key in ["lookup.max-retries", "sink.max-retries"] {
            if let Some(n) = options.parse::<i64>(key, "a whole number")? {
                if n < 0 {
                    return Err(options.bad(
                        key,
                        format!("The value of '{key}' option shouldn't be negative, but is {n}."),
                    ));
                }
            }
        }
        let table = if table.contains('"') {
            table.to_string()
        } else {
            fold(table)
        };
        Ok(JdbcTable {
            name: options.table().to_string(),
            connection,
            table,
            columns: schema.names.iter().map(|n| fold(n)).collect(),
            types: schema.types.clone(),
            connect_timeout,
        })
    }
}

/// Flink's `checkAllOrNone`: some of `keys` given but not all is refused.
fn all_or_none(options: &Options, keys: &[&str]) -> Result<()> {
    let given = keys.iter().filter(|k| options.get(k).is_some()).count();
    if given == 0 || given == keys.len() {
        return Ok(());
    }
    let missing = keys
        .iter()
        .find(|k| options.get(k).is_none())
        .copied()
        .unwrap_or_default();
    Err(options.bad(
        missing,
        format!(
            "Either all or none of the following options should be provided:\n{}",
            keys.join("\n")
        ),
    ))
}
