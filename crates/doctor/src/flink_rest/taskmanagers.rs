//! The TaskManagers a job's subtasks run on, from a Flink cluster's answers: which subtask runs
//! where (`/jobs/:jid/vertices/:vid`, its subtasks' `taskmanager-id`), each TaskManager's JVM
//! (`/taskmanagers` and `/taskmanagers/:tmid/metrics`: garbage collection, heap, process CPU) and
//! the job's failures on it (`/jobs/:jid/exceptions`). A MiniCluster reports no TaskManager JVM
//! metrics (its TaskManagers share one JVM); a standalone or Kubernetes cluster does. Pure
//! functions: the probe fetches, these read.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use sluice_rest_api::{
    ExceptionInfo, JobExceptions, TaskManagerInfo, TaskManagersInfo, VertexDetails,
};

use super::{read_metric_values, shape};
use crate::{HostSample, Snapshot};

/// Flink's TaskManager metric: ms per second all collectors of the JVM spent collecting.
pub const GC_TIME: &str = "Status.JVM.GarbageCollector.All.TimeMsPerSecond";
/// Flink's TaskManager metric: collections since the JVM started.
pub const GC_COUNT: &str = "Status.JVM.GarbageCollector.All.Count";
/// Flink's TaskManager metrics: heap in use and its maximum, bytes.
pub const HEAP_USED: &str = "Status.JVM.Memory.Heap.Used";
/// See [`HEAP_USED`].
pub const HEAP_MAX: &str = "Status.JVM.Memory.Heap.Max";
/// Flink's TaskManager metric: the JVM process's recent CPU load over all cores, 0..=1.
pub const CPU_LOAD: &str = "Status.JVM.CPU.Load";
/// The old-generation collectors of the JVM's garbage collectors, as Flink names their metric
/// groups (`Status.JVM.GarbageCollector.<name>.Count`; spaces become `_`): G1, Parallel, Serial, CMS.
pub const OLD_COLLECTORS: [&str; 4] = [
    "G1_Old_Generation",
    "PS_MarkSweep",
    "MarkSweepCompact",
    "ConcurrentMarkSweep",
];

/// The young-generation collectors, named as [`OLD_COLLECTORS`] are: with them, the GC time and
/// count of a JVM whose Flink has no `All` group (Flink before the aggregated GC metrics).
pub const YOUNG_COLLECTORS: [&str; 4] = ["G1_Young_Generation", "PS_Scavenge", "Copy", "ParNew"];
/// Flink's TaskManager metric: ms all collectors spent collecting since the JVM started.
pub const GC_TIME_TOTAL: &str = "Status.JVM.GarbageCollector.All.Time";

/// `/taskmanagers/:tmid/metrics?get=…`: GC time and counts (aggregated and per collector), heap,
/// CPU load.
pub fn taskmanager_metrics_path(tm: &str) -> String {
    let mut names =
        format!("{GC_TIME},{GC_COUNT},{GC_TIME_TOTAL},{HEAP_USED},{HEAP_MAX},{CPU_LOAD}");
    for c in YOUNG_COLLECTORS.iter().chain(&OLD_COLLECTORS) {
        names.push_str(&format!(
            ",Status.JVM.GarbageCollector.{c}.Count,Status.JVM.GarbageCollector.{c}.Time"
        ));
    }
    format!("/taskmanagers/{tm}/metrics?get={names}")
}

/// The TaskManager of each subtask (by index) from `/jobs/:jid/vertices/:vid`; `None` where
/// the answer names none.
pub fn subtask_placement(details: &Value) -> Vec<Option<String>> {
    let details: VertexDetails = shape(details);
    let mut placed: Vec<Option<String>> = Vec::new();
    for (i, s) in details.subtasks.iter().enumerate() {
        let n = s.subtask.map_or(i, |n| n as usize);
        if n >= details.subtasks.len() {
            continue;
        }
        if placed.len() <= n {
            placed.resize(n + 1, None);
        }
        placed[n] = s.taskmanager_id.clone().filter(|t| !t.is_empty());
    }
    placed
}

/// The job's failures per TaskManager from `/jobs/:jid/exceptions`: how many history entries
/// involve it (the entry's own TaskManager or one of its concurrent task failures) and the
/// first line of the latest one's exception on it.
pub fn failures_by_taskmanager(exceptions: &Value) -> HashMap<String, (usize, String)> {
    let answer: JobExceptions = shape(exceptions);
    let mut out: HashMap<String, (usize, String)> = HashMap::new();
    // Latest first: the first message seen for a TaskManager is its latest.
    for entry in &answer.exception_history.entries {
        let mut seen: BTreeMap<&str, &ExceptionInfo> = BTreeMap::new();
        let all = std::iter::once(&entry.exception).chain(&entry.concurrent_exceptions);
        for e in all {
            if let Some(tm) = e.task_manager_id.as_deref().filter(|t| !t.is_empty()) {
                seen.entry(tm).or_insert(e);
            }
        }
        for (tm, e) in seen {
            let line = e.stacktrace.lines().next().unwrap_or(&e.exception_name);
            let slot = out.entry(tm.to_string()).or_insert((0, line.to_string()));
            slot.0 += 1;
        }
    }
    out
}

