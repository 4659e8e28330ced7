//! Checkpoint statistics in Flink's REST shapes (docs/src/reference/flink-formats.md, sections
//! #checkpoint-statistics and #checkpoint-details; checked against the Flink 2.3
//! capture): `/jobs/:id/checkpoints`, `/checkpoints/config`, `/checkpoints/details/:cid` and
//! `/checkpoints/details/:cid/subtasks/:vid`.

use sluice_runtime::checkpoint::{CheckpointHub, CheckpointRecord, CheckpointStatus, TaskAck};
use sluice_runtime::JobMonitor;
use sluice_types::CheckpointKind;

use crate::api::{ok_shape, vertex_index, ApiError, ApiResult, Ctx};
use sluice_rest_api::{self as api, OrderedMap, TriggerResponse};

fn hub(m: &JobMonitor) -> Result<&std::sync::Arc<CheckpointHub>, ApiError> {
    m.control
        .checkpoints()
        .ok_or_else(|| ApiError::not_found("Checkpointing has not been enabled for this job."))
}

/// Flink's longs: counts and sizes saturate at `i64::MAX`.
fn long(v: u64) -> u64 {
    v.min(i64::MAX as u64)
}

/// Flink's statistics object: min/max/avg as integers, percentiles as doubles.
fn summary(values: &[f64]) -> api::DurationStats {
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
    // Cut to whole numbers as Flink's longs are; the shape writes them as JSON integers.
    let whole = |x: f64| Some((x as i64) as f64);
    api::DurationStats {
        min: whole(min),
        max: whole(max),
        avg: whole(avg),
        p50: Some(pct(0.5)),
        p90: Some(pct(0.9)),
        p95: Some(pct(0.95)),
        p99: Some(pct(0.99)),
        p999: Some(pct(0.999)),
    }
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

fn entry(
    r: &CheckpointRecord,
    num_subtasks: usize,
    tasks: OrderedMap<api::TaskCheckpointStatistics>,
) -> api::CheckpointStatistics {
    let (class, st) = status(r.status);
    let completed = r.status == CheckpointStatus::Completed;
    let failed = r.status == CheckpointStatus::Failed;
    api::CheckpointStatistics {
        class_name: Some(class.to_string()),
        id: Some(long(r.id)),
        status: Some(st.to_string()),
        is_savepoint: Some(r.kind == CheckpointKind::Savepoint),
        savepoint_format: None,
        trigger_timestamp: Some(r.trigger_ms),
        latest_ack_timestamp: Some(r.latest_ack_ms),
        checkpointed_size: Some(long(r.state_size)),
        state_size: Some(long(r.state_size)),
        end_to_end_duration: Some(r.end_to_end_ms()),
        alignment_buffered: Some(0),
        processed_data: Some(0),
        persisted_data: Some(0),
        num_subtasks: Some(num_subtasks as u64),
        num_acknowledged_subtasks: Some(r.acks.len() as u64),
        checkpoint_type: Some(checkpoint_type(r.kind).to_string()),
        tasks,
        external_path: completed.then(|| {
            r.external_path
                .clone()
                .unwrap_or_else(|| "<checkpoint-not-externally-addressable>".into())
        }),
        discarded: completed.then_some(false),
        failure_timestamp: failed.then_some(r.latest_ack_ms),
        failure_message: failed.then(|| r.failure.clone().unwrap_or_default()),
    }
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
        |r: &Option<CheckpointRecord>| r.as_ref().map(|r| entry(r, n, OrderedMap::default()));
    let durations: Vec<f64> = s.durations.iter().map(|d| *d as f64).collect();
    let sizes: Vec<f64> = s.sizes.iter().map(|d| *d as f64).collect();
    let zeros = vec![0.0; s.sizes.len()];
    let restored = s
        .restored_from
        .as_ref()
        .map(|(id, at, path)| api::RestoredCheckpoint {
            id: Some(long(*id)),
            restore_timestamp: Some(*at),
            is_savepoint: Some(false),
            external_path: Some(path.clone()),
        });
    ok_shape(&api::CheckpointingStatistics {
        counts: api::CheckpointCounts {
            restored: long(s.restored),
            total: long(s.completed + s.failed + s.in_progress),
            in_progress: long(s.in_progress),
            completed: long(s.completed),
            failed: long(s.failed),
        },
        summary: api::CheckpointSummary {
            checkpointed_size: summary(&sizes),
            state_size: summary(&sizes),
            end_to_end_duration: summary(&durations),
            alignment_buffered: summary(&zeros),
            processed_data: summary(&zeros),
            persisted_data: summary(&zeros),
        },
        latest: api::LatestCheckpoints {
            completed: latest(&s.latest_completed),
            savepoint: latest(&s.latest_savepoint),
            failed: latest(&s.latest_failed),
            restored,
        },
        history: s
            .history
            .iter()
            .map(|r| entry(r, n, OrderedMap::default()))
            .collect(),
    })
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
    // Milliseconds as Flink's longs (capped at `i64::MAX`); no interval reads as `i64::MAX`.
    let ms = |d: std::time::Duration| Some(d.as_millis().min(i64::MAX as u128) as u64);
    ok_shape(&api::CheckpointConfigInfo {
        mode: "exactly_once".to_string(),
        interval: c.interval.map_or(Some(i64::MAX as u64), ms),
        timeout: ms(c.timeout),
        min_pause: ms(c.min_pause),
        max_concurrent: Some(c.max_concurrent as u64),
        externalization: Some(api::Externalization {
            enabled: Some(true),
            delete_on_cancellation: Some(false),
        }),
        state_backend: Some(backend.to_string()),
        checkpoint_storage: Some("FileSystemCheckpointStorage".to_string()),
        unaligned_checkpoints: Some(c.unaligned),
        tolerable_failed_checkpoints: Some(u64::from(c.tolerable_failures)),
        aligned_checkpoint_timeout: ms(c.aligned_timeout),
        checkpoints_after_tasks_finish: Some(false),
        state_changelog_enabled: Some(false),
        changelog_periodic_materialization_interval: Some(600_000),
        changelog_storage: Some("memory".to_string()),
    })
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

fn task_stats(m: &JobMonitor, r: &CheckpointRecord, vi: usize) -> api::TaskCheckpointStatistics {
    let acks: Vec<&TaskAck> = r.acks.iter().filter(|a| a.vertex == vi).collect();
    let size: usize = acks.iter().map(|a| a.state_bytes).sum();
    let latest = acks.iter().map(|a| a.ack_ms).max().unwrap_or(r.trigger_ms);
    api::TaskCheckpointStatistics {
        id: Some(long(r.id)),
        status: Some(status(r.status).1.to_string()),
        latest_ack_timestamp: Some(latest),
        checkpointed_size: Some(size as u64),
        state_size: Some(size as u64),
        end_to_end_duration: Some((latest - r.trigger_ms).max(0)),
        alignment_buffered: Some(0),
        processed_data: Some(0),
        persisted_data: Some(0),
        num_subtasks: Some(m.graph.vertices[vi].parallelism as u64),
        num_acknowledged_subtasks: Some(acks.len() as u64),
    }
}

/// `GET /jobs/:jid/checkpoints/details/:cid`.
pub fn checkpoint_details(ctx: &Ctx, jid: &str, cid: &str) -> ApiResult {
    let m = ctx.job(jid)?;
    let h = hub(&m)?;
    let r = find(h, cid)?;
    let tasks = m
        .graph
        .vertices
        .iter()
        .enumerate()
        .map(|(vi, v)| (v.id.to_string(), task_stats(&m, &r, vi)))
        .collect();
    ok_shape(&entry(&r, total_subtasks(&m), tasks))
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
                subtasks.push(api::SubtaskCheckpointStatistics {
                    index: Some(i as u64),
                    status: Some("completed".to_string()),
                    ack_timestamp: Some(a.ack_ms),
                    end_to_end_duration: Some(d),
                    state_size: Some(size as u64),
                    checkpointed_size: Some(size as u64),
                    checkpoint: Some(api::SubtaskCheckpointDuration {
                        sync: Some((a.sync_ns / 1_000_000) as i64),
                        asynchronous: Some(0),
                    }),
                    alignment: Some(api::SubtaskAlignment {
                        buffered: Some(0),
                        processed: Some(0),
                        persisted: Some(0),
                        duration: Some((a.alignment_ns / 1_000_000) as i64),
                    }),
                    start_delay: Some(a.start_delay_ms as i64),
                    unaligned_checkpoint: Some(r.kind == CheckpointKind::Unaligned),
                    aborted: Some(false),
                });
            }
            None => subtasks.push(api::SubtaskCheckpointStatistics {
                index: Some(i as u64),
                status: Some("pending_or_failed".to_string()),
                ..Default::default()
            }),
        }
    }
    let zeros = vec![0.0; sizes.len()];
    ok_shape(&api::TaskCheckpointStatisticsWithSubtaskDetails {
        task: task_stats(&m, &r, vi),
        summary: api::SubtaskCheckpointSummary {
            checkpointed_size: summary(&sizes),
            state_size: summary(&sizes),
            end_to_end_duration: summary(&e2e),
            checkpoint_duration: api::SyncAsyncStats {
                sync: summary(&sync),
                asynchronous: summary(&zeros),
            },
            alignment: api::AlignmentStats {
                buffered: summary(&zeros),
                processed: summary(&zeros),
                persisted: summary(&zeros),
                duration: summary(&align),
            },
            start_delay: summary(&delay),
        },
        subtasks,
    })
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
    let answer = TriggerResponse {
        request_id: id.to_string(),
    };
    let body = serde_json::to_string(&answer).map_err(|e| ApiError {
        status: 500,
        message: format!("Could not write the answer: {e}"),
    })?;
    Ok(crate::http::Response::json(202, body))
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
    let status = |id: &str| api::QueueStatus { id: id.to_string() };
    let operation = |location, failure_cause| {
        Some(api::SavepointOperation {
            location,
            failure_cause,
        })
    };
    ok_shape(&match st {
        SavepointStatus::InProgress => api::SavepointStatus {
            status: status("IN_PROGRESS"),
            operation: None,
        },
        SavepointStatus::Completed(path) => api::SavepointStatus {
            status: status("COMPLETED"),
            operation: operation(Some(format!("file:{}", path.display())), None),
        },
        SavepointStatus::Failed(why) => api::SavepointStatus {
            status: status("COMPLETED"),
            operation: operation(
                None,
                Some(api::FailureCause {
                    class: "org.apache.flink.runtime.checkpoint.CheckpointException".to_string(),
                    stack_trace: why,
                    serialized_throwable: None,
                }),
            ),
        },
    })
}
