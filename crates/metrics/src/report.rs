//! What a process of a split job reports to process 0 after every metrics update: its own
//! figures ([`ProcessStats`]) and its subtasks' snapshots and live counters
//! ([`SubtaskReport`]). Plain data (serde); it crosses on the checkpoint hubs' link
//! (`sluice-checkpoint`'s `HubMessage::Metrics`), and `sluice-runtime`'s `telemetry::cluster`
//! builds and reads it.

use serde::{Deserialize, Serialize};

use crate::hot_keys::HotKeysSnapshot;
use crate::snapshot::SubtaskSnapshot;

/// What a process says of itself in every report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessStats {
    /// The process's OS id.
    pub pid: u32,
    /// CPUs available to the process (1 where unknown).
    pub cpu_cores: u32,
    /// Bytes; -1 where unknown.
    pub physical_memory: i64,
    /// Bytes available for new allocations (`MemAvailable`); -1 where unknown.
    pub free_memory: i64,
    /// The subtasks it runs.
    pub subtasks: u32,
}

impl ProcessStats {
    /// This process's figures now.
    pub fn current(subtasks: usize) -> ProcessStats {
        ProcessStats {
            pid: std::process::id(),
            cpu_cores: std::thread::available_parallelism().map_or(1, |n| n.get()) as u32,
            physical_memory: meminfo_bytes("MemTotal:"),
            free_memory: meminfo_bytes("MemAvailable:"),
            subtasks: subtasks as u32,
        }
    }
}

/// A `/proc/meminfo` line's value in bytes, -1 where unavailable.
pub fn meminfo_bytes(key: &str) -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map_or(-1, |kb| kb.saturating_mul(1024))
}

/// An operator gauge as it crosses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GaugeReport {
    /// The operator's name, as in the job graph.
    pub operator: String,
    /// The metric's name inside the operator scope.
    pub name: String,
    /// A running total rather than a point-in-time value (the Prometheus type).
    pub counter: bool,
    /// Help text for the Prometheus export.
    pub help: String,
    /// The value at the time of the report.
    pub value: i64,
}

/// One subtask as its process reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubtaskReport {
    /// Index of the subtask's vertex in the job graph.
    pub vertex: u32,
    /// Index of the subtask within its vertex.
    pub subtask: u32,
    /// The per-second view of the subtask at this update.
    pub snapshot: SubtaskSnapshot,
    /// Wall-clock ms since the Unix epoch when the subtask started; 0 = not yet.
    pub started_ms: u64,
    /// Wall-clock ms since the Unix epoch when the subtask ended; 0 = not yet.
    pub ended_ms: u64,
    /// Records read so far (live counter, not a rate).
    pub records_in: u64,
    /// Records emitted so far (live counter, not a rate).
    pub records_out: u64,
    /// Bytes read so far (live counter, not a rate).
    pub bytes_in: u64,
    /// Bytes written so far (live counter, not a rate).
    pub bytes_out: u64,
    /// Flink's `currentInputWatermark` (`i64::MIN` before the first).
    pub input_watermark: i64,
    /// Flink's `currentOutputWatermark` (`i64::MIN` before the first).
    pub output_watermark: i64,
    /// Records dropped for arriving after their windows closed (`numLateRecordsDropped`).
    pub late_records_dropped: u64,
    /// The keyed operator's latest hot-key snapshot; `None` for non-keyed subtasks.
    pub hot_keys: Option<HotKeysSnapshot>,
    /// Connector gauges by name, with their values at the report.
    pub connector_gauges: Vec<(String, i64)>,
    /// Operator-scope metrics beyond the fixed catalogue.
    pub gauges: Vec<GaugeReport>,
}

/// Everything one process reports after a metrics update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessReport {
    /// Index of the reporting process in the split job (0 is the one that collects).
    pub process: u32,
    /// The process's own figures.
    pub stats: ProcessStats,
    /// Every subtask the process runs.
    pub subtasks: Vec<SubtaskReport>,
}
