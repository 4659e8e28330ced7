//! Job-level endpoints: `/jobs/:id` (and `PATCH` to cancel), `/jobs/:id/plan`,
//! `/jobs/:id/config`.

use sluice_plan::plan::job_plan_json;
use sluice_plan::Json;
use sluice_runtime::{JobMonitor, JobOutcome};
use sluice_types::Id128;

use super::io::vertex_io;
use super::states::{
    job_state, job_times, vertex_counts, vertex_times, StateCounts, JOB_TIMESTAMP_ORDER,
};
use super::{ok, ApiError, ApiResult, Ctx};
use crate::http::{shorten, Response};
use crate::metrics::JobData;

fn plan_of(m: &JobMonitor) -> Json {
    Json::from(job_plan_json(&m.graph, m.job_id))
        .get("plan")
        .cloned()
        .unwrap_or_else(Json::obj)
}

pub fn job(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let d = JobData::new(&m);
    let t = job_times(&m, ctx.now);
    let state = job_state(&m);
    let mut timestamps = Json::obj();
    for k in JOB_TIMESTAMP_ORDER {
        let v = match k {
            "INITIALIZING" | "CREATED" | "RUNNING" => t.start,
            k if k == state && t.end >= 0 => t.end,
            _ => 0,
        };
        timestamps = timestamps.with(k, v);
    }
    let slot_group = Id128::hash_of(format!("slot-sharing-group:default:{}", m.job_id).as_bytes());
    let mut all = StateCounts::default();
    let vertices: Vec<Json> = m
        .graph
        .vertices
        .iter()
        .map(|v| {
            let counts = vertex_counts(&m, v.index);
            all.merge(&counts);
            let (start, end, dur) = vertex_times(&m, v.index, ctx.now);
            let vertex = Json::obj()
                .with("id", v.id.to_string())
                .with("slotSharingGroupId", slot_group.to_string())
                .with("name", v.name.as_str())
                .with("maxParallelism", v.max_parallelism)
                .with("parallelism", v.parallelism)
                .with("status", counts.aggregate_state(v.parallelism))
                .with("start-time", start)
                .with("end-time", end)
                .with("duration", dur)
                .with("tasks", counts.json())
                .with("metrics", vertex_io(&d, v.index).json());
            with_connector_options(vertex, &m.graph, v)
        })
        .collect();
    ok(Json::obj()
        .with("jid", m.job_id.to_string())
        .with("application-id", m.job_id.to_string())
        .with("name", m.graph.name.as_str())
        .with("isStoppable", false)
        .with("state", state)
        .with("job-type", "STREAMING")
        .with("schedulerType", "Default")
        .with("start-time", t.start)
        .with("end-time", t.end)
        .with("duration", t.duration)
        .with("maxParallelism", -1i64)
        .with("now", ctx.now)
        .with("timestamps", timestamps)
        .with("vertices", vertices)
        .with("status-counts", all.json())
        .with("plan", plan_of(&m))
        .with("pending-operators", 0i64))
}

pub fn job_plan(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    ok(job_plan_json(&m.graph, m.job_id).into())
}

pub fn job_config(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let c = &m.config;
    let user = Json::obj()
        .with(
            "sluice.buffer-timeout-ms",
            c.buffer_timeout.as_millis().to_string(),
        )
        .with("sluice.buffer-bytes", c.buffer_bytes.to_string())
        .with(
            "sluice.buffers-per-channel",
            c.exclusive_credits.to_string(),
        )
        .with(
            "sluice.floating-buffers-per-gate",
            c.floating_credits.to_string(),
        )
        .with("sluice.operator-chaining", c.chaining.to_string())
        .with(
            "sluice.metrics.update-interval-ms",
            c.metrics.update_interval.as_millis().to_string(),
        )
        .with(
            "sluice.metrics.window-slots",
            c.metrics.window_slots.to_string(),
        )
        // Under Flink's own keys, for the doctor (its debloating advice depends on it).
        .with(
            "taskmanager.network.memory.buffer-debloat.enabled",
            c.buffer_debloat.enabled.to_string(),
        )
        .with(
            "taskmanager.network.memory.buffer-debloat.target",
            format!("{} ms", c.buffer_debloat.target.as_millis()),
        )
        .with(
            "taskmanager.network.memory.max-overdraft-buffers-per-gate",
            c.max_overdraft_buffers.to_string(),
        );
    ok(Json::obj()
        .with("jid", m.job_id.to_string())
        .with("name", m.graph.name.as_str())
        .with(
            "execution-config",
            Json::obj()
                .with("restart-strategy", "Restart deactivated.")
                .with("job-parallelism", c.parallelism)
                .with("object-reuse-mode", true)
                .with("user-config", user),
        ))
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
    if m.outcome() != JobOutcome::Running {
        return Err(ApiError {
            status: 409,
            message: format!(
                "Job cancellation failed: job {} is already {}.",
                m.job_id,
                job_state(&m)
            ),
        });
    }
    m.control.cancel_by_user();
    Ok(Response::json(202, "{}".into()))
}

/// Sluice extension: the connector options of the vertex's operators (a sink's batch size …) as
/// `connector-options: [{operator, key, value}]`, the last value of each key; only on vertices
/// that have some (Flink has none), so the doctor can propose changing one.
fn with_connector_options(
    vertex: Json,
    graph: &sluice_plan::JobGraph,
    v: &sluice_plan::JobVertex,
) -> Json {
    let options = crate::doctor_api::connector_options(graph, v);
    if options.is_empty() {
        return vertex;
    }
    let items = options
        .into_iter()
        .map(|o| {
            Json::obj()
                .with("operator", o.operator)
                .with("key", o.key)
                .with("value", o.value)
        })
        .collect();
    vertex.with("connector-options", Json::Arr(items))
}
