//! The coordinator thread of one job attempt: feeds the pure [`Coordinator`] with the clock
//! and the tasks' acknowledgements, and carries out its actions (publish barriers, write
//! completed checkpoints, record and log failures, fail the job).
//!
//! Order of a completion: every task acknowledged → the checkpoint is written durably
//! ([`storage::write`]: state files and `_metadata` fsynced, renamed, parent fsynced) → only
//! then [`CheckpointHub::complete`] publishes its id, which is what transactional sinks wait
//! for before they publish their files. A failure to write counts as a failed checkpoint.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_types::Barrier;

use super::{
    storage, Action, CheckpointHub, CompletedCheckpoint, Coordinator, OperatorState,
    SavepointRequest, SavepointStatus, TaskAck,
};
use crate::{JobControl, JobError};

/// Runs until [`CoordinatorThread::stop`].
pub struct CoordinatorThread {
    stop: Arc<AtomicBool>,
    hub: Arc<CheckpointHub>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CoordinatorThread {
    /// Starts coordinating the current attempt. `vertex_parallelism[v]` is vertex `v`'s
    /// parallelism (every subtask acknowledges each checkpoint).
    pub fn spawn(
        hub: Arc<CheckpointHub>,
        control: Arc<JobControl>,
        vertex_parallelism: Vec<usize>,
    ) -> std::io::Result<CoordinatorThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, h) = (stop.clone(), hub.clone());
        let thread = std::thread::Builder::new()
            .name("checkpoint-coordinator".into())
            .spawn(move || run(h, control, vertex_parallelism, s))?;
        Ok(CoordinatorThread {
            stop,
            hub,
            thread: Some(thread),
        })
    }

    /// Stops the coordinator and waits for its thread (dropping it does the same).
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for CoordinatorThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.hub.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    hub: Arc<CheckpointHub>,
    control: Arc<JobControl>,
    vertex_parallelism: Vec<usize>,
    stop: Arc<AtomicBool>,
) {
    let tasks: usize = vertex_parallelism.iter().sum();
    let mut coord = Coordinator::new(hub.config.clone(), tasks, hub.last_triggered());
    let started = Instant::now();
    let now_ms = || started.elapsed().as_millis() as i64;
    let mut acks: BTreeMap<u64, Vec<TaskAck>> = BTreeMap::new();
    // The savepoint asked for, and the checkpoint id it got once triggered.
    let mut savepoint: Option<(SavepointRequest, Option<u64>)> = None;
    while !stop.load(Ordering::SeqCst) && !control.is_cancelled() {
        if hub.finished_tasks() > 0 {
            const FINISHING: &str = "the job is finishing: some tasks have ended";
            coord.stop_triggering();
            if let Some((req, _)) = savepoint.take() {
                hub.set_savepoint_status(
                    &req.trigger_id,
                    SavepointStatus::Failed(FINISHING.into()),
                );
            }
            hub.fail_queued_savepoints(FINISHING);
        }
        if savepoint.is_none() {
            if let Some(req) = hub.take_savepoint_request() {
                coord.request_savepoint();
                savepoint = Some((req, None));
            }
        }
        // A savepoint its requester withdrew (a wait that timed out): abort it, so a stop that
        // the caller was told failed does not stop the job later.
        let mut actions = Vec::new();
        if let Some((req, sid)) = &savepoint {
            if let Some(SavepointStatus::Failed(why)) = hub.savepoint_status(&req.trigger_id) {
                match sid {
                    Some(id) => actions.extend(coord.withdraw(*id, why)),
                    None => {
                        coord.drop_savepoint_request();
                        savepoint = None;
                    }
                }
            }
        }
        actions.extend(coord.tick(now_ms()));
        for a in &actions {
            if let (
                Action::Trigger {
                    id,
                    kind: sluice_types::CheckpointKind::Savepoint,
                    ..
                },
                Some((req, slot @ None)),
            ) = (a, savepoint.as_mut())
            {
                *slot = Some(*id);
                if req.stop {
                    // Before the barrier goes out: sources emit nothing after it.
                    hub.set_stop_savepoint(*id);
                }
            }
        }
        // Without periodic checkpoints only savepoint requests (which wake this wait) and the
        // job's end matter: no need to tick often.
        let wait = if hub.config.interval.is_some() || !coord.pending().is_empty() {
            Duration::from_millis(5)
        } else {
            Duration::from_millis(200)
        };
        let (new_acks, declines) = hub.take_acks(wait);
        for a in new_acks {
            let id = a.checkpoint_id;
            if coord.kind(id).is_some() {
                let (vertex, subtask) = (a.vertex, a.subtask);
                let got = acks.entry(id).or_default();
                // A second acknowledgement of one subtask (a protocol bug) must not replace
                // or add to the first one's snapshots: the coordinator ignores it too.
                if !got
                    .iter()
                    .any(|g| g.vertex == vertex && g.subtask == subtask)
                {
                    got.push(a);
                }
                actions.extend(coord.ack(id, vertex, subtask));
            }
        }
        for (id, reason) in declines {
            actions.extend(coord.decline(id, reason));
        }
        let mut queue: std::collections::VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            match action {
                Action::Trigger {
                    id,
                    kind,
                    timestamp_ms: _,
                } => hub.trigger(Barrier {
                    checkpoint_id: id,
                    timestamp_ms: crate::executor::epoch_ms() as i64,
                    kind,
                }),
                Action::Complete { id } => {
                    let got = acks.remove(&id).unwrap_or_default();
                    let target = match &savepoint {
                        Some((req, Some(sid))) if *sid == id => Some(req.clone()),
                        _ => None,
                    };
                    if let Some(req) = &target {
                        if !hub.claim_savepoint(&req.trigger_id) {
                            let reason = format!("savepoint {id} was withdrawn by its requester");
                            queue.extend(coord.persist_failed(id, reason));
                            continue;
                        }
                    }
                    // Stored durably first; only then complete (tasks, transactional sinks).
                    let kind = coord
                        .persisting_kind(id)
                        .unwrap_or(sluice_types::CheckpointKind::Aligned);
                    let written = complete(
                        &hub,
                        id,
                        kind,
                        got,
                        &vertex_parallelism,
                        target.as_ref().map(|r| r.dir.as_path()),
                    );
                    match written {
                        Ok(path) => {
                            queue.extend(coord.persisted(id, now_ms()));
                            if let Some(req) = target {
                                tracing::info!(
                                    checkpoint = id,
                                    path = %path.display(),
                                    stop = req.stop,
                                    "savepoint completed"
                                );
                                savepoint = None;
                                hub.set_savepoint_status(
                                    &req.trigger_id,
                                    SavepointStatus::Completed(path.clone()),
                                );
                                if req.stop {
                                    // Recorded, so the job's end reads as stop-with-savepoint
                                    // (a later plain cancel does not).
                                    control.stop_with_savepoint(path);
                                }
                            } else {
                                tracing::info!(
                                    checkpoint = id,
                                    path = %path.display(),
                                    "checkpoint completed"
                                );
                            }
                        }
                        Err(e) => {
                            let reason = format!("checkpoint {id} could not be stored: {e}");
                            queue.extend(coord.persist_failed(id, reason));
                        }
                    }
                }
                Action::Abort {
                    id,
                    reason,
                    counted,
                } => {
                    acks.remove(&id);
                    let mut what = "checkpoint";
                    if let Some((req, Some(sid))) = &savepoint {
                        if *sid == id {
                            what = "savepoint";
                            hub.set_savepoint_status(
                                &req.trigger_id,
                                SavepointStatus::Failed(reason.clone()),
                            );
                            // The sources held after its barrier go on.
                            hub.set_stop_savepoint(0);
                            savepoint = None;
                        }
                    }
                    hub.log(if counted {
                        format!(
                            "{what} {id} failed ({} in a row, {} tolerated): {reason}",
                            coord.consecutive_failures(),
                            hub.config.tolerable_failures
                        )
                    } else {
                        format!("{what} {id} aborted: {reason}")
                    });
                    hub.fail(id, reason, crate::executor::epoch_ms() as i64);
                }
                Action::FailJob { reason } => {
                    tracing::error!(%reason, "failing the job: checkpoints");
                    control.fail(JobError::job(reason))
                }
            }
        }
    }
    // No request is left without an answer: a user's cancel or stop ends the job, so what
    // waits fails; otherwise (a failed attempt) the next attempt takes the request again.
    if control.is_user_cancelled() {
        const ENDED: &str = "the job was cancelled or stopped before this savepoint was taken";
        if let Some((req, _)) = savepoint.take() {
            hub.set_savepoint_status(&req.trigger_id, SavepointStatus::Failed(ENDED.into()));
        }
        hub.fail_queued_savepoints(ENDED);
    } else if let Some((req, _)) = savepoint.take() {
        hub.requeue_savepoint_request(req);
    }
}

