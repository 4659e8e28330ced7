//! The PostgreSQL lookup source (Flink's JDBC lookup): `SELECT <columns> FROM <table> WHERE
//! <key column> = $1`, prepared once per connection; every matching row is a result (an object
//! of its columns). tokio-postgres pipelines the queries of an async lookup on the subtask's
//! one connection; a closed connection is reopened by the next attempt.

use tokio::sync::RwLock;
use tokio_postgres::types::Type;
use tokio_postgres::{NoTls, Statement};

use crate::{LookupError, LookupKey, Row};

/// A table by key column, e.g. `PostgresLookup::new("postgres://u@host:5432/db", "customers",
/// "id")`.
#[derive(Clone, Debug, PartialEq)]
pub struct PostgresLookup {
    url: String,
    table: String,
    key_column: String,
    columns: Option<Vec<String>>,
}

/// `"a"."b"` for `a.b`, quotes doubled.
fn quote_path(name: &str) -> String {
    name.split('.').map(quote).collect::<Vec<_>>().join(".")
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

impl PostgresLookup {
    /// `url`: a `postgres://` URL or a libpq connection string.
    pub fn new(url: &str, table: &str, key_column: &str) -> Result<PostgresLookup, LookupError> {
        url.parse::<tokio_postgres::Config>()
            .map_err(|e| LookupError::Source(format!("bad PostgreSQL URL: {e}")))?;
        if table.trim().is_empty() || key_column.trim().is_empty() {
            return Err(LookupError::Source(
                "a PostgreSQL lookup needs a table and a key column".into(),
            ));
        }
        Ok(PostgresLookup {
            url: url.to_string(),
            table: table.to_string(),
            key_column: key_column.to_string(),
            columns: None,
        })
    }

    /// Only these columns (default: all).
    pub fn columns(mut self, columns: &[&str]) -> Self {
        self.columns = Some(columns.iter().map(|c| c.to_string()).collect());
        self
    }

    pub(crate) fn describe(&self) -> String {
        format!("PostgreSQL table {} by {}", self.table, self.key_column)
    }

    fn query(&self) -> String {
        let cols = match &self.columns {
            None => "*".to_string(),
            Some(c) => c.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", "),
        };
        format!(
            "SELECT {cols} FROM {} WHERE {} = $1",
            quote_path(&self.table),
            quote(&self.key_column)
        )
    }

    async fn open(&self) -> Result<(tokio_postgres::Client, Statement), LookupError> {
        let connect = |e: tokio_postgres::Error| LookupError::Connect {
            what: self.describe(),
            detail: e.to_string(),
        };
        let (client, connection) = tokio_postgres::connect(&self.url, NoTls)
            .await
            .map_err(connect)?;
        tokio::spawn(async move {
            // Ends when the client is dropped or the server goes; the next query then fails
            // and is retried on a new connection.
            let _ = connection.await;
        });
        let stmt = client.prepare(&self.query()).await.map_err(connect)?;
        Ok((client, stmt))
    }

    /// The table's columns as PostgreSQL describes them (name, type name such as `int8`,
    /// `text`), read on a connection of their own: for checking a table before a job starts.
    /// An unreachable server is [`LookupError::Connect`] (or `Timeout`), a missing table
    /// [`LookupError::Source`], each naming the table.
    pub fn table_columns(&self) -> Result<Vec<(String, String)>, LookupError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        rt.block_on(async {
            let detail = |e: tokio_postgres::Error| {
                e.as_db_error()
                    .map_or_else(|| e.to_string(), |d| d.message().to_string())
            };
            let fail = |e: tokio_postgres::Error| LookupError::Connect {
                what: format!("PostgreSQL table {}", self.table),
                detail: detail(e),
            };
            let (client, connection) = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                tokio_postgres::connect(&self.url, NoTls),
            )
            .await
            .map_err(|_| LookupError::Timeout(std::time::Duration::from_secs(10)))?
            .map_err(fail)?;
            let conn = tokio::spawn(async move {
                let _ = connection.await;
            });
            let sql = format!("SELECT * FROM {} LIMIT 0", quote_path(&self.table));
            // Connected: a failure now is about the table (missing, no access).
            let stmt = client.prepare(&sql).await.map_err(|e| {
                LookupError::Source(format!("PostgreSQL table {}: {}", self.table, detail(e)))
            })?;
            let cols = stmt
                .columns()
                .iter()
                .map(|c| (c.name().to_string(), c.type_().name().to_string()))
                .collect();
            drop(client);
            let _ = conn.await;
            Ok(cols)
        })
    }

    pub(crate) async fn client(&self) -> Result<PgClient, LookupError> {
        let conn = self.open().await?;
        let key_type = conn.1.params().first().cloned().unwrap_or(Type::TEXT);
        if !matches!(
            key_type,
            Type::INT2 | Type::INT4 | Type::INT8 | Type::TEXT | Type::VARCHAR | Type::BPCHAR
        ) {
            return Err(LookupError::Source(format!(
                "{}: key column type {key_type} is not supported (integer or text)",
                self.describe()
            )));
        }
        Ok(PgClient {
            spec: self.clone(),
            key_type,
            conn: RwLock::new(conn),
        })
    }
}

