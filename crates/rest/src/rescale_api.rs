//! Changing a running job's plan: Flink's `GET`/`PUT /jobs/:jid/resource-requirements` (per
//! vertex `{"parallelism": {"lowerBound", "upperBound"}}`; the PUT rescales in place to the
//! upper bound), Flink 2.3's rescale history (`/jobs/:jid/rescales/config`, `.../history`,
//! `.../overview`, `.../details/:rescaleuuid`: `JobRescaleDetails` with Sluice's figures under
//! `sluice`), and Sluice's `POST /jobs/:jid/doctor/apply` (the doctor's current proposal, a given
//! plan change, or a rollback). The work is the job's [`crate::live::LiveControl`]'s.

use std::sync::Arc;

use serde_json::{json, Value};
use sluice_runtime::{JobMonitor, JobOutcome};
use sluice_types::{Id128, JobId};

use crate::api::{ok_shape, ApiError, ApiResult, Ctx};
use crate::doctor_api::diagnosis;
use crate::http::{shorten, Response};
use crate::live::{
    parse_change, ApplyRequest, LiveControl, LiveError, RescaleRecord, RescaleState,
};
use sluice_rest_api::{
    JobRescaleDetails, JobResourceRequirements, LatestRescales, OrderedMap, ParallelismBeforeAfter,
    ParallelismBounds, PlanBeforeAfter, RescalesConfig, RescalesCounts, RescalesOverview,
    SluiceRescaleRecord, VertexParallelismRescaleInfo, VertexRescale, VertexResourceRequirements,
};

/// How many rescales a job keeps (Flink: `web.adaptive-scheduler.rescale-history.size`, 0 =
/// off by default there; Sluice records every change, this many answered).
pub const RESCALE_HISTORY_MAX: usize = 100;

/// Flink's answer to an accepted `PUT /jobs/:jid/resource-requirements`: an empty object.
fn empty_answer() -> ApiResult {
    Ok(Response::json(200, "{}".to_string()))
}

impl From<LiveError> for ApiError {
    fn from(e: LiveError) -> ApiError {
        ApiError {
            status: e.status,
            message: e.message,
        }
    }
}

/// The job and its live control; 409 when the job cannot change its plan while it runs.
fn live(ctx: &Ctx, jid: &str) -> Result<(Arc<JobMonitor>, Arc<dyn LiveControl>), ApiError> {
    let m = ctx.job(jid)?;
    let control = ctx.registry.live(m.job_id).ok_or_else(|| ApiError {
        status: 409,
        message: format!(
            "Job {} cannot change its plan while it runs: it was not started with live plan changes (sluice::live); stop it with a savepoint and restore it with the new plan instead.",
            m.job_id
        ),
    })?;
    Ok((m, control))
}

fn running(m: &JobMonitor) -> Result<(), ApiError> {
    match m.outcome() {
        JobOutcome::Running => Ok(()),
        o => Err(ApiError {
            status: 409,
            message: format!(
                "Job {} is {}; only a running job changes its plan.",
                m.job_id,
                o.status()
            ),
        }),
    }
}

/// `GET /jobs/:jid/resource-requirements`: every vertex with lower bound 1 and its current
/// parallelism as upper bound (what the adaptive scheduler answers for a job at its
/// requirements).
pub fn resource_requirements(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let vertices = m
        .graph
        .vertices
        .iter()
        .map(|v| {
            let parallelism = ParallelismBounds {
                lower_bound: Some(1),
                upper_bound: Some(v.parallelism as u64),
            };
            (v.id.to_string(), VertexResourceRequirements { parallelism })
        })
        .collect();
    ok_shape(&JobResourceRequirements(vertices))
}

/// Reads a `PUT /jobs/:jid/resource-requirements` body into the vertices whose parallelism
/// changes (the upper bound is the new parallelism). Every key must be a vertex of the job;
/// bounds must satisfy 1 ≤ lowerBound ≤ upperBound ≤ the vertex's max parallelism.
pub fn parse_requirements(m: &JobMonitor, body: &[u8]) -> Result<Vec<(Id128, usize)>, ApiError> {
    let bad = |msg: String| ApiError::bad_request(format!("Bad request: {msg}"));
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the body is not JSON: {}", shorten(&e.to_string()))))?;
    let o = v.as_object().ok_or_else(|| {
        bad("the body must be an object of vertex id -> {\"parallelism\": {\"lowerBound\", \"upperBound\"}}".into())
    })?;
    let mut changes = Vec::new();
    for (key, req) in o {
        let id = Id128::parse_hex(key).ok_or_else(|| {
            bad(format!(
                "'{}' is not a vertex id (32 hex digits)",
                shorten(key)
            ))
        })?;
        let vertex = m
            .graph
            .vertices
            .iter()
            .find(|v| v.id == id)
            .ok_or_else(|| bad(format!("job {} has no vertex {id}", m.job_id)))?;
        let bound = |k: &str| -> Result<u64, ApiError> {
            req.get("parallelism")
                .and_then(|p| p.get(k))
                .and_then(Value::as_u64)
                .ok_or_else(|| {
                    bad(format!(
                        "vertex {id} needs parallelism.{k} as a positive integer"
                    ))
                })
        };
        let (lower, upper) = (bound("lowerBound")?, bound("upperBound")?);
        if lower < 1 || lower > upper {
            return Err(bad(format!(
                "vertex {id}: lowerBound {lower} must be at least 1 and at most upperBound {upper}"
            )));
        }
        if upper > vertex.max_parallelism as u64 {
            return Err(bad(format!(
                "vertex {id} ('{}'): upperBound {upper} is above its max parallelism {}",
                vertex.name, vertex.max_parallelism
            )));
        }
        let upper = upper as usize;
        if upper != vertex.parallelism {
            changes.push((id, upper));
        }
    }
    Ok(changes)
}

