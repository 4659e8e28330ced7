/// Everything that can be wrong with a plan: a setting out of range, a strategy Flink refuses,
/// a graph that is not well-formed. Messages name the operator and the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A setting is out of range; the message names the setting and the allowed range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// Flink's rule: an explicit `forward()` cannot connect operators of different parallelism.
    #[error(
        "Forward partitioning does not allow change of parallelism. Upstream operation: {upstream} parallelism: {upstream_parallelism}, downstream operation: {downstream} parallelism: {downstream_parallelism}. You must use another partitioning strategy, such as broadcast, rebalance, shuffle or global."
    )]
    ForwardParallelismMismatch {
        /// The upstream operator's name.
        upstream: String,
        /// Its parallelism.
        upstream_parallelism: usize,
        /// The downstream operator's name.
        downstream: String,
        /// Its parallelism, which differs.
        downstream_parallelism: usize,
    },
    /// The graph is not well-formed (e.g. an operator without a consumer, no sink, a cycle).
    #[error("invalid job: {0}")]
    InvalidJob(String),
}
