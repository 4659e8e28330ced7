//! `GET`/`PUT /jobs/:jobid/autopilot` (Sluice extension): the autopilot's decision log of a job,
//! what the dashboard draws as its timeline of changes.
//!
//! The autopilot (`sluice-autopilot`, driven by `sluice run --autopilot` in process or by
//! `sluice doctor --apply` from another process) decides outside the server and reports every
//! decision here, one at a time, as it is taken and again as its outcome settles (`PUT` upserts
//! by the decision's `id`). So the server holds the log whoever runs the loop, and the log
//! survives the autopilot's process. The server keeps the last [`MAX_DECISIONS`] and counts the
//! ones it dropped. It keeps each decision as it was reported (an [`AutopilotLog`] of JSON
//! values): what an autopilot reports is a `sluice_rest_api::AutopilotDecision`, which the
//! document describes.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use sluice_rest_api::{AutopilotLog, DecisionAccepted};
use sluice_types::JobId;

use crate::api::{ok_shape, ApiError, ApiResult, Ctx};

/// Decisions kept per job; older ones are dropped (and counted).
pub const MAX_DECISIONS: usize = 200;

/// The outcomes a decision may report (`sluice_autopilot::Outcome::name`).
pub const OUTCOMES: [&str; 6] = [
    "applied",
    "kept",
    "rolled-back",
    "skipped",
    "failed",
    "advised",
];

#[derive(Default)]
struct JobLog {
    decisions: Vec<Value>,
    dropped: u64,
}

/// Every job's decision log.
#[derive(Default)]
pub struct AutopilotLogs {
    logs: Mutex<HashMap<JobId, JobLog>>,
}

impl AutopilotLogs {
    /// Inserts `decision`, or replaces the one with its id.
    fn upsert(&self, job: JobId, decision: Value, id: u64) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs.entry(job).or_default();
        match log
            .decisions
            .iter_mut()
            .find(|d| d["id"].as_u64() == Some(id))
        {
            Some(d) => *d = decision,
            None => {
                log.decisions.push(decision);
                if log.decisions.len() > MAX_DECISIONS {
                    log.decisions.remove(0);
                    log.dropped += 1;
                }
            }
        }
    }

    /// The job's log, each decision as it was reported.
    fn get(&self, job: JobId) -> AutopilotLog<Value> {
        let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        match logs.get(&job) {
            Some(l) => AutopilotLog {
                decisions: l.decisions.clone(),
                dropped: l.dropped,
            },
            None => AutopilotLog {
                decisions: Vec::new(),
                dropped: 0,
            },
        }
    }
}

/// `GET`: the job's [`AutopilotLog`].
pub fn autopilot_log(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    ok_shape(&ctx.registry.autopilot.get(m.job_id))
}

/// `PUT`: one decision (`sluice_autopilot::Decision::to_json`): an object with a positive
/// integer `id`, a known `outcome` and a string `change-text`; 200 with the stored log's size.
pub fn put_decision(ctx: &Ctx, jid: &str, body: &[u8]) -> ApiResult {
    let m = ctx.job(jid)?;
    let bad = |what: &str| ApiError::bad_request(format!("Bad request: {what}"));
    let d: Value =
        serde_json::from_slice(body).map_err(|e| bad(&format!("the body is not JSON ({e})")))?;
    if !d.is_object() {
        return Err(bad("the body must be a decision object"));
    }
    let id = d["id"]
        .as_u64()
        .filter(|&i| i > 0)
        .ok_or_else(|| bad("`id` must be a positive integer"))?;
    let outcome = d["outcome"].as_str().unwrap_or("");
    if !OUTCOMES.contains(&outcome) {
        return Err(bad(&format!(
            "`outcome` must be one of {}",
            OUTCOMES.join(", ")
        )));
    }
    if !d["change-text"].is_string() {
        return Err(bad("`change-text` must be a string"));
    }
    ctx.registry.autopilot.upsert(m.job_id, d, id);
    ok_shape(&DecisionAccepted { id })
}