/// `PUT /jobs/:jid/resource-requirements`: rescales the vertices whose upper bound differs from
/// their parallelism, in place (aligned savepoint → stop → restore at the new parallelism), and
/// answers Flink's `{}` once the job runs at it.
pub fn put_resource_requirements(ctx: &Ctx, jid: &str, body: &[u8]) -> ApiResult {
    let (m, control) = live(ctx, jid)?;
    let changes = parse_requirements(&m, body)?;
    if changes.is_empty() {
        return empty_answer();
    }
    running(&m)?;
    control.apply(ApplyRequest::Parallelism(changes))?;
    empty_answer()
}

/// `POST /jobs/:jid/doctor/apply`. Body: `{}` (or none) — the doctor's current proposal;
/// `{"plan-change": {...}}` — that change (the doctor's `plan-change` object or
/// `{"kind", "operator", ...}`); `{"rollback": true}` — undo the newest change. Answers with the
/// change's record ([`record_shape`]).
pub fn doctor_apply(ctx: &Ctx, jid: &str, body: &[u8]) -> ApiResult {
    let (m, control) = live(ctx, jid)?;
    let bad = |msg: String| ApiError::bad_request(format!("Bad request: {msg}"));
    let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(body)
            .map_err(|e| bad(format!("the body is not JSON: {}", shorten(&e.to_string()))))?
    };
    let o = v
        .as_object()
        .ok_or_else(|| bad("the body must be a JSON object".into()))?;
    if let Some(k) = o.keys().find(|k| *k != "plan-change" && *k != "rollback") {
        return Err(bad(format!(
            "unknown field '{}' (plan-change, rollback)",
            shorten(k)
        )));
    }
    let rollback = match o.get("rollback") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(bad("'rollback' must be true or false".into())),
    };
    let request = match (o.get("plan-change"), rollback) {
        (Some(_), true) => {
            return Err(bad("give either a plan-change or rollback, not both".into()))
        }
        (Some(c), false) => ApplyRequest::Change(parse_change(c).map_err(bad)?),
        (None, true) => ApplyRequest::Rollback,
        (None, false) => ApplyRequest::Change(current_proposal(&m)?),
    };
    running(&m)?;
    let record = control.apply(request)?;
    ok_shape(&record_shape(&record))
}

/// The plan change the doctor proposes for the job now; 409 when it proposes none.
fn current_proposal(m: &JobMonitor) -> Result<sluice_doctor::PlanChange, ApiError> {
    let d = diagnosis(m).ok_or_else(|| ApiError {
        status: 409,
        message: "The doctor has no metrics for this job yet (the first sample comes after the metrics interval); retry, or give a plan-change.".into(),
    })?;
    d.fix
        .as_ref()
        .and_then(|f| f.plan_change.clone())
        .ok_or_else(|| ApiError {
            status: 409,
            message: format!(
                "The doctor proposes no plan change now ({}); give a plan-change to apply one.",
                d.verdict()
            ),
        })
}

/// Sluice's view of one change: `doctor/apply`'s answer and the `sluice` field of a history
/// entry.
pub fn record_shape(r: &RescaleRecord) -> SluiceRescaleRecord {
    let (state, failure) = match &r.state {
        RescaleState::Completed => ("COMPLETED", None),
        RescaleState::Failed(why) => ("FAILED", Some(why.clone())),
    };
    SluiceRescaleRecord {
        rescale_uuid: r.uuid.to_string(),
        rescale_attempt_id: r.attempt,
        trigger: r.trigger.to_string(),
        change: r.change.clone(),
        rollback_of: r.rollback_of.map(|u| u.to_string()),
        state: state.to_string(),
        failure,
        start_timestamp_in_millis: r.start_ms,
        end_timestamp_in_millis: r.end_ms,
        pause_millis: r.pause_ms,
        sources_paused_millis: r.sources_paused_ms,
        savepoint: r.savepoint.clone(),
        vertices: r
            .vertices
            .iter()
            .map(|v| VertexRescale {
                id: v.id.to_string(),
                name: v.name.clone(),
                parallelism: ParallelismBeforeAfter {
                    before: v.before.map(|p| p as u64),
                    after: v.after.map(|p| p as u64),
                },
            })
            .collect(),
        plan: PlanBeforeAfter {
            before: r.plan_before.clone(),
            after: r.plan_after.clone(),
        },
        changes: r.changes.clone(),
    }
}

