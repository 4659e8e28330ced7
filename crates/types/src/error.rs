//! The error a user function or operator can raise; the runtime turns it into a job failure that
//! names the vertex and subtask.

/// Why an operator stopped. `Cancelled` is not a failure of the operator itself: it means the job
/// is being torn down (another subtask failed, or the user cancelled) and the operator should unwind.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("{0}")]
    Failed(String),
    #[error("I/O error in {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("job cancelled")]
    Cancelled,
}

impl OperatorError {
    pub fn failed(msg: impl Into<String>) -> Self {
        OperatorError::Failed(msg.into())
    }
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        OperatorError::Io {
            context: context.into(),
            source,
        }
    }
    pub fn is_cancelled(&self) -> bool {
        matches!(self, OperatorError::Cancelled)
    }
}
