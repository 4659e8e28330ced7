//! Per-subtask counters, written by the task thread (per buffer, not per record) and readable
//! from anywhere while the job runs. The per-second views are computed from these by
//! `sluice-runtime`'s `telemetry`.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use sluice_channel::{ChannelCounters, DebloatGauges, WaitTimes};

/// Execution state of a subtask (Flink's `ExecutionState`, the subset a local run goes through).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum TaskState {
    /// Deployed but not yet running.
    #[default]
    Created = 0,
    /// Its thread is processing input.
    Running = 1,
    /// Reached the end of its input and stopped.
    Finished = 2,
    /// Stopped on request before the end of its input.
    Canceled = 3,
    /// Stopped by an error.
    Failed = 4,
}

impl TaskState {
    /// Flink's upper-case name of the state, as REST reports it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Created => "CREATED",
            TaskState::Running => "RUNNING",
            TaskState::Finished => "FINISHED",
            TaskState::Canceled => "CANCELED",
            TaskState::Failed => "FAILED",
        }
    }
    fn from_u8(v: u8) -> TaskState {
        match v {
            1 => TaskState::Running,
            2 => TaskState::Finished,
            3 => TaskState::Canceled,
            4 => TaskState::Failed,
            _ => TaskState::Created,
        }
    }
}

/// Counters of one operator inside a chain. Time is sampled: one record in
/// [`OPERATOR_SAMPLE_EVERY`] is timed, inclusive of everything it triggers downstream in the chain;
/// the exclusive time of an operator is its inclusive time minus its chained successors'.
#[derive(Debug, Default)]
pub struct OperatorMetrics {
    /// The operator's name, as in the job graph.
    pub name: String,
    /// A source: its inclusive time is the task's whole busy time (it drives the chain).
    pub whole_task: std::sync::atomic::AtomicBool,
    /// Records the operator received.
    pub records_in: AtomicU64,
    /// Records that were timed (one in [`OPERATOR_SAMPLE_EVERY`]).
    pub sampled_records: AtomicU64,
    /// Inclusive time of the timed records, ns.
    pub sampled_ns: AtomicU64,
}

/// One record in this many is timed per operator.
pub const OPERATOR_SAMPLE_EVERY: u32 = 256;

impl OperatorMetrics {
    /// Counters for a new operator, shared between its chain and the readers.
    pub fn new(name: impl Into<String>) -> Arc<OperatorMetrics> {
        Arc::new(OperatorMetrics {
            name: name.into(),
            ..Default::default()
        })
    }

    /// Estimated inclusive time (ns) spent in this operator and what it called downstream.
    pub fn estimated_inclusive_ns(&self) -> f64 {
        let samples = self.sampled_records.load(Relaxed);
        if samples == 0 {
            return 0.0;
        }
        let per_record = self.sampled_ns.load(Relaxed) as f64 / samples as f64;
        per_record * self.records_in.load(Relaxed) as f64
    }
}

