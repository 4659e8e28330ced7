//! Job-level endpoints: `/jobs/:id` (and `PATCH` to cancel), `/jobs/:id/plan`,
//! `/jobs/:id/config`.

use sluice_plan::plan::job_plan_json;
use sluice_runtime::{JobMonitor, JobOutcome};
use sluice_types::Id128;

use super::io::vertex_io;
use super::states::{
    job_state, job_times, vertex_counts, vertex_times, StateCounts, JOB_TIMESTAMP_ORDER,
};
use super::{ok_shape, ApiError, ApiResult, Ctx};
use crate::http::{shorten, Response};
use crate::metrics::JobData;
use sluice_rest_api::lenient::Scalar;
use sluice_rest_api::{
    ConnectorOption, ExecutionConfig, JobConfig, JobDetails, JobPlan, JobVertex, Plan,
};

/// The job's plan as `sluice-plan` renders it (the one definition of Flink's plan layout,
/// shared with `sluice plan`), read into the shape the server writes.
fn plan_of(m: &JobMonitor) -> Plan {
    serde_json::from_value::<JobPlan>(job_plan_json(&m.graph, m.job_id))
        .map(|p| p.plan)
        .unwrap_or_default()
}

pub fn job(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let d = JobData::new(&m);
    let t = job_times(&m, ctx.now);
    let state = job_state(&m);
    let timestamps = JOB_TIMESTAMP_ORDER
        .into_iter()
        .map(|k| {
            let v = match k {
                "INITIALIZING" | "CREATED" | "RUNNING" => t.start,
                k if k == state && t.end >= 0 => t.end,
                _ => 0,
            };
            (k.to_string(), v)
        })
        .collect();
    let slot_group = Id128::hash_of(format!("slot-sharing-group:default:{}", m.job_id).as_bytes());
    let mut all = StateCounts::default();
    let vertices: Vec<JobVertex> = m
        .graph
        .vertices
        .iter()
        .map(|v| {
            let counts = vertex_counts(&m, v.index);
            all.merge(&counts);
            let (start, end, dur) = vertex_times(&m, v.index, ctx.now);
            JobVertex {
                id: v.id.to_string(),
                slot_sharing_group_id: Some(slot_group.to_string()),
                name: v.name.clone(),
                max_parallelism: Some(v.max_parallelism as u64),
                parallelism: Some(Scalar::Int(v.parallelism as i64)),
                status: Some(counts.aggregate_state(v.parallelism).to_string()),
                start_time: Some(start),
                end_time: Some(end),
                duration: Some(dur),
                tasks: counts.map(),
                metrics: Some(vertex_io(&d, v.index).shape()),
                connector_options: connector_options(&m.graph, v),
            }
        })
        .collect();
    ok_shape(&JobDetails {
        jid: m.job_id.to_string(),
        application_id: Some(m.job_id.to_string()),
        name: m.graph.name.clone(),
        is_stoppable: Some(false),
        state: state.to_string(),
        job_type: Some("STREAMING".to_string()),
        scheduler_type: Some("Default".to_string()),
        start_time: Some(t.start),
        end_time: Some(t.end),
        duration: Some(t.duration as f64),
        max_parallelism: Some(-1),
        now: Some(ctx.now),
        timestamps,
        vertices: Some(vertices),
        status_counts: all.map(),
        plan: plan_of(&m),
        pending_operators: Some(0),
    })
}

pub fn job_plan(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    ok_shape(&JobPlan { plan: plan_of(&m) })
}

pub fn job_config(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let c = &m.config;
    let user_config = [
        (
            "sluice.buffer-timeout-ms",
            c.buffer_timeout.as_millis().to_string(),
        ),
        ("sluice.buffer-bytes", c.buffer_bytes.to_string()),
        (
            "sluice.buffers-per-channel",
            c.exclusive_credits.to_string(),
        ),
        (
            "sluice.floating-buffers-per-gate",
            c.floating_credits.to_string(),
        ),
        ("sluice.operator-chaining", c.chaining.to_string()),
        (
            "sluice.metrics.update-interval-ms",
            c.metrics.update_interval.as_millis().to_string(),
        ),
        (
            "sluice.metrics.window-slots",
            c.metrics.window_slots.to_string(),
        ),
        // Under Flink's own keys, for the doctor (its debloating advice depends on it).
        (
            "taskmanager.network.memory.buffer-debloat.enabled",
            c.buffer_debloat.enabled.to_string(),
        ),
        (
            "taskmanager.network.memory.buffer-debloat.target",
            format!("{} ms", c.buffer_debloat.target.as_millis()),
        ),
        (
            "taskmanager.network.memory.max-overdraft-buffers-per-gate",
            c.max_overdraft_buffers.to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Scalar::Str(v)))
    .collect();
    ok_shape(&JobConfig {
        jid: m.job_id.to_string(),
        name: m.graph.name.clone(),
        execution_config: ExecutionConfig {
            restart_strategy: Some("Restart deactivated.".to_string()),
            job_parallelism: Some(c.parallelism as u64),
            object_reuse_mode: Some(true),
            user_config,
        },
    })
}

/// `PATCH /jobs/:id`: cancels a running job (Flink answers 202 with `{}`).
pub fn cancel_job(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    match ctx.param("mode") {
        None | Some("") | Some("cancel") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Bad request: unsupported termination mode '{}' (only 'cancel').",
                shorten(other)
            )))
        }
    }
    cancel_running(&m, "Job")
}

/// Cancels a running job: 202 with `{}`, or 409 when it has already ended (`what` names what
/// was asked to cancel: `Job`, `Application`).
pub(super) fn cancel_running(m: &JobMonitor, what: &str) -> ApiResult {
    if m.outcome() != JobOutcome::Running {
        return Err(ApiError {
            status: 409,
            message: format!(
                "{what} cancellation failed: {} {} is already {}.",
                what.to_ascii_lowercase(),
                m.job_id,
                job_state(m)
            ),
        });
    }
    m.control.cancel_by_user();
    Ok(Response::json(202, "{}".into()))
}

/// Sluice extension: the connector options of the vertex's operators (a sink's batch size …) as
/// `connector-options: [{operator, key, value}]`, the last value of each key; only on vertices
/// that have some (Flink has none: the list is then left out), so the doctor can propose
/// changing one.
fn connector_options(
    graph: &sluice_plan::JobGraph,
    v: &sluice_plan::JobVertex,
) -> Vec<ConnectorOption> {
    crate::doctor_api::connector_options(graph, v)
        .into_iter()
        .map(|o| ConnectorOption {
            operator: o.operator,
            key: o.key,
            value: o.value,
        })
        .collect()
}
