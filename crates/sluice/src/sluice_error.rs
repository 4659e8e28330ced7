//! The one error type of the `sluice` crate.

use std::net::SocketAddr;

/// What can go wrong setting up or running a job through [`crate::run`].
#[derive(Debug, thiserror::Error)]
pub enum SluiceError {
    /// A command-line flag is malformed or out of range (clap's message names it).
    #[error("{0}")]
    Flags(String),
    /// A setting is refused before the job starts; the message names it.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The REST API could not start on its address.
    #[error(
        "cannot start the REST API on {addr} (choose another --rest-port, or --no-rest): {source}"
    )]
    Rest {
        addr: SocketAddr,
        #[source]
        source: sluice_rest::RestError,
    },
    /// The REST settings are unsafe (e.g. a non-loopback address without a token).
    #[error("{0}")]
    Insecure(String),
    /// Building the job or running it failed.
    #[error(transparent)]
    Job(#[from] sluice_graph::GraphError),
}

impl From<sluice_runtime::JobError> for SluiceError {
    fn from(e: sluice_runtime::JobError) -> SluiceError {
        SluiceError::Job(e.into())
    }
}
