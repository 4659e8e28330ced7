//! Connections: the parsed configuration, its address for error messages, one attempt bounded by
//! the connect timeout, and reconnection with backoff.

use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config, NoTls};

use crate::PostgresError;

/// Where and how to connect (a `postgres://` URL or a `key=value` connection string).
#[derive(Clone)]
pub struct Endpoint {
    config: Config,
    /// The same configuration for tokio-postgres (the appending sink's COPY connection).
    async_config: tokio_postgres::Config,
    address: String,
}

impl std::fmt::Debug for Endpoint {
    // The configuration may hold a password: show the address only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Endpoint({})", self.address)
    }
}

impl Endpoint {
    /// Reads a connection URL or key-value string; each connection attempt may take `connect_timeout`.
    pub fn parse(conn: &str, connect_timeout: Duration) -> Result<Endpoint, PostgresError> {
        let mut config: Config = conn.parse().map_err(|e| {
            PostgresError::Config(format!("connection string: {e} (expected postgres://USER@HOST:PORT/DB or 'host=… port=… user=… dbname=…')"))
        })?;
        config.connect_timeout(connect_timeout);
        let mut async_config: tokio_postgres::Config = conn
            .parse()
            .map_err(|e| PostgresError::Config(format!("connection string: {e}")))?;
        async_config.connect_timeout(connect_timeout);
        let ports = config.get_ports();
        let address = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                match h {
                    Host::Tcp(name) => format!("{name}:{port}"),
                    Host::Unix(path) => format!("{}/.s.PGSQL.{port}", path.display()),
                }
            })
            .collect::<Vec<_>>()
            .join(",");
        let address = if address.is_empty() {
            "localhost:5432".to_string()
        } else {
            address
        };
        Ok(Endpoint {
            config,
            async_config,
            address,
        })
    }

    /// `host:port` (what error messages name).
    pub fn address(&self) -> &str {
        &self.address
    }

    fn timeout_ms(&self) -> u64 {
        self.config
            .get_connect_timeout()
            .map_or(0, |d| d.as_millis() as u64)
    }

    /// One connection attempt, bounded by the connect timeout, named `application_name` on
    /// the server (so operators can find the sink's sessions in `pg_stat_activity`).
    pub fn connect(&self, application_name: &str) -> Result<Client, PostgresError> {
        self.connect_retrying(application_name, 0, Duration::ZERO)
    }

    /// Connects, retrying up to `retries` times with a doubling backoff starting at `backoff`.
    pub fn connect_retrying(
        &self,
        application_name: &str,
        retries: u32,
        backoff: Duration,
    ) -> Result<Client, PostgresError> {
        let mut config = self.config.clone();
        config.application_name(application_name);
        self.retry_connect(retries, backoff, || config.connect(NoTls))
    }

    pub(crate) fn async_config(&self) -> &tokio_postgres::Config {
        &self.async_config
    }

    /// Runs `connect` until it succeeds, at most `retries` more times with a doubling backoff
    /// starting at `backoff`; the last error names the address.
    pub(crate) fn retry_connect<C>(
        &self,
        retries: u32,
        backoff: Duration,
        mut connect: impl FnMut() -> Result<C, postgres::Error>,
    ) -> Result<C, PostgresError> {
        let mut attempt = 0;
        loop {
            match connect() {
                Ok(c) => return Ok(c),
                Err(source) if attempt >= retries => {
                    return Err(PostgresError::Connect {
                        address: self.address.clone(),
                        attempts: attempt + 1,
                        timeout_ms: self.timeout_ms(),
                        source,
                    })
                }
                Err(e) => {
                    tracing::warn!(address = %self.address, attempt, error = %e, "PostgreSQL connection failed; retrying");
                    std::thread::sleep(backoff_for(backoff, attempt));
                    attempt += 1;
                }
            }
        }
    }
}

/// The backoff before retry `attempt` (0-based): `base × 2^attempt`, at most 10 s.
pub fn backoff_for(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(1u32 << attempt.min(16))
        .min(Duration::from_secs(10))
}

/// `ident` as a quoted SQL identifier.
pub fn quote_ident(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// A table name as written by the user (`t` or `schema.t`), each part quoted unless the user
/// quoted it already.
pub fn quote_table(table: &str) -> String {
    if table.contains('"') {
        return table.to_string();
    }
    table
        .split('.')
        .map(quote_ident)
        .collect::<Vec<_>>()
        .join(".")
}
