//! The live view of a running job that the REST API, the CLI and tests read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sluice_plan::JobGraph;
use sluice_types::JobId;

use super::EnvConfig;
use crate::telemetry::cluster::ClusterView;
use crate::telemetry::{MetricsConfig, Sampler, VertexSnapshot};
use crate::{JobControl, JobError, TaskMetrics};

/// Live view of a running job: its graph, every subtask's counters and their per-second metrics.
pub struct JobMonitor {
    /// The job's id (the REST API's `jid`).
    pub job_id: JobId,
    /// The job graph that runs.
    pub graph: JobGraph,
    /// `subtasks[vertex][subtask]`.
    pub subtasks: Vec<Vec<Arc<TaskMetrics>>>,
    /// Records emitted so far by each source subtask.
    pub source_emitted: Vec<Arc<AtomicU64>>,
    /// The job's cancel/fail switch.
    pub control: Arc<JobControl>,
    /// When the job started, for durations.
    pub started: Instant,
    /// Wall-clock start, ms since the Unix epoch.
    pub start_time_ms: u64,
    /// The job's settings, as validated.
    pub config: EnvConfig,
    /// The job's flame graphs (sampled on request; see [`crate::profiler`]).
    pub profiler: Arc<crate::profiler::JobProfiler>,
    pub(super) sampler: Mutex<Sampler>,
    /// Wall-clock time of the latest metrics sample, ms since the Unix epoch; 0 = none yet.
    pub(super) last_sample_ms: AtomicU64,
    pub(super) outcome: Mutex<JobOutcome>,
    /// A job split over processes: where each subtask runs and, in process 0, the other
    /// processes' latest reports (`None`: the job runs in this process alone).
    pub(super) cluster: Option<Arc<ClusterView>>,
    /// In process 0 of a split job: asks the other processes for what only they can see.
    pub(super) inspector: std::sync::OnceLock<Arc<super::inspect::RemoteInspector>>,
}

/// Where a job is in its life (Flink's `JobStatus` subset).
#[derive(Clone, Debug, PartialEq)]
pub enum JobOutcome {
    /// Not ended yet (also while restarting).
    Running,
    /// Every subtask ended normally.
    Finished {
        /// When, ms since the Unix epoch.
        end_time_ms: u64,
    },
    /// Failed with no restart left.
    Failed {
        /// When, ms since the Unix epoch.
        end_time_ms: u64,
        /// The failure that ended it.
        message: String,
    },
    /// Cancelled by the user or stopped with a savepoint.
    Canceled {
        /// When, ms since the Unix epoch.
        end_time_ms: u64,
    },
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
    /// When the job ended, ms since the Unix epoch; `None` while it runs.
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
    /// The subtask threads of vertex `vertex` (empty for an unknown index), for the profiler.
    pub fn profiled_threads(&self, vertex: usize) -> Vec<crate::profiler::ProfiledThread> {
        let (Some(v), Some(subtasks)) =
            (self.graph.vertices.get(vertex), self.subtasks.get(vertex))
        else {
            return Vec::new();
        };
        subtasks
            .iter()
            .enumerate()
            .map(|(i, m)| crate::profiler::ProfiledThread {
                vertex_name: v.name.clone(),
                subtask: i,
                parallelism: subtasks.len(),
                metrics: m.clone(),
            })
            .collect()
    }

    /// A flame graph request for vertex `vertex` (Flink's protocol: see
    /// [`crate::profiler::JobProfiler::request`]).
    pub fn flame_graph(&self, vertex: usize) -> crate::profiler::FlameGraphAnswer {
        self.profiler.request(vertex, self.profiled_threads(vertex))
    }

    /// The latest per-second metrics of every subtask, per vertex (updated every
    /// `config.metrics.update_interval`, and once more when the job ends).
    /// In process 0 of a split job, the other processes' subtasks are as they last reported.
    pub fn vertex_metrics(&self) -> Vec<VertexSnapshot> {
        let mut v = self
            .sampler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .vertices();
        if let Some(c) = &self.cluster {
            c.overlay(&mut v);
        }
        v
    }

    /// Where the job's subtasks run when it is split over processes (`None`: in this
    /// process alone).
    pub fn cluster(&self) -> Option<&Arc<ClusterView>> {
        self.cluster.as_ref()
    }

