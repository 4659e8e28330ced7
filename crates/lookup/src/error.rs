use std::time::Duration;

/// Why a lookup failed, or why its options are refused.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error("invalid lookup option {key} = '{value}': {reason}")]
    Option {
        key: String,
        value: String,
        reason: String,
    },
    #[error("invalid lookup source: {0}")]
    Source(String),
    #[error("connecting to {what}: {detail}")]
    Connect { what: String, detail: String },
    #[error("{0}")]
    Request(String),
    #[error("no answer within {0:?} (lookup.timeout)")]
    Timeout(Duration),
    #[error("lookup of key {key} in {source_name} failed after {attempts} attempt(s); last error: {last}")]
    Exhausted {
        key: String,
        source_name: String,
        attempts: u32,
        last: Box<LookupError>,
    },
    #[error("starting the lookup's I/O runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

impl From<LookupError> for sluice_types::OperatorError {
    fn from(e: LookupError) -> Self {
        sluice_types::OperatorError::failed(e.to_string())
    }
}
