use std::time::Duration;

/// Why a lookup failed, or why its options are refused.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// An option's value does not read or is out of range.
    #[error("invalid lookup option {key} = '{value}': {reason}")]
    Option {
        /// The option's name.
        key: String,
        /// Its value as written.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// The source's description (URL template, table) is invalid.
    #[error("invalid lookup source: {0}")]
    Source(String),
    /// The source could not be reached.
    #[error("connecting to {what}: {detail}")]
    Connect {
        /// What was being connected to.
        what: String,
        /// Why it failed.
        detail: String,
    },
    /// One request failed (HTTP status, PostgreSQL error, bad answer).
    #[error("{0}")]
    Request(String),
    /// An attempt took longer than `lookup.timeout`.
    #[error("no answer within {0:?} (lookup.timeout)")]
    Timeout(Duration),
    /// Every attempt failed: the job fails with this.
    #[error("lookup of key {key} in {source_name} failed after {attempts} attempt(s); last error: {last}")]
    Exhausted {
        /// The key looked up.
        key: String,
        /// The source asked.
        source_name: String,
        /// How many attempts were made (retries plus one).
        attempts: u32,
        /// The last attempt's error.
        last: Box<LookupError>,
    },
    /// The async runtime that issues requests could not start.
    #[error("starting the lookup's I/O runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

impl From<LookupError> for sluice_types::OperatorError {
    fn from(e: LookupError) -> Self {
        sluice_types::OperatorError::failed(e.to_string())
    }
}
