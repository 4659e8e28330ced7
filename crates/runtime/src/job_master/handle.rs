//! What the caller of [`JobMaster::launch`](super::JobMaster::launch) holds: the job's monitor
//! and the job thread, to cancel, savepoint or wait.

use std::sync::Arc;

use sluice_plan::JobGraph;
use sluice_types::JobId;

use super::JobMonitor;
use crate::{JobError, JobResult};

/// A launched job.
pub struct JobHandle {
    pub(super) monitor: Arc<JobMonitor>,
    pub(super) thread: Option<std::thread::JoinHandle<Result<JobResult, JobError>>>,
}

/// A finished job: the runtime's result plus the graph that ran.
#[derive(Clone, Debug)]
pub struct JobExecution {
    /// The job's id (the REST API's `jid`).
    pub job_id: JobId,
    /// Totals of the run.
    pub result: JobResult,
    /// The job graph that ran.
    pub graph: JobGraph,
}

impl JobHandle {
    /// The live view of the job (status, metrics, checkpoints) while and after it runs.
    pub fn monitor(&self) -> Arc<JobMonitor> {
        self.monitor.clone()
    }

    /// Whether the job thread has ended, so [`JobHandle::wait`] returns at once.
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
    ) -> Result<std::path::PathBuf, JobError> {
        self.monitor.savepoint(dir.into(), false)
    }

    /// Stop-with-savepoint: takes a savepoint into `dir`, then stops the job (it ends as
    /// cancelled; records after the savepoint are not published). Resume it with
    /// `StreamEnv::restore_from(dir)`, at any parallelism.
    pub fn stop_with_savepoint(
        self,
        dir: impl Into<std::path::PathBuf>,
    ) -> Result<std::path::PathBuf, JobError> {
        let path = self.monitor.savepoint(dir.into(), true)?;
        let _ = self.wait();
        Ok(path)
    }

    /// Blocks until every subtask has ended.
    pub fn wait(mut self) -> Result<JobExecution, JobError> {
        // `wait` consumes the handle and only `Drop` also takes the thread, so it is here.
        let result = self
            .thread
            .take()
            .ok_or_else(|| JobError::job("the job coordinator thread was already joined"))?
            .join()
            .map_err(|_| JobError::job("the job coordinator thread panicked"));
        self.monitor.profiler.join_samplers();
        let result = result??;
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
        self.monitor.profiler.join_samplers();
    }
}
