//! The metric catalogue: Flink's task- and operator-level metric names, how each value is
//! derived from a [`SubtaskSnapshot`] (and the live counters), and the Java type Flink gives it,
//! which decides how the value prints (`"800"` for a long, `"200.0"` for a double).

use sluice_doctor::flink_rest::sanitize_operator_name;
use sluice_plan::JobGraph;
use sluice_runtime::telemetry::{OperatorSnapshot, SubtaskSnapshot, VertexSnapshot};
use sluice_runtime::JobMonitor;
use sluice_runtime::TaskMetrics;
use std::sync::atomic::Ordering::Relaxed;

use crate::format::{java_double, java_float};

/// A metric value with the Java type Flink reports it as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Long(i64),
    Double(f64),
    Float(f32),
    Bool(bool),
}

impl Value {
    /// The string Flink's REST API shows (`String.valueOf` of the Java value).
    pub fn to_flink_string(self) -> String {
        match self {
            Value::Long(l) => l.to_string(),
            Value::Double(d) => java_double(d),
            Value::Float(f) => java_float(f),
            Value::Bool(b) => b.to_string(),
        }
    }

    /// The value as a number for aggregation (Flink parses the string as a double; booleans and
    /// NaN are skipped).
    pub fn as_number(self) -> Option<f64> {
        let v = match self {
            Value::Long(l) => l as f64,
            Value::Double(d) => d,
            Value::Float(f) => f as f64,
            Value::Bool(_) => return None,
        };
        v.is_finite().then_some(v)
    }

    /// The sample value in Prometheus text format (booleans as 0/1).
    pub fn to_prometheus(self) -> String {
        let f = match self {
            Value::Long(l) => return l.to_string(),
            Value::Bool(b) => return if b { "1" } else { "0" }.into(),
            Value::Double(d) => d,
            Value::Float(f) => f as f64,
        };
        if f.is_nan() {
            "NaN".into()
        } else if f.is_infinite() {
            if f > 0.0 { "+Inf" } else { "-Inf" }.into()
        } else {
            format!("{f}")
        }
    }
}

/// Prometheus metric type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

/// One subtask's data: the latest sample plus the live counters.
pub struct Subtask<'a> {
    pub snap: &'a SubtaskSnapshot,
    pub live: &'a TaskMetrics,
}

impl Subtask<'_> {
    fn sampled(&self) -> bool {
        self.snap.start_time_ms >= 0
    }
    /// Flink's timer gauges are longs (integer ms per second).
    fn idle(&self) -> i64 {
        timer_long(self.snap.idle_ms_per_second)
    }
    fn backpressured(&self) -> i64 {
        timer_long(self.snap.backpressured_ms_per_second)
    }
    /// Flink: `1000 − min(idle + backPressured, 1000)` over the long gauges, as a double.
    pub fn busy(&self) -> f64 {
        if !self.sampled() {
            return 0.0;
        }
        1000.0 - ((self.idle() + self.backpressured()) as f64).min(1000.0)
    }
    /// Backpressure ratio, idle ratio and busy ratio
    /// (docs/src/reference/flink-formats.md#backpressure-levels).
    pub fn ratios(&self) -> (f64, f64, f64) {
        (
            self.backpressured() as f64 / 1000.0,
            self.idle() as f64 / 1000.0,
            self.busy() / 1000.0,
        )
    }
}

fn timer_long(ms_per_s: f64) -> i64 {
    if ms_per_s.is_finite() {
        (ms_per_s + 1e-9).floor().clamp(0.0, 1000.0) as i64
    } else {
        0
    }
}

fn long(v: f64) -> i64 {
    if v.is_finite() {
        (v + 1e-9).floor() as i64
    } else {
        0
    }
}

fn count(v: u64) -> Value {
    Value::Long(v.min(i64::MAX as u64) as i64)
}

/// A task-scope metric.
pub struct TaskMetric {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    /// Not a Flink metric (a Sluice addition).
    pub extra: bool,
    pub get: fn(&Subtask) -> Value,
}

/// An operator-scope metric (`<operator>.<name>`).
pub struct OperatorMetric {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    pub extra: bool,
    pub get: fn(&OperatorSnapshot) -> Value,
}

