//! The job thread: deploy, restart, restore, final commits, outcome.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sluice_plan::{JobGraph, NodeKind};
use sluice_types::{Id128, JobId};

use super::restore::assign_state;
use super::{Attempt, AttemptBuilder, EnvConfig, JobHandle, JobMonitor, JobOutcome};
use crate::checkpoint::{CheckpointHub, CompletedCheckpoint};
use crate::telemetry::cluster::{ClusterLayout, ClusterView};
use crate::telemetry::Sampler;
use crate::{JobControl, JobError, JobResult, TaskMetrics, VertexInfo};

/// Owns one job's life: its attempts, their restore points and restarts (see the module docs).
pub struct JobMaster {
    job_id: JobId,
    graph: JobGraph,
    cfg: EnvConfig,
    /// The job's operators, stable id → name: what a restore maps checkpoint state onto.
    operators: BTreeMap<String, String>,
    /// The checkpoint the first attempt restores from, its state already mapped onto the job.
    initial_restore: Option<Arc<CompletedCheckpoint>>,
    builder: Box<dyn AttemptBuilder>,
    /// The other processes of a split job: this process's hub role and the link to theirs.
    link: Option<(
        crate::checkpoint::HubRole,
        Arc<dyn crate::checkpoint::ProcessLink>,
    )>,
    /// Where a split job's subtasks run, and (in process 0) what the others report.
    cluster: Option<Arc<ClusterView>>,
}

/// What the job thread runs with, once launched.
struct Running {
    master: JobMaster,
    control: Arc<JobControl>,
    metrics: Vec<Vec<Arc<TaskMetrics>>>,
    emitted: HashMap<(usize, usize), Arc<AtomicU64>>,
}

impl JobMaster {
    /// The master of a job: `operators` (stable id → name) are the operators whose state a
    /// restore maps. A restore that would lose state (checkpoint state no operator takes, unless
    /// `allow_non_restored_state`) is refused here, before anything starts.
    pub fn new(
        graph: JobGraph,
        cfg: EnvConfig,
        operators: BTreeMap<String, String>,
        builder: Box<dyn AttemptBuilder>,
    ) -> Result<JobMaster, JobError> {
        let initial_restore = match &cfg.restore_from {
            Some(given) => {
                // A job's checkpoint directory names its newest complete checkpoint.
                let p = &crate::checkpoint::storage::resolve_restore_dir(given)
                    .map_err(|e| JobError::job(e.to_string()))?;
                let cp = crate::checkpoint::storage::read(p).map_err(|e| {
                    JobError::job(format!("cannot restore from {}: {e}", p.display()))
                })?;
                Some(Arc::new(assign_state(&cp, p, &operators, &cfg, 0)?))
            }
            None => None,
        };
        let job_id = cfg.job_id.unwrap_or_else(|| {
            Id128::hash_of(
                format!(
                    "{}:{:?}",
                    graph.name,
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                )
                .as_bytes(),
            )
        });
        Ok(JobMaster {
            job_id,
            graph,
            cfg,
            operators,
            initial_restore,
            builder,
            link: None,
            cluster: None,
        })
    }

    /// Runs this job as one process of a job split over processes (see
    /// [`crate::checkpoint::link`]): the leader (process 0) coordinates the checkpoints of every
    /// process; a follower's tasks are triggered and completed through `link`. `layout` says
    /// where every subtask runs: each follower reports its subtasks' metrics to the leader
    /// after every update, and the leader's monitor shows them (see
    /// [`crate::telemetry::cluster`]).
    pub fn set_process_link(
        &mut self,
        role: crate::checkpoint::HubRole,
        link: Arc<dyn crate::checkpoint::ProcessLink>,
        layout: ClusterLayout,
    ) {
        self.link = Some((role, link));
        self.cluster = Some(ClusterView::new(layout));
    }

