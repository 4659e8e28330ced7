//! Job graph → running subtasks: creates the input gates and channel senders of every network
//! edge (pointwise or all-to-all wiring), and for each subtask the closure that builds its chain on
//! its own thread and runs it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sluice_runtime::telemetry::{MetricsConfig, Sampler, VertexSnapshot};

use sluice_runtime::sources::SourceContext;
use sluice_runtime::{
    JobControl, JobError, JobResult, TaskContext, TaskMetrics, TaskSpec, VertexInfo,
};
use sluice_types::{Id128, JobId, NodeId, OperatorContext, OperatorError, ShipStrategy};

use crate::node_body::{NodeBody, NodeImpl};
use crate::partition::{pointwise_sources, pointwise_targets};
use crate::stream_graph::StreamNode;
use crate::typeops::{AnyBox, TypeOps, WriterArgs, WriterFactory};
use crate::{EnvConfig, GraphError, JobGraph};

/// Live view of a running job: its graph, every subtask's counters and their per-second metrics.
pub struct JobMonitor {
    pub job_id: JobId,
    pub graph: JobGraph,
    /// `subtasks[vertex][subtask]`.
    pub subtasks: Vec<Vec<Arc<TaskMetrics>>>,
    /// Records emitted so far by each source subtask.
    pub source_emitted: Vec<Arc<AtomicU64>>,
    pub control: Arc<JobControl>,
    pub started: Instant,
    /// Wall-clock start, ms since the Unix epoch.
    pub start_time_ms: u64,
    pub config: EnvConfig,
    sampler: Mutex<Sampler>,
    /// Wall-clock time of the latest metrics sample, ms since the Unix epoch; 0 = none yet.
    last_sample_ms: AtomicU64,
    outcome: Mutex<JobOutcome>,
}

/// Where a job is in its life (Flink's `JobStatus` subset).
#[derive(Clone, Debug, PartialEq)]
pub enum JobOutcome {
    Running,
    Finished { end_time_ms: u64 },
    Failed { end_time_ms: u64, message: String },
    Canceled { end_time_ms: u64 },
}

impl JobOutcome {
    /// Flink's job status name.
    pub fn status(&self) -> &'static str {
        match self {
            JobOutcome::Running => "RUNNING",
            JobOutcome::Finished { .. } => "FINISHED",
            JobOutcome::Failed { .. } => "FAILED",
            JobOutcome::Canceled { .. } => "CANCELED",
        }
    }
    pub fn end_time_ms(&self) -> Option<u64> {
        match self {
            JobOutcome::Running => None,
            JobOutcome::Finished { end_time_ms }
            | JobOutcome::Failed { end_time_ms, .. }
            | JobOutcome::Canceled { end_time_ms } => Some(*end_time_ms),
        }
    }
}

impl JobMonitor {
    /// The latest per-second metrics of every subtask, per vertex (updated every
    /// `config.metrics.update_interval`, and once more when the job ends).
    pub fn vertex_metrics(&self) -> Vec<VertexSnapshot> {
        self.sampler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .vertices()
    }

