//! What the JVM of the TaskManager hosting the bottleneck says (a Flink cluster's
//! `Status.JVM.*` metrics, see [`crate::flink_rest::taskmanagers`]): garbage collection that
//! stalls the task thread, and the process's CPU where the bottleneck's vertex lives alone on it.
//!
//! Flink reports GC time per TaskManager, not per task, and as a rate its metric system averages
//! over several seconds, so the doctor cannot line single pauses up with single samples; what it lines up
//! is the bottleneck's busy time with the GC time of the process it runs in: a stop-the-world
//! pause stops the task thread mid-record, and Flink counts that time as busy.

use super::{Breakdown, Finding};
use crate::{pct, Cause, FixProposal, HostSample, GC_STALL_MS};

/// A heap at least this full at its peak adds to a GC-stall verdict's confidence.
pub const HEAP_FULL: f64 = 0.7;

const MB: f64 = 1024.0 * 1024.0;

/// The hot subtasks' TaskManager with the most GC time (any, when none reports GC time).
pub(super) fn hot_host(b: &Breakdown) -> Option<HostSample> {
    b.hot
        .iter()
        .filter_map(|&i| b.v.subtasks[i].host.as_ref())
        .max_by(|x, y| x.gc_ms.unwrap_or(-1.0).total_cmp(&y.gc_ms.unwrap_or(-1.0)))
        .cloned()
}

/// CPU per busy subtask from its TaskManager's process CPU load, when every hot subtask runs
/// on a TaskManager that runs nothing but subtasks of this vertex (Flink reports no CPU time
/// per task): load × cores × 1000 ms/s, shared by those subtasks. With the evidence line.
pub(super) fn host_cpu(b: &Breakdown) -> Option<(f64, String)> {
    let hosts: Vec<&HostSample> = b
        .hot
        .iter()
        .map(|&i| b.v.subtasks[i].host.as_ref())
        .collect::<Option<_>>()?;
    let per_subtask: Vec<f64> = hosts
        .iter()
        .map(|h| Some(h.cpu_load? * h.cores? * 1000.0 / h.alone_tasks?.max(1.0)))
        .collect::<Option<_>>()?;
    let cpu = (per_subtask.iter().sum::<f64>() / per_subtask.len().max(1) as f64).min(1000.0);
    let h = hosts.first()?;
    let line = format!(
        "TaskManager `{}` runs only `{}` ({} task(s)): its process CPU load {:.0}% of {} cores \
         is {} CPU per subtask (Status.JVM.CPU.Load; Flink reports no CPU time per task)",
        h.taskmanager,
        b.v.name,
        h.alone_tasks.unwrap_or(1.0),
        h.cpu_load.unwrap_or(0.0) * 100.0,
        h.cores.unwrap_or(0.0),
        pct(cpu)
    );
    Some((cpu, line))
}