use Kind::{Counter, Gauge};

#[rustfmt::skip]
pub static TASK_METRICS: &[TaskMetric] = &[
    TaskMetric { name: "busyTimeMsPerSecond", kind: Gauge, extra: false,
        help: "Time the task was busy (neither idle nor backpressured), ms per second",
        get: |s| Value::Double(s.busy()) },
    TaskMetric { name: "backPressuredTimeMsPerSecond", kind: Gauge, extra: false,
        help: "Time the task waited for output buffers (soft + hard), ms per second",
        get: |s| Value::Long(s.backpressured()) },
    TaskMetric { name: "idleTimeMsPerSecond", kind: Gauge, extra: false,
        help: "Time the task waited for input, ms per second",
        get: |s| Value::Long(s.idle()) },
    TaskMetric { name: "softBackPressuredTimeMsPerSecond", kind: Gauge, extra: false,
        help: "Time backpressured while still responsive, ms per second (always 0: Sluice blocks on credit)",
        get: |s| Value::Long(timer_long(s.snap.soft_backpressured_ms_per_second)) },
    TaskMetric { name: "hardBackPressuredTimeMsPerSecond", kind: Gauge, extra: false,
        help: "Time blocked waiting for an output credit, ms per second",
        get: |s| Value::Long(timer_long(s.snap.hard_backpressured_ms_per_second)) },
    TaskMetric { name: "maxSoftBackPressureTimeMs", kind: Gauge, extra: false,
        help: "Longest single soft-backpressure period in the last update interval, ms",
        get: |_| Value::Long(0) },
    TaskMetric { name: "maxHardBackPressureTimeMs", kind: Gauge, extra: false,
        help: "Longest single hard-backpressure period in the last update interval, ms",
        get: |s| Value::Long(long(s.snap.max_hard_backpressure_ms)) },
    TaskMetric { name: "accumulateBusyTimeMs", kind: Counter, extra: false,
        help: "Total busy time since the task started, ms",
        get: |s| Value::Double(s.snap.accumulated_busy_ms) },
    TaskMetric { name: "accumulateIdleTimeMs", kind: Counter, extra: false,
        help: "Total idle time since the task started, ms",
        get: |s| Value::Long(long(s.snap.accumulated_idle_ms)) },
    TaskMetric { name: "accumulateBackPressuredTimeMs", kind: Counter, extra: false,
        help: "Total backpressured time since the task started, ms",
        get: |s| Value::Long(long(s.snap.accumulated_backpressured_ms)) },
    TaskMetric { name: "isBackPressured", kind: Gauge, extra: false,
        help: "Whether the task is waiting for an output credit right now",
        get: |s| Value::Bool(s.snap.is_backpressured) },
    TaskMetric { name: "currentInputWatermark", kind: Gauge, extra: false,
        help: "The lowest watermark over the task's active inputs, ms (i64::MIN before the first)",
        get: |s| Value::Long(s.live.input_watermark.get()) },
    TaskMetric { name: "currentOutputWatermark", kind: Gauge, extra: true,
        help: "The last watermark the task sent downstream, ms (i64::MIN before the first; Flink has it per operator)",
        get: |s| Value::Long(s.live.output_watermark.get()) },
    TaskMetric { name: "numLateRecordsDropped", kind: Counter, extra: true,
        help: "Records dropped by the task's window operators because their windows had closed (Flink counts it per window operator)",
        get: |s| count(s.live.late_records_dropped.load(Relaxed)) },
    TaskMetric { name: "numRecordsIn", kind: Counter, extra: false,
        help: "Records the task received",
        get: |s| count(s.live.records_in.load(Relaxed)) },
    TaskMetric { name: "numRecordsInPerSecond", kind: Gauge, extra: false,
        help: "Records received per second (moving window)",
        get: |s| Value::Double(s.snap.records_in_per_second) },
    TaskMetric { name: "numRecordsOut", kind: Counter, extra: false,
        help: "Records the task emitted",
        get: |s| count(s.live.records_out.load(Relaxed)) },
    TaskMetric { name: "numRecordsOutPerSecond", kind: Gauge, extra: false,
        help: "Records emitted per second (moving window)",
        get: |s| Value::Double(s.snap.records_out_per_second) },
    TaskMetric { name: "numBytesIn", kind: Counter, extra: false,
        help: "Bytes the task received (in-memory record size)",
        get: |s| count(s.live.bytes_in.load(Relaxed)) },
    TaskMetric { name: "numBytesInPerSecond", kind: Gauge, extra: false,
        help: "Bytes received per second (moving window)",
        get: |s| Value::Double(s.snap.bytes_in_per_second) },
    TaskMetric { name: "numBytesOut", kind: Counter, extra: false,
        help: "Bytes the task emitted (in-memory record size)",
        get: |s| count(s.live.bytes_out.load(Relaxed)) },
    TaskMetric { name: "numBytesOutPerSecond", kind: Gauge, extra: false,
        help: "Bytes emitted per second (moving window)",
        get: |s| Value::Double(s.snap.bytes_out_per_second) },
    TaskMetric { name: "numBuffersOut", kind: Counter, extra: false,
        help: "Network buffers the task shipped",
        get: |s| count(s.snap.buffers_out) },
    TaskMetric { name: "numBuffersOutPerSecond", kind: Gauge, extra: false,
        help: "Network buffers shipped per second (moving window)",
        get: |s| Value::Double(s.snap.buffers_out_per_second) },
    TaskMetric { name: "numBytesInLocal", kind: Counter, extra: false,
        help: "Bytes received on channels from this process (in-memory record size)",
        get: |s| count(s.snap.bytes_in_local) },
    TaskMetric { name: "numBytesInLocalPerSecond", kind: Gauge, extra: false,
        help: "Bytes received on channels from this process, per second (moving window)",
        get: |s| Value::Double(s.snap.bytes_in_local_per_second) },
    TaskMetric { name: "numBytesInRemote", kind: Counter, extra: false,
        help: "Bytes received on channels from another process of a split job (in-memory record size)",
        get: |s| count(s.snap.bytes_in_remote) },
    TaskMetric { name: "numBytesInRemotePerSecond", kind: Gauge, extra: false,
        help: "Bytes received on channels from another process of a split job, per second (moving window)",
        get: |s| Value::Double(s.snap.bytes_in_remote_per_second) },
    TaskMetric { name: "numBuffersInLocal", kind: Counter, extra: false,
        help: "Buffers received on channels from this process",
        get: |s| count(s.snap.buffers_in_local) },
    TaskMetric { name: "numBuffersInLocalPerSecond", kind: Gauge, extra: false,
        help: "Buffers received on channels from this process, per second (moving window)",
        get: |s| Value::Double(s.snap.buffers_in_local_per_second) },
    TaskMetric { name: "numBuffersInRemote", kind: Counter, extra: false,
        help: "Buffers received on channels from another process of a split job",
        get: |s| count(s.snap.buffers_in_remote) },
    TaskMetric { name: "numBuffersInRemotePerSecond", kind: Gauge, extra: false,
        help: "Buffers received on channels from another process of a split job, per second (moving window)",
        get: |s| Value::Double(s.snap.buffers_in_remote_per_second) },
    TaskMetric { name: "Shuffle.Netty.Input.numBytesInLocal", kind: Counter, extra: false,
        help: "Bytes received on channels from this process (in-memory record size)",
        get: |s| count(s.snap.bytes_in_local) },
    TaskMetric { name: "Shuffle.Netty.Input.numBytesInLocalPerSecond", kind: Gauge, extra: false,
        help: "Bytes received on channels from this process, per second (moving window)",
        get: |s| Value::Double(s.snap.bytes_in_local_per_second) },
    TaskMetric { name: "Shuffle.Netty.Input.numBytesInRemote", kind: Counter, extra: false,
        help: "Bytes received on channels from another process of a split job (in-memory record size)",
        get: |s| count(s.snap.bytes_in_remote) },
    TaskMetric { name: "Shuffle.Netty.Input.numBytesInRemotePerSecond", kind: Gauge, extra: false,
        help: "Bytes received on channels from another process of a split job, per second (moving window)",
        get: |s| Value::Double(s.snap.bytes_in_remote_per_second) },
    TaskMetric { name: "Shuffle.Netty.Input.numBuffersInLocal", kind: Counter, extra: false,
        help: "Buffers received on channels from this process",
        get: |s| count(s.snap.buffers_in_local) },
    TaskMetric { name: "Shuffle.Netty.Input.numBuffersInLocalPerSecond", kind: Gauge, extra: false,
        help: "Buffers received on channels from this process, per second (moving window)",
        get: |s| Value::Double(s.snap.buffers_in_local_per_second) },
    TaskMetric { name: "Shuffle.Netty.Input.numBuffersInRemote", kind: Counter, extra: false,
        help: "Buffers received on channels from another process of a split job",
        get: |s| count(s.snap.buffers_in_remote) },
    TaskMetric { name: "Shuffle.Netty.Input.numBuffersInRemotePerSecond", kind: Gauge, extra: false,
        help: "Buffers received on channels from another process of a split job, per second (moving window)",
        get: |s| Value::Double(s.snap.buffers_in_remote_per_second) },
    TaskMetric { name: "Shuffle.Netty.Input.Buffers.inPoolUsage", kind: Gauge, extra: false,
        help: "Used input credits / input pool size",
        get: |s| Value::Float(s.snap.in_pool_usage as f32) },
    TaskMetric { name: "Shuffle.Netty.Output.Buffers.outPoolUsage", kind: Gauge, extra: false,
        help: "Buffers in flight on output channels / credits granted to them",
        get: |s| Value::Float(s.snap.out_pool_usage as f32) },
    TaskMetric { name: "Shuffle.Netty.Input.Buffers.inputQueueLength", kind: Gauge, extra: false,
        help: "Buffers queued on the input channels",
        get: |s| count(s.snap.input_queue_length) },
    TaskMetric { name: "Shuffle.Netty.Output.Buffers.outputQueueLength", kind: Gauge, extra: false,
        help: "Buffers queued on the output channels",
        get: |s| count(s.snap.output_queue_length) },
    TaskMetric { name: "Shuffle.Netty.Input.Buffers.inputExclusiveBuffersUsage", kind: Gauge, extra: false,
        help: "Input buffers in flight on the channels' exclusive credits / exclusive credits",
        get: |s| Value::Float(s.snap.input_exclusive_buffers_usage as f32) },
    TaskMetric { name: "Shuffle.Netty.Input.Buffers.inputFloatingBuffersUsage", kind: Gauge, extra: false,
        help: "Input buffers in flight on the gate's floating credits / floating credits",
        get: |s| Value::Float(s.snap.input_floating_buffers_usage as f32) },
    TaskMetric { name: "Shuffle.Netty.Input.Buffers.inputQueueSize", kind: Gauge, extra: false,
        help: "Bytes of the buffers queued on the input channels",
        get: |s| count(s.snap.input_queue_size) },
    TaskMetric { name: "Shuffle.Netty.Output.Buffers.outputQueueSize", kind: Gauge, extra: false,
        help: "Bytes of the buffers queued on the output channels",
        get: |s| count(s.snap.output_queue_size) },
    TaskMetric { name: "Shuffle.Netty.Input.0.debloatedBufferSize", kind: Gauge, extra: false,
        help: "Buffer size the input gate announced to its senders (buffer debloating), bytes",
        get: |s| Value::Long(s.snap.debloated_buffer_size as i64) },
    TaskMetric { name: "Shuffle.Netty.Input.0.estimatedTimeToConsumeBuffersMs", kind: Gauge, extra: false,
        help: "Estimated time to consume the data in flight before the input gate (buffer debloating), ms",
        get: |s| Value::Long(s.snap.estimated_time_to_consume_buffers_ms as i64) },
    TaskMetric { name: "Shuffle.Netty.Input.0.inFlightBytes", kind: Gauge, extra: true,
        help: "Bytes shipped to the input gate and not yet processed",
        get: |s| Value::Long(s.snap.in_flight_bytes as i64) },
    TaskMetric { name: "cpuTimeMsPerSecond", kind: Gauge, extra: true,
        help: "CPU time of the task thread, ms per second (NaN where unavailable)",
        get: |s| Value::Double(s.snap.cpu_ms_per_second) },
    TaskMetric { name: "accumulateCpuTimeMs", kind: Counter, extra: true,
        help: "Total CPU time of the task thread, ms (NaN where unavailable)",
        get: |s| Value::Double(s.snap.accumulated_cpu_ms) },
    TaskMetric { name: "cpuWaitTimeMsPerSecond", kind: Gauge, extra: true,
        help: "Time the task thread was runnable but waiting for a free CPU, ms per second (NaN where unavailable)",
        get: |s| Value::Double(s.snap.cpu_wait_ms_per_second) },
    TaskMetric { name: "stateAccessTimeMsPerSecond", kind: Gauge, extra: true,
        help: "Time in keyed-state calls, ms per second (sampled on the memory backend)",
        get: |s| Value::Double(s.snap.state_access_ms_per_second) },
    TaskMetric { name: "serializationTimeMsPerSecond", kind: Gauge, extra: true,
        help: "Time the network exchange spent encoding the subtask's buffers for other processes, ms per second",
        get: |s| Value::Double(s.snap.serialization_ms_per_second) },
    TaskMetric { name: "deserializationTimeMsPerSecond", kind: Gauge, extra: true,
        help: "Time the network exchange spent decoding the buffers the subtask receives from other processes, ms per second",
        get: |s| Value::Double(s.snap.deserialization_ms_per_second) },
];