/// Persists checkpoint `id` from its acknowledgements (into `savepoint_dir` for a savepoint)
/// and publishes it; returns where it was written.
fn complete(
    hub: &CheckpointHub,
    id: u64,
    kind: sluice_types::CheckpointKind,
    acks: Vec<TaskAck>,
    vertex_parallelism: &[usize],
    savepoint_dir: Option<&std::path::Path>,
) -> Result<std::path::PathBuf, sluice_types::OperatorError> {
    let mut operators: BTreeMap<String, OperatorState> = BTreeMap::new();
    let trigger_ms = acks
        .iter()
        .map(|a| a.ack_ms - a.start_delay_ms as i64)
        .min()
        .unwrap_or(0);
    for a in &acks {
        for (op, bytes) in &a.states {
            let e = operators.entry(op.clone()).or_default();
            e.parallelism = vertex_parallelism.get(a.vertex).copied().unwrap_or(0);
            e.subtasks.insert(a.subtask, bytes.clone());
        }
    }
    let cp = CompletedCheckpoint {
        id,
        kind,
        timestamp_ms: trigger_ms,
        operators,
    };
    let path = match savepoint_dir {
        // As Flink: a new `savepoint-<job>-<12 random hex>` directory inside the requested
        // one (here `<job>-<checkpoint id>-<random>`): two jobs started in the same second
        // and saving to one directory must not collide.
        Some(dir) => storage::write(
            &dir.join(format!(
                "savepoint-{:06x}-{id}-{:012x}",
                hub.created_ms() & 0xff_ffff,
                unique_suffix(id)
            )),
            &cp,
            true,
        )?,
        None => storage::write(&hub.dir, &cp, false)?,
    };
    hub.complete(id, kind, acks, cp.size(), Some(path.display().to_string()));
    if savepoint_dir.is_none() {
        // The new checkpoint is complete whatever happens to the old ones: a failure to remove
        // them is reported, not counted as a failed checkpoint.
        if let Err(e) = storage::prune(&hub.dir, hub.config.retained) {
            hub.log(format!(
                "checkpoint {id} completed, but older checkpoints were not removed: {e}"
            ));
        }
    }
    Ok(path)
}

/// 48 bits that differ between processes and calls: std's randomly keyed hasher over the
/// checkpoint id, the clock and a process-wide counter.
fn unique_suffix(id: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(id);
    h.write_u64(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() & 0xffff_ffff_ffff
}
