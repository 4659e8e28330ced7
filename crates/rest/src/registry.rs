//! The jobs a server answers for.

use std::sync::{Arc, RwLock};

use sluice_runtime::JobMonitor;
use sluice_types::JobId;

use crate::live::LiveControl;
use crate::sql_gateway::SqlGateway;

/// The running and finished jobs of this process, in registration order. Finished jobs stay
/// (with their final metrics) so `/jobs/overview` can list them, as Flink's history does.
#[derive(Default)]
pub struct JobRegistry {
    jobs: RwLock<Vec<Arc<JobMonitor>>>,
    /// The autopilot's decisions per job (`GET/PUT /jobs/:jobid/autopilot`).
    pub(crate) autopilot: crate::autopilot_api::AutopilotLogs,
    /// Jobs that can change their plan while they run, by job id.
    live: RwLock<Vec<(JobId, Arc<dyn LiveControl>)>>,
    /// What serves the SQL gateway's endpoints, when this server runs one.
    sql_gateway: RwLock<Option<Arc<dyn SqlGateway>>>,
}

impl std::fmt::Debug for JobRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self.jobs().iter().map(|m| m.job_id.to_string()).collect();
        f.debug_struct("JobRegistry").field("jobs", &ids).finish()
    }
}

impl JobRegistry {
    /// An empty registry.
    pub fn new() -> JobRegistry {
        JobRegistry::default()
    }

    /// Adds a job (a second registration of the same job id is ignored).
    pub fn register(&self, monitor: Arc<JobMonitor>) {
        let mut jobs = self.jobs.write().unwrap_or_else(|p| p.into_inner());
        if !jobs.iter().any(|m| m.job_id == monitor.job_id) {
            jobs.push(monitor);
        }
    }

    /// Every registered job, oldest first.
    pub fn jobs(&self) -> Vec<Arc<JobMonitor>> {
        self.jobs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The job with `id`, if registered.
    pub fn get(&self, id: JobId) -> Option<Arc<JobMonitor>> {
        self.jobs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|m| m.job_id == id)
            .cloned()
    }

    /// Puts `monitor` in the place of the registered job with the same id (a live plan change
    /// runs the same job id on a new job graph), or adds it.
    pub fn replace(&self, monitor: Arc<JobMonitor>) {
        let mut jobs = self.jobs.write().unwrap_or_else(|p| p.into_inner());
        match jobs.iter_mut().find(|m| m.job_id == monitor.job_id) {
            Some(slot) => *slot = monitor,
            None => jobs.push(monitor),
        }
    }

    /// Lets the REST API change job `id`'s plan while it runs through `control`.
    pub fn register_live(&self, id: JobId, control: Arc<dyn LiveControl>) {
        let mut live = self.live.write().unwrap_or_else(|p| p.into_inner());
        live.retain(|(j, _)| *j != id);
        live.push((id, control));
    }

    /// The live control of job `id`, when it has one.
    pub fn live(&self, id: JobId) -> Option<Arc<dyn LiveControl>> {
        self.live
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(j, _)| *j == id)
            .map(|(_, c)| c.clone())
    }

    /// Serves Flink's SQL Gateway REST API (`/v1/sessions`…) through `gateway`.
    pub fn set_sql_gateway(&self, gateway: Arc<dyn SqlGateway>) {
        *self.sql_gateway.write().unwrap_or_else(|p| p.into_inner()) = Some(gateway);
    }

    /// The SQL gateway, when one is installed.
    pub fn sql_gateway(&self) -> Option<Arc<dyn SqlGateway>> {
        self.sql_gateway
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