#[rustfmt::skip]
pub static OPERATOR_METRICS: &[OperatorMetric] = &[
    OperatorMetric { name: "numRecordsIn", kind: Counter, extra: false,
        help: "Records the operator received",
        get: |o| count(o.records_in) },
    OperatorMetric { name: "numRecordsInPerSecond", kind: Gauge, extra: false,
        help: "Records the operator received per second (moving window)",
        get: |o| Value::Double(o.records_in_per_second) },
    OperatorMetric { name: "busyTimeMsPerSecond", kind: Gauge, extra: true,
        help: "Time spent in the operator itself (chained successors excluded), ms per second (sampled)",
        get: |o| Value::Double(o.busy_ms_per_second) },
    OperatorMetric { name: "accumulateBusyTimeMs", kind: Counter, extra: true,
        help: "Total time spent in the operator itself, ms (sampled)",
        get: |o| Value::Double(o.accumulated_busy_ms) },
];

/// The operators of a vertex in chain order: `(name, metric-scope name)`, without duplicate
/// scope names (Flink reuses the first group of a name).
pub fn operators(graph: &JobGraph, vertex: usize) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for nid in &graph.vertices[vertex].nodes {
        let name = graph.nodes[nid].name.clone();
        let scope = sanitize_operator_name(&name);
        if !out.iter().any(|(_, s)| *s == scope) {
            out.push((name, scope));
        }
    }
    out
}

