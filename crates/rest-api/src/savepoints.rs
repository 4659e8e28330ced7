//! The savepoint answers and requests: `POST /jobs/:jobid/savepoints`, `POST
//! /jobs/:jobid/stop` and `GET /jobs/:jobid/savepoints/:triggerid`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;

/// The body of `POST /jobs/:jobid/savepoints` (Flink's `SavepointTriggerRequestBody`, the
/// fields Sluice reads).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SavepointTriggerRequest {
    /// Where to write the savepoint; the server's savepoint directory when absent.
    #[serde(rename = "target-directory", default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_directory: Option<String>,
    /// Whether to cancel the job once the savepoint is taken.
    #[serde(rename = "cancel-job", default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_job: Option<bool>,
}

/// The body of `POST /jobs/:jobid/stop` (Flink's `StopWithSavepointRequestBody`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct StopWithSavepointRequest {
    /// Where to write the savepoint; the server's savepoint directory when absent.
    #[serde(rename = "targetDirectory", default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_directory: Option<String>,
    /// Emit the final watermark before stopping (Sluice refuses `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<bool>,
}

/// The 202 answer of a savepoint or stop request: the id to poll its status with.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct TriggerResponse {
    /// The trigger id (`GET /jobs/:jobid/savepoints/:triggerid`).
    #[serde(rename = "request-id", default, deserialize_with = "lenient::text")]
    pub request_id: String,
}

/// `GET /jobs/:jobid/savepoints/:triggerid`: Flink's asynchronous operation result.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SavepointStatus {
    /// `{"id": "IN_PROGRESS"}` or `{"id": "COMPLETED"}`.
    #[serde(default, deserialize_with = "lenient::object")]
    pub status: QueueStatus,
    /// The outcome once completed: a location or a failure cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub operation: Option<SavepointOperation>,
}

/// The `status` of [`SavepointStatus`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct QueueStatus {
    /// `IN_PROGRESS` or `COMPLETED`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
}

/// The `operation` of a completed [`SavepointStatus`]: one of the two fields.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SavepointOperation {
    /// Where the savepoint was written (`file:/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::some_text")]
    #[schema(nullable = false)]
    pub location: Option<String>,
    /// Why it failed.
    #[serde(
        rename = "failure-cause",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(nullable = false)]
    pub failure_cause: Option<FailureCause>,
}

/// Flink's serialized exception of a failed operation.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct FailureCause {
    /// The exception's class.
    #[serde(default, deserialize_with = "lenient::text")]
    pub class: String,
    /// Its stack trace (Sluice: the reason, one line).
    #[serde(rename = "stack-trace", default, deserialize_with = "lenient::text")]
    pub stack_trace: String,
    /// The Java-serialized exception; always `null` from Sluice.
    #[serde(rename = "serialized-throwable", default)]
    #[schema(value_type = Option<String>)]
    pub serialized_throwable: Option<String>,
}