/// The TaskManager hosting the busy subtasks spends at least [`GC_STALL_MS`] of every second
/// collecting garbage: the task is stopped that long, counted as busy. Names the TaskManager;
/// the fixes are the JVM's: more heap, less allocation, object reuse, state off the heap.
pub(super) fn gc_stalls(b: &Breakdown) -> Option<Finding> {
    let h = b.host.as_ref()?;
    let gc = h.gc_ms?;
    if gc < GC_STALL_MS {
        return None;
    }
    let tm = &h.taskmanager;
    let subs: Vec<String> = b
        .hot
        .iter()
        .filter(|&&i| b.v.subtasks[i].host.as_ref().map(|x| &x.taskmanager) == Some(tm))
        .map(|i| format!("{}/{}", i + 1, b.p))
        .collect();
    let op = &b.op_or_vertex;
    let mut evidence = vec![format!(
        "TaskManager `{tm}`, which runs `{}` subtask(s) {}, spends {gc:.0} ms of every second \
         in garbage collection (Status.JVM.GarbageCollector.*): the JVM stops \
         the task thread in those pauses, so {} of its busy time ({}) is GC, not records",
        b.v.name,
        subs.join(", "),
        pct(1000.0 * gc / b.hot_busy.max(1.0)),
        pct(b.hot_busy)
    )];
    let fill = match (h.heap_used, h.heap_max) {
        (Some(u), Some(m)) if m > 0.0 => Some(u / m),
        _ => None,
    };
    if let (Some(f), Some(u), Some(m)) = (fill, h.heap_used, h.heap_max) {
        evidence.push(format!(
            "its heap is {:.0}% full at the peak ({:.0} MB used of {:.0} MB max)",
            f * 100.0,
            u / MB,
            m / MB
        ));
    }
    if let Some(n) = h.gc_in_window {
        let old = h
            .old_gc_in_window
            .map(|o| format!(", {o:.0} of them old-generation (full) collections"))
            .unwrap_or_default();
        evidence.push(format!(
            "{n:.0} collections during the {} samples{old}",
            b.sample_count
        ));
    }
    if let Some(k) = b.stall_samples {
        evidence.push(format!(
            "in {k} of {} samples the record rate fell below a third of its median while the \
             busy time stayed high: the pauses",
            b.sample_count
        ));
    }
    let others = other_hosts(b, tm);
    if !others.is_empty() {
        evidence.push(format!(
            "the job's other TaskManagers collect {}",
            others.join(", ")
        ));
    }
    if let (Some(n), Some(last)) = (h.failures, &h.last_failure) {
        evidence.push(format!(
            "the job failed {n:.0} time(s) on it (/jobs/:jid/exceptions), the latest: {last}"
        ));
    }
    let heap_now = h.task_heap.map(|t| (t / MB).round());
    let (heap_change, heap_line) = match heap_now {
        Some(now) if now > 0.0 => (
            format!("taskmanager.memory.task.heap.size: {:.0}m", now * 2.0),
            format!(
                "raise TaskManager `{tm}`'s heap: taskmanager.memory.task.heap.size from {now:.0} MB \
                 to {:.0} MB (or a larger taskmanager.memory.process.size)",
                now * 2.0
            ),
        ),
        _ => (
            "a larger taskmanager.memory.task.heap.size".to_string(),
            format!(
                "raise TaskManager `{tm}`'s heap (taskmanager.memory.task.heap.size, or \
                 taskmanager.memory.process.size)"
            ),
        ),
    };
    let confidence = if fill.is_some_and(|f| f >= HEAP_FULL) || b.stall_samples.is_some() {
        0.8
    } else {
        0.7
    };
    Some(Finding {
        operator: None,
        ..Finding::new(
            Cause::GcStalls {
                taskmanager: tm.clone(),
            },
            confidence,
            evidence,
            Some(FixProposal {
                description: format!(
                    "{heap_line}; allocate less per record in `{op}` (reuse objects and buffers \
                     instead of allocating per record; pipeline.object-reuse: true stops Flink \
                     copying records between chained operators); keep large state off the JVM \
                     heap (state.backend.type: rocksdb)"
                ),
                change: format!("{heap_change} on `{tm}`, less allocation per record in `{op}`"),
                plan_change: None,
            }),
            format!(
                "up to {} more of `{op}`'s time for records as the GC time falls; more \
                 parallelism on the same heap would stall the same way",
                pct(gc)
            ),
        )
    })
}