/// Counters of one subtask, shared between its task thread (writer) and the metric readers.
/// Survives restarts: the record, byte and time counters accumulate over the job's life.
#[derive(Debug, Default)]
pub struct TaskMetrics {
    /// Records the subtask read.
    pub records_in: AtomicU64,
    /// Records the subtask emitted.
    pub records_out: AtomicU64,
    /// Bytes the subtask read.
    pub bytes_in: AtomicU64,
    /// Bytes the subtask wrote.
    pub bytes_out: AtomicU64,
    /// Idle (waiting for input) and backpressured (waiting for output credit) time.
    pub waits: Arc<WaitTimes>,
    /// Counters of the channels this subtask reads (for the exchange-level metrics and tests).
    pub input_channels: Mutex<Vec<Arc<ChannelCounters>>>,
    /// Counters of the channels this subtask writes.
    pub output_channels: Mutex<Vec<Arc<ChannelCounters>>>,
    /// The buffer debloater's gauges of the subtask's input gate (none for sources).
    pub input_debloat: Mutex<Option<Arc<DebloatGauges>>>,
    /// Credits (buffers) the subtask's input gate can hold in total; 0 for sources.
    pub input_pool_size: AtomicU64,
    /// Of those, the channels' exclusive credits (the rest are the gate's floating ones).
    pub input_exclusive_size: AtomicU64,
    /// Credits the downstream gates grant this subtask's output channels in total.
    pub output_pool_size: AtomicU64,
    /// Operators of the chain in chain order (head first).
    pub operators: Mutex<Vec<Arc<OperatorMetrics>>>,
    /// `(operator index, chained successor index)` pairs inside the chain.
    pub operator_edges: Mutex<Vec<(usize, usize)>>,
    /// Linux thread id of the task thread (for per-thread CPU time), 0 until it starts.
    pub thread_id: AtomicU64,
    /// The task thread's pthread id (how the native stack sampler names threads), 0 until it
    /// is spawned.
    pub pthread_id: AtomicU64,
    /// Threads started for this subtask so far (attempts; Flink's `#<attempt>` is this − 1).
    pub threads_started: AtomicU64,
    /// Wall-clock ms since the Unix epoch; 0 = not yet.
    pub started_ms: AtomicU64,
    /// Wall-clock ms since the Unix epoch when the subtask ended; 0 = not yet.
    pub ended_ms: AtomicU64,
    /// Monotonic start ([`sluice_channel::mono_ns`]), for busy time = elapsed − idle − backpressured.
    pub started_mono_ns: AtomicU64,
    /// Monotonic end ([`sluice_channel::mono_ns`]); 0 = not yet.
    pub ended_mono_ns: AtomicU64,
    /// The task thread's CPU time (ns) as it ended, read by the thread itself; 0 = not yet or
    /// unavailable. After the thread exits its /proc entry is gone, so the sampler's last tick
    /// would otherwise keep the CPU time of the tick before: up to one interval short.
    pub ended_cpu_ns: AtomicU64,
    /// Time spent inside keyed-state calls (ns, estimated: the memory backend samples; see
    /// `sluice-state`), for the doctor and `stateAccessTimeMsPerSecond`.
    pub state_access_ns: AtomicU64,
    /// The latest hot-key snapshot of the subtask's keyed operator, published every ~100 ms and
    /// at end of input (never per record); `None` for non-keyed subtasks. See [`crate::hot_keys`].
    pub hot_keys: Mutex<Option<crate::hot_keys::HotKeysSnapshot>>,
    /// Flink's `currentInputWatermark`: the minimum over the subtask's non-idle input channels
    /// (`i64::MIN` before the first watermark, and for sources).
    pub input_watermark: WatermarkGauge,
    /// The last watermark the subtask sent downstream (`currentOutputWatermark`).
    pub output_watermark: WatermarkGauge,
    /// Records dropped by event-time operators because they arrived after their windows closed
    /// (Flink's `numLateRecordsDropped`).
    pub late_records_dropped: AtomicU64,
    /// Gauges a connector adds to its task by name (e.g. the Kafka sink's
    /// `pendingDeliveries`): REST lists them after the task metrics, Prometheus exports them.
    /// Kept across restarts (the connector of the next attempt finds its gauge again).
    pub connector_gauges: Mutex<Vec<(String, Arc<std::sync::atomic::AtomicI64>)>>,
    /// Metrics an operator publishes under its own scope beyond the fixed catalogue (Flink's
    /// operator metric group), e.g. a Kafka source's FLIP-33 `pendingRecords`. Kept across
    /// restarts: a re-registered name gets the same gauge.
    pub gauges: Mutex<Vec<Arc<OperatorGauge>>>,
    state: AtomicU8,
}

/// Whether an [`OperatorGauge`] is a point-in-time value or a running total (Prometheus type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GaugeKind {
    /// A point-in-time value.
    Gauge,
    /// A running total.
    Counter,
}

/// One operator-scope metric value (a Java `long`), written by the task thread with a relaxed
/// store, read by REST and Prometheus. Scope name `<operator>.<name>` as Flink's.
#[derive(Debug)]
pub struct OperatorGauge {
    /// The operator's name (as in the job graph, not sanitised).
    pub operator: String,
    /// The metric's name inside the operator scope (`pendingRecords`,
    /// `KafkaSourceReader.topic.t.partition.0.currentOffset`).
    pub name: String,
    /// Point-in-time value or running total.
    pub kind: GaugeKind,
    /// Help text for the Prometheus export.
    pub help: String,
    value: std::sync::atomic::AtomicI64,
}

impl OperatorGauge {
    /// Replaces the value.
    #[inline]
    pub fn set(&self, v: i64) {
        self.value.store(v, Relaxed);
    }
    /// Adds to the value (negative to subtract).
    #[inline]
    pub fn add(&self, v: i64) {
        self.value.fetch_add(v, Relaxed);
    }
    /// The current value.
    #[inline]
    pub fn get(&self) -> i64 {
        self.value.load(Relaxed)
    }
}