pub(crate) struct PgClient {
    spec: PostgresLookup,
    key_type: Type,
    conn: RwLock<(tokio_postgres::Client, Statement)>,
}

impl PgClient {
    pub(crate) async fn get(&self, key: &LookupKey) -> Result<Vec<Row>, LookupError> {
        let closed = self.conn.read().await.0.is_closed();
        if closed {
            let mut w = self.conn.write().await;
            if w.0.is_closed() {
                *w = self.spec.open().await?;
            }
        }
        let guard = self.conn.read().await;
        let (client, stmt) = &*guard;
        let bad_key = |why: &str| LookupError::Request(format!("key {key}: {why}"));
        let rows = match (&self.key_type, key) {
            (&Type::INT8, LookupKey::Int(i)) => client.query(stmt, &[i]).await,
            (&Type::INT4, LookupKey::Int(i)) => {
                let v = i32::try_from(*i).map_err(|_| bad_key("out of range for int4"))?;
                client.query(stmt, &[&v]).await
            }
            (&Type::INT2, LookupKey::Int(i)) => {
                let v = i16::try_from(*i).map_err(|_| bad_key("out of range for int2"))?;
                client.query(stmt, &[&v]).await
            }
            (&Type::INT8 | &Type::INT4 | &Type::INT2, LookupKey::Text(_)) => {
                return Err(bad_key("a text key for an integer key column"))
            }
            (_, k) => client.query(stmt, &[&k.to_string()]).await,
        }
        .map_err(|e| LookupError::Request(format!("{}: {e}", self.spec.describe())))?;
        rows.iter().map(to_json).collect()
    }
}

/// A row as a JSON object of its columns (integers, floats, text, booleans, NULL).
fn to_json(row: &tokio_postgres::Row) -> Result<Row, LookupError> {
    let mut obj = serde_json::Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let bad =
            |e: tokio_postgres::Error| LookupError::Request(format!("column {}: {e}", col.name()));
        let v = match *col.type_() {
            Type::BOOL => row.try_get::<_, Option<bool>>(i).map_err(bad)?.into(),
            Type::INT2 => row.try_get::<_, Option<i16>>(i).map_err(bad)?.into(),
            Type::INT4 => row.try_get::<_, Option<i32>>(i).map_err(bad)?.into(),
            Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(bad)?.into(),
            Type::FLOAT4 => row.try_get::<_, Option<f32>>(i).map_err(bad)?.into(),
            Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(bad)?.into(),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                row.try_get::<_, Option<String>>(i).map_err(bad)?.into()
            }
            ref t => {
                return Err(LookupError::Request(format!(
                    "column {}: type {t} is not supported (integers, floats, text, booleans); select it as ::text",
                    col.name()
                )))
            }
        };
        obj.insert(col.name().to_string(), v);
    }
    Ok(Row::Object(obj))
}
