//! Looking into the other processes of a split job from process 0: a vertex's flame graph and a
//! TaskManager's thread dump, which only the process running the threads can take.
//!
//! Process 0 sends an [`Inspect`] request with a fresh run number over the hubs' link (best
//! effort: an inspection never fails a job); each other process answers from its own threads on
//! a thread of its own (a sampling run takes seconds; the link's reader must not wait for it),
//! and process 0's [`RemoteInspector`] collects the answers of that run until every process
//! that holds the subtasks answered or the deadline passed — a process that does not answer in
//! time is left out, and what it would have shown is missing, not invented.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::checkpoint::link::{Inspect, InspectReply};
use crate::checkpoint::{CheckpointHub, HubMessage};
use crate::profiler::{self, SubtaskProfile};
use crate::telemetry::cluster::ClusterView;

use super::JobMonitor;

/// How long a thread dump of another process may take (its own glance is 200 ms).
pub const THREAD_DUMP_WAIT: Duration = Duration::from_secs(5);

/// Process 0's side: asks the other processes and collects their answers by run.
pub struct RemoteInspector {
    hub: Arc<CheckpointHub>,
    cluster: Arc<ClusterView>,
    next_run: AtomicU64,
    waiting: Mutex<HashMap<u64, Sender<(u32, InspectReply)>>>,
}

impl RemoteInspector {
    /// Installs the inspector on the leader's hub: from now on the other processes' answers
    /// reach it.
    pub fn install(hub: Arc<CheckpointHub>, cluster: Arc<ClusterView>) -> Arc<RemoteInspector> {
        let me = Arc::new(RemoteInspector {
            hub: hub.clone(),
            cluster,
            next_run: AtomicU64::new(1),
            waiting: Mutex::new(HashMap::new()),
        });
        let weak = Arc::downgrade(&me);
        hub.on_inspections(Box::new(move |m| {
            if let (
                HubMessage::InspectReply {
                    run,
                    process,
                    reply,
                },
                Some(me),
            ) = (m, weak.upgrade())
            {
                let to = me
                    .waiting
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&run)
                    .cloned();
                if let Some(to) = to {
                    let _ = to.send((process, reply));
                }
            }
        }));
        me
    }

    /// Sends `what` to every other process and returns the answers of the processes in
    /// `from` that came within `wait`.
    fn ask(&self, what: Inspect, from: &[usize], wait: Duration) -> Vec<(u32, InspectReply)> {
        if from.is_empty() {
            return Vec::new();
        }
        let run = self.next_run.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(run, tx);
        let mut got = Vec::new();
        if self
            .hub
            .send_inspection(HubMessage::InspectRequest { run, what })
        {
            let deadline = Instant::now() + wait;
            while got.len() < from.len() {
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok((p, r)) if from.contains(&(p as usize)) => got.push((p, r)),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&run);
        got
    }

    /// Another process's task threads, as `(name, stack text)`; `None` when it did not
    /// answer within [`THREAD_DUMP_WAIT`].
    pub fn thread_dump(&self, process: usize) -> Option<Vec<(String, String)>> {
        self.ask(Inspect::ThreadDump, &[process], THREAD_DUMP_WAIT)
            .into_iter()
            .find_map(|(_, r)| match r {
                InspectReply::ThreadDump(t) => Some(t),
                _ => None,
            })
    }
}

impl profiler::RemoteSampler for RemoteInspector {
    fn sample(&self, vertex: usize, wait: Duration) -> Vec<SubtaskProfile> {
        let own = self.cluster.layout().process;
        let mut from: Vec<usize> = self
            .cluster
            .layout()
            .process_of
            .get(vertex)
            .map(|subtasks| subtasks.iter().copied().filter(|&p| p != own).collect())
            .unwrap_or_default();
        from.sort_unstable();
        from.dedup();
        self.ask(
            Inspect::FlameGraph {
                vertex: vertex as u32,
            },
            &from,
            wait,
        )
        .into_iter()
        .flat_map(|(_, r)| match r {
            InspectReply::FlameGraph(s) => s,
            _ => Vec::new(),
        })
        .collect()
    }
}

/// Another process's side: answers process 0's requests from this process's own threads.
pub fn answer_requests(hub: &Arc<CheckpointHub>, monitor: Weak<JobMonitor>) {
    let reply_hub = Arc::downgrade(hub);
    hub.on_inspections(Box::new(move |m| {
        let HubMessage::InspectRequest { run, what } = m else {
            return;
        };
        let (monitor, hub) = (monitor.clone(), reply_hub.clone());
        // Sampling takes seconds: never on the link's reader thread.
        let _ = std::thread::Builder::new()
            .name("inspect".into())
            .spawn(move || {
                let (Some(monitor), Some(hub)) = (monitor.upgrade(), hub.upgrade()) else {
                    return;
                };
                let reply = answer(&monitor, what);
                let process = monitor.cluster().map_or(0, |c| c.layout().process as u32);
                hub.send_inspection(HubMessage::InspectReply {
                    run,
                    process,
                    reply,
                });
            });
    }));
}

/// This process's answer: only its own subtasks (process 0 has the others' as mirrors).
fn answer(monitor: &JobMonitor, what: Inspect) -> InspectReply {
    let own = |vertex: usize, subtask: usize| {
        monitor
            .cluster()
            .is_none_or(|c| c.process_of(vertex, subtask) == c.layout().process)
    };
    match what {
        Inspect::FlameGraph { vertex } => {
            let vertex = vertex as usize;
            let threads: Vec<_> = monitor
                .profiled_threads(vertex)
                .into_iter()
                .filter(|t| own(vertex, t.subtask))
                .collect();
            if threads.is_empty() {
                return InspectReply::FlameGraph(Vec::new());
            }
            let p = profiler::sample_vertex(&threads, monitor.profiler.config());
            InspectReply::FlameGraph(
                p.subtasks
                    .into_iter()
                    .filter(|s| own(vertex, s.subtask))
                    .collect(),
            )
        }
        Inspect::ThreadDump => {
            let mut tasks = Vec::new();
            for v in 0..monitor.graph.vertices.len() {
                tasks.extend(
                    monitor
                        .profiled_threads(v)
                        .into_iter()
                        .filter(|t| own(v, t.subtask)),
                );
            }
            let depth = profiler::ProfilerConfig::default().stack_depth;
            InspectReply::ThreadDump(
                profiler::thread_dump(&tasks, depth)
                    .into_iter()
                    .map(|t| (t.thread_name, t.stringified))
                    .collect(),
            )
        }
    }
}
