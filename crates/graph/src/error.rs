use sluice_plan::PlanError;
use sluice_runtime::JobError;

/// Everything that can go wrong building or running a job from the DataStream API.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// A setting is out of range; the message names the setting and the allowed range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// Flink's rule: an explicit `forward()` cannot connect operators of different parallelism.
    #[error(
        "Forward partitioning does not allow change of parallelism. Upstream operation: {upstream} parallelism: {upstream_parallelism}, downstream operation: {downstream} parallelism: {downstream_parallelism}. You must use another partitioning strategy, such as broadcast, rebalance, shuffle or global."
    )]
    ForwardParallelismMismatch {
        upstream: String,
        upstream_parallelism: usize,
        downstream: String,
        downstream_parallelism: usize,
    },
    /// The job graph is not well-formed (e.g. a setting applied to a stream that is not an
    /// operator's output, or an operator without a sink).
    #[error("invalid job: {0}")]
    InvalidJob(String),
    /// The job ran and failed.
    #[error(transparent)]
    Failed(#[from] JobError),
}

impl From<PlanError> for GraphError {
    fn from(e: PlanError) -> GraphError {
        match e {
            PlanError::InvalidConfig(m) => GraphError::InvalidConfig(m),
            PlanError::ForwardParallelismMismatch {
                upstream,
                upstream_parallelism,
                downstream,
                downstream_parallelism,
            } => GraphError::ForwardParallelismMismatch {
                upstream,
                upstream_parallelism,
                downstream,
                downstream_parallelism,
            },
            PlanError::InvalidJob(m) => GraphError::InvalidJob(m),
        }
    }
}
