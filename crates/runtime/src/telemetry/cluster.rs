//! A job split over processes, seen whole from process 0.
//!
//! Each process of a split job is a TaskManager ([`TaskManagerSpec`]: named from its address,
//! which every process knows from the peer list, so a subtask's TaskManager is known before
//! anything ran). After every metrics update each process other than 0 sends process 0 a
//! [`ProcessReport`]: the per-second snapshots of the subtasks it runs, the live counters the
//! REST API reads (states, times, records, watermarks, hot keys, connector and operator
//! gauges) and its own figures (PID, cores, memory). Process 0's [`ClusterView`] keeps the
//! latest of each: [`ClusterView::overlay`] puts the remote snapshots into the job's metric
//! view, [`ClusterView::receive`] mirrors the live counters into process 0's own
//! `TaskMetrics` of those subtasks (which never run there), so the REST API, the dashboard,
//! `sluice top` and the doctor read a remote subtask exactly as a local one.
//!
//! Reports go over the checkpoint hubs' link ([`crate::checkpoint::link`]) as best effort: a
//! report that cannot be sent is skipped (the next one carries the same counters), never a
//! job failure.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::snapshot::{SubtaskSnapshot, VertexSnapshot};
use crate::metrics::{GaugeKind, TaskMetrics};
pub use sluice_metrics::report::{
    meminfo_bytes, GaugeReport, ProcessReport, ProcessStats, SubtaskReport,
};

/// One process of a split job as a TaskManager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskManagerSpec {
    /// Flink's `ResourceID` of a standalone TaskManager: `host:port-` and six hex digits.
    pub id: String,
    /// The host the process runs on, as the other processes reach it.
    pub host: String,
    /// The port the process exchanges data on (Flink's `dataPort`).
    pub data_port: u16,
}

impl TaskManagerSpec {
    /// The TaskManager listening at `address`: the same id in every process.
    pub fn at(address: SocketAddr) -> TaskManagerSpec {
        let host = address.ip().to_string();
        let tag = sluice_types::Id128::hash_of(address.to_string().as_bytes()).0 & 0xff_ffff;
        TaskManagerSpec {
            id: format!("{host}:{}-{tag:06x}", address.port()),
            host,
            data_port: address.port(),
        }
    }

    /// Flink's `endpoint` of a subtask: `host:dataPort`.
    pub fn endpoint(&self) -> String {
        format!("{}:{}", self.host, self.data_port)
    }
}

/// Where the subtasks of a split job run, as every process computes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterLayout {
    /// This process's index.
    pub process: usize,
    /// Every process, by index.
    pub taskmanagers: Vec<TaskManagerSpec>,
    /// `process_of[vertex][subtask]`.
    pub process_of: Vec<Vec<usize>>,
}

/// What process 0 last heard from another process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessHeard {
    /// When the report arrived, ms since the Unix epoch.
    pub at_ms: u64,
    /// What the process reported about itself.
    pub stats: ProcessStats,
}

/// The split job as one process sees it: the layout, and (in process 0) the latest report of
/// every other process.
#[derive(Debug)]
pub struct ClusterView {
    layout: ClusterLayout,
    heard: Mutex<Heard>,
}

#[derive(Debug, Default)]
struct Heard {
    snapshots: HashMap<(usize, usize), SubtaskSnapshot>,
    processes: HashMap<usize, ProcessHeard>,
}

impl ClusterView {
    /// A view of `layout` that has heard from no other process yet.
    pub fn new(layout: ClusterLayout) -> Arc<ClusterView> {
        Arc::new(ClusterView {
            layout,
            heard: Mutex::new(Heard::default()),
        })
    }

    /// Where each subtask of the job runs.
    pub fn layout(&self) -> &ClusterLayout {
        &self.layout
    }

    /// The process subtask `subtask` of vertex `vertex` runs on (0 for unknown indexes).
    pub fn process_of(&self, vertex: usize, subtask: usize) -> usize {
        self.layout
            .process_of
            .get(vertex)
            .and_then(|v| v.get(subtask))
            .copied()
            .unwrap_or(0)
    }

    /// The TaskManager of a subtask.
    pub fn taskmanager_of(&self, vertex: usize, subtask: usize) -> Option<&TaskManagerSpec> {
        self.layout
            .taskmanagers
            .get(self.process_of(vertex, subtask))
    }

    /// The subtasks placed on `process`.
    pub fn subtasks_on(&self, process: usize) -> usize {
        self.layout
            .process_of
            .iter()
            .flatten()
            .filter(|&&p| p == process)
            .count()
    }

