//! The crate's one error type.

use sluice_types::OperatorError;

/// What went wrong talking to PostgreSQL, always naming the table, column or address involved.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    /// The connection URL or string does not parse, or an option is out of range.
    #[error("invalid PostgreSQL sink configuration: {0}")]
    Config(String),
    /// A duration option's value is not a duration.
    #[error("invalid PostgreSQL sink configuration: {option}: {source}")]
    Duration {
        /// The option's name (`sink.buffer-flush.interval`).
        option: String,
        /// Why the value does not read.
        #[source]
        source: sluice_types::DurationError,
    },
    /// No connection within the connect timeout (after the configured retries).
    #[error("cannot connect to PostgreSQL at {address} (after {attempts} attempt(s), connect timeout {timeout_ms} ms): {source}")]
    Connect {
        /// The server's address (never the password).
        address: String,
        /// Connection attempts made.
        attempts: u32,
        /// The limit of each attempt.
        timeout_ms: u64,
        /// The last attempt's error.
        #[source]
        source: postgres::Error,
    },
    /// The table's columns do not match the row mapping.
    #[error("table {table}: {problem}")]
    Schema {
        /// The table.
        table: String,
        /// What does not match.
        problem: String,
    },
    /// A statement failed (after the configured retries when the connection was lost).
    #[error("PostgreSQL sink on table {table}: {what} failed: {source}")]
    Statement {
        /// The table written to.
        table: String,
        /// The statement's job (`COPY`, `PREPARE TRANSACTION`, an upsert).
        what: String,
        /// The server's or the driver's error.
        #[source]
        source: postgres::Error,
    },
    /// Two-phase commit needs more prepared transactions than the server has
    /// (`max_prepared_transactions`).
    #[error("PostgreSQL sink on table {table}: {problem}")]
    PreparedTransactions {
        /// The table written to.
        table: String,
        /// How many are needed and how many the server allows.
        problem: String,
    },
    /// A mapped value does not fit its column.
    #[error("table {table}, column {column}: {problem}")]
    Value {
        /// The table written to.
        table: String,
        /// The column the value was for.
        column: String,
        /// Why it does not fit.
        problem: String,
    },
}

impl From<PostgresError> for OperatorError {
    fn from(e: PostgresError) -> Self {
        // Keep the whole cause chain in the message: the job's failure names it.
        let mut msg = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            let s_msg = s.to_string();
            if !msg.contains(&s_msg) {
                msg.push_str(": ");
                msg.push_str(&s_msg);
            }
            src = s.source();
        }
        OperatorError::failed(msg)
    }
}

/// Whether `e` means the connection is gone (retry on a new one), rather than a statement the
/// server refused (retrying would fail the same way).
pub(crate) fn is_connection_loss(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        // Class 08 (connection exception), 57P01..57P03 (admin/crash shutdown, cannot connect
        // now): what `pg_terminate_backend` and a server restart send.
        Some(code) => {
            let c = code.code();
            c.starts_with("08") || c == "57P01" || c == "57P02" || c == "57P03"
        }
        // No SQL state: an I/O error is a lost connection; anything else (a value that did not
        // serialize, a protocol error) would fail again.
        None => std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()),
    }
}
