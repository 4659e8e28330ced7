//! Spawns one thread per subtask, watches for failures, joins everything.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_types::OperatorError;

use crate::metrics::TaskState;
use crate::{JobControl, TaskMetrics, TaskServices};

/// Wall-clock milliseconds since the Unix epoch (REST timestamps).
pub use sluice_metrics::clock::epoch_ms;

/// A job failed: which subtask, and why.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{task} failed: {message}")]
pub struct JobError {
    /// Vertex name, e.g. `Map -> Filter`.
    pub vertex: String,
    /// Subtask index, from 0 (0 for a failure of the whole job).
    pub subtask: usize,
    /// Display name with index, e.g. `Map -> Filter (2/4)`.
    pub task: String,
    /// What went wrong, as the operator or runtime reported it.
    pub message: String,
}

impl JobError {
    /// A failure that is not tied to one subtask (e.g. a thread could not be spawned).
    pub fn job(message: impl Into<String>) -> JobError {
        JobError {
            vertex: String::new(),
            subtask: 0,
            task: "job".into(),
            message: message.into(),
        }
    }
}

/// What a running task can see of its environment.
pub struct TaskContext {
    /// The job's shared cancel/fail switch.
    pub control: Arc<JobControl>,
    /// This subtask's live counters.
    pub metrics: Arc<TaskMetrics>,
    /// The vertex's name, e.g. `Map -> Filter`.
    pub vertex_name: String,
    /// Subtask index, from 0.
    pub subtask: usize,
    /// Subtasks of the vertex in all.
    pub parallelism: usize,
    /// Fault injection: fail the task after it received this many records.
    pub fail_after_records: Option<u64>,
    /// What the task offers its operators (metrics, checkpoint reporting); the chain passes its
    /// handle in every operator's context.
    pub services: Arc<TaskServices>,
    /// The overdraft its output gates owe (this attempt's): the input loop waits for it to be
    /// paid back before each record.
    pub output_debt: Arc<sluice_channel::OutputDebt>,
}

/// Tells the checkpoint hub that the task ended, however it ended (dropped last on the task
/// thread).
struct TaskEnded(Arc<TaskServices>);

impl Drop for TaskEnded {
    fn drop(&mut self) {
        self.0.task_finished();
    }
}

impl TaskContext {
    /// `Map -> Filter (2/4)`.
    pub fn display_name(&self) -> String {
        format!(
            "{} ({}/{})",
            self.vertex_name,
            self.subtask + 1,
            self.parallelism
        )
    }
}

type TaskBody = Box<dyn FnOnce(&TaskContext) -> Result<(), OperatorError> + Send>;

/// One subtask to run: its identity, its counters and the closure that is its whole life
/// (build the chain, run the source or the input loop, finish).
pub struct TaskSpec {
    /// The vertex's position in the job graph; results are grouped by it.
    pub vertex_index: usize,
    /// The vertex's name, e.g. `Map -> Filter`.
    pub vertex_name: String,
    /// Subtask index, from 0.
    pub subtask: usize,
    /// Subtasks of the vertex in all.
    pub parallelism: usize,
    /// This subtask's counters, shared with the monitor and the profiler.
    pub metrics: Arc<TaskMetrics>,
    /// What the task thread runs, start to end.
    pub body: TaskBody,
    /// Fault injection: fail the task after it received this many records.
    pub fail_after_records: Option<u64>,
}

impl TaskSpec {
    /// A subtask with no fault injection.
    pub fn new(
        vertex_index: usize,
        vertex_name: impl Into<String>,
        subtask: usize,
        parallelism: usize,
        metrics: Arc<TaskMetrics>,
        body: TaskBody,
    ) -> TaskSpec {
        TaskSpec {
            vertex_index,
            vertex_name: vertex_name.into(),
            subtask,
            parallelism,
            metrics,
            body,
            fail_after_records: None,
        }
    }
}