    /// What process `process` last reported of itself (`None` before its first report, and
    /// for this process).
    pub fn heard_from(&self, process: usize) -> Option<ProcessHeard> {
        self.lock().processes.get(&process).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Heard> {
        self.heard.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This process's report: its own subtasks' snapshots (from `vertices`) and live counters.
    pub fn report(
        &self,
        metrics: &[Vec<Arc<TaskMetrics>>],
        vertices: &[VertexSnapshot],
    ) -> ProcessReport {
        let me = self.layout.process;
        let mut subtasks = Vec::new();
        for (v, subs) in metrics.iter().enumerate() {
            for (i, m) in subs.iter().enumerate() {
                if self.process_of(v, i) != me {
                    continue;
                }
                let Some(snapshot) = vertices.get(v).and_then(|s| s.subtasks.get(i)) else {
                    continue;
                };
                subtasks.push(subtask_report(v, i, m, snapshot.clone()));
            }
        }
        ProcessReport {
            process: me as u32,
            stats: ProcessStats::current(subtasks.len()),
            subtasks,
        }
    }

    /// A report from another process (in process 0): kept for [`overlay`](Self::overlay),
    /// its live counters mirrored into `metrics`. A report naming a subtask that is not the
    /// sender's is refused whole, naming it.
    pub fn receive(
        &self,
        report: ProcessReport,
        metrics: &[Vec<Arc<TaskMetrics>>],
    ) -> Result<(), String> {
        let from = report.process as usize;
        if from == self.layout.process || from >= self.layout.taskmanagers.len() {
            return Err(format!(
                "a metrics report from process {from}, not another process of the job"
            ));
        }
        for s in &report.subtasks {
            let (v, i) = (s.vertex as usize, s.subtask as usize);
            let placed = self.layout.process_of.get(v).and_then(|p| p.get(i));
            if placed != Some(&from) {
                return Err(format!(
                    "process {from} reported subtask {i} of vertex {v}, which is not placed on it"
                ));
            }
        }
        let mut heard = self.lock();
        for s in report.subtasks {
            let (v, i) = (s.vertex as usize, s.subtask as usize);
            if let Some(m) = metrics.get(v).and_then(|subs| subs.get(i)) {
                mirror(m, &s);
            }
            heard.snapshots.insert((v, i), s.snapshot);
        }
        heard.processes.insert(
            from,
            ProcessHeard {
                at_ms: crate::executor::epoch_ms(),
                stats: report.stats,
            },
        );
        Ok(())
    }

    /// Puts the latest reported snapshot of every remote subtask into `vertices`.
    pub fn overlay(&self, vertices: &mut [VertexSnapshot]) {
        let heard = self.lock();
        for ((v, i), snap) in &heard.snapshots {
            if let Some(slot) = vertices.get_mut(*v).and_then(|s| s.subtasks.get_mut(*i)) {
                *slot = snap.clone();
            }
        }
    }
}

fn subtask_report(
    vertex: usize,
    subtask: usize,
    m: &TaskMetrics,
    snapshot: SubtaskSnapshot,
) -> SubtaskReport {
    SubtaskReport {
        vertex: vertex as u32,
        subtask: subtask as u32,
        snapshot,
        started_ms: m.started_ms.load(Relaxed),
        ended_ms: m.ended_ms.load(Relaxed),
        records_in: m.records_in(),
        records_out: m.records_out(),
        bytes_in: m.bytes_in.load(Relaxed),
        bytes_out: m.bytes_out.load(Relaxed),
        input_watermark: m.input_watermark.get(),
        output_watermark: m.output_watermark.get(),
        late_records_dropped: m.late_records_dropped.load(Relaxed),
        hot_keys: crate::hotkeys::subtask_hot_keys(m),
        connector_gauges: m.connector_gauge_values(),
        gauges: m
            .gauges()
            .iter()
            .map(|g| GaugeReport {
                operator: g.operator.clone(),
                name: g.name.clone(),
                counter: g.kind == GaugeKind::Counter,
                help: g.help.clone(),
                value: g.get(),
            })
            .collect(),
    }
}

/// Process 0's `TaskMetrics` of a remote subtask take the reported counters.
fn mirror(m: &TaskMetrics, s: &SubtaskReport) {
    m.set_state(s.snapshot.state);
    m.started_ms.store(s.started_ms, Relaxed);
    m.ended_ms.store(s.ended_ms, Relaxed);
    m.records_in.store(s.records_in, Relaxed);
    m.records_out.store(s.records_out, Relaxed);
    m.bytes_in.store(s.bytes_in, Relaxed);
    m.bytes_out.store(s.bytes_out, Relaxed);
    m.input_watermark.set(s.input_watermark);
    m.output_watermark.set(s.output_watermark);
    m.late_records_dropped
        .store(s.late_records_dropped, Relaxed);
    *m.hot_keys.lock().unwrap_or_else(|p| p.into_inner()) = s.hot_keys.clone();
    for (name, v) in &s.connector_gauges {
        m.connector_gauge(name).store(*v, Relaxed);
    }
    for g in &s.gauges {
        let kind = if g.counter {
            GaugeKind::Counter
        } else {
            GaugeKind::Gauge
        };
        m.register_gauge(&g.operator, &g.name, kind, &g.help, g.value)
            .set(g.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hotkeys::HotKeysSnapshot;
    use crate::TaskState;

    fn layout(process: usize) -> ClusterLayout {
        ClusterLayout {
            process,
            taskmanagers: vec![
                TaskManagerSpec::at("127.0.0.1:4000".parse().unwrap()),
                TaskManagerSpec::at("127.0.0.1:4001".parse().unwrap()),
            ],
            process_of: vec![vec![0, 1], vec![0, 1]],
        }
    }

    fn metrics() -> Vec<Vec<Arc<TaskMetrics>>> {
        (0..2)
            .map(|_| (0..2).map(|_| Arc::new(TaskMetrics::default())).collect())
            .collect()
    }

    #[test]
    fn taskmanager_ids_are_the_same_everywhere_and_name_the_address() {
        let a = TaskManagerSpec::at("10.0.0.7:6121".parse().unwrap());
        assert_eq!(a, TaskManagerSpec::at("10.0.0.7:6121".parse().unwrap()));
        assert!(a.id.starts_with("10.0.0.7:6121-"), "{}", a.id);
        assert_eq!(a.id.len(), "10.0.0.7:6121-".len() + 6);
        assert_eq!(a.endpoint(), "10.0.0.7:6121");
        assert_ne!(
            a.id,
            TaskManagerSpec::at("10.0.0.8:6121".parse().unwrap()).id
        );
    }

    #[test]
    fn a_report_crosses_and_process_0_sees_the_remote_subtask_as_its_own() {
        // Process 1 runs subtask 1 of both vertices.
        let (p1, m1) = (ClusterView::new(layout(1)), metrics());
        m1[1][1].records_in.store(1234, Relaxed);
        m1[1][1].started_ms.store(77, Relaxed);
        m1[1][1].set_state(TaskState::Running);
        m1[1][1]
            .register_gauge("Source: x", "pendingRecords", GaugeKind::Gauge, "h", 9)
            .set(9);
        *m1[1][1].hot_keys.lock().unwrap() = Some(HotKeysSnapshot {
            subtask_records: 1234,
            sampled_records: 100,
            keys: vec![crate::hotkeys::HotKeyShare {
                key: "0".into(),
                count: 1000,
                error: 1,
                share_of_subtask: 0.81,
            }],
        });
        let mut snaps: Vec<VertexSnapshot> = (0..2)
            .map(|index| VertexSnapshot {
                index,
                subtasks: (0..2)
                    .map(|subtask| SubtaskSnapshot {
                        subtask,
                        state: TaskState::Running,
                        busy_ms_per_second: 100.0 * (index * 2 + subtask) as f64,
                        cpu_ms_per_second: f64::NAN,
                        ..Default::default()
                    })
                    .collect(),
            })
            .collect();
        let report = p1.report(&m1, &snaps);
        assert_eq!(report.subtasks.len(), 2, "only its own subtasks");
        let bytes = postcard::to_allocvec(&report).unwrap();
        let back: ProcessReport = postcard::from_bytes(&bytes).unwrap();

        let (p0, m0) = (ClusterView::new(layout(0)), metrics());
        p0.receive(back, &m0).unwrap();
        assert_eq!(m0[1][1].records_in(), 1234);
        assert_eq!(m0[1][1].state(), TaskState::Running);
        assert_eq!(m0[1][1].started_ms.load(Relaxed), 77);
        assert_eq!(m0[1][1].gauges()[0].get(), 9);
        let hot = crate::hotkeys::vertex_hot_keys(m0[1].iter());
        assert_eq!(hot[0].key, "0");
        assert_eq!(hot[0].subtask, 1);
        for v in &mut snaps {
            for s in &mut v.subtasks {
                s.busy_ms_per_second = 0.0;
            }
        }
        p0.overlay(&mut snaps);
        assert_eq!(snaps[1].subtasks[1].busy_ms_per_second, 300.0);
        assert_eq!(snaps[1].subtasks[0].busy_ms_per_second, 0.0, "its own stay");
        assert!(snaps[1].subtasks[1].cpu_ms_per_second.is_nan());
        assert_eq!(p0.heard_from(1).unwrap().stats.subtasks, 2);
        assert_eq!(p0.taskmanager_of(1, 1).unwrap().data_port, 4001);
    }

    #[test]
    fn a_report_naming_a_subtask_of_another_process_is_refused_whole() {
        let (p1, m1) = (ClusterView::new(layout(1)), metrics());
        let snaps: Vec<VertexSnapshot> = (0..2)
            .map(|index| VertexSnapshot {
                index,
                subtasks: (0..2)
                    .map(|subtask| SubtaskSnapshot {
                        subtask,
                        ..Default::default()
                    })
                    .collect(),
            })
            .collect();
        let mut report = p1.report(&m1, &snaps);
        report.subtasks[0].subtask = 0;
        let (p0, m0) = (ClusterView::new(layout(0)), metrics());
        let e = p0.receive(report.clone(), &m0).unwrap_err();
        assert!(e.contains("subtask 0 of vertex 0"), "{e}");
        assert!(p0.heard_from(1).is_none());
        report.process = 0;
        assert!(
            p0.receive(report, &m0).is_err(),
            "process 0 does not report to itself"
        );
    }
}
