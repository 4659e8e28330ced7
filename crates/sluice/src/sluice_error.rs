//! The one error type of the `sluice` crate.

use std::net::SocketAddr;

/// What can go wrong setting up or running a job through [`crate::run`] or [`crate::launch`].
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
        /// The address asked for.
        addr: SocketAddr,
        /// Why it could not be bound.
        #[source]
        source: sluice_rest::RestError,
    },
    /// The REST settings are unsafe (e.g. a non-loopback address without a token).
    #[error("{0}")]
    Insecure(String),
    /// Building the job or running it failed.
    #[error(transparent)]
    Job(#[from] sluice_datastream::GraphError),
    /// A job split over processes failed: a process failed or was refused, the launcher was
    /// stopped, or `--processes`/`--process-index`/`--peers` do not fit together.
    #[error("{0}")]
    Processes(String),
    /// In a process of a split job: its job was refused before it started (a bad flag, an
    /// invalid job, an unwritable output), so restarting it would not help; the program exits
    /// with [`crate::processes::REFUSED_EXIT`] and the launcher does not restart it.
    #[error("{0}")]
    Refused(String),
    /// SQL was refused (`table::TableEnv`): the error names what and where.
    #[error(transparent)]
    Sql(#[from] sluice_sql::SqlError),
    /// A step of the set-up failed (`what`, e.g. "binding 127.0.0.1:6121") for a system reason.
    #[error("{what}")]
    Setup {
        /// The step.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl SluiceError {
    /// `map_err` for a failed set-up step: `.map_err(SluiceError::setup("binding …".into()))`.
    pub fn setup<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
        what: String,
    ) -> impl FnOnce(E) -> SluiceError {
        move |e| SluiceError::Setup {
            what,
            source: e.into(),
        }
    }
}

impl From<sluice_runtime::JobError> for SluiceError {
    fn from(e: sluice_runtime::JobError) -> SluiceError {
        SluiceError::Job(e.into())
    }
}
