//! [`SluiceActuator`]: a Sluice job changed through its own REST API: `POST
//! /jobs/:jid/doctor/apply` with the plan change (the way back: `{"rollback": true}`, the
//! server keeps the plan before each change), and every decision reported to `PUT
//! /jobs/:jid/autopilot`, the log the dashboard draws.

use std::time::Duration;

use serde_json::{json, Value};
use sluice_client::{ClientError, Endpoint};
use sluice_doctor::{Diagnosis, PlanChange};
use sluice_rest_api::SluiceRescaleRecord;

use super::{http, now_ms, Actuator, TIMEOUT};
use crate::{Decision, Policy};

/// A Sluice job's own REST API.
pub struct SluiceActuator {
    pub(super) ep: Endpoint,
    pub(super) jid: String,
    /// The job's `start-time` (ms since the epoch), if the server said.
    pub(super) started_ms: Option<u64>,
}

impl SluiceActuator {
    /// `POST /jobs/:jid/doctor/apply` (savepoint → rewrite → restore, answered once done) with
    /// `body`: `{"plan-change": …}` or `{"rollback": true}`; the notes are the server's plan
    /// diff lines and the pause it measured.
    fn post_change(&self, body: &Value) -> Result<Vec<String>, String> {
        let path = format!("/jobs/{}/doctor/apply", self.jid);
        match self.ep.post_json(&path, body, Duration::from_secs(120)) {
            Ok(answer) => {
                // The change's record (lenient: an odd answer reads as an empty record).
                let record: SluiceRescaleRecord =
                    serde_json::from_value(answer.clone()).unwrap_or_default();
                if let Some(f) = &record.failure {
                    return Err(format!("the server could not apply it: {f}"));
                }
                let mut notes = Vec::new();
                if let Some(p) = record.pause_millis {
                    let state = match record.state.as_str() {
                        "" => "done",
                        s => s,
                    };
                    notes.push(format!("applied by the server ({state}), pause {p:.0} ms"));
                }
                if let Some(p) = record.sources_paused_millis {
                    notes.push(format!(
                        "sources stood still {p:.0} ms (the savepoint's alignment included)"
                    ));
                }
                for c in &record.changes {
                    notes.push(format!("plan diff: {c}"));
                }
                if notes.is_empty() {
                    notes.push(format!("server answered: {answer}"));
                }
                Ok(notes)
            }
            Err(ClientError::Status { status: 404, .. }) => Err(format!(
                "this server has no POST {path} (live healing is not in this build)"
            )),
            Err(e) => Err(http(e)),
        }
    }
}

impl Actuator for SluiceActuator {
    fn can_apply(&self, _: &PlanChange) -> bool {
        true
    }
    fn apply(&self, change: &PlanChange) -> Result<Vec<String>, String> {
        self.post_change(&json!({"plan-change": change_json(change)}))
    }
    /// The server keeps the plan before each change: a roll-back restores it, whatever the
    /// change was (so `to` is not needed).
    fn roll_back(&self, _: &PlanChange, _: Option<&PlanChange>) -> Result<Vec<String>, String> {
        self.post_change(&json!({"rollback": true}))
    }
    fn record(&self, d: &Decision) -> Result<(), String> {
        let path = format!("/jobs/{}/autopilot", self.jid);
        self.ep
            .put_json(&path, &d.to_json(), TIMEOUT)
            .map(|_| ())
            .map_err(http)
    }
    fn advice(&self, _: &Diagnosis, text: &str) -> String {
        text.to_string()
    }
    fn policy(&self) -> Policy {
        Policy {
            available_slots: std::thread::available_parallelism().ok().map(|n| n.get()),
            ..Policy::default()
        }
    }
    /// A job that has just started is still ramping up (threads starting, the first metric
    /// windows averaging in the time before its first record): the first "before" window
    /// begins one stabilisation after the start, as after a change, or it would make any
    /// change look like a gain.
    fn first_measurement_ms(&self) -> u64 {
        self.started_ms.map_or(0, |t| {
            t + Policy::default().stabilisation.as_millis() as u64
        })
    }
    fn not_steady_yet(&self) -> String {
        let ago = self
            .started_ms
            .map_or(0.0, |t| now_ms().saturating_sub(t) as f64 / 1000.0);
        format!("the job started {ago:.1} s ago: its rates are still ramping up")
    }
}

/// A plan change as the server's `POST /jobs/:jid/doctor/apply` reads it: the doctor's machine
/// form with the ship strategy under Flink's REST name (`ship-strategy`).
pub fn change_json(c: &PlanChange) -> Value {
    let mut v = sluice_doctor::plan_change_json(c);
    if let Some(o) = v.as_object_mut() {
        if let Some(ship) = o.remove("ship") {
            o.insert("ship-strategy".into(), ship);
        }
    }
    v
}
