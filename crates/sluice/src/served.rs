//! [`ServedJob`]: a job launched with its own REST API on a free port of 127.0.0.1, for a tool
//! that samples it while it runs (`sluice doctor fix`, `sluice demo`) and then cancels it.

use std::net::SocketAddr;
use std::sync::Arc;

use sluice_datastream::{JobHandle, JobMonitor, StreamEnv};
use sluice_rest::{JobRegistry, RestServer};

use crate::SluiceError;

/// A running job whose REST API answers at [`ServedJob::url`]; dropping it cancels the job.
pub struct ServedJob {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    handle: Option<JobHandle>,
    _server: RestServer,
}

impl ServedJob {
    /// Starts the REST API, launches the job built on `env` and registers it there.
    pub fn start(env: &StreamEnv) -> Result<ServedJob, SluiceError> {
        let registry = Arc::new(JobRegistry::new());
        let server = sluice_rest::serve(SocketAddr::from(([127, 0, 0, 1], 0)), registry.clone())
            .map_err(SluiceError::setup("starting the REST API".into()))?;
        let handle = env.launch()?;
        registry.register(handle.monitor());
        Ok(ServedJob {
            url: format!("http://{}", server.local_addr()),
            handle: Some(handle),
            _server: server,
        })
    }

    /// The running job's monitor (what `doctor fix` measures the live rate with).
    pub fn monitor(&self) -> Option<Arc<JobMonitor>> {
        self.handle.as_ref().map(|h| h.monitor())
    }

    /// Cancels the job and waits for its threads.
    pub fn stop(mut self) {
        self.cancel();
    }

    fn cancel(&mut self) {
        if let Some(h) = self.handle.take() {
            h.cancel();
            // The job was cancelled on purpose: how it ended is of no interest.
            let _ = h.wait();
        }
    }
}

impl Drop for ServedJob {
    fn drop(&mut self) {
        self.cancel();
    }
}