/// A watermark readable from other threads; starts at `i64::MIN` ("no watermark yet").
#[derive(Debug)]
pub struct WatermarkGauge(std::sync::atomic::AtomicI64);

impl Default for WatermarkGauge {
    fn default() -> Self {
        WatermarkGauge(std::sync::atomic::AtomicI64::new(i64::MIN))
    }
}

impl WatermarkGauge {
    /// The current watermark (`i64::MIN` before the first).
    pub fn get(&self) -> i64 {
        self.0.load(Relaxed)
    }
    /// Publishes a new watermark.
    pub fn set(&self, watermark: i64) {
        self.0.store(watermark, Relaxed);
    }
}

impl TaskMetrics {
    /// Counts `n` records read (called per buffer, not per record).
    #[inline]
    pub fn add_records_in(&self, n: u64) {
        self.records_in.fetch_add(n, Relaxed);
    }
    /// Counts `n` records emitted (called per buffer, not per record).
    #[inline]
    pub fn add_records_out(&self, n: u64) {
        self.records_out.fetch_add(n, Relaxed);
    }
    /// Records read so far.
    pub fn records_in(&self) -> u64 {
        self.records_in.load(Relaxed)
    }
    /// Records emitted so far.
    pub fn records_out(&self) -> u64 {
        self.records_out.load(Relaxed)
    }
    /// Time spent waiting for input so far, ns.
    pub fn idle_ns(&self) -> u64 {
        self.waits.idle_ns.load(Relaxed)
    }
    /// Time spent waiting for output credit so far, ns.
    pub fn backpressured_ns(&self) -> u64 {
        self.waits.backpressured_ns.load(Relaxed)
    }
    /// The current attempt number (0 for the first), as in Flink's `<task> (i/p)#<attempt>`.
    pub fn attempt(&self) -> u64 {
        self.threads_started.load(Relaxed).saturating_sub(1)
    }
    /// The subtask's current execution state.
    pub fn state(&self) -> TaskState {
        TaskState::from_u8(self.state.load(Relaxed))
    }
    /// Records a transition of the execution state.
    pub fn set_state(&self, s: TaskState) {
        self.state.store(s as u8, Relaxed);
    }

    /// A restart begins: forget the failed attempt's channels and operators (the counters of
    /// records, bytes and time keep accumulating over the job's life, as Flink's do per job).
    pub fn reset_for_attempt(&self) {
        self.input_channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.output_channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self.input_debloat.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.operators
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.operator_edges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.set_state(TaskState::Created);
    }

    /// The connector gauge `name` of this task, created at 0 on first use.
    pub fn connector_gauge(&self, name: &str) -> Arc<std::sync::atomic::AtomicI64> {
        let mut g = self
            .connector_gauges
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((_, v)) = g.iter().find(|(n, _)| n == name) {
            return v.clone();
        }
        let v = Arc::new(std::sync::atomic::AtomicI64::new(0));
        g.push((name.to_string(), v.clone()));
        v
    }

    /// Every connector gauge of this task: `(name, value)`.
    pub fn connector_gauge_values(&self) -> Vec<(String, i64)> {
        self.connector_gauges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(n, v)| (n.clone(), v.load(Relaxed)))
            .collect()
    }

    /// The gauge `name` of `operator`, created (at `initial`) on first use; a restarted
    /// attempt registering the same name gets the same gauge back (counters keep counting).
    pub fn register_gauge(
        &self,
        operator: &str,
        name: &str,
        kind: GaugeKind,
        help: &str,
        initial: i64,
    ) -> Arc<OperatorGauge> {
        let mut gauges = self.gauges.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(g) = gauges
            .iter()
            .find(|g| g.operator == operator && g.name == name)
        {
            if kind == GaugeKind::Gauge {
                g.set(initial);
            }
            return g.clone();
        }
        let g = Arc::new(OperatorGauge {
            operator: operator.to_string(),
            name: name.to_string(),
            kind,
            help: help.to_string(),
            value: std::sync::atomic::AtomicI64::new(initial),
        });
        gauges.push(g.clone());
        g
    }

    /// The operator gauges registered so far, in registration order.
    pub fn gauges(&self) -> Vec<Arc<OperatorGauge>> {
        self.gauges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Registers an operator of the chain; returns its counters.
    pub fn register_operator(&self, name: &str) -> (usize, Arc<OperatorMetrics>) {
        let m = OperatorMetrics::new(name);
        let mut ops = self.operators.lock().unwrap_or_else(|p| p.into_inner());
        ops.push(m.clone());
        (ops.len() - 1, m)
    }
}
