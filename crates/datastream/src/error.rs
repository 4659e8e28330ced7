use sluice_plan::PlanError;
use sluice_runtime::JobError;

/// Everything that can go wrong building or running a job from the DataStream API.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The plan is refused: a setting out of range, a ship strategy Flink refuses, a graph that
    /// is not well-formed (the plan's own error, unchanged).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A plan change names no operator of the job; the second field lists the operators.
    #[error("no operator named '{0}' (operators: {1})")]
    UnknownOperator(String, String),
    /// A plan change's operator name matches several operators (listed in the second field).
    #[error("'{0}' names several operators ({1}); use the node id")]
    AmbiguousOperator(String, String),
    /// A plan change was refused because it could alter the job's results; the message says why.
    #[error("refused: {0}")]
    WouldChangeResults(String),
    /// A plan change was refused as invalid for its operator (e.g. parallelism 0, an option
    /// the connector did not declare).
    #[error("refused: {0}")]
    InvalidChange(String),
    /// The job ran and failed.
    #[error(transparent)]
    Failed(#[from] JobError),
}

impl GraphError {
    /// A setting out of range ([`PlanError::InvalidConfig`]); the message names the setting and
    /// the allowed range.
    pub fn invalid_config(message: String) -> GraphError {
        GraphError::Plan(PlanError::InvalidConfig(message))
    }

    /// A job that is not well-formed ([`PlanError::InvalidJob`]).
    pub fn invalid_job(message: String) -> GraphError {
        GraphError::Plan(PlanError::InvalidJob(message))
    }
}
