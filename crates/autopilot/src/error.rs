//! [`AutopilotError`]: why the driver's loop could not start or go on.

use sluice_client::ClientError;
use sluice_doctor::DoctorError;

/// Why the autopilot's driver stopped.
#[derive(Debug, thiserror::Error)]
pub enum AutopilotError {
    /// The window override is out of range.
    #[error("--window must be between 1 and 3600 seconds")]
    Window,
    /// A read the driver needs failed (`what` says which, then the client's message).
    #[error("{what}: {err}")]
    Read {
        /// What was being read.
        what: &'static str,
        /// The client's error.
        err: ClientError,
    },
    /// The server had no `/jobs/overview`.
    #[error("no /jobs/overview answer")]
    NoOverview,
    /// The URL or a client setting is unusable, or a request failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The doctor could not sample or read the job.
    #[error(transparent)]
    Doctor(#[from] DoctorError),
    /// The loop's thread could not be started.
    #[error("cannot start the autopilot's thread: {0}")]
    Thread(String),
}

impl AutopilotError {
    /// A failed read, named.
    pub(crate) fn read(what: &'static str, err: ClientError) -> AutopilotError {
        AutopilotError::Read { what, err }
    }
}
