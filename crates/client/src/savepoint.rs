//! Taking a savepoint through Flink's REST API (`sluice savepoint`): `POST
//! /jobs/:jid/savepoints` (or `/stop` for stop-with-savepoint), then polling the operation
//! until it completed. Works against Sluice and Flink alike.

use std::time::{Duration, Instant};

use sluice_rest_api::{
    SavepointStatus, SavepointTriggerRequest, StopWithSavepointRequest, TriggerResponse,
};

use crate::{ClientError, Endpoint};

/// How long one request may take.
const REQUEST: Duration = Duration::from_secs(5);

/// Takes a savepoint of job `jid` into `dir` (the server's default directory when `None`),
/// stopping the job afterwards when `stop`; waits at most `timeout` for it. Returns the
/// savepoint's location as the server reports it.
pub fn take_savepoint(
    ep: &Endpoint,
    jid: &str,
    dir: Option<&str>,
    stop: bool,
    timeout: Duration,
) -> Result<String, ClientError> {
    let target_directory = dir.map(str::to_string);
    let (path, body) = if stop {
        let body = StopWithSavepointRequest {
            target_directory,
            drain: Some(false),
        };
        (format!("/jobs/{jid}/stop"), serde_json::to_value(body))
    } else {
        let body = SavepointTriggerRequest {
            target_directory,
            cancel_job: Some(false),
        };
        (
            format!("/jobs/{jid}/savepoints"),
            serde_json::to_value(body),
        )
    };
    let body =
        body.map_err(|e| ClientError::Savepoint(format!("cannot write the request: {e}")))?;
    let trigger = ep.post_json(&path, &body, REQUEST)?;
    let id = serde_json::from_value::<TriggerResponse>(trigger.clone())
        .map(|t| t.request_id)
        .unwrap_or_default();
    if id.is_empty() {
        return Err(ClientError::Savepoint(format!(
            "no request-id in the answer: {trigger}"
        )));
    }
    let started = Instant::now();
    loop {
        let answer = ep.get_json(&format!("/jobs/{jid}/savepoints/{id}"), REQUEST)?;
        // An answer of another shape reads as still in progress, until the timeout.
        let st: SavepointStatus = serde_json::from_value(answer).unwrap_or_default();
        if st.status.id == "COMPLETED" {
            let operation = st.operation.unwrap_or_default();
            if let Some(location) = operation.location {
                return Ok(location);
            }
            let why = operation
                .failure_cause
                .map(|c| c.stack_trace)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "unknown cause".to_string());
            return Err(ClientError::Savepoint(format!("savepoint failed: {why}")));
        }
        if started.elapsed() > timeout {
            return Err(ClientError::Savepoint(format!(
                "savepoint {id} did not complete within {} s",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