    /// Where the job's checkpoints go: `<checkpoint dir>/<job id>/chk-<n>`, as in Flink.
    fn checkpoint_dir(&self) -> std::path::PathBuf {
        self.cfg
            .checkpoint_dir
            .clone()
            .unwrap_or_else(|| crate::private_dir::default_dir("checkpoints"))
            .join(self.job_id.to_string())
    }

    /// Makes sure a job that checkpoints can write its checkpoint directory (call before
    /// [`launch`](Self::launch), to refuse the job before it starts); the message says why not.
    pub fn prepare_checkpoint_dir(&self) -> Result<(), String> {
        if self.cfg.checkpoints.interval.is_some() {
            let dir = self.checkpoint_dir();
            // The default root must be private before anything is created under it.
            crate::private_dir::check_default(&dir)?;
            crate::checkpoint::storage::prepare_dir(&dir).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Starts the job on a job thread and returns at once.
    pub fn launch(self) -> Result<JobHandle, JobError> {
        let JobMaster {
            job_id, graph, cfg, ..
        } = &self;
        let job_id = *job_id;
        let control = JobControl::new(cfg.buffer_timeout);
        control.set_task_scheduling(cfg.task_scheduling);
        let metrics: Vec<Vec<Arc<TaskMetrics>>> = graph
            .vertices
            .iter()
            .map(|v| {
                (0..v.parallelism)
                    .map(|_| Arc::new(TaskMetrics::default()))
                    .collect()
            })
            .collect();

        // Records emitted per source subtask, kept across restarts (progress displays).
        let mut emitted: HashMap<(usize, usize), Arc<AtomicU64>> = HashMap::new();
        let mut source_emitted = Vec::new();
        for v in &graph.vertices {
            if graph.nodes[&v.head].kind == NodeKind::Source {
                for i in 0..v.parallelism {
                    let e = Arc::new(AtomicU64::new(0));
                    source_emitted.push(e.clone());
                    emitted.insert((v.index, i), e);
                }
            }
        }
        // Every job has a hub: savepoints work without periodic checkpoints, as in Flink.
        let hub = CheckpointHub::new(cfg.checkpoints.clone(), self.checkpoint_dir());
        control.set_checkpoints(hub.clone());
        if let Some((role, link)) = &self.link {
            hub.set_link(*role, link.clone());
            if let (crate::checkpoint::HubRole::Leader, Some(view)) = (role, &self.cluster) {
                let (view, metrics) = (view.clone(), metrics.clone());
                hub.on_reports(Box::new(move |r| view.receive(r, &metrics)));
            }
            link.attach(hub, control.clone());
        }
        let monitor = Arc::new(JobMonitor {
            job_id,
            graph: graph.clone(),
            sampler: Mutex::new(Sampler::new(cfg.metrics, &metrics)),
            subtasks: metrics.clone(),
            source_emitted,
            control: control.clone(),
            started: Instant::now(),
            start_time_ms: crate::executor::epoch_ms(),
            config: cfg.clone(),
            profiler: Arc::default(),
            last_sample_ms: AtomicU64::new(0),
            outcome: Mutex::new(JobOutcome::Running),
            cluster: self.cluster.clone(),
            inspector: std::sync::OnceLock::new(),
        });
        // A split job: process 0 asks the others for their flame graphs and thread dumps,
        // which they answer from their own threads.
        if let (Some((role, _)), Some(view), Some(hub)) =
            (&self.link, &self.cluster, control.checkpoints())
        {
            match role {
                crate::checkpoint::HubRole::Leader => {
                    let inspector =
                        super::inspect::RemoteInspector::install(hub.clone(), view.clone());
                    monitor.profiler.set_remote(inspector.clone());
                    let _ = monitor.inspector.set(inspector);
                }
                crate::checkpoint::HubRole::Follower => {
                    super::inspect::answer_requests(hub, Arc::downgrade(&monitor))
                }
            }
        }
        let name = graph.name.clone();
        tracing::info!(
            job = %name,
            id = %job_id,
            vertices = graph.vertices.len(),
            subtasks = graph.vertices.iter().map(|v| v.parallelism).sum::<usize>(),
            "job started"
        );
        let done = Arc::new(AtomicBool::new(false));
        let sampler_thread = {
            let (m, done) = (monitor.clone(), done.clone());
            let every = cfg.metrics.update_interval;
            std::thread::Builder::new()
                .name("metrics-sampler".into())
                .spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        std::thread::park_timeout(every);
                        if !done.load(Ordering::Relaxed) {
                            m.sample_now();
                            m.report_to_leader();
                        }
                    }
                })
                .map_err(|e| JobError::job(format!("cannot start the metrics sampler: {e}")))?
        };
        let running = Running {
            master: self,
            control,
            metrics,
            emitted,
        };
        let m = monitor.clone();
        let thread = std::thread::Builder::new()
            .name(format!("job {name}"))
            .spawn(move || {
                let r = running.run_attempts();
                done.store(true, Ordering::Relaxed);
                sampler_thread.thread().unpark();
                let _ = sampler_thread.join();
                // The final sample: every subtask's values as of its end.
                m.sample_now();
                m.report_to_leader();
                let end_time_ms = crate::executor::epoch_ms();
                m.set_outcome(match &r {
                    Ok(_) => JobOutcome::Finished { end_time_ms },
                    Err(e) if e.task == "job" && e.message.contains("cancelled") => {
                        JobOutcome::Canceled { end_time_ms }
                    }
                    Err(e) => JobOutcome::Failed {
                        end_time_ms,
                        message: e.to_string(),
                    },
                });
                let status = m.outcome().status();
                let secs = m.started.elapsed().as_secs_f64();
                match &r {
                    Err(e) if status == "FAILED" => {
                        tracing::error!(job = %name, status, secs, error = %e, "job ended")
                    }
                    _ => tracing::info!(job = %name, status, secs, "job ended"),
                }
                r
            })
            .map_err(|e| JobError::job(format!("cannot start the job thread: {e}")))?;
        Ok(JobHandle {
            monitor,
            thread: Some(thread),
        })
    }
}