/// A vertex as the result reports it.
#[derive(Clone, Debug)]
pub struct VertexInfo {
    /// The vertex's name, e.g. `Map -> Filter`.
    pub name: String,
    /// Its number of subtasks.
    pub parallelism: usize,
}

impl VertexInfo {
    /// A vertex named `name` with `parallelism` subtasks.
    pub fn new(name: impl Into<String>, parallelism: usize) -> VertexInfo {
        VertexInfo {
            name: name.into(),
            parallelism,
        }
    }
}

/// Per-vertex totals of a finished job.
#[derive(Clone, Debug, Default)]
pub struct VertexResult {
    /// The vertex's name, e.g. `Map -> Filter`.
    pub name: String,
    /// Its number of subtasks.
    pub parallelism: usize,
    /// Records received by all its subtasks.
    pub records_in: u64,
    /// Records emitted by all its subtasks.
    pub records_out: u64,
    /// Records received, per subtask (by index): shows skew.
    pub subtask_records_in: Vec<u64>,
    /// Records emitted, per subtask (by index).
    pub subtask_records_out: Vec<u64>,
    /// Time its subtasks spent waiting for input, summed over subtasks.
    pub idle: Duration,
    /// Time its subtasks spent blocked on full output buffers, summed over subtasks.
    pub backpressured: Duration,
    /// The hottest keys of a keyed vertex (Space-Saving sketch per subtask), hottest first.
    pub hot_keys: Vec<crate::hotkeys::VertexHotKey>,
}

/// The outcome of a job that finished.
#[derive(Clone, Debug)]
pub struct JobResult {
    /// The name the job was submitted with.
    pub job_name: String,
    /// From the start of the run to the end of the last subtask.
    pub wall_time: Duration,
    /// Totals per vertex, in job-graph order.
    pub vertices: Vec<VertexResult>,
    /// Dead letters counted in all.
    pub dead_letters: u64,
    /// The dead letters kept verbatim (see [`crate::control::DEAD_LETTERS_KEPT`]).
    pub dead_letter_samples: Vec<crate::DeadLetter>,
}