/// Every metric name of a subtask of `vertex` (task metrics, then per operator).
pub fn subtask_metric_names(graph: &JobGraph, vertex: usize) -> Vec<String> {
    let has_inputs = graph.edges.iter().any(|e| e.to_vertex == vertex);
    let mut names: Vec<String> = TASK_METRICS
        .iter()
        // Flink has no input watermark and no input gate metrics on a source task.
        .filter(|m| {
            has_inputs
                || (m.name != "currentInputWatermark"
                    && !m.name.starts_with("Shuffle.Netty.Input.0."))
        })
        .map(|m| m.name.to_string())
        .collect();
    for (_, scope) in operators(graph, vertex) {
        for m in OPERATOR_METRICS {
            names.push(format!("{scope}.{}", m.name));
        }
    }
    names
}

/// The operator gauges of a vertex's subtasks (a source's FLIP-33 metrics and the like), by
/// their subtask-scope name `<operator scope>.<name>`, in registration order, without
/// duplicates (the union over subtasks: an idle source subtask has fewer).
pub fn gauge_metric_names(monitor: &JobMonitor, vertex: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in monitor.subtasks.get(vertex).into_iter().flatten() {
        for g in t.gauges() {
            let n = gauge_scope_name(&g);
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// `<operator scope>.<name>` of a gauge.
pub fn gauge_scope_name(g: &sluice_runtime::OperatorGauge) -> String {
    format!("{}.{}", sanitize_operator_name(&g.operator), g.name)
}

/// The snapshot of operator `name` in a subtask (zeros before the subtask has started).
pub fn operator_snapshot(snap: &SubtaskSnapshot, name: &str) -> OperatorSnapshot {
    snap.operators
        .iter()
        .find(|o| o.name == name)
        .cloned()
        .unwrap_or_else(|| OperatorSnapshot {
            name: name.to_string(),
            ..Default::default()
        })
}

/// A job's data at one moment: the latest metric snapshot of every subtask.
pub struct JobData<'a> {
    pub monitor: &'a JobMonitor,
    pub vertices: Vec<VertexSnapshot>,
}

impl<'a> JobData<'a> {
    pub fn new(monitor: &'a JobMonitor) -> JobData<'a> {
        JobData {
            monitor,
            vertices: monitor.vertex_metrics(),
        }
    }

    pub fn graph(&self) -> &JobGraph {
        &self.monitor.graph
    }

    pub fn subtask(&self, vertex: usize, subtask: usize) -> Option<Subtask<'_>> {
        let snap = self.vertices.get(vertex)?.subtasks.get(subtask)?;
        let live = self.monitor.subtasks.get(vertex)?.get(subtask)?;
        Some(Subtask { snap, live })
    }

    pub fn parallelism(&self, vertex: usize) -> usize {
        self.monitor.subtasks.get(vertex).map_or(0, |v| v.len())
    }

    /// Every metric name of a subtask of `vertex`: [`subtask_metric_names`], then the
    /// connector gauges its tasks registered (e.g. `pendingDeliveries`), then the operator
    /// gauges (`Source__x.pendingRecords`; an operator gauge named like a catalogue operator
    /// metric, a source's `numRecordsIn`, answers for it).
    pub fn metric_names(&self, vertex: usize) -> Vec<String> {
        let mut names = subtask_metric_names(self.graph(), vertex);
        for i in 0..self.parallelism(vertex) {
            let Some(live) = self.monitor.subtasks.get(vertex).and_then(|v| v.get(i)) else {
                continue;
            };
            for (n, _) in live.connector_gauge_values() {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        // Operator-scope gauges (a Kafka source's FLIP-33 metrics).
        for n in gauge_metric_names(self.monitor, vertex) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        names
    }

    /// The value of a subtask-scope metric (`busyTimeMsPerSecond`, `map.numRecordsIn`, a
    /// connector gauge).
    pub fn value(&self, vertex: usize, subtask: usize, name: &str) -> Option<Value> {
        let s = self.subtask(vertex, subtask)?;
        if let Some(g) = s.live.gauges().iter().find(|g| gauge_scope_name(g) == name) {
            return Some(Value::Long(g.get()));
        }
        if let Some(m) = TASK_METRICS.iter().find(|m| m.name == name) {
            return Some((m.get)(&s));
        }
        if let Some((_, v)) = s
            .live
            .connector_gauge_values()
            .into_iter()
            .find(|(n, _)| n == name)
        {
            return Some(Value::Long(v));
        }
        let (scope, metric) = name.split_once('.')?;
        let m = OPERATOR_METRICS.iter().find(|m| m.name == metric)?;
        let (op, _) = operators(self.graph(), vertex)
            .into_iter()
            .find(|(_, sc)| sc == scope)?;
        Some((m.get)(&operator_snapshot(s.snap, &op)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_flinks_java_types() {
        assert_eq!(Value::Long(800).to_flink_string(), "800");
        assert_eq!(Value::Double(200.0).to_flink_string(), "200.0");
        assert_eq!(Value::Float(1.0).to_flink_string(), "1.0");
        assert_eq!(Value::Bool(true).to_flink_string(), "true");
        assert_eq!(Value::Bool(true).as_number(), None);
        assert_eq!(Value::Double(f64::NAN).as_number(), None);
        assert_eq!(Value::Double(f64::NAN).to_prometheus(), "NaN");
        assert_eq!(Value::Bool(true).to_prometheus(), "1");
    }

    #[test]
    fn timer_gauges_are_integer_ms() {
        assert_eq!(timer_long(785.9), 785);
        assert_eq!(timer_long(999.9999999999), 1000);
        assert_eq!(timer_long(f64::NAN), 0);
    }
}
