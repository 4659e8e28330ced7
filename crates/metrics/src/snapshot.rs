//! Plain-data views of a job's metrics at one update (serde: a process of a split job sends
//! its subtasks' to process 0, see [`crate::report`]).

use serde::{Deserialize, Serialize};

/// One operator inside a chained subtask.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OperatorSnapshot {
    /// The operator's name, as in the job graph.
    pub name: String,
    /// Records the operator received so far.
    pub records_in: u64,
    /// Records the operator received per second over the last update interval.
    pub records_in_per_second: f64,
    /// Time spent in this operator itself (excluding chained successors), ms per second.
    pub busy_ms_per_second: f64,
    /// Total exclusive time spent in this operator so far, ms.
    pub accumulated_busy_ms: f64,
}

/// One subtask, with Flink's metric semantics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubtaskSnapshot {
    /// Index of the subtask within its vertex.
    pub subtask: usize,
    /// Flink execution state (`as_str`: `RUNNING`, `FINISHED`, ...).
    pub state: crate::TaskState,
    /// Wall-clock ms since the Unix epoch when the subtask started; -1 before it starts.
    pub start_time_ms: i64,
    /// -1 while running.
    pub end_time_ms: i64,
    /// Flink's `busyTimeMsPerSecond`: time neither idle nor backpressured.
    pub busy_ms_per_second: f64,
    /// Flink's `backPressuredTimeMsPerSecond`: time waiting for output credit.
    pub backpressured_ms_per_second: f64,
    /// Flink's `softBackPressuredTimeMsPerSecond` (always 0: all backpressured time counts as hard).
    pub soft_backpressured_ms_per_second: f64,
    /// Flink's `hardBackPressuredTimeMsPerSecond` (all backpressured time, see the soft one).
    pub hard_backpressured_ms_per_second: f64,
    /// Flink's `idleTimeMsPerSecond`: time waiting for input.
    pub idle_ms_per_second: f64,
    /// Flink's `maxHardBackPressureTimeMs`: the longest single wait for credit since the last update.
    pub max_hard_backpressure_ms: f64,
    /// Total busy time since the subtask started, ms.
    pub accumulated_busy_ms: f64,
    /// Total backpressured time since the subtask started, ms.
    pub accumulated_backpressured_ms: f64,
    /// Total idle time since the subtask started, ms.
    pub accumulated_idle_ms: f64,
    /// Flink's `isBackPressured`.
    pub is_backpressured: bool,
    /// Flink's `numRecordsIn`.
    pub records_in: u64,
    /// Flink's `numRecordsOut`.
    pub records_out: u64,
    /// Flink's `numBytesIn`.
    pub bytes_in: u64,
    /// Flink's `numBytesOut`.
    pub bytes_out: u64,
    /// Flink's `numBuffersOut`.
    pub buffers_out: u64,
    /// Flink's `numRecordsInPerSecond`.
    pub records_in_per_second: f64,
    /// Flink's `numRecordsOutPerSecond`.
    pub records_out_per_second: f64,
    /// Flink's `numBytesInPerSecond`.
    pub bytes_in_per_second: f64,
    /// Flink's `numBytesOutPerSecond`.
    pub bytes_out_per_second: f64,
    /// Flink's `numBuffersOutPerSecond`.
    pub buffers_out_per_second: f64,
    /// Bytes and buffers received on channels from this process (`local`) and from another
    /// process of a split job (`remote`): Flink's `numBytesInLocal` / `numBytesInRemote` /
    /// `numBuffersInLocal` / `numBuffersInRemote`, and their per-second meters.
    pub bytes_in_local: u64,
    /// Flink's `numBytesInRemote`.
    pub bytes_in_remote: u64,
    /// Flink's `numBuffersInLocal`.
    pub buffers_in_local: u64,
    /// Flink's `numBuffersInRemote`.
    pub buffers_in_remote: u64,
    /// Flink's `numBytesInLocalPerSecond`.
    pub bytes_in_local_per_second: f64,
    /// Flink's `numBytesInRemotePerSecond`.
    pub bytes_in_remote_per_second: f64,
    /// Flink's `numBuffersInLocalPerSecond`.
    pub buffers_in_local_per_second: f64,
    /// Flink's `numBuffersInRemotePerSecond`.
    pub buffers_in_remote_per_second: f64,
    /// Used input credits / input pool size (0 for sources).
    pub in_pool_usage: f64,
    /// Buffers in flight on output channels / credits granted to them (0 for sinks).
    pub out_pool_usage: f64,
    /// Flink's `inputQueueLength`: buffers queued on the input channels.
    pub input_queue_length: u64,
    /// Flink's `outputQueueLength`: buffers queued on the output channels.
    pub output_queue_length: u64,
    /// Flink's `inputExclusiveBuffersUsage` / `inputFloatingBuffersUsage`: the input buffers
    /// in flight holding the channels' exclusive credits / the gate's floating ones, over
    /// their numbers (0 for sources).
    #[serde(default)]
    pub input_exclusive_buffers_usage: f64,
    /// Flink's `inputFloatingBuffersUsage` (see the field above).
    #[serde(default)]
    pub input_floating_buffers_usage: f64,
    /// Flink's `inputQueueSize` / `outputQueueSize`: bytes of the buffers queued on the input /
    /// output channels.
    #[serde(default)]
    pub input_queue_size: u64,
    /// Flink's `outputQueueSize` (see the field above).
    #[serde(default)]
    pub output_queue_size: u64,
    /// Bytes shipped to the subtask's input gate and not yet released (queued or being
    /// processed); 0 for sources.
    pub in_flight_bytes: u64,
    /// Flink's `debloatedBufferSize`: the buffer size the input gate announced to its senders
    /// (the configured size unless debloating changed it; 0 for sources).
    pub debloated_buffer_size: u64,
    /// Flink's `estimatedTimeToConsumeBuffersMs` (0 unless debloating runs).
    pub estimated_time_to_consume_buffers_ms: u64,
    /// CPU time of the subtask's thread, ms per second (NaN where unavailable).
    pub cpu_ms_per_second: f64,
    /// Total CPU time of the subtask's thread, ms (NaN where unavailable).
    pub accumulated_cpu_ms: f64,
    /// Time the thread was runnable but waiting for a free CPU, ms per second (NaN where
    /// unavailable): busy time that is neither computing nor blocked — an oversubscribed machine.
    pub cpu_wait_ms_per_second: f64,
    /// Time in keyed-state calls, ms per second (estimated from sampled calls on the memory
    /// backend; `TaskMetrics::state_access_ns`).
    pub state_access_ms_per_second: f64,
    /// Time the network exchange spent encoding this subtask's outgoing buffers for other
    /// processes, ms per second (on the exchange's thread, not the task's; 0 when nothing
    /// crosses).
    #[serde(default)]
    pub serialization_ms_per_second: f64,
    /// Time the network exchange spent decoding the buffers this subtask receives from other
    /// processes, ms per second (on the connection's thread; 0 when nothing crosses).
    #[serde(default)]
    pub deserialization_ms_per_second: f64,
    /// The chained operators, head first.
    pub operators: Vec<OperatorSnapshot>,
}