impl JobResult {
    /// The totals of the vertex named `name`, if the job had one.
    pub fn vertex(&self, name: &str) -> Option<&VertexResult> {
        self.vertices.iter().find(|v| v.name == name)
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// Runs every task to completion. On the first failure the job is cancelled, every thread is woken
/// and joined, and that failure is returned. No thread outlives this call.
pub fn run_job(
    job_name: &str,
    vertices: Vec<VertexInfo>,
    tasks: Vec<TaskSpec>,
    control: Arc<JobControl>,
) -> Result<JobResult, JobError> {
    let started = Instant::now();
    let mut per_vertex: Vec<Vec<(usize, Arc<TaskMetrics>)>> = vec![Vec::new(); vertices.len()];
    let done = Arc::new(AtomicBool::new(false));

    let flusher = if control.buffer_timeout() > Duration::ZERO {
        let c = control.clone();
        let d = done.clone();
        let every = control.buffer_timeout();
        Some(
            std::thread::Builder::new()
                .name("output-flusher".into())
                .spawn(move || {
                    while !d.load(Ordering::Relaxed) {
                        std::thread::park_timeout(every);
                        c.tick_flush();
                    }
                })
                .map_err(|e| JobError::job(format!("cannot start the output flusher: {e}")))?,
        )
    } else {
        None
    };

    let mut handles = Vec::with_capacity(tasks.len());
    for t in tasks {
        per_vertex[t.vertex_index].push((t.subtask, t.metrics.clone()));
        let ctx = TaskContext {
            control: control.clone(),
            metrics: t.metrics.clone(),
            vertex_name: t.vertex_name.clone(),
            subtask: t.subtask,
            parallelism: t.parallelism,
            fail_after_records: t.fail_after_records,
            services: TaskServices::new(
                t.metrics.clone(),
                control.checkpoints().cloned(),
                t.vertex_index,
                t.subtask,
                Some(control.clone()),
            ),
            output_debt: sluice_channel::OutputDebt::new(),
        };
        let name = ctx.display_name();
        let pthread_slot = t.metrics.clone();
        let pthread_slot = &pthread_slot.pthread_id;
        let body = t.body;
        let spawned = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                ctx.control.apply_task_scheduling();
                let m = ctx.metrics.clone();
                let _ended = TaskEnded(ctx.services.clone());
                m.threads_started.fetch_add(1, Ordering::Relaxed);
                m.thread_id.store(
                    crate::telemetry::current_thread_id().unwrap_or(0),
                    Ordering::Relaxed,
                );
                m.started_ms.store(epoch_ms(), Ordering::Relaxed);
                m.started_mono_ns
                    .store(sluice_channel::mono_ns(), Ordering::Relaxed);
                m.set_state(TaskState::Running);
                let outcome = catch_unwind(AssertUnwindSafe(|| body(&ctx)));
                let cpu = crate::telemetry::current_thread_id()
                    .and_then(crate::telemetry::thread_cpu_ns)
                    .unwrap_or(0);
                m.ended_cpu_ns.store(cpu, Ordering::Relaxed);
                m.ended_mono_ns
                    .store(sluice_channel::mono_ns(), Ordering::Relaxed);
                m.ended_ms.store(epoch_ms(), Ordering::Relaxed);
                let message = match outcome {
                    Ok(Ok(())) => {
                        m.set_state(TaskState::Finished);
                        return;
                    }
                    Ok(Err(e)) if e.is_cancelled() => {
                        m.set_state(TaskState::Canceled);
                        return;
                    }
                    Ok(Err(e)) => e.to_string(),
                    Err(p) => format!("panicked: {}", panic_message(&*p)),
                };
                m.set_state(TaskState::Failed);
                tracing::error!(task = %ctx.display_name(), error = %message, "task failed");
                ctx.control.fail(JobError {
                    vertex: ctx.vertex_name.clone(),
                    subtask: ctx.subtask,
                    task: ctx.display_name(),
                    message,
                });
            });
        match spawned {
            Ok(h) => {
                use std::os::unix::thread::JoinHandleExt;
                pthread_slot.store(h.as_pthread_t(), Ordering::Relaxed);
                handles.push(h)
            }
            Err(e) => {
                control.fail(JobError::job(format!("cannot start thread {name}: {e}")));
                break;
            }
        }
    }
    for h in handles {
        // Task bodies catch their own panics, so join only fails if catch_unwind itself did.
        let _ = h.join();
    }
    done.store(true, Ordering::Relaxed);
    if let Some(f) = flusher {
        f.thread().unpark();
        let _ = f.join();
    }
    if let Some(err) = control.take_failure() {
        return Err(err);
    }
    if control.is_cancelled() {
        return Err(JobError::job("job was cancelled"));
    }

    let vertices = vertices
        .into_iter()
        .zip(per_vertex)
        .map(|(info, mut subtasks)| {
            subtasks.sort_by_key(|(i, _)| *i);
            let ins: Vec<u64> = subtasks.iter().map(|(_, m)| m.records_in()).collect();
            let outs: Vec<u64> = subtasks.iter().map(|(_, m)| m.records_out()).collect();
            VertexResult {
                name: info.name,
                parallelism: info.parallelism,
                records_in: ins.iter().sum(),
                records_out: outs.iter().sum(),
                subtask_records_in: ins,
                subtask_records_out: outs,
                idle: Duration::from_nanos(subtasks.iter().map(|(_, m)| m.idle_ns()).sum()),
                backpressured: Duration::from_nanos(
                    subtasks.iter().map(|(_, m)| m.backpressured_ns()).sum(),
                ),
                hot_keys: crate::hotkeys::vertex_hot_keys(subtasks.iter().map(|(_, m)| m)),
            }
        })
        .collect();
    Ok(JobResult {
        job_name: job_name.to_string(),
        wall_time: started.elapsed(),
        vertices,
        dead_letters: control.dead_letter_count(),
        dead_letter_samples: control.dead_letters(),
    })
}
