//! The doctor's error: REST answers that do not have the shape the adapter needs.

/// An answer the [`crate::flink_rest`] adapter cannot read. `server` names where the answer came
/// from (a URL, a directory).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DoctorError {
    #[error("{server}/jobs/overview has no `jobs` list; is this a Flink-compatible REST API?")]
    NoJobsList { server: String },
    #[error("unknown job {id} on {server}; {}", known_jobs(.known))]
    UnknownJob {
        id: String,
        server: String,
        /// `id (name, state)` of each job the server has.
        known: Vec<String>,
    },
    #[error("no jobs on {server}")]
    NoJobs { server: String },
    #[error("the job details have no `vertices` list")]
    NoVertices,
    #[error(
        "the job details give vertex '{vertex}' a `parallelism` of {value}; expected a whole number from 0 to {}",
        crate::flink_rest::MAX_PARALLELISM
    )]
    BadParallelism { vertex: String, value: String },
}

fn known_jobs(known: &[String]) -> String {
    if known.is_empty() {
        "it has no jobs".to_string()
    } else {
        format!("its jobs: {}", known.join(", "))
    }
}