/// One vertex: its subtasks in index order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexSnapshot {
    /// The vertex's index in the job graph.
    pub index: usize,
    /// The vertex's subtasks, by index.
    pub subtasks: Vec<SubtaskSnapshot>,
}

/// Flink's data-skew aggregate (docs/src/reference/flink-formats.md#data-skew): mean absolute
/// deviation over the mean, in percent,
/// capped at 100; 0 when the mean is 0.
pub fn data_skew_percent(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let n = values.len() as f64;
    let avg = values.iter().sum::<f64>() / n;
    if avg == 0.0 {
        return 0.0;
    }
    let mad = values.iter().map(|v| (v - avg).abs()).sum::<f64>() / n;
    (mad / avg * 100.0).min(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_matches_flinks_captured_aggregate() {
        // Flink 2.3 reported busyTimeMsPerSecond min 200, max 215 → skew 3.614457831325301.
        assert!((data_skew_percent(&[200.0, 215.0]) - 3.614457831325301).abs() < 1e-12);
        assert!((data_skew_percent(&[785.0, 800.0]) - 0.9463722397476341).abs() < 1e-12);
        assert_eq!(data_skew_percent(&[0.0, 0.0]), 0.0);
        assert_eq!(data_skew_percent(&[0.0, 0.0, 1000.0]), 100.0);
    }
}