/// One TaskManager's [`HostSample`] from its `/taskmanagers` entry (task heap, cores), its
/// metrics answer, how many tasks it runs when they are all one vertex's, and its failures.
pub fn host_sample(
    tm: &str,
    info: Option<&TaskManagerInfo>,
    metrics: Option<&Value>,
    alone_tasks: Option<usize>,
    failures: Option<&(usize, String)>,
) -> HostSample {
    let values = metrics.map(read_metric_values).unwrap_or_default();
    let get = |id: &str| values.get(id).copied();
    // A sum over the collectors that report `what` (`Count`, `Time`); `None` when none does.
    let sum = |collectors: &mut dyn Iterator<Item = &&str>, what: &str| {
        let v: Vec<f64> = collectors
            .filter_map(|c| get(&format!("Status.JVM.GarbageCollector.{c}.{what}")))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>())
    };
    let all = || YOUNG_COLLECTORS.iter().chain(&OLD_COLLECTORS);
    HostSample {
        taskmanager: tm.to_string(),
        gc_ms: get(GC_TIME),
        gc_count: get(GC_COUNT).or_else(|| sum(&mut all(), "Count")),
        gc_time_total: get(GC_TIME_TOTAL).or_else(|| sum(&mut all(), "Time")),
        old_gc_count: sum(&mut OLD_COLLECTORS.iter(), "Count"),
        heap_used: get(HEAP_USED),
        heap_max: get(HEAP_MAX),
        task_heap: info
            .and_then(|i| i.memory_configuration.get("taskHeap"))
            .map(|b| *b as f64),
        cpu_load: get(CPU_LOAD).filter(|l| *l >= 0.0),
        cores: info
            .and_then(|i| i.hardware.cpu_cores)
            .filter(|c| *c > 0)
            .map(|c| c as f64),
        alone_tasks: alone_tasks.map(|n| n as f64),
        failures: failures.map(|f| f.0 as f64),
        last_failure: failures.map(|f| f.1.clone()),
        ..HostSample::default()
    }
}

/// For each TaskManager the job runs on, the number of tasks it runs when they are all
/// subtasks of one vertex of this job and it runs nothing else (its `assignedTasks` in
/// `/taskmanagers` match): then the process's CPU is that vertex's.
pub fn alone_tasks(
    placements: &[Vec<Option<String>>],
    taskmanagers: &TaskManagersInfo,
) -> HashMap<String, usize> {
    let mut per_tm: HashMap<&str, (Option<usize>, usize, bool)> = HashMap::new();
    for (vi, subs) in placements.iter().enumerate() {
        for tm in subs.iter().flatten() {
            let e = per_tm.entry(tm.as_str()).or_insert((Some(vi), 0, true));
            e.1 += 1;
            if e.0 != Some(vi) {
                e.2 = false;
            }
        }
    }
    per_tm
        .into_iter()
        .filter(|(tm, (_, n, one_vertex))| {
            *one_vertex
                && taskmanagers
                    .taskmanagers
                    .iter()
                    .find(|i| i.id == *tm)
                    .and_then(|i| i.assigned_tasks)
                    == Some(*n as i64)
        })
        .map(|(tm, (_, n, _))| (tm.to_string(), n))
        .collect()
}

/// Puts each subtask's TaskManager figures into the snapshot (`[vertex][subtask]`, the
/// placements in the same order).
pub fn attach_hosts(
    snapshot: &mut Snapshot,
    placements: &[Vec<Option<String>>],
    hosts: &HashMap<String, HostSample>,
) {
    for (subs, placed) in snapshot.iter_mut().zip(placements) {
        for (s, tm) in subs.iter_mut().zip(placed) {
            s.host = tm.as_ref().and_then(|t| hosts.get(t)).cloned();
        }
    }
}

/// The `/taskmanagers` entry of `tm`.
pub fn taskmanager_info<'a>(tms: &'a TaskManagersInfo, tm: &str) -> Option<&'a TaskManagerInfo> {
    tms.taskmanagers.iter().find(|i| i.id == tm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tms(assigned: &[(&str, i64)]) -> TaskManagersInfo {
        let list: Vec<Value> = assigned
            .iter()
            .map(|(id, n)| json!({"id": id, "assignedTasks": n, "hardware": {"cpuCores": 2}}))
            .collect();
        shape(&json!({ "taskmanagers": list }))
    }

    #[test]
    fn a_taskmanager_is_a_vertexs_alone_only_when_it_runs_nothing_else() {
        let some = |t: &str| Some(t.to_string());
        // Vertex 0 on tm-a; vertex 1's two subtasks on tm-b; vertex 2 shares tm-c with vertex 1.
        let placements = vec![
            vec![some("tm-a")],
            vec![some("tm-b"), some("tm-b"), some("tm-c")],
            vec![some("tm-c")],
        ];
        let alone = alone_tasks(&placements, &tms(&[("tm-a", 1), ("tm-b", 2), ("tm-c", 2)]));
        assert_eq!(alone.get("tm-a"), Some(&1));
        assert_eq!(alone.get("tm-b"), Some(&2));
        assert_eq!(alone.get("tm-c"), None, "two vertices share it");
        // Another job's task on tm-a: its CPU is no longer this vertex's.
        let alone = alone_tasks(&placements, &tms(&[("tm-a", 2), ("tm-b", 2)]));
        assert_eq!(alone.get("tm-a"), None);
    }

    #[test]
    fn the_old_generation_counts_whichever_collector_the_jvm_runs() {
        let metrics = json!([
            {"id": GC_TIME, "value": "120.5"},
            {"id": "Status.JVM.GarbageCollector.PS_MarkSweep.Count", "value": "7"},
            {"id": CPU_LOAD, "value": "-1.0"}
        ]);
        let info = tms(&[("tm", 1)]);
        let h = host_sample(
            "tm",
            taskmanager_info(&info, "tm"),
            Some(&metrics),
            None,
            None,
        );
        assert_eq!(h.gc_ms, Some(120.5));
        assert_eq!(h.old_gc_count, Some(7.0));
        assert_eq!(h.cpu_load, None, "the JVM's -1: not available");
        assert_eq!(h.cores, Some(2.0));
    }
}
