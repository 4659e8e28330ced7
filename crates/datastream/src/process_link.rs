//! The checkpoint hubs of a split job talking over the processes' network endpoint
//! ([`sluice_runtime::checkpoint::link`]): control-plane frames between process 0 (the leader)
//! and every other process, and a lost process failing the job.

use std::sync::{Arc, OnceLock, Weak};

use sluice_net::{ControlEvent, NetEndpoint};
use sluice_runtime::checkpoint::{CheckpointHub, HubRole, JobFailer, ProcessLink};

/// [`ProcessLink`] over a [`NetEndpoint`].
pub(crate) struct NetLink {
    endpoint: NetEndpoint,
    process: usize,
    processes: usize,
    /// Set at attach: what a failed send fails.
    control: OnceLock<Weak<dyn JobFailer>>,
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
            c.fail_job(message);
        }
    }
}

impl ProcessLink for NetLink {
    fn attach(&self, hub: Arc<CheckpointHub>, control: Arc<dyn JobFailer>) {
        let _ = self.control.set(Arc::downgrade(&control));
        // Weak: the endpoint outlives the job (a process may run several), the job must not
        // be kept alive by it.
        let (hub, control) = (Arc::downgrade(&hub), Arc::downgrade(&control));
        let me = self.process;
        self.endpoint.on_control(Arc::new(move |event| {
            let fail = |m: String| {
                if let Some(c) = control.upgrade() {
                    c.fail_job(m);
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

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use sluice_runtime::checkpoint::{CheckpointConfig, TaskAck};
    use sluice_runtime::JobControl;

    use super::*;

    fn endpoints() -> (NetEndpoint, NetEndpoint) {
        let (l0, l1) = (
            TcpListener::bind("127.0.0.1:0").unwrap(),
            TcpListener::bind("127.0.0.1:0").unwrap(),
        );
        let addrs = vec![l0.local_addr().unwrap(), l1.local_addr().unwrap()];
        let a1 = addrs.clone();
        let t = std::thread::spawn(move || {
            NetEndpoint::start(1, &a1, l1, Duration::from_secs(30)).unwrap()
        });
        let e0 = NetEndpoint::start(0, &addrs, l0, Duration::from_secs(30)).unwrap();
        (e0, t.join().unwrap())
    }

    fn hub(link: &Arc<NetLink>) -> (Arc<CheckpointHub>, Arc<JobControl>) {
        let hub = CheckpointHub::new(CheckpointConfig::default(), std::env::temp_dir());
        let control = JobControl::new(Duration::from_millis(100));
        hub.set_link(link.role(), link.clone());
        link.attach(hub.clone(), control.clone());
        (hub, control)
    }

    /// Defect 5: a follower's acknowledgement whose snapshots exceed one network frame (64 MiB)
    /// reaches the leader's hub whole, and neither process's job fails.
    #[test]
    fn a_follower_ack_with_70_mib_of_state_reaches_the_leader() {
        let (e0, e1) = endpoints();
        let (leader, leader_control) = hub(&NetLink::new(e0, 0, 2));
        let (follower, follower_control) = hub(&NetLink::new(e1, 1, 2));
        let state: Vec<u8> = (0..70usize << 20).map(|i| (i % 251) as u8).collect();
        let ack = TaskAck {
            checkpoint_id: 1,
            vertex: 0,
            subtask: 1,
            states: vec![("op".into(), state.clone())],
            state_bytes: state.len(),
            alignment_ns: 0,
            sync_ns: 0,
            start_delay_ms: 0,
            ack_ms: 0,
        };
        // From a thread of its own, as a task acks: its send blocks if the leader stops reading.
        let acking = follower.clone();
        let _task = std::thread::spawn(move || acking.ack(ack));
        let deadline = Instant::now() + Duration::from_secs(120);
        let acks = loop {
            let (acks, declines) = leader.take_acks(Duration::from_millis(50));
            assert!(declines.is_empty(), "{declines:?}");
            if !acks.is_empty() {
                break acks;
            }
            if let Some(e) = leader_control.take_failure() {
                panic!("the leader's job failed: {e}");
            }
            assert!(Instant::now() < deadline, "no ack reached the leader");
        };
        assert_eq!(acks.len(), 1);
        assert_eq!((acks[0].checkpoint_id, acks[0].subtask), (1, 1));
        assert!(acks[0].states[0].1 == state, "the state arrived altered");
        assert!(leader_control.take_failure().is_none());
        assert!(follower_control.take_failure().is_none());
    }
}
