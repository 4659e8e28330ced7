//! The Flink REST endpoints: JSON bodies built from a job's monitor and metric snapshots, with
//! Flink 2.3's keys, key order and value types. This module holds what every endpoint shares (the
//! request context [`Ctx`], [`ApiError`], id resolution); the endpoints are grouped by resource:
//! [`cluster`], [`application`] (Flink 2.3's applications: one per job), [`job`], [`vertex`], [`metric_queries`], [`profiler`] (flame graphs, thread dump); [`states`] and [`io`] are the execution
//! states/times and IO metrics they report.

use sluice_runtime::JobMonitor;
use sluice_types::Id128;

use crate::http::{shorten, Response};
use crate::registry::JobRegistry;

mod application;
mod cluster;
mod io;
mod job;
mod metric_queries;
mod profiler;
mod states;
mod vertex;

pub use application::{
    application_details, application_exceptions, applications_overview, cancel_application,
};
pub use cluster::{config, jobs, jobs_overview, overview, taskmanagers};
pub use job::{cancel_job, job, job_config, job_plan};
pub use metric_queries::{subtask_metrics, subtasks_metrics, vertex_metrics, AGGREGATIONS};
pub use profiler::{flame_graph, thread_dump, FLAME_GRAPH_TYPES};
pub use states::job_state;
pub use vertex::{
    accumulators, backpressure, backpressure_level, hot_keys, subtask, subtask_times_ep, vertex,
    vertex_taskmanagers, watermarks,
};

/// The Flink version whose REST API this server reproduces (reported as `flink-version`).
pub const FLINK_API_VERSION: &str = "2.3.0";
/// What `flink-commit` / `flink-revision` report: this engine and its version.
pub const REVISION: &str = concat!("sluice-", env!("CARGO_PKG_VERSION"));

/// A request that cannot be answered: status and the message of Flink's `{"errors":[...]}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
        }
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 404,
            message: message.into(),
        }
    }
    pub fn into_response(self) -> Response {
        Response::error(self.status, &self.message)
    }
}

pub type ApiResult = Result<Response, ApiError>;

/// 200 with one of the shapes of `sluice-rest-api` (the one definition its readers share).
pub fn ok_shape<T: serde::Serialize>(shape: &T) -> ApiResult {
    serde_json::to_string(shape)
        .map(|body| Response::json(200, body))
        .map_err(|e| ApiError {
            status: 500,
            message: format!("Could not write the answer: {e}"),
        })
}

pub fn now_ms() -> i64 {
    sluice_runtime::executor::epoch_ms() as i64
}

pub struct Ctx<'a> {
    pub registry: &'a JobRegistry,
    pub query: &'a [(String, String)],
    pub now: i64,
}

impl Ctx<'_> {
    /// All values of a query parameter, comma-split, trimmed, empty parts dropped, deduplicated.
    fn list_param(&self, key: &str) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        let mut seen = false;
        for (k, v) in self.query {
            if k == key {
                seen = true;
                for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    if !out.iter().any(|o| o == part) {
                        out.push(part.to_string());
                    }
                }
            }
        }
        (seen && !out.is_empty()).then_some(out)
    }

    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn job(&self, raw: &str) -> Result<std::sync::Arc<JobMonitor>, ApiError> {
        let id = Id128::parse_hex(raw).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Bad request: '{}' is not a valid job id (expected 32 hex digits).",
                shorten(raw)
            ))
        })?;
        self.registry
            .get(id)
            .ok_or_else(|| ApiError::not_found(format!("Job {id} not found")))
    }
}

/// Resolves a vertex id of a job to its index.
pub fn vertex_index(m: &JobMonitor, raw: &str) -> Result<usize, ApiError> {
    let id = Id128::parse_hex(raw).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Bad request: '{}' is not a valid vertex id (expected 32 hex digits).",
            shorten(raw)
        ))
    })?;
    m.graph
        .vertices
        .iter()
        .position(|v| v.id == id)
        .ok_or_else(|| ApiError::not_found(format!("No vertex with ID '{id}' exists.")))
}

/// Resolves a subtask index of a vertex.
pub fn subtask_index(m: &JobMonitor, vertex: usize, raw: &str) -> Result<usize, ApiError> {
    let v = &m.graph.vertices[vertex];
    let i: usize = if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        raw.parse().map_err(|_| {
            ApiError::not_found(format!(
                "Invalid subtask index {} for vertex {} (parallelism {}).",
                shorten(raw),
                v.id,
                v.parallelism
            ))
        })?
    } else {
        return Err(ApiError::bad_request(format!(
            "Bad request: '{}' is not a valid subtask index (expected a non-negative integer).",
            shorten(raw)
        )));
    };
    if i >= m.subtasks[vertex].len() {
        return Err(ApiError::not_found(format!(
            "Invalid subtask index {i} for vertex {} (parallelism {}).",
            v.id, v.parallelism
        )));
    }
    Ok(i)
}
