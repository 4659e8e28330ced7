//! The checkpoint hubs of a split job talking over the processes' network endpoint
//! ([`sluice_runtime::checkpoint::link`]): control-plane frames between process 0 (the leader)
//! and every other process, and a lost process failing the job.

use std::sync::{Arc, OnceLock, Weak};

use sluice_net::{ControlEvent, NetEndpoint};
use sluice_runtime::checkpoint::{CheckpointHub, HubRole, ProcessLink};
use sluice_runtime::{JobControl, JobError};

/// [`ProcessLink`] over a [`NetEndpoint`].
pub(crate) struct NetLink {
    endpoint: NetEndpoint,
    process: usize,
    processes: usize,
    /// Set at attach: what a failed send fails.
    control: OnceLock<Weak<JobControl>>,
}

impl NetLink {
    pub(crate) fn new(endpoint: NetEndpoint, process: usize, processes: usize) -> Arc<NetLink> {
        Arc::new(NetLink {
            endpoint,
            process,
            processes,
            control: OnceLock::new(),
        })
    }

    pub(crate) fn role(&self) -> HubRole {
        if self.process == 0 {
            HubRole::Leader
        } else {
            HubRole::Follower
        }
    }

    /// Where this process's messages go: from process 0 to every other, else to process 0.
    fn targets(&self) -> Vec<usize> {
        if self.process == 0 {
            (1..self.processes).collect()
        } else {
            vec![0]
        }
    }

    fn fail(&self, message: String) {
        if let Some(c) = self.control.get().and_then(Weak::upgrade) {
            c.fail(JobError::job(message));
        }
    }
}

impl ProcessLink for NetLink {
    fn attach(&self, hub: Arc<CheckpointHub>, control: Arc<JobControl>) {
        let _ = self.control.set(Arc::downgrade(&control));
        // Weak: the endpoint outlives the job (a process may run several), the job must not
        // be kept alive by it.
        let (hub, control) = (Arc::downgrade(&hub), Arc::downgrade(&control));
        let me = self.process;
        self.endpoint.on_control(Arc::new(move |event| {
            let fail = |m: String| {
                if let Some(c) = control.upgrade() {
                    c.fail(JobError::job(m));
                }
            };
            match event {
                ControlEvent::Message { from, bytes } => {
                    if let Some(h) = hub.upgrade() {
                        if let Err(e) = h.receive(&bytes) {
                            fail(format!("process {me}, from process {from}: {e}"));
                        }
                    }
                }
                ControlEvent::PeerLost { process, reason } => fail(format!(
                    "process {process} of the job was lost ({reason}): the job fails here and \
                     restarts, with every process, from its latest completed checkpoint"
                )),
            }
        }));
    }

    fn send_best_effort(&self, bytes: Vec<u8>) -> Result<(), String> {
        let mut failed = Vec::new();
        for to in self.targets() {
            if let Err(e) = self.endpoint.send_control(to, bytes.clone()) {
                failed.push(format!("process {to}: {e}"));
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed.join("; "))
        }
    }

    fn send(&self, bytes: Vec<u8>) {
        for to in self.targets() {
            if let Err(e) = self.endpoint.send_control(to, bytes.clone()) {
                self.fail(format!(
                    "process {}: cannot reach process {to} with a checkpoint message: {e}",
                    self.process
                ));
            }
        }
    }
}