/// One history entry in Flink's `JobRescaleDetails` shape; `vertices` only with `detailed`
/// (Flink's history leaves them empty, the details endpoint fills them).
pub(crate) fn flink_details(job: JobId, r: &RescaleRecord, detailed: bool) -> JobRescaleDetails {
    let slot_group =
        Id128::hash_of(format!("slot-sharing-group:default:{job}").as_bytes()).to_string();
    let vertices = match detailed {
        false => OrderedMap::default(),
        true => r
            .vertices
            .iter()
            .map(|v| {
                let info = VertexParallelismRescaleInfo {
                    job_vertex_id: v.id.to_string(),
                    job_vertex_name: v.name.clone(),
                    slot_sharing_group_id: slot_group.clone(),
                    slot_sharing_group_name: "default".to_string(),
                    desired_parallelism: v.after.or(v.before).map(|p| p as u64),
                    sufficient_parallelism: 1,
                    pre_rescale_parallelism: v.before.map(|p| p as u64),
                    post_rescale_parallelism: v.after.map(|p| p as u64),
                };
                (v.id.to_string(), info)
            })
            .collect(),
    };
    let (terminal, reason) = match r.state {
        RescaleState::Completed => ("COMPLETED", "SUCCEEDED"),
        RescaleState::Failed(_) => ("FAILED", "EXCEPTION_OCCURRED"),
    };
    JobRescaleDetails {
        rescale_uuid: r.uuid.to_string(),
        resource_requirements_uuid: Id128::hash_of(format!("requirements:{}", r.uuid).as_bytes())
            .to_string(),
        rescale_attempt_id: r.attempt,
        vertices,
        slots: OrderedMap::default(),
        scheduler_states: Vec::new(),
        start_timestamp_in_millis: r.start_ms,
        end_timestamp_in_millis: r.end_ms,
        terminal_state: terminal.to_string(),
        trigger_cause: "UPDATE_REQUIREMENT".to_string(),
        terminated_reason: reason.to_string(),
        sluice: Some(record_shape(r)),
    }
}

fn history_of(ctx: &Ctx, jid: &str) -> Result<(Arc<JobMonitor>, Vec<RescaleRecord>), ApiError> {
    let m = ctx.job(jid)?;
    let mut h = ctx
        .registry
        .live(m.job_id)
        .map(|c| c.history())
        .unwrap_or_default();
    if h.len() > RESCALE_HISTORY_MAX {
        h.drain(..h.len() - RESCALE_HISTORY_MAX);
    }
    Ok((m, h))
}

/// `GET /jobs/:jid/rescales/history`: every change, newest first (Flink's order).
pub fn rescales_history(ctx: &Ctx, jid: &str) -> ApiResult {
    let (m, h) = history_of(ctx, jid)?;
    let history: Vec<JobRescaleDetails> = h
        .iter()
        .rev()
        .map(|r| flink_details(m.job_id, r, false))
        .collect();
    ok_shape(&history)
}

/// `GET /jobs/:jid/rescales/details/:rescaleuuid`: one change with its vertices.
pub fn rescale_details(ctx: &Ctx, jid: &str, uuid: &str) -> ApiResult {
    let (m, h) = history_of(ctx, jid)?;
    let id = Id128::parse_hex(uuid).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Bad request: '{}' is not a rescale uuid (32 hex digits).",
            shorten(uuid)
        ))
    })?;
    let r = h
        .iter()
        .find(|r| r.uuid == id)
        .ok_or_else(|| ApiError::not_found(format!("No rescale {id} in job {}.", m.job_id)))?;
    ok_shape(&flink_details(m.job_id, r, true))
}

/// `GET /jobs/:jid/rescales/overview`: counts by terminal state and the latest of each.
pub fn rescales_overview(ctx: &Ctx, jid: &str) -> ApiResult {
    let (m, h) = history_of(ctx, jid)?;
    let count = |failed: bool| {
        h.iter()
            .filter(|r| matches!(r.state, RescaleState::Failed(_)) == failed)
            .count() as u64
    };
    let latest = |failed: bool| {
        h.iter()
            .rev()
            .find(|r| matches!(r.state, RescaleState::Failed(_)) == failed)
            .map(|r| flink_details(m.job_id, r, false))
    };
    ok_shape(&RescalesOverview {
        rescales_counts: RescalesCounts {
            ignored: 0,
            in_progress: 0,
            completed: count(false),
            failed: count(true),
        },
        latest: LatestRescales {
            completed: latest(false),
            failed: latest(true),
            ignored: None,
        },
    })
}

/// `GET /jobs/:jid/rescales/config`: the keys of Flink's answer. Sluice rescales as soon as it is
/// asked (no cooldown, no resource wait: the slots are this process's threads), so the timeouts
/// are 0; `schedulerExecutionMode` is null as in Flink's capture.
pub fn rescales_config(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let live = ctx.registry.live(m.job_id).is_some();
    ok_shape(&RescalesConfig {
        rescale_history_max: if live { RESCALE_HISTORY_MAX as u64 } else { 0 },
        ..RescalesConfig::default()
    })
}
