//! Checkpoint statistics in Flink's REST shapes (spec §6.2/§6.3, checked against the Flink 2.3
//! capture): `/jobs/:id/checkpoints`, `/checkpoints/config`, `/checkpoints/details/:cid` and
//! `/checkpoints/details/:cid/subtasks/:vid`.

use serde_json::{json, Value};
use sluice_runtime::checkpoint::{CheckpointHub, CheckpointRecord, CheckpointStatus, TaskAck};
use sluice_runtime::JobMonitor;
use sluice_types::CheckpointKind;

use crate::api::{ok, vertex_index, ApiError, ApiResult, Ctx};

fn hub(m: &JobMonitor) -> Result<&std::sync::Arc<CheckpointHub>, ApiError> {
    m.control
        .checkpoints()
        .ok_or_else(|| ApiError::not_found("Checkpointing has not been enabled for this job."))
}

/// Flink's longs: counts and sizes saturate at `i64::MAX`.
fn int(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

/// Flink's statistics object: min/max/avg as integers, percentiles as doubles.
fn summary(values: &[f64]) -> Value {
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
    json!({
        "min": min as i64,
        "max": max as i64,
        "avg": avg as i64,
        "p50": pct(0.5),
        "p90": pct(0.9),
        "p95": pct(0.95),
        "p99": pct(0.99),
        "p999": pct(0.999),
    })
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

fn entry(r: &CheckpointRecord, num_subtasks: usize, tasks: Value) -> Value {
    let (class, st) = status(r.status);
    let mut j = json!({
        "className": class,
        "id": int(r.id),
        "status": st,
        "is_savepoint": r.kind == CheckpointKind::Savepoint,
        "savepointFormat": null,
        "trigger_timestamp": r.trigger_ms,
        "latest_ack_timestamp": r.latest_ack_ms,
        "checkpointed_size": int(r.state_size),
        "state_size": int(r.state_size),
        "end_to_end_duration": r.end_to_end_ms(),
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": 0,
        "num_subtasks": num_subtasks,
        "num_acknowledged_subtasks": r.acks.len(),
        "checkpoint_type": checkpoint_type(r.kind),
        "tasks": tasks,
    });
    match r.status {
        CheckpointStatus::Completed => {
            j["external_path"] = json!(r
                .external_path
                .clone()
                .unwrap_or_else(|| "<checkpoint-not-externally-addressable>".into()));
            j["discarded"] = json!(false);
        }
        CheckpointStatus::Failed => {
            j["failure_timestamp"] = json!(r.latest_ack_ms);
            j["failure_message"] = json!(r.failure.clone().unwrap_or_default());
        }
        CheckpointStatus::InProgress => {}
    }
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
        |r: &Option<CheckpointRecord>| r.as_ref().map_or(Value::Null, |r| entry(r, n, json!({})));
    let durations: Vec<f64> = s.durations.iter().map(|d| *d as f64).collect();
    let sizes: Vec<f64> = s.sizes.iter().map(|d| *d as f64).collect();
    let zeros = vec![0.0; s.sizes.len()];
    let restored = match &s.restored_from {
        Some((id, at, path)) => json!({
            "id": int(*id),
            "restore_timestamp": at,
            "is_savepoint": false,
            "external_path": path,
        }),
        None => Value::Null,
    };
    let history: Vec<Value> = s.history.iter().map(|r| entry(r, n, json!({}))).collect();
    ok(json!({
        "counts": {
            "restored": int(s.restored),
            "total": int(s.completed + s.failed + s.in_progress),
            "in_progress": int(s.in_progress),
            "completed": int(s.completed),
            "failed": int(s.failed),
        },
        "summary": {
            "checkpointed_size": summary(&sizes),
            "state_size": summary(&sizes),
            "end_to_end_duration": summary(&durations),
            "alignment_buffered": summary(&zeros),
            "processed_data": summary(&zeros),
            "persisted_data": summary(&zeros),
        },
        "latest": {
            "completed": latest(&s.latest_completed),
            "savepoint": latest(&s.latest_savepoint),
            "failed": latest(&s.latest_failed),
            "restored": restored,
        },
        "history": history,
    })
    .into())
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
    ok(json!({
        "mode": "exactly_once",
        "interval": c.interval.map_or(i64::MAX, |i| i.as_millis() as i64),
        "timeout": c.timeout.as_millis() as i64,
        "min_pause": c.min_pause.as_millis() as i64,
        "max_concurrent": c.max_concurrent,
        "externalization": {"enabled": true, "delete_on_cancellation": false},
        "state_backend": backend,
        "checkpoint_storage": "FileSystemCheckpointStorage",
        "unaligned_checkpoints": c.unaligned,
        "tolerable_failed_checkpoints": c.tolerable_failures,
        "aligned_checkpoint_timeout": c.aligned_timeout.as_millis() as i64,
        "checkpoints_after_tasks_finish": false,
        "state_changelog_enabled": false,
        "changelog_periodic_materialization_interval": 600_000,
        "changelog_storage": "memory",
    })
    .into())
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

fn task_stats(m: &JobMonitor, r: &CheckpointRecord, vi: usize) -> Value {
    let acks: Vec<&TaskAck> = r.acks.iter().filter(|a| a.vertex == vi).collect();
    let size: usize = acks.iter().map(|a| a.state_bytes).sum();
    let latest = acks.iter().map(|a| a.ack_ms).max().unwrap_or(r.trigger_ms);
    json!({
        "id": int(r.id),
        "status": status(r.status).1,
        "latest_ack_timestamp": latest,
        "checkpointed_size": size,
        "state_size": size,
        "end_to_end_duration": (latest - r.trigger_ms).max(0),
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": 0,
        "num_subtasks": m.graph.vertices[vi].parallelism,
        "num_acknowledged_subtasks": acks.len(),
    })
}

/// `GET /jobs/:jid/checkpoints/details/:cid`.
pub fn checkpoint_details(ctx: &Ctx, jid: &str, cid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let r = find(h, cid)?;
    let mut tasks = serde_json::Map::new();
    for (vi, v) in m.graph.vertices.iter().enumerate() {
        tasks.insert(v.id.to_string(), task_stats(&m, &r, vi));
    }
    ok(entry(&r, total_subtasks(&m), Value::Object(tasks)).into())
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
                subtasks.push(json!({
                    "index": i,
                    "status": "completed",
                    "ack_timestamp": a.ack_ms,
                    "end_to_end_duration": d,
                    "state_size": size,
                    "checkpointed_size": size,
                    "checkpoint": {"sync": (a.sync_ns / 1_000_000) as i64, "async": 0},
                    "alignment": {
                        "buffered": 0,
                        "processed": 0,
                        "persisted": 0,
                        "duration": (a.alignment_ns / 1_000_000) as i64,
                    },
                    "start_delay": a.start_delay_ms as i64,
                    "unaligned_checkpoint": r.kind == CheckpointKind::Unaligned,
                    "aborted": false,
                }));
            }
            None => subtasks.push(json!({"index": i, "status": "pending_or_failed"})),
        }
    }
    let zeros = vec![0.0; sizes.len()];
    let mut j = task_stats(&m, &r, vi);
    j["summary"] = json!({
        "checkpointed_size": summary(&sizes),
        "state_size": summary(&sizes),
        "end_to_end_duration": summary(&e2e),
        "checkpoint_duration": {"sync": summary(&sync), "async": summary(&zeros)},
        "alignment": {
            "buffered": summary(&zeros),
            "processed": summary(&zeros),
            "persisted": summary(&zeros),
            "duration": summary(&align),
        },
        "start_delay": summary(&delay),
    });
    j["subtasks"] = Value::Array(subtasks);
    ok(j.into())
}

