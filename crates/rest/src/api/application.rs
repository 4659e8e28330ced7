//! Flink 2.3's application endpoints: `/applications/overview`, `/applications/:id`,
//! `/applications/:id/exceptions` and `POST /applications/:id/cancel`.
//!
//! Flink 2.3 runs each job inside an application, and its dashboard's start page lists
//! applications. Sluice has no applications of its own: each job is shown the way Flink shows a
//! job submitted with `execute()`, as the only job of `SingleJobApplication(<job name>)` whose id
//! is the job's id, with an application state that follows the job's.

use std::sync::Arc;

use sluice_runtime::{JobMonitor, JobOutcome};
use sluice_types::Id128;

use sluice_rest_api::{
    ApplicationDetails, ApplicationException, ApplicationExceptionHistory, ApplicationExceptions,
    ApplicationOverview, ApplicationsOverview, OrderedMap,
};

use super::cluster::job_overview;
use super::job::cancel_running;
use super::states::{job_state, job_times};
use super::{ok_shape, ApiError, ApiResult, Ctx};
use crate::http::shorten;

/// Flink's `ApplicationState` values, in the key order of `/applications/:id` `timestamps`.
const APPLICATION_TIMESTAMP_ORDER: [&str; 7] = [
    "CREATED",
    "FAILING",
    "FAILED",
    "RUNNING",
    "CANCELED",
    "CANCELING",
    "FINISHED",
];

/// What `exceptionName` says of a job's failure: Sluice's error type (it has no Java class).
const FAILURE_NAME: &str = "sluice_runtime::JobError";

/// The application's name, as Flink names the application of a job submitted with `execute()`.
fn application_name(m: &JobMonitor) -> String {
    format!("SingleJobApplication({})", m.graph.name)
}

/// The state of a single-job application from its job's status: the application follows the
/// job (Flink's `ApplicationState` spells the cancelling state `CANCELING`, the job status
/// `CANCELLING`).
fn application_state(m: &JobMonitor) -> &'static str {
    match job_state(m) {
        "CANCELLING" => "CANCELING",
        "FINISHED" => "FINISHED",
        "FAILED" => "FAILED",
        "CANCELED" => "CANCELED",
        _ => "RUNNING",
    }
}

/// Resolves an application id (a job id): 400 when it is not 32 hex digits, naming the path
/// parameter as Flink does; 404 when no job has it.
fn application(ctx: &Ctx, raw: &str) -> Result<Arc<JobMonitor>, ApiError> {
    let id = Id128::parse_hex(raw).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Bad request: cannot resolve path parameter (applicationid): '{}' is not a valid application id (expected 32 hex digits).",
            shorten(raw)
        ))
    })?;
    ctx.registry
        .get(id)
        .ok_or_else(|| ApiError::not_found(format!("Application {id} not found")))
}

pub fn applications_overview(ctx: &Ctx) -> ApiResult {
    let applications = ctx
        .registry
        .jobs()
        .iter()
        .rev()
        .map(|m| {
            let t = job_times(m, ctx.now);
            ApplicationOverview {
                id: m.job_id.to_string(),
                name: application_name(m),
                start_time: Some(t.start),
                end_time: Some(t.end),
                duration: Some(t.duration),
                status: application_state(m).to_string(),
                jobs: OrderedMap(vec![(job_state(m).to_string(), 1)]),
            }
        })
        .collect();
    ok_shape(&ApplicationsOverview { applications })
}

pub fn application_details(ctx: &Ctx, raw: &str) -> ApiResult {
    let m = application(ctx, raw)?;
    let t = job_times(&m, ctx.now);
    let state = application_state(&m);
    // Sluice records when the job started and ended, not when a cancel or a failure began:
    // the states passed through on the way (CANCELING, FAILING) stay 0, as never entered.
    let timestamps = APPLICATION_TIMESTAMP_ORDER
        .into_iter()
        .map(|k| {
            let v = match k {
                "CREATED" | "RUNNING" => t.start,
                k if k == state && t.end >= 0 => t.end,
                _ => 0,
            };
            (k.to_string(), v)
        })
        .collect();
    ok_shape(&ApplicationDetails {
        id: m.job_id.to_string(),
        name: application_name(&m),
        status: state.to_string(),
        start_time: Some(t.start),
        end_time: Some(t.end),
        duration: Some(t.duration),
        timestamps,
        jobs: vec![job_overview(&m, ctx.now)],
    })
}

/// The failure that ended the job, if it failed. Sluice keeps the failure that ended a job,
/// not those it restarted from, so the history holds at most that one entry.
pub fn application_exceptions(ctx: &Ctx, raw: &str) -> ApiResult {
    let m = application(ctx, raw)?;
    let entries = match m.outcome() {
        JobOutcome::Failed {
            end_time_ms,
            message,
        } => vec![ApplicationException {
            exception_name: FAILURE_NAME.to_string(),
            stacktrace: message,
            timestamp: Some(end_time_ms.min(i64::MAX as u64) as i64),
            job_id: Some(m.job_id.to_string()),
        }],
        _ => Vec::new(),
    };
    ok_shape(&ApplicationExceptions {
        exception_history: ApplicationExceptionHistory { entries },
    })
}

/// `POST /applications/:id/cancel`: cancels the application's job as `PATCH /jobs/:id` does
/// (Flink answers 202 with `{}`).
pub fn cancel_application(ctx: &Ctx, raw: &str) -> ApiResult {
    let m = application(ctx, raw)?;
    cancel_running(&m, "Application")
}
