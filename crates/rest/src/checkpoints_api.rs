//! Checkpoint statistics in Flink's REST shapes (spec §6.2/§6.3, checked against the Flink 2.3
//! capture): `/jobs/:id/checkpoints`, `/checkpoints/config`, `/checkpoints/details/:cid` and
//! `/checkpoints/details/:cid/subtasks/:vid`.

use sluice_graph::{JobMonitor, Json};
use sluice_runtime::checkpoint::{CheckpointHub, CheckpointRecord, CheckpointStatus, TaskAck};
use sluice_types::CheckpointKind;

use crate::api::{ok, vertex_index, ApiError, ApiResult, Ctx};

fn hub(m: &JobMonitor) -> Result<&std::sync::Arc<CheckpointHub>, ApiError> {
    m.control
        .checkpoints()
        .ok_or_else(|| ApiError::not_found("Checkpointing has not been enabled for this job."))
}

fn int(v: u64) -> Json {
    Json::Int(v.min(i64::MAX as u64) as i64)
}

/// Flink's statistics object: min/max/avg as integers, percentiles as doubles.
fn summary(values: &[f64]) -> Json {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if v.is_empty() {
            return 0.0;
        }
        // Flink (Dropwizard-like) interpolation between closest ranks.
        let pos = p * (v.len() + 1) as f64;
        if pos < 1.0 {
            v[0]
        } else if pos >= v.len() as f64 {
            v[v.len() - 1]
        } else {
            let lo = v[pos as usize - 1];
            let hi = v[pos as usize];
            lo + (pos - pos.floor()) * (hi - lo)
        }
    };
    let (min, max) = (
        v.first().copied().unwrap_or(0.0),
        v.last().copied().unwrap_or(0.0),
    );
    let avg = if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    };
    Json::obj()
        .with("min", Json::Int(min as i64))
        .with("max", Json::Int(max as i64))
        .with("avg", Json::Int(avg as i64))
        .with("p50", pct(0.5))
        .with("p90", pct(0.9))
        .with("p95", pct(0.95))
        .with("p99", pct(0.99))
        .with("p999", pct(0.999))
}

fn checkpoint_type(k: CheckpointKind) -> &'static str {
    match k {
        CheckpointKind::Aligned => "CHECKPOINT",
        CheckpointKind::Unaligned => "UNALIGNED_CHECKPOINT",
        CheckpointKind::Savepoint => "SAVEPOINT",
    }
}

fn status(s: CheckpointStatus) -> (&'static str, &'static str) {
    match s {
        CheckpointStatus::InProgress => ("in_progress", "IN_PROGRESS"),
        CheckpointStatus::Completed => ("completed", "COMPLETED"),
        CheckpointStatus::Failed => ("failed", "FAILED"),
    }
}

fn entry(r: &CheckpointRecord, num_subtasks: usize, tasks: Json) -> Json {
    let (class, st) = status(r.status);
    let mut j = Json::obj()
        .with("className", class)
        .with("id", int(r.id))
        .with("status", st)
        .with("is_savepoint", r.kind == CheckpointKind::Savepoint)
        .with("savepointFormat", Json::Null)
        .with("trigger_timestamp", r.trigger_ms)
        .with("latest_ack_timestamp", r.latest_ack_ms)
        .with("checkpointed_size", int(r.state_size))
        .with("state_size", int(r.state_size))
        .with("end_to_end_duration", r.end_to_end_ms())
        .with("alignment_buffered", 0i64)
        .with("processed_data", 0i64)
        .with("persisted_data", 0i64)
        .with("num_subtasks", num_subtasks)
        .with("num_acknowledged_subtasks", r.acks.len())
        .with("checkpoint_type", checkpoint_type(r.kind))
        .with("tasks", tasks);
    j = match r.status {
        CheckpointStatus::Completed => j
            .with(
                "external_path",
                r.external_path
                    .clone()
                    .unwrap_or_else(|| "<checkpoint-not-externally-addressable>".into()),
            )
            .with("discarded", false),
        CheckpointStatus::Failed => j
            .with("failure_timestamp", r.latest_ack_ms)
            .with("failure_message", r.failure.clone().unwrap_or_default()),
        CheckpointStatus::InProgress => j,
    };
    j
}

fn total_subtasks(m: &JobMonitor) -> usize {
    m.graph.vertices.iter().map(|v| v.parallelism).sum()
}

