//! The doctor's error: REST answers that do not have the shape the adapter needs, and the
//! failures of the sources [`crate::examine`] reads through.

/// An answer the [`crate::flink_rest`] adapter cannot read. `server` names where the answer came
/// from (a URL, a directory).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DoctorError {
    /// The job overview has no `jobs` list: not a Flink-compatible server.
    #[error("{server}/jobs/overview has no `jobs` list; is this a Flink-compatible REST API?")]
    NoJobsList {
        /// Where the answer came from.
        server: String,
    },
    #[error("unknown job {id} on {server}; {}", known_jobs(.known))]
    /// The job asked for is not on the server.
    UnknownJob {
        /// The job id asked for.
        id: String,
        /// Where the answer came from.
        server: String,
        /// `id (name, state)` of each job the server has.
        known: Vec<String>,
    },
    /// No job was named and the server runs none to pick.
    #[error("no jobs on {server}")]
    NoJobs {
        /// Where the answer came from.
        server: String,
    },
    /// The job details lack the vertex list the graph is built from.
    #[error("the job details have no `vertices` list")]
    NoVertices,
    /// A vertex's parallelism is not a whole number in range.
    #[error(
        "the job details give vertex '{vertex}' a `parallelism` of {value}; expected a whole number from 0 to {}",
        crate::flink_rest::MAX_PARALLELISM
    )]
    BadParallelism {
        /// The vertex's name.
        vertex: String,
        /// The value given, as written.
        value: String,
    },
    /// The sampling window is out of range.
    #[error("--window must be between 0 and 3600 seconds")]
    Window,
    /// A source had no answer for a path the doctor cannot do without.
    #[error("{server}: no answer for {path}")]
    NoAnswer {
        /// Where the answers come from.
        server: String,
        /// The REST path asked for.
        path: String,
    },
    /// No flame graph could be read (the message says why).
    #[error("{0}")]
    FlameGraph(String),
    /// Fetching an answer failed (the source's own message: the URL, the server's error).
    #[error("{0}")]
    Fetch(String),
}

fn known_jobs(known: &[String]) -> String {
    if known.is_empty() {
        "it has no jobs".to_string()
    } else {
        format!("its jobs: {}", known.join(", "))
    }
}