/// `POST /jobs/:jid/savepoints` (`stop` false: body `target-directory`, `cancel-job`) and
/// `POST /jobs/:jid/stop` (`stop` true: body `targetDirectory`, `drain`): 202 with the
/// request id to poll. The target must lie under `savepoint_dir` (the default when the body
/// names none); a request the job cannot queue is answered 409.
pub fn trigger_savepoint(
    ctx: &Ctx,
    jid: &str,
    body: &[u8],
    stop: bool,
    savepoint_dir: &std::path::Path,
) -> ApiResult {
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
    let requested = match v.get(dir_key) {
        Some(serde_json::Value::String(d)) if !d.trim().is_empty() && !d.contains('\0') => {
            Some(d.as_str())
        }
        None | Some(serde_json::Value::Null) => None,
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "'{dir_key}' must be a non-empty directory path."
            )))
        }
    };
    let dir = crate::savepoint_dir::resolve_target(savepoint_dir, requested)
        .map_err(ApiError::bad_request)?;
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
    if m.outcome() != sluice_runtime::JobOutcome::Running {
        return Err(ApiError {
            status: 409,
            message: format!("Job {jid} is not running; no savepoint can be taken."),
        });
    }
    let id = h.request_savepoint(dir, stop).map_err(|e| ApiError {
        status: 409,
        message: format!("Savepoint of job {jid} refused: {e}."),
    })?;
    Ok(crate::http::Response::json(
        202,
        json!({ "request-id": id }).to_string(),
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
    // A request the job can no longer take (it ended, e.g. after a failure without restart)
    // is answered as failed rather than left in progress.
    let st = if st == SavepointStatus::InProgress
        && m.outcome() != sluice_runtime::JobOutcome::Running
    {
        let why = SavepointStatus::Failed(format!(
            "the job ended ({}) before this savepoint was taken",
            crate::api::job_state(&m)
        ));
        h.set_savepoint_status(trigger, why.clone());
        why
    } else {
        st
    };
    ok(match st {
        SavepointStatus::InProgress => json!({"status": {"id": "IN_PROGRESS"}}),
        SavepointStatus::Completed(path) => json!({
            "status": {"id": "COMPLETED"},
            "operation": {"location": format!("file:{}", path.display())},
        }),
        SavepointStatus::Failed(why) => json!({
            "status": {"id": "COMPLETED"},
            "operation": {
                "failure-cause": {
                    "class": "org.apache.flink.runtime.checkpoint.CheckpointException",
                    "stack-trace": why,
                    "serialized-throwable": null,
                }
            },
        }),
    }
    .into())
}