/// `GET /jobs/:jid/checkpoints`.
pub fn checkpoints(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let s = h.stats();
    let n = total_subtasks(&m);
    let latest =
        |r: &Option<CheckpointRecord>| r.as_ref().map_or(Json::Null, |r| entry(r, n, Json::obj()));
    let durations: Vec<f64> = s.durations.iter().map(|d| *d as f64).collect();
    let sizes: Vec<f64> = s.sizes.iter().map(|d| *d as f64).collect();
    let zeros = vec![0.0; s.sizes.len()];
    let restored = match &s.restored_from {
        Some((id, at, path)) => Json::obj()
            .with("id", int(*id))
            .with("restore_timestamp", *at)
            .with("is_savepoint", false)
            .with("external_path", path.as_str()),
        None => Json::Null,
    };
    ok(Json::obj()
        .with(
            "counts",
            Json::obj()
                .with("restored", int(s.restored))
                .with("total", int(s.completed + s.failed + s.in_progress))
                .with("in_progress", int(s.in_progress))
                .with("completed", int(s.completed))
                .with("failed", int(s.failed)),
        )
        .with(
            "summary",
            Json::obj()
                .with("checkpointed_size", summary(&sizes))
                .with("state_size", summary(&sizes))
                .with("end_to_end_duration", summary(&durations))
                .with("alignment_buffered", summary(&zeros))
                .with("processed_data", summary(&zeros))
                .with("persisted_data", summary(&zeros)),
        )
        .with(
            "latest",
            Json::obj()
                .with("completed", latest(&s.latest_completed))
                .with("savepoint", latest(&s.latest_savepoint))
                .with("failed", latest(&s.latest_failed))
                .with("restored", restored),
        )
        .with(
            "history",
            Json::Arr(s.history.iter().map(|r| entry(r, n, Json::obj())).collect()),
        ))
}

/// `GET /jobs/:jid/checkpoints/config`.
pub fn checkpoint_config(ctx: &Ctx, jid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let c = &h.config;
    let backend = match m.config.state_backend {
        sluice_runtime::state::StateBackendKind::Memory => "HashMapStateBackend",
        sluice_runtime::state::StateBackendKind::Lsm { .. } => "EmbeddedLsmStateBackend",
    };
    ok(Json::obj()
        .with("mode", "exactly_once")
        .with(
            "interval",
            c.interval.map_or(i64::MAX, |i| i.as_millis() as i64),
        )
        .with("timeout", c.timeout.as_millis() as i64)
        .with("min_pause", c.min_pause.as_millis() as i64)
        .with("max_concurrent", c.max_concurrent)
        .with(
            "externalization",
            Json::obj()
                .with("enabled", true)
                .with("delete_on_cancellation", false),
        )
        .with("state_backend", backend)
        .with("checkpoint_storage", "FileSystemCheckpointStorage")
        .with("unaligned_checkpoints", c.unaligned)
        .with("tolerable_failed_checkpoints", c.tolerable_failures)
        .with(
            "aligned_checkpoint_timeout",
            c.aligned_timeout.as_millis() as i64,
        )
        .with("checkpoints_after_tasks_finish", false)
        .with("state_changelog_enabled", false)
        .with("changelog_periodic_materialization_interval", 600_000i64)
        .with("changelog_storage", "memory"))
}

fn find(h: &CheckpointHub, raw: &str) -> Result<CheckpointRecord, ApiError> {
    let id: u64 = raw.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "Bad request: '{}' is not a checkpoint id (a non-negative integer).",
            crate::http::shorten(raw)
        ))
    })?;
    h.stats()
        .history
        .into_iter()
        .find(|r| r.id == id)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Could not find checkpointing statistics for checkpoint {id}."
            ))
        })
}

fn task_stats(m: &JobMonitor, r: &CheckpointRecord, vi: usize) -> Json {
    let acks: Vec<&TaskAck> = r.acks.iter().filter(|a| a.vertex == vi).collect();
    let size: usize = acks.iter().map(|a| a.state_bytes).sum();
    let latest = acks.iter().map(|a| a.ack_ms).max().unwrap_or(r.trigger_ms);
    Json::obj()
        .with("id", int(r.id))
        .with("status", status(r.status).1)
        .with("latest_ack_timestamp", latest)
        .with("checkpointed_size", size)
        .with("state_size", size)
        .with("end_to_end_duration", (latest - r.trigger_ms).max(0))
        .with("alignment_buffered", 0i64)
        .with("processed_data", 0i64)
        .with("persisted_data", 0i64)
        .with("num_subtasks", m.graph.vertices[vi].parallelism)
        .with("num_acknowledged_subtasks", acks.len())
}

/// `GET /jobs/:jid/checkpoints/details/:cid`.
pub fn checkpoint_details(ctx: &Ctx, jid: &str, cid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let r = find(h, cid)?;
    let mut tasks = Json::obj();
    for (vi, v) in m.graph.vertices.iter().enumerate() {
        tasks = tasks.with(&v.id.to_string(), task_stats(&m, &r, vi));
    }
    ok(entry(&r, total_subtasks(&m), tasks))
}