    /// Process `process`'s task threads (name, stack text), asked over the link from process
    /// 0 of a split job; `None` when this is no such process or it did not answer in time.
    pub fn remote_thread_dump(&self, process: usize) -> Option<Vec<(String, String)>> {
        self.inspector.get()?.thread_dump(process)
    }

    /// In a process of a split job other than 0: sends process 0 its subtasks' latest metrics
    /// (best effort; see [`crate::telemetry::cluster`]). Does nothing elsewhere.
    pub fn report_to_leader(&self) {
        let (Some(c), Some(hub)) = (&self.cluster, self.control.checkpoints()) else {
            return;
        };
        if hub.is_follower() {
            hub.send_report(c.report(&self.subtasks, &self.vertex_metrics()));
        }
    }

    /// Takes a metrics sample now (the sampler thread does this every update interval).
    pub fn sample_now(&self) {
        self.sampler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tick();
        self.last_sample_ms
            .store(crate::executor::epoch_ms(), Ordering::Relaxed);
    }

    /// When the latest metrics sample was taken (ms since the Unix epoch), `None` before the
    /// first one.
    pub fn last_sample_ms(&self) -> Option<u64> {
        match self.last_sample_ms.load(Ordering::Relaxed) {
            0 => None,
            t => Some(t),
        }
    }

    /// Where the job is in its life now.
    pub fn outcome(&self) -> JobOutcome {
        self.outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(super) fn set_outcome(&self, outcome: JobOutcome) {
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = outcome;
    }

    /// How the job's per-second metrics are sampled.
    pub fn metrics_config(&self) -> MetricsConfig {
        self.config.metrics
    }

    /// Asks for a savepoint (see [`JobHandle::savepoint`](super::JobHandle::savepoint)) and
    /// waits up to 10 minutes.
    pub fn savepoint(
        &self,
        dir: std::path::PathBuf,
        stop: bool,
    ) -> Result<std::path::PathBuf, JobError> {
        self.savepoint_within(dir, stop, std::time::Duration::from_secs(600))
    }

    /// [`savepoint`](Self::savepoint), waiting up to `timeout`: a savepoint not completed by
    /// then is withdrawn (it fails, its checkpoint is aborted, a stop does not happen) unless
    /// its completion is already under way, which is then waited for.
    pub fn savepoint_within(
        &self,
        dir: std::path::PathBuf,
        stop: bool,
        timeout: std::time::Duration,
    ) -> Result<std::path::PathBuf, JobError> {
        use crate::checkpoint::SavepointStatus;
        let hub = self
            .control
            .checkpoints()
            .ok_or_else(|| JobError::job("this job cannot take savepoints"))?;
        let id = hub
            .request_savepoint(dir, stop)
            .map_err(|e| JobError::job(format!("savepoint refused: {e}")))?;
        match hub.wait_savepoint(&id, timeout) {
            SavepointStatus::Completed(p) => Ok(p),
            SavepointStatus::Failed(why) => Err(JobError::job(format!("savepoint failed: {why}"))),
            SavepointStatus::InProgress => unreachable!("wait_savepoint returns a final status"),
        }
    }

    /// Records the job's last vertices (those no edge leaves: the sinks' tasks) have taken in.
    pub fn records_into_last_vertices(&self) -> u64 {
        let graph = &self.graph;
        graph
            .vertices
            .iter()
            .filter(|v| !graph.edges.iter().any(|e| e.from_vertex == v.index))
            .filter_map(|v| self.subtasks.get(v.index))
            .flatten()
            .map(|t| t.records_in())
            .sum()
    }

    /// Records that have gone through the whole job: those the last chained operator of each
    /// last vertex has processed (counted every `OPERATOR_SAMPLE_EVERY` records, so a slow
    /// job's count moves before a whole input buffer is done), else the vertex's input count.
    pub fn records_through(&self) -> u64 {
        let graph = &self.graph;
        graph
            .vertices
            .iter()
            .filter(|v| !graph.edges.iter().any(|e| e.from_vertex == v.index))
            .filter_map(|v| self.subtasks.get(v.index))
            .flatten()
            .map(|t| {
                let ops = t.operators.lock().unwrap_or_else(|p| p.into_inner());
                ops.last()
                    .map_or_else(|| t.records_in(), |o| o.records_in.load(Ordering::Relaxed))
            })
            .sum()
    }

    /// Records emitted so far by all source subtasks, across attempts.
    pub fn records_emitted_by_sources(&self) -> u64 {
        self.source_emitted
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .sum()
    }
}
