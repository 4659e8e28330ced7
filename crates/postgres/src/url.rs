//! `postgres://USER@HOST:PORT/DB?table=T&key=K&sink.buffer-flush.max-rows=1000`: one URL for a
//! whole sink (what `sluice run --to postgres://…` takes). `table` names the table, `key`
//! (comma-separated) makes it an upsert by those columns, `sink.*` / `connection.*` parameters
//! are [`SinkOptions`]; every other parameter stays in the connection URL (libpq's, e.g.
//! `connect_timeout`, `application_name`).

use crate::{Mode, PostgresError, SinkOptions};

/// A parsed sink URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkUrl {
    /// The connection URL without the sink's own parameters.
    pub conn: String,
    /// The table written to.
    pub table: String,
    /// Append, or upsert by the `key` parameter's columns.
    pub mode: Mode,
    /// The `sink.*` and `connection.*` parameters.
    pub options: SinkOptions,
}

impl SinkUrl {
    /// Reads `postgres://USER@HOST:PORT/DB?table=T[&key=K1,K2][&sink.…=…]`.
    pub fn parse(url: &str) -> Result<SinkUrl, PostgresError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(PostgresError::Config(format!(
                "'{url}': expected postgres://USER@HOST:PORT/DB?table=T"
            )));
        }
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut table = None;
        let mut mode = Mode::Append;
        let mut options = SinkOptions::default();
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "table" if !v.is_empty() => table = Some(v.to_string()),
                "key" if !v.is_empty() => {
                    mode = Mode::Upsert {
                        key: v.split(',').map(|s| s.trim().to_string()).collect(),
                    }
                }
                "table" | "key" => {
                    return Err(PostgresError::Config(format!("'{url}': {k} is empty")))
                }
                _ if k.starts_with("sink.") || k.starts_with("connection.") => options.set(k, v)?,
                _ => rest.push(pair),
            }
        }
        let table = table
            .ok_or_else(|| PostgresError::Config(format!("'{url}': no table (add ?table=NAME)")))?;
        let conn = if rest.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        Ok(SinkUrl {
            conn,
            table,
            mode,
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sink_url_splits_into_connection_table_mode_and_options() {
        let u = SinkUrl::parse(
            "postgres://sluice@127.0.0.1:5432/db?table=sums&key=k&sink.buffer-flush.max-rows=1000&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(
            u.conn,
            "postgres://sluice@127.0.0.1:5432/db?connect_timeout=3"
        );
        assert_eq!(u.table, "sums");
        assert_eq!(
            u.mode,
            Mode::Upsert {
                key: vec!["k".into()]
            }
        );
        assert_eq!(u.options.max_rows, 1000);
        let u = SinkUrl::parse("postgres://h/db?table=t").unwrap();
        assert_eq!((u.conn.as_str(), u.mode), ("postgres://h/db", Mode::Append));
        assert!(SinkUrl::parse("postgres://h/db")
            .unwrap_err()
            .to_string()
            .contains("no table"));
        assert!(SinkUrl::parse("mysql://h/db?table=t").is_err());
        assert!(SinkUrl::parse("postgres://h/db?table=t&sink.max-retries=x")
            .unwrap_err()
            .to_string()
            .contains("sink.max-retries"));
    }
}