/// `GET /jobs/:jid/checkpoints/details/:cid/subtasks/:vid`: per-subtask sync/async,
/// alignment and start delay.
pub fn checkpoint_subtasks(ctx: &Ctx, jid: &str, cid: &str, vid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let r = find(h, cid)?;
    let vi = vertex_index(&m, vid)?;
    let p = m.graph.vertices[vi].parallelism;
    let ms = |ns: u64| (ns / 1_000_000) as f64;
    let mut subtasks = Vec::new();
    let (mut sizes, mut e2e, mut sync, mut align, mut delay) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..p {
        match r.acks.iter().find(|a| a.vertex == vi && a.subtask == i) {
            Some(a) => {
                let size = a.state_bytes;
                let d = (a.ack_ms - r.trigger_ms).max(0);
                sizes.push(size as f64);
                e2e.push(d as f64);
                sync.push(ms(a.sync_ns));
                align.push(ms(a.alignment_ns));
                delay.push(a.start_delay_ms as f64);
                subtasks.push(
                    Json::obj()
                        .with("index", i)
                        .with("status", "completed")
                        .with("ack_timestamp", a.ack_ms)
                        .with("end_to_end_duration", d)
                        .with("state_size", size)
                        .with("checkpointed_size", size)
                        .with(
                            "checkpoint",
                            Json::obj()
                                .with("sync", Json::Int((a.sync_ns / 1_000_000) as i64))
                                .with("async", 0i64),
                        )
                        .with(
                            "alignment",
                            Json::obj()
                                .with("buffered", 0i64)
                                .with("processed", 0i64)
                                .with("persisted", 0i64)
                                .with("duration", Json::Int((a.alignment_ns / 1_000_000) as i64)),
                        )
                        .with("start_delay", a.start_delay_ms as i64)
                        .with("unaligned_checkpoint", r.kind == CheckpointKind::Unaligned)
                        .with("aborted", false),
                );
            }
            None => subtasks.push(
                Json::obj()
                    .with("index", i)
                    .with("status", "pending_or_failed"),
            ),
        }
    }
    let zeros = vec![0.0; sizes.len()];
    ok(task_stats(&m, &r, vi)
        .with(
            "summary",
            Json::obj()
                .with("checkpointed_size", summary(&sizes))
                .with("state_size", summary(&sizes))
                .with("end_to_end_duration", summary(&e2e))
                .with(
                    "checkpoint_duration",
                    Json::obj()
                        .with("sync", summary(&sync))
                        .with("async", summary(&zeros)),
                )
                .with(
                    "alignment",
                    Json::obj()
                        .with("buffered", summary(&zeros))
                        .with("processed", summary(&zeros))
                        .with("persisted", summary(&zeros))
                        .with("duration", summary(&align)),
                )
                .with("start_delay", summary(&delay)),
        )
        .with("subtasks", Json::Arr(subtasks)))
}

/// `POST /jobs/:jid/savepoints` (`stop` false: body `target-directory`, `cancel-job`) and
/// `POST /jobs/:jid/stop` (`stop` true: body `targetDirectory`, `drain`): 202 with the
/// request id to poll.
pub fn trigger_savepoint(ctx: &Ctx, jid: &str, body: &[u8], stop: bool) -> ApiResult {
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let v: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Object(Default::default())
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("Request body is not valid JSON: {e}")))?
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("Request body must be a JSON object."));
    }
    let dir_key = if stop {
        "targetDirectory"
    } else {
        "target-directory"
    };
    let dir = match v.get(dir_key) {
        Some(serde_json::Value::String(d)) if !d.trim().is_empty() && !d.contains('\0') => d,
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "'{dir_key}' must be a non-empty directory path."
            )))
        }
        None => {
            return Err(ApiError::bad_request(format!(
                "No savepoint directory given: set '{dir_key}' in the request body."
            )))
        }
    };
    let stop = stop
        || match v.get("cancel-job") {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(_) => return Err(ApiError::bad_request("'cancel-job' must be a boolean.")),
        };
    if v.get("drain").is_some_and(|d| d.as_bool() == Some(true)) {
        return Err(ApiError::bad_request(
            "'drain' is not supported: Sluice stops without emitting the final watermark.",
        ));
    }
    if m.outcome() != sluice_graph::JobOutcome::Running {
        return Err(ApiError {
            status: 409,
            message: format!("Job {jid} is not running; no savepoint can be taken."),
        });
    }
    let id = h.request_savepoint(std::path::PathBuf::from(dir), stop);
    Ok(crate::http::Response::json(
        202,
        Json::obj().with("request-id", id.as_str()).to_compact(),
    ))
}

/// `GET /jobs/:jid/savepoints/:triggerid`.
pub fn savepoint_status(ctx: &Ctx, jid: &str, trigger: &str) -> ApiResult {
    use sluice_runtime::checkpoint::SavepointStatus;
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let st = h.savepoint_status(trigger).ok_or_else(|| {
        ApiError::not_found(format!(
            "There is no savepoint operation with triggerId={} for job {jid}.",
            crate::http::shorten(trigger)
        ))
    })?;
    let status = |id: &str| Json::obj().with("id", id);
    ok(match st {
        SavepointStatus::InProgress => Json::obj().with("status", status("IN_PROGRESS")),
        SavepointStatus::Completed(path) => Json::obj().with("status", status("COMPLETED")).with(
            "operation",
            Json::obj().with("location", format!("file:{}", path.display())),
        ),
        SavepointStatus::Failed(why) => Json::obj().with("status", status("COMPLETED")).with(
            "operation",
            Json::obj().with(
                "failure-cause",
                Json::obj()
                    .with(
                        "class",
                        "org.apache.flink.runtime.checkpoint.CheckpointException",
                    )
                    .with("stack-trace", why.as_str())
                    .with("serialized-throwable", Json::Null),
            ),
        ),
    })
}
