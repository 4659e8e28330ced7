//! The error a user function or operator can raise; the runtime turns it into a job failure that
//! names the vertex and subtask.

/// Why an operator stopped. `Cancelled` is not a failure of the operator itself: it means the job
/// is being torn down (another subtask failed, or the user cancelled) and the operator should unwind.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// A user function or operator failed; the message says why.
    #[error("{0}")]
    Failed(String),
    /// An I/O operation failed.
    #[error("I/O error in {context}: {source}")]
    Io {
        /// What was being done (a file, an address).
        context: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The job is being torn down; unwind without reporting a failure.
    #[error("job cancelled")]
    Cancelled,
}

impl OperatorError {
    /// A failure with this message.
    pub fn failed(msg: impl Into<String>) -> Self {
        OperatorError::Failed(msg.into())
    }
    /// An I/O failure while doing `context`.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        OperatorError::Io {
            context: context.into(),
            source,
        }
    }
    /// Whether this is the teardown signal rather than a failure.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, OperatorError::Cancelled)
    }
}
