//! Execution states and times: Flink's state names and key orders, per-state subtask counts,
//! a vertex's aggregate state, job status, and start/end/duration of subtasks, vertices, jobs.

use sluice_runtime::TaskMetrics;
use sluice_runtime::{JobMonitor, JobOutcome};

/// Execution states in Flink's `ExecutionState` declaration order.
pub(super) const EXEC_STATES: [&str; 10] = [
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
];

/// Per-state counts in the key order Flink 2.3 serialises vertex `tasks` / `status-counts`.
pub(super) const TASKS_KEY_ORDER: [&str; 10] = [
    "FINISHED",
    "CREATED",
    "FAILED",
    "INITIALIZING",
    "SCHEDULED",
    "DEPLOYING",
    "CANCELING",
    "RECONCILING",
    "RUNNING",
    "CANCELED",
];

/// Job status key order of `/jobs/:id` `timestamps`.
pub(super) const JOB_TIMESTAMP_ORDER: [&str; 11] = [
    "INITIALIZING",
    "RUNNING",
    "FAILED",
    "FINISHED",
    "FAILING",
    "CREATED",
    "SUSPENDED",
    "RESTARTING",
    "CANCELED",
    "RECONCILING",
    "CANCELLING",
];

#[derive(Clone, Copy, Default)]
pub(super) struct StateCounts([usize; 10]);

impl StateCounts {
    pub(super) fn add(&mut self, state: &str) {
        if let Some(i) = EXEC_STATES.iter().position(|s| *s == state) {
            self.0[i] += 1;
        }
    }
    pub(super) fn get(&self, state: &str) -> usize {
        EXEC_STATES
            .iter()
            .position(|s| s.eq_ignore_ascii_case(state))
            .map_or(0, |i| self.0[i])
    }
    pub(super) fn total(&self) -> usize {
        self.0.iter().sum()
    }
    pub(super) fn merge(&mut self, o: &StateCounts) {
        for i in 0..10 {
            self.0[i] += o.0[i];
        }
    }
    /// The counts in Flink's key order, as the shapes hold them.
    pub(super) fn map(&self) -> sluice_rest_api::OrderedMap<u64> {
        TASKS_KEY_ORDER
            .into_iter()
            .map(|k| (k.to_string(), self.get(k) as u64))
            .collect()
    }
    /// Flink's `ExecutionJobVertex.getAggregateJobVertexState`.
    pub(super) fn aggregate_state(&self, parallelism: usize) -> &'static str {
        if self.get("FAILED") > 0 {
            "FAILED"
        } else if self.get("CANCELING") > 0 {
            "CANCELING"
        } else if self.get("CANCELED") > 0 {
            "CANCELED"
        } else if self.get("INITIALIZING") > 0 {
            "INITIALIZING"
        } else if self.get("RUNNING") > 0 {
            "RUNNING"
        } else if self.get("FINISHED") > 0 {
            if self.get("FINISHED") == parallelism {
                "FINISHED"
            } else {
                "RUNNING"
            }
        } else {
            "CREATED"
        }
    }
}

pub(super) fn vertex_counts(m: &JobMonitor, vertex: usize) -> StateCounts {
    subtask_counts(
        m,
        vertex,
        &(0..m.subtasks[vertex].len()).collect::<Vec<_>>(),
    )
}

/// The states of some subtasks of a vertex (those of one TaskManager).
pub(super) fn subtask_counts(m: &JobMonitor, vertex: usize, subtasks: &[usize]) -> StateCounts {
    let mut c = StateCounts::default();
    for t in subtasks.iter().filter_map(|&i| m.subtasks[vertex].get(i)) {
        c.add(t.state().as_str());
    }
    c
}

pub(super) fn job_counts(m: &JobMonitor) -> StateCounts {
    let mut c = StateCounts::default();
    for v in 0..m.subtasks.len() {
        c.merge(&vertex_counts(m, v));
    }
    c
}

/// Flink job status: `CANCELLING` between a cancel request and the end of the job.
pub fn job_state(m: &JobMonitor) -> &'static str {
    match m.outcome() {
        JobOutcome::Running if m.control.is_cancelled() => "CANCELLING",
        o => o.status(),
    }
}

pub(super) fn ms_or_minus_one(v: u64) -> i64 {
    if v == 0 {
        -1
    } else {
        v.min(i64::MAX as u64) as i64
    }
}

/// `(start, end)` of a subtask, −1 where not (yet) reached.
pub(super) fn subtask_times(t: &TaskMetrics) -> (i64, i64) {
    use std::sync::atomic::Ordering::Relaxed;
    (
        ms_or_minus_one(t.started_ms.load(Relaxed)),
        ms_or_minus_one(t.ended_ms.load(Relaxed)),
    )
}

pub(super) fn duration(start: i64, end: i64, now: i64) -> i64 {
    if start < 0 {
        -1
    } else if end >= 0 {
        (end - start).max(0)
    } else {
        (now - start).max(0)
    }
}

pub(super) struct JobTimes {
    pub start: i64,
    pub end: i64,
    pub duration: i64,
}

pub(super) fn job_times(m: &JobMonitor, now: i64) -> JobTimes {
    let start = m.start_time_ms as i64;
    let end = m.outcome().end_time_ms().map_or(-1, |e| e as i64);
    JobTimes {
        start,
        end,
        duration: duration(start, end, now),
    }
}

pub(super) fn last_modification(m: &JobMonitor) -> i64 {
    let mut t = m.start_time_ms as i64;
    for v in &m.subtasks {
        for s in v {
            let (a, b) = subtask_times(s);
            t = t.max(a).max(b);
        }
    }
    if let Some(e) = m.outcome().end_time_ms() {
        t = t.max(e as i64);
    }
    t
}

pub(super) fn vertex_times(m: &JobMonitor, vertex: usize, now: i64) -> (i64, i64, i64) {
    subtask_span(
        m,
        vertex,
        &(0..m.subtasks[vertex].len()).collect::<Vec<_>>(),
        now,
    )
}

/// Start, end and duration of some subtasks of a vertex together (those of one TaskManager).
pub(super) fn subtask_span(
    m: &JobMonitor,
    vertex: usize,
    subtasks: &[usize],
    now: i64,
) -> (i64, i64, i64) {
    let times: Vec<(i64, i64)> = subtasks
        .iter()
        .filter_map(|&i| m.subtasks[vertex].get(i))
        .map(|t| subtask_times(t))
        .collect();
    let start = times
        .iter()
        .filter(|(s, _)| *s >= 0)
        .map(|(s, _)| *s)
        .min()
        .unwrap_or(-1);
    let end = if !times.is_empty() && times.iter().all(|(_, e)| *e >= 0) {
        times.iter().map(|(_, e)| *e).max().unwrap_or(-1)
    } else {
        -1
    };
    (start, end, duration(start, end, now))
}