    /// Takes a metrics sample now (the sampler thread does this every update interval).
    pub fn sample_now(&self) {
        self.sampler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tick();
        self.last_sample_ms.store(
            sluice_runtime::executor::epoch_ms(),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// When the latest metrics sample was taken (ms since the Unix epoch), `None` before the
    /// first one.
    pub fn last_sample_ms(&self) -> Option<u64> {
        match self
            .last_sample_ms
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => None,
            t => Some(t),
        }
    }

    pub fn outcome(&self) -> JobOutcome {
        self.outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn metrics_config(&self) -> MetricsConfig {
        self.config.metrics
    }

    /// Asks for a savepoint (see [`JobHandle::savepoint`]) and waits up to 10 minutes.
    pub fn savepoint(
        &self,
        dir: std::path::PathBuf,
        stop: bool,
    ) -> Result<std::path::PathBuf, GraphError> {
        use sluice_runtime::checkpoint::SavepointStatus;
        let hub = self
            .control
            .checkpoints()
            .ok_or_else(|| GraphError::InvalidJob("this job cannot take savepoints".into()))?;
        let id = hub
            .request_savepoint(dir, stop)
            .map_err(|e| GraphError::InvalidJob(format!("savepoint refused: {e}")))?;
        match hub.wait_savepoint(&id, std::time::Duration::from_secs(600)) {
            SavepointStatus::Completed(p) => Ok(p),
            SavepointStatus::Failed(why) => {
                Err(GraphError::InvalidJob(format!("savepoint failed: {why}")))
            }
            SavepointStatus::InProgress => unreachable!("wait_savepoint returns a final status"),
        }
    }

    pub fn records_emitted_by_sources(&self) -> u64 {
        self.source_emitted
            .iter()
            .map(|a| a.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }
}

/// A launched job.
pub struct JobHandle {
    monitor: Arc<JobMonitor>,
    thread: Option<std::thread::JoinHandle<Result<JobResult, JobError>>>,
}

/// A finished job: the runtime's result plus the graph that ran.
#[derive(Clone, Debug)]
pub struct JobExecution {
    pub job_id: JobId,
    pub result: JobResult,
    pub graph: JobGraph,
}

impl JobHandle {
    pub fn monitor(&self) -> Arc<JobMonitor> {
        self.monitor.clone()
    }

    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Cancels the job; `wait` then returns an error saying so.
    pub fn cancel(&self) {
        self.monitor.control.cancel_by_user();
    }

    /// Takes a savepoint into `dir` (an aligned snapshot of every operator and source
    /// position) and waits for it; the job keeps running.
    pub fn savepoint(
        &self,
        dir: impl Into<std::path::PathBuf>,
    ) -> Result<std::path::PathBuf, GraphError> {
        self.monitor.savepoint(dir.into(), false)
    }

    /// Stop-with-savepoint: takes a savepoint into `dir`, then stops the job (it ends as
    /// cancelled; records after the savepoint are not published). Resume it with
    /// `StreamEnv::restore_from(dir)`, at any parallelism.
    pub fn stop_with_savepoint(
        self,
        dir: impl Into<std::path::PathBuf>,
    ) -> Result<std::path::PathBuf, GraphError> {
        let path = self.monitor.savepoint(dir.into(), true)?;
        let _ = self.wait();
        Ok(path)
    }

    /// Blocks until every subtask has ended.
    pub fn wait(mut self) -> Result<JobExecution, GraphError> {
        let t = self.thread.take().expect("wait is called once");
        let result = t.join().map_err(|_| {
            GraphError::Failed(JobError::job("the job coordinator thread panicked"))
        })??;
        Ok(JobExecution {
            job_id: self.monitor.job_id,
            result,
            graph: self.monitor.graph.clone(),
        })
    }
}

impl Drop for JobHandle {
    fn drop(&mut self) {
        // A dropped handle must not leave threads running behind the user's back.
        if let Some(t) = self.thread.take() {
            self.monitor.control.cancel_by_user();
            let _ = t.join();
        }
    }
}

struct NetworkOut {
    writer: Arc<dyn WriterFactory>,
    strategy: ShipStrategy,
    downstream_parallelism: usize,
    downstream_max_parallelism: u32,
    seed: u64,
    senders: Vec<AnyBox>,
}

struct ChainMember {
    id: NodeId,
    op_ctx: OperatorContext,
    body: NodeBody,
    out_type: Option<Arc<dyn TypeOps>>,
    chained: Vec<NodeId>,
    network: Vec<NetworkOut>,
}

fn seed_of(edge: usize, subtask: usize) -> u64 {
    (edge as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (subtask as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

// Subtask indices address gates, senders and metrics alike; index loops read clearest here.
#[allow(clippy::needless_range_loop)]
pub(crate) fn launch(
    graph: JobGraph,
    nodes: &[StreamNode],
    impls: &BTreeMap<NodeId, NodeImpl>,
    cfg: &EnvConfig,
) -> Result<JobHandle, GraphError> {
    let control = JobControl::new(cfg.buffer_timeout);
    let job_id = Id128::hash_of(
        format!(
            "{}:{:?}",
            graph.name,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
        )
        .as_bytes(),
    );

    for n in nodes {
        if let NodeBody::Sink(f) = &impls[&n.id].body {
            let p = graph.nodes[&n.id].parallelism;
            f.prepare(p).map_err(|e| {
                GraphError::InvalidJob(format!("cannot prepare sink '{}': {e}", n.name))
            })?;
        }
    }

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
        if matches!(impls[&v.head].body, NodeBody::Source(_)) {
            for i in 0..v.parallelism {
                let e = Arc::new(AtomicU64::new(0));
                source_emitted.push(e.clone());
                emitted.insert((v.index, i), e);
            }
        }
    }
    // A restore that would lose state is refused before anything starts.
    let initial_restore = match &cfg.restore_from {
        Some(given) => {
            // A job's checkpoint directory names its newest complete checkpoint.
            let p = &sluice_runtime::checkpoint::storage::resolve_restore_dir(given)
                .map_err(|e| GraphError::InvalidJob(e.to_string()))?;
            let cp = sluice_runtime::checkpoint::storage::read(p).map_err(|e| {
                GraphError::InvalidJob(format!("cannot restore from {}: {e}", p.display()))
            })?;
            let cp = assign_state(&cp, p, &job_operators(nodes), cfg, 0)
                .map_err(|e| GraphError::InvalidJob(e.message))?;
            Some(Arc::new(cp))
        }
        None => None,
    };
    let hub = checkpoint_hub(cfg, &job_id)?;
    if let Some(h) = &hub {
        control.set_checkpoints(h.clone());
    }
    let graph_owned = graph.clone();
    let nodes_owned: Vec<StreamNode> = nodes.to_vec();
    let impls_owned = impls.clone();
    let cfg_owned = cfg.clone();
    let metrics_owned = metrics.clone();
    let monitor = Arc::new(JobMonitor {
        job_id,
        graph: graph.clone(),
        sampler: Mutex::new(Sampler::new(cfg.metrics, &metrics)),
        subtasks: metrics,
        source_emitted,
        control: control.clone(),
        started: Instant::now(),
        start_time_ms: sluice_runtime::executor::epoch_ms(),
        config: cfg.clone(),
        last_sample_ms: AtomicU64::new(0),
        outcome: Mutex::new(JobOutcome::Running),
    });
    let name = graph.name.clone();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler_thread = {
        let (m, done) = (monitor.clone(), done.clone());
        let every = cfg.metrics.update_interval;
        std::thread::Builder::new()
            .name("metrics-sampler".into())
            .spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::park_timeout(every);
                    if !done.load(std::sync::atomic::Ordering::Relaxed) {
                        m.sample_now();
                    }
                }
            })
            .map_err(|e| {
                GraphError::Failed(JobError::job(format!(
                    "cannot start the metrics sampler: {e}"
                )))
            })?
    };
    let m = monitor.clone();
    let thread = std::thread::Builder::new()
        .name(format!("job {name}"))
        .spawn(move || {
            let r = run_attempts(AttemptPlan {
                name: &name,
                graph: &graph_owned,
                nodes: &nodes_owned,
                impls: &impls_owned,
                cfg: &cfg_owned,
                control: &control,
                metrics: &metrics_owned,
                emitted: &emitted,
                initial_restore,
            });
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            sampler_thread.thread().unpark();
            let _ = sampler_thread.join();
            // The final sample: every subtask's values as of its end.
            m.sample_now();
            let end_time_ms = sluice_runtime::executor::epoch_ms();
            *m.outcome.lock().unwrap_or_else(|p| p.into_inner()) = match &r {
                Ok(_) => JobOutcome::Finished { end_time_ms },
                Err(e) if e.task == "job" && e.message.contains("cancelled") => {
                    JobOutcome::Canceled { end_time_ms }
                }
                Err(e) => JobOutcome::Failed {
                    end_time_ms,
                    message: e.to_string(),
                },
            };
            r
        })
        .map_err(|e| {
            GraphError::Failed(JobError::job(format!("cannot start the job thread: {e}")))
        })?;
    Ok(JobHandle {
        monitor,
        thread: Some(thread),
    })
}

/// Builds one attempt of the job: fresh gates, channels and task bodies (operators are created
/// on their task threads when the bodies run, restoring state if the hub says so).
// Subtask indices address gates, senders and metrics alike; index loops read clearest here.
// The arguments are the attempt's inputs, each used once; a struct would only rename them.
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
fn build_attempt(
    graph: &JobGraph,
    by_id: &HashMap<NodeId, &StreamNode>,
    impls: &BTreeMap<NodeId, NodeImpl>,
    cfg: &EnvConfig,
    control: &Arc<JobControl>,
    metrics: &[Vec<Arc<TaskMetrics>>],
    emitted: &HashMap<(usize, usize), Arc<AtomicU64>>,
    fault: Option<&crate::config::FaultSpec>,
    op_ids: &BTreeMap<NodeId, crate::operator_id::OperatorId>,
) -> Vec<TaskSpec> {
    let exch = cfg.exchange();
    let mut out_pool: Vec<Vec<f64>> = graph
        .vertices
        .iter()
        .map(|v| vec![0.0; v.parallelism])
        .collect();
    // Gates, and the senders feeding them, per (edge, upstream subtask): (downstream subtask, sender).
    let mut gates: HashMap<(usize, usize), AnyBox> = HashMap::new();
    let mut senders: HashMap<(usize, usize), Vec<(usize, AnyBox)>> = HashMap::new();
    for v in &graph.vertices {
        let inputs: Vec<(usize, &crate::JobEdge)> = graph
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.to_vertex == v.index)
            .collect();
        if inputs.is_empty() {
            continue;
        }
        let in_type = impls[&v.head]
            .in_type
            .clone()
            .expect("a vertex with inputs has an input type");
        for j in 0..v.parallelism {
            let mut plan = Vec::new();
            for &(ei, e) in &inputs {
                let pu = graph.vertices[e.from_vertex].parallelism;
                let ups = if e.strategy.is_pointwise() {
                    pointwise_sources(pu, v.parallelism, j)
                } else {
                    0..pu
                };
                for i in ups {
                    plan.push((ei, i));
                }
            }
            let (gate, canceller, gate_senders) =
                in_type.make_gate(plan.len(), &exch, metrics[v.index][j].waits.clone());
            metrics[v.index][j].input_pool_size.store(
                (plan.len() * exch.exclusive_credits + exch.floating_credits) as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            // Each channel may hold its exclusive credits plus an even share of the floating ones.
            let per_channel = exch.exclusive_credits as f64
                + exch.floating_credits as f64 / plan.len().max(1) as f64;
            for &(ei, i) in &plan {
                let up = graph.edges[ei].from_vertex;
                out_pool[up][i] += per_channel;
            }
            control.register_gate(canceller);
            for ((ei, i), s) in plan.into_iter().zip(gate_senders) {
                senders.entry((ei, i)).or_default().push((j, s));
            }
            gates.insert((v.index, j), gate);
        }
    }

    for (v, pools) in out_pool.iter().enumerate() {
        for (i, p) in pools.iter().enumerate() {
            metrics[v][i]
                .output_pool_size
                .store(p.round() as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let mut tasks = Vec::new();
    for v in &graph.vertices {
        for i in 0..v.parallelism {
            let mut members = Vec::new();
            for &nid in &v.nodes {
                let n = by_id[&nid];
                let body = &impls[&nid];
                let r = &graph.nodes[&nid];
                let mut network = Vec::new();
                for (ei, e) in graph
                    .edges
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.from_node == nid)
                {
                    let mut ss = senders.remove(&(ei, i)).unwrap_or_default();
                    ss.sort_by_key(|(j, _)| *j);
                    let down = &graph.vertices[e.to_vertex];
                    debug_assert!(
                        !e.strategy.is_pointwise()
                            || ss.len()
                                == pointwise_targets(v.parallelism, down.parallelism, i).len()
                    );
                    network.push(NetworkOut {
                        writer: impls[&e.to_node].input_writers[e.input].clone(),
                        strategy: e.strategy,
                        downstream_parallelism: down.parallelism,
                        downstream_max_parallelism: graph.nodes[&e.to_node].max_parallelism,
                        seed: seed_of(ei, i),
                        senders: ss.into_iter().map(|(_, s)| s).collect(),
                    });
                }
                members.push(ChainMember {
                    id: nid,
                    op_ctx: OperatorContext {
                        operator_name: n.name.clone(),
                        task_name: v.name.clone(),
                        subtask_index: i,
                        parallelism: v.parallelism,
                        max_parallelism: r.max_parallelism,
                        operator_id: op_ids[&nid].to_string(),
                    },
                    body: body.body.clone(),
                    out_type: body.out_type.clone(),
                    chained: crate::job_graph::chain_successors(graph, nid),
                    network,
                });
            }
            let gate = gates.remove(&(v.index, i));
            let head_in = impls[&v.head].in_type.clone();
            let emitted = emitted
                .get(&(v.index, i))
                .cloned()
                .unwrap_or_else(|| Arc::new(AtomicU64::new(0)));
            let head = v.head;
            let exch_cfg = exch.clone();
            let operator_timing = cfg.operator_timing;
            let body = Box::new(move |ctx: &TaskContext| {
                run_subtask(
                    SubtaskPlan {
                        members,
                        head,
                        gate,
                        head_in,
                        emitted,
                        exch: exch_cfg,
                        operator_timing,
                    },
                    ctx,
                )
            });
            let mut spec = TaskSpec::new(
                v.index,
                v.name.clone(),
                i,
                v.parallelism,
                metrics[v.index][i].clone(),
                body,
            );
            spec.fail_after_records = fault
                .filter(|f| v.name.contains(&f.vertex) && f.subtask == i)
                .map(|f| f.after_records);
            tasks.push(spec);
        }
    }

    tasks
}

/// What the job thread needs to run (and re-run) the job.
struct AttemptPlan<'a> {
    name: &'a str,
    graph: &'a JobGraph,
    nodes: &'a [StreamNode],
    impls: &'a BTreeMap<NodeId, NodeImpl>,
    cfg: &'a EnvConfig,
    control: &'a Arc<JobControl>,
    metrics: &'a [Vec<Arc<TaskMetrics>>],
    emitted: &'a HashMap<(usize, usize), Arc<AtomicU64>>,
    /// The checkpoint the first attempt restores from, its state already mapped onto the job.
    initial_restore: Option<Arc<sluice_runtime::checkpoint::CompletedCheckpoint>>,
}

/// The checkpoint hub of a job that checkpoints or restores (`None` otherwise).
fn checkpoint_hub(
    cfg: &EnvConfig,
    job_id: &Id128,
) -> Result<Option<Arc<sluice_runtime::checkpoint::CheckpointHub>>, GraphError> {
    // Every job has a hub: savepoints work without periodic checkpoints, as in Flink. A job
    // that checkpoints is refused before it starts if its directory cannot be written.
    // As Flink: `<checkpoint dir>/<job id>/chk-<n>`.
    let dir = cfg
        .checkpoint_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("sluice-checkpoints"))
        .join(job_id.to_string());
    if cfg.checkpoints.interval.is_some() {
        sluice_runtime::checkpoint::storage::prepare_dir(&dir)
            .map_err(|e| GraphError::InvalidConfig(e.to_string()))?;
    }
    Ok(Some(sluice_runtime::checkpoint::CheckpointHub::new(
        cfg.checkpoints.clone(),
        dir,
    )))
}

/// The job's operators by stable id (see [`crate::operator_id`]), with their names.
fn job_operators(nodes: &[StreamNode]) -> BTreeMap<String, String> {
    let ids = crate::operator_id::operator_ids(nodes);
    nodes
        .iter()
        .map(|n| (ids[&n.id].to_string(), n.name.clone()))
        .collect()
}

/// Maps the checkpoint's state onto the job's operators (refusing unmapped state unless the
/// user allowed dropping it) and returns the checkpoint with only the state the job takes.
fn assign_state(
    cp: &sluice_runtime::checkpoint::CompletedCheckpoint,
    path: &std::path::Path,
    job_ops: &BTreeMap<String, String>,
    cfg: &EnvConfig,
    attempt: usize,
) -> Result<sluice_runtime::checkpoint::CompletedCheckpoint, JobError> {
    use sluice_runtime::checkpoint::mapping;
    let a = mapping::assign(cp, job_ops, cfg.allow_non_restored_state)
        .map_err(|e| JobError::job(format!("cannot restore from {}: {e}", path.display())))?;
    // Said once, for the restore the user asked for (restarts restore the job's own state).
    if attempt == 0 {
        for d in &a.dropped {
            eprintln!(
                "restore from {}: dropping the state of operator {d}, which this job does not have (--allow-non-restored-state)",
                path.display()
            );
        }
        if !a.started_empty.is_empty() && !a.restored.is_empty() {
            let names: Vec<String> = a
                .started_empty
                .iter()
                .map(|(id, name)| format!("{name} [{id}]"))
                .collect();
            eprintln!(
                "restore from {}: {} operator(s) have no state there and start empty: {}",
                path.display(),
                names.len(),
                names.join(", ")
            );
        }
    }
    Ok(mapping::without_dropped(cp, &a))
}

/// Runs the job; on a failure, restarts it from the latest completed checkpoint as long as
/// the restart strategy allows. A successful run publishes the sinks' final output.
fn run_attempts(plan: AttemptPlan<'_>) -> Result<sluice_runtime::JobResult, JobError> {
    use sluice_runtime::checkpoint::{driver::CoordinatorThread, storage};
    let AttemptPlan {
        name,
        graph,
        nodes,
        impls,
        cfg,
        control,
        metrics,
        emitted,
        initial_restore,
    } = plan;
    let by_id: HashMap<NodeId, &StreamNode> = nodes.iter().map(|n| (n.id, n)).collect();
    let op_ids = crate::operator_id::operator_ids(nodes);
    let job_ops = job_operators(nodes);
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
                // Read and mapped before the job started (see `launch`).
                (Some(_), 0) => initial_restore.clone(),
                (Some(p), _) => {
                    let cp = storage::read(p).map_err(|e| {
                        JobError::job(format!("cannot restore from {}: {e}", p.display()))
                    })?;
                    Some(Arc::new(assign_state(&cp, p, &job_ops, cfg, attempt)?))
                }
                (None, _) => None,
            };
            if let Some(cp) = &restore {
                let has_inputs = !graph.edges.is_empty();
                if cp.kind == sluice_types::CheckpointKind::Unaligned
                    && has_inputs
                    && !h.has_channel_state(cp.id)
                {
                    return Err(JobError::job(format!(
                        "checkpoint {} is unaligned: its in-flight records are kept in the memory \
                         of the process that took it; restore an aligned checkpoint or a savepoint",
                        cp.id
                    )));
                }
            }
            let path = from.map(|p| p.display().to_string()).unwrap_or_default();
            h.set_restore_point(restore, path, sluice_runtime::executor::epoch_ms() as i64);
        }
        let tasks = build_attempt(
            graph,
            &by_id,
            impls,
            cfg,
            control,
            metrics,
            emitted,
            cfg.faults.get(attempt),
            &op_ids,
        );
        let vertex_infos: Vec<VertexInfo> = graph
            .vertices
            .iter()
            .map(|v| VertexInfo::new(v.name.clone(), v.parallelism))
            .collect();
        let coordinator = match &hub {
            Some(h) => Some(
                CoordinatorThread::spawn(h.clone(), control.clone(), parallelism.clone()).map_err(
                    |e| JobError::job(format!("cannot start the checkpoint coordinator: {e}")),
                )?,
            ),
            _ => None,
        };
        let r = sluice_runtime::run_job(name, vertex_infos, tasks, control.clone());
        if let Some(c) = coordinator {
            c.stop();
        }
        match r {
            Ok(result) => {
                if let Some(h) = &hub {
                    h.run_final_commits()
                        .map_err(|e| JobError::job(format!("publishing the sinks' output: {e}")))?;
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

/// Everything one subtask needs to build its chain on its own thread.
struct SubtaskPlan {
    members: Vec<ChainMember>,
    head: NodeId,
    gate: Option<AnyBox>,
    head_in: Option<Arc<dyn TypeOps>>,
    emitted: Arc<AtomicU64>,
    exch: sluice_channel::ExchangeConfig,
    operator_timing: bool,
}

fn run_subtask(plan: SubtaskPlan, ctx: &TaskContext) -> Result<(), OperatorError> {
    let SubtaskPlan {
        members,
        head,
        gate,
        head_in,
        emitted,
        exch,
        operator_timing,
    } = plan;
    let mut built: BTreeMap<NodeId, AnyBox> = BTreeMap::new();
    let mut source_runner = None;
    let mut head_source_ctx = None;
    // Operator metrics in chain order (head first), with the chain's internal edges.
    let mut op_metrics: BTreeMap<NodeId, Arc<sluice_runtime::OperatorMetrics>> = BTreeMap::new();
    {
        let mut edges = Vec::new();
        let index: BTreeMap<NodeId, usize> =
            members.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
        for m in &members {
            let (_, om) = ctx.metrics.register_operator(&m.op_ctx.operator_name);
            if matches!(m.body, NodeBody::Source(_)) {
                om.whole_task
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            op_metrics.insert(m.id, om);
            for c in &m.chained {
                edges.push((index[&m.id], index[c]));
            }
        }
        *ctx.metrics
            .operator_edges
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = edges;
    }
    let timing = |id: &NodeId| operator_timing.then(|| op_metrics[id].clone());
    for m in members.into_iter().rev() {
        let mut outs: Vec<AnyBox> = Vec::new();
        for c in &m.chained {
            outs.push(
                built
                    .remove(c)
                    .expect("chained successor built before its predecessor"),
            );
        }
        for n in m.network {
            outs.push(n.writer.make_writer(
                n.senders,
                WriterArgs {
                    strategy: n.strategy,
                    downstream_parallelism: n.downstream_parallelism,
                    downstream_max_parallelism: n.downstream_max_parallelism,
                    seed: n.seed,
                    cfg: exch.clone(),
                    control: ctx.control.clone(),
                    metrics: ctx.metrics.clone(),
                },
            ));
        }
        match &m.body {
            NodeBody::Sink(f) => {
                built.insert(m.id, f.create(&m.op_ctx, timing(&m.id))?);
            }
            NodeBody::Operator(f) => {
                let out = m
                    .out_type
                    .as_ref()
                    .expect("operators have an output type")
                    .fanout(outs);
                built.insert(m.id, f.bind(out, &m.op_ctx, timing(&m.id))?);
            }
            NodeBody::Source(f) => {
                let out = m
                    .out_type
                    .as_ref()
                    .expect("sources have an output type")
                    .fanout(outs);
                source_runner = Some(f.runner(&m.op_ctx, out)?);
                head_source_ctx = Some(m.op_ctx.clone());
            }
        }
    }
    if let Some(run) = source_runner {
        let sctx = SourceContext {
            op: head_source_ctx.expect("set with the runner"),
            control: ctx.control.clone(),
            metrics: ctx.metrics.clone(),
            emitted,
            checkpoints: sluice_runtime::checkpoint::task::hub(),
            last_barrier: std::cell::Cell::new(0),
        };
        return run(&sctx);
    }
    let head_collector = built.remove(&head).expect("the chain head was built");
    let gate = gate.expect("a non-source chain head has an input gate");
    head_in
        .expect("a non-source chain head has an input type")
        .run_input(gate, head_collector, ctx)
}