/// The job's other TaskManagers with their GC time, `` `tm` N ms/s ``.
fn other_hosts(b: &Breakdown, tm: &str) -> Vec<String> {
    let mut seen: Vec<(String, f64)> = Vec::new();
    for v in &b.job.vertices {
        for h in v.subtasks.iter().filter_map(|s| s.host.as_ref()) {
            if h.taskmanager != tm && !seen.iter().any(|(t, _)| *t == h.taskmanager) {
                if let Some(g) = h.gc_ms {
                    seen.push((h.taskmanager.clone(), g));
                }
            }
        }
    }
    seen.into_iter()
        .map(|(t, g)| format!("`{t}` {g:.0} ms/s"))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::tests::{idle2, job, sub};
    use crate::{diagnose, Cause, HostSample, SubtaskSample};

    fn on(mut s: SubtaskSample, tm: &str, gc: f64, alone: Option<f64>, load: f64) -> SubtaskSample {
        s.host = Some(HostSample {
            taskmanager: tm.to_string(),
            gc_ms: Some(gc),
            heap_used: Some(90.0 * super::MB),
            heap_max: Some(100.0 * super::MB),
            task_heap: Some(48.0 * super::MB),
            cpu_load: Some(load),
            cores: Some(4.0),
            alone_tasks: alone,
            ..HostSample::default()
        });
        s
    }

    fn agg_on(gc: f64, alone: Option<f64>, load: f64) -> crate::JobView {
        let agg = |_| on(sub(950.0, 0.0, 50.0, 1000.0), "tm-1", gc, alone, load);
        job(
            vec![sub(300.0, 700.0, 0.0, 2000.0); 2],
            (0..2).map(agg).collect(),
            idle2(),
        )
    }

    #[test]
    fn gc_time_on_the_hosting_taskmanager_is_a_gc_stall() {
        let d = diagnose(&agg_on(250.0, None, 0.5));
        assert_eq!(
            d.cause,
            Cause::GcStalls {
                taskmanager: "tm-1".into()
            }
        );
        assert_eq!(d.confidence, 0.8, "a heap 90 % full adds to it");
        assert!(d.fix.unwrap().change.contains("task.heap.size: 96m"));
        // A healthy JVM's GC (below GC_STALL_MS) is not a verdict.
        let d = diagnose(&agg_on(20.0, None, 0.5));
        assert_eq!(d.cause, Cause::UnderProvisioned);
    }

    #[test]
    fn without_flinks_gc_rate_the_window_growth_of_the_gc_time_counts() {
        // A Flink without `All.TimeMsPerSecond`: 3 samples (2 s) in which the collectors' total
        // time grew by 600 ms, 300 ms/s.
        let snapshot = |total: f64| {
            let mut j = agg_on(0.0, None, 0.5);
            for s in &mut j.vertices[1].subtasks {
                let h = s.host.as_mut().unwrap();
                h.gc_ms = None;
                h.gc_time_total = Some(total);
            }
            j.vertices
                .iter()
                .map(|v| v.subtasks.clone())
                .collect::<crate::Snapshot>()
        };
        let series = [snapshot(1000.0), snapshot(1250.0), snapshot(1600.0)];
        let d = crate::diagnose_window(&agg_on(0.0, None, 0.5), &series);
        assert_eq!(
            d.cause,
            Cause::GcStalls {
                taskmanager: "tm-1".into()
            },
            "{:#?}",
            d.evidence
        );
        assert!(d.evidence.iter().any(|l| l.contains("spends 300 ms")));
    }

    #[test]
    fn process_cpu_counts_only_where_the_vertex_lives_alone() {
        // 2 subtasks alone on a 4-core TaskManager at 10 % load: 200 ms/s CPU each of 950 busy.
        let d = diagnose(&agg_on(5.0, Some(2.0), 0.1));
        assert_eq!(d.cause, Cause::BlockingCalls, "{:#?}", d.evidence);
        assert!(d
            .evidence
            .iter()
            .any(|l| l.contains("runs only `agg` (2 task(s))")));
        // The same load on a TaskManager shared with other vertices says nothing about `agg`.
        let d = diagnose(&agg_on(5.0, None, 0.1));
        assert_eq!(d.cause, Cause::UnderProvisioned, "{:#?}", d.evidence);
        assert!(d.undetermined.iter().any(|u| u.starts_with("CPU time")));
    }
}
