//! Flink 2.3's applications: `/applications/overview`, `/applications/:applicationid` and
//! `/applications/:applicationid/exceptions` (Flink's `MultipleApplicationsDetails`,
//! `ApplicationDetailsInfo` and `ApplicationExceptionsInfoWithHistory`). Flink 2.3 runs every job
//! inside an application (a job submitted with `execute()` is the only job of
//! `SingleJobApplication(<job name>)`, with the job's id), and its dashboard's start page lists
//! applications, not jobs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{lenient, JobOverview, OrderedMap};

/// `GET /applications/overview`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ApplicationsOverview {
    /// One entry per application.
    #[serde(default, deserialize_with = "lenient::list")]
    pub applications: Vec<ApplicationOverview>,
}

/// One application of [`ApplicationsOverview`], in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct ApplicationOverview {
    /// The application id (32 hex digits; a single-job application's is its job's).
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The application's name (`SingleJobApplication(<job name>)`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// Start, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub start_time: Option<i64>,
    /// End, ms since the epoch (-1 while running).
    #[serde(default, deserialize_with = "lenient::int")]
    pub end_time: Option<i64>,
    /// Run time so far, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    pub duration: Option<i64>,
    /// The application's state (Flink's `ApplicationState`: CREATED, RUNNING, FAILING, FAILED,
    /// CANCELING, CANCELED, FINISHED).
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: String,
    /// The application's jobs counted by job status (`{"RUNNING": 1}`).
    #[serde(default, deserialize_with = "lenient::object")]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub jobs: OrderedMap<u64>,
}

/// `GET /applications/:applicationid`, in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct ApplicationDetails {
    /// The application id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// The application's name.
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// The application's state (see [`ApplicationOverview::status`]).
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: String,
    /// Start, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    pub start_time: Option<i64>,
    /// End, ms since the epoch (-1 while running).
    #[serde(default, deserialize_with = "lenient::int")]
    pub end_time: Option<i64>,
    /// Run time so far, ms.
    #[serde(default, deserialize_with = "lenient::int")]
    pub duration: Option<i64>,
    /// When the application entered each state (0: never), in Flink's key order.
    #[serde(default, deserialize_with = "lenient::object")]
    #[schema(value_type = std::collections::HashMap<String, i64>)]
    pub timestamps: OrderedMap<i64>,
    /// The application's jobs, as `/jobs/overview` lists them.
    #[serde(default, deserialize_with = "lenient::list")]
    pub jobs: Vec<JobOverview>,
}

/// `GET /applications/:applicationid/exceptions`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ApplicationExceptions {
    /// The failures of the application's jobs.
    #[serde(
        rename = "exceptionHistory",
        default,
        deserialize_with = "lenient::object"
    )]
    pub exception_history: ApplicationExceptionHistory,
}

/// The history of [`ApplicationExceptions`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ApplicationExceptionHistory {
    /// One entry per failure.
    #[serde(default, deserialize_with = "lenient::list")]
    pub entries: Vec<ApplicationException>,
}

/// One failure of [`ApplicationExceptionHistory`], in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ApplicationException {
    /// The exception's class (Sluice: the kind of failure).
    #[serde(rename = "exceptionName", default, deserialize_with = "lenient::text")]
    pub exception_name: String,
    /// Its stack trace (Sluice: the failure's message).
    #[serde(default, deserialize_with = "lenient::text")]
    pub stacktrace: String,
    /// When it happened, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub timestamp: Option<i64>,
    /// The job that failed (absent for a failure of the application itself).
    #[serde(
        rename = "jobId",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::some_text"
    )]
    #[schema(nullable = false)]
    pub job_id: Option<String>,
}
