//! A job's failures: `/jobs/:jobid/exceptions` (Flink's `JobExceptionsInfoWithHistory`; Flink 2.x
//! answers only the history, the legacy `root-exception`/`all-exceptions` fields are gone).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;

/// `GET /jobs/:jobid/exceptions`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct JobExceptions {
    /// The failures the job went through, latest first.
    #[serde(
        rename = "exceptionHistory",
        default,
        deserialize_with = "lenient::object"
    )]
    pub exception_history: ExceptionHistory,
}

/// The history of [`JobExceptions`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ExceptionHistory {
    /// One entry per failure (a restart, or the job's end), latest first.
    #[serde(default, deserialize_with = "lenient::list")]
    pub entries: Vec<RootException>,
    /// Whether older entries were left out (`web.exception-history-size`).
    #[serde(default, deserialize_with = "lenient::flag")]
    #[schema(nullable = false)]
    pub truncated: Option<bool>,
}

/// One failure of [`ExceptionHistory`]: the exception that made the job fail or restart, with
/// the task failures that came with it.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct RootException {
    /// The failure itself.
    #[serde(flatten)]
    pub exception: ExceptionInfo,
    /// Task failures that happened with it (a lost TaskManager fails each of its tasks).
    #[serde(
        rename = "concurrentExceptions",
        default,
        deserialize_with = "lenient::list"
    )]
    pub concurrent_exceptions: Vec<ExceptionInfo>,
}

/// An exception of a [`RootException`], in Flink's field order.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ExceptionInfo {
    /// The exception's class.
    #[serde(rename = "exceptionName", default, deserialize_with = "lenient::text")]
    pub exception_name: String,
    /// Its stack trace, with its causes (`Caused by: …`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub stacktrace: String,
    /// When it happened, ms since the epoch.
    #[serde(default, deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub timestamp: Option<i64>,
    /// The task that failed (absent for a global failure).
    #[serde(rename = "taskName", default, deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub task_name: Option<String>,
    /// Where that task ran (`host:port`).
    #[serde(default, deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub endpoint: Option<String>,
    /// The TaskManager it ran on.
    #[serde(
        rename = "taskManagerId",
        default,
        deserialize_with = "lenient::some_text"
    )]
    #[schema(nullable = false)]
    pub task_manager_id: Option<String>,
}