impl Running {
    /// Runs the job; on a failure, restarts it from the latest completed checkpoint as long as
    /// the restart strategy allows. A successful run publishes the sinks' final output.
    fn run_attempts(self) -> Result<JobResult, JobError> {
        use crate::checkpoint::{driver::CoordinatorThread, storage};
        let Running {
            master:
                JobMaster {
                    job_id: _,
                    graph,
                    cfg,
                    operators,
                    initial_restore,
                    builder,
                    link: _,
                    cluster: _,
                },
            control,
            metrics,
            emitted,
        } = self;
        let graph = &graph;
        let cfg = &cfg;
        let control = &control;
        let name = graph.name.as_str();
        let hub = control.checkpoints().cloned();
        let strategy = cfg.restart_strategy();
        let started = Instant::now();
        let mut failures_ms: Vec<i64> = Vec::new();
        let parallelism: Vec<usize> = graph.vertices.iter().map(|v| v.parallelism).collect();
        let mut attempt = 0usize;
        loop {
            if let Some(h) = &hub {
                // Where this attempt starts from: the latest completed checkpoint after a failure,
                // else the configured savepoint/checkpoint.
                let from = storage::restore_source(&h.dir, attempt, cfg.restore_from.as_deref())
                    .map_err(|e| JobError::job(e.to_string()))?;
                let restore = match (&from, attempt) {
                    // Read and mapped before the job started (see `JobMaster::new`).
                    (Some(_), 0) => initial_restore.clone(),
                    (Some(p), _) => {
                        let cp = storage::read(p).map_err(|e| {
                            JobError::job(format!("cannot restore from {}: {e}", p.display()))
                        })?;
                        Some(Arc::new(assign_state(&cp, p, &operators, cfg, attempt)?))
                    }
                    (None, _) => None,
                };
                if let Some(cp) = &restore {
                    let has_inputs = !graph.edges.is_empty();
                    // In-flight records written into the checkpoint restore anywhere; those
                    // kept in memory only in the process that took them.
                    let written = cp
                        .operators
                        .keys()
                        .any(|id| crate::checkpoint::task::is_channel_state_id(id).is_some());
                    if cp.kind == sluice_types::CheckpointKind::Unaligned
                        && has_inputs
                        && !h.has_channel_state(cp.id)
                        && !written
                    {
                        return Err(JobError::job(format!(
                            "checkpoint {} is unaligned: its in-flight records are kept in the memory \
                             of the process that took it; restore an aligned checkpoint or a savepoint",
                            cp.id
                        )));
                    }
                }
                let path = from.map(|p| p.display().to_string()).unwrap_or_default();
                h.set_restore_point(restore, path, crate::executor::epoch_ms() as i64);
            }
            let mut tasks = builder
                .build(&Attempt {
                    number: attempt,
                    graph,
                    config: cfg,
                    control,
                    metrics: &metrics,
                    emitted: &emitted,
                })
                .map_err(JobError::job)?;
            if let Some(f) = cfg.faults.get(attempt) {
                for t in &mut tasks {
                    if t.vertex_name.contains(&f.vertex) && t.subtask == f.subtask {
                        t.fail_after_records = Some(f.after_records);
                    }
                }
            }
            let vertex_infos: Vec<VertexInfo> = graph
                .vertices
                .iter()
                .map(|v| VertexInfo::new(v.name.clone(), v.parallelism))
                .collect();
            if let Some(h) = &hub {
                // Counted before any task runs: the final checkpoint waits for all of them.
                let sources: usize = graph
                    .vertices
                    .iter()
                    .filter(|v| graph.nodes[&v.head].kind == NodeKind::Source)
                    .map(|v| v.parallelism)
                    .sum();
                h.set_sources(sources as u64);
            }
            let coordinator = match &hub {
                // A follower's checkpoints are coordinated by the leader's thread.
                Some(h) if h.is_follower() => None,
                Some(h) => Some(
                    CoordinatorThread::spawn(h.clone(), control.clone(), parallelism.clone())
                        .map_err(|e| {
                            JobError::job(format!("cannot start the checkpoint coordinator: {e}"))
                        })?,
                ),
                _ => None,
            };
            let r = crate::run_job(name, vertex_infos, tasks, control.clone());
            if let Some(c) = coordinator {
                c.stop();
            }
            match r {
                Ok(result) => {
                    if let Some(h) = &hub {
                        h.run_final_commits().map_err(|e| {
                            JobError::job(format!("publishing the sinks' output: {e}"))
                        })?;
                        // Checkpoints in the default temporary place are discarded with a finished
                        // job (Flink's NO_EXTERNALIZED_CHECKPOINTS); a configured directory keeps
                        // them.
                        if cfg.checkpoint_dir.is_none() {
                            let _ = std::fs::remove_dir_all(&h.dir);
                        }
                    }
                    return Ok(result);
                }
                Err(e) if control.is_user_cancelled() => return Err(e),
                Err(e) => {
                    failures_ms.push(started.elapsed().as_millis() as i64);
                    let Some(delay) = strategy.decide(&failures_ms) else {
                        return Err(e);
                    };
                    tracing::warn!(
                        job = %graph.name,
                        attempt = attempt + 2,
                        delay_ms = delay.as_millis() as u64,
                        cause = %e,
                        "restarting the job (from its latest completed checkpoint, if any)"
                    );
                    std::thread::sleep(delay);
                    if control.is_user_cancelled() {
                        return Err(e);
                    }
                    attempt += 1;
                    control.reset_for_restart();
                    if let Some(h) = &hub {
                        h.reset_for_attempt();
                    }
                    for m in metrics.iter().flatten() {
                        m.reset_for_attempt();
                    }
                }
            }
        }
    }
}
