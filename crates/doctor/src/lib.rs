//! The doctor: finds a running job's bottleneck from its graph and metric samples, names the cause
//! and proposes a fix (issue 5). Pure: no I/O, no threads. Main types: [`JobView`] (vertices with
//! their [`SubtaskSample`]s), [`Diagnosis`] (bottleneck, [`Cause`], evidence, [`FixProposal`]);
//! [`flink_rest`] builds a `JobView` from Flink-compatible REST answers (the CLI's live sampler and
//! `--from-dir`, tests over captured fixtures), the REST server builds one from its own snapshots;
//! then [`diagnose`] or [`diagnose_window`]. [`examine()`] is the one call that does it all over a
//! [`Probe`] (sampling window, extras, flame graphs, checkpoint advice): the CLI, the REST server
//! and the autopilot share it, and every fetch and wait is the probe's, so the doctor itself
//! does no I/O. The causes are an ordered list of rules
//! (`rules/`), the first that matches the bottleneck's breakdown wins.
//!
//! The method: walk the vertices from the sources downstream, skip every vertex that is
//! backpressured (it waits on someone else); the first vertex with a subtask that is busy and not
//! backpressured is the bottleneck, unless those subtasks spent at least a third of their busy time
//! waiting for a free CPU and a vertex downstream works more (then that one is; see
//! [`CPU_STARVED`]). Its subtask breakdown says why:
//! - a few busy subtasks, siblings idle, behind a HASH edge → [`Cause::KeySkew`] (fix: two-phase);
//! - a few busy subtasks behind a non-keyed edge → [`Cause::UnevenLoad`] (fix: REBALANCE);
//! - all busy on a TaskManager whose JVM spends ≥ [`GC_STALL_MS`] of every second collecting
//!   garbage (a Flink cluster's `Status.JVM.GarbageCollector.*`) → [`Cause::GcStalls`] naming
//!   it (fix: heap sizing, less allocation per record, object reuse, state off-heap);
//! - all busy, busy time not following the record rate now and then → [`Cause::Stalls`];
//! - all busy, little CPU per busy ms → [`Cause::BlockingCalls`] (fix: async I/O);
//! - all busy, most of it in state calls → [`Cause::StateAccess`];
//! - a partitioned source (Kafka) with at least as many subtasks as partitions, busy →
//!   [`Cause::SourceCeiling`], fix "add partitions" (never "raise parallelism"), the subtasks
//!   that own no partition named as idle;
//! - a sink waiting on its external system (busy, little CPU, its send time, or its flame-graph
//!   samples off CPU under its writer) → [`Cause::SinkLimit`] with "batch the writes"
//!   ([`PlanChange::SinkOption`]) while its batches are small (batch size unknown, as on Flink:
//!   while it waits a round trip per record), else "scale the sink" — never async I/O;
//! - all busy, the flame graph's CPU mostly in serialization frames → [`Cause::Serialization`]
//!   (in Kryo: Flink's generic fallback, with Flink's fixes: a POJO, a registered serializer,
//!   `pipeline.generic-types: false`);
//! - all busy in a source operator → [`Cause::SourceCeiling`]; in a sink → [`Cause::SinkLimit`];
//! - all busy otherwise → [`Cause::UnderProvisioned`] (fix: parallelism N behind REBALANCE/HASH);
//! - nothing busy, but a vertex backpressured by a consumer that is not busy, with the network
//!   exchange between them spending ≥ [`exchange::CODEC_MS`] encoding or decoding the records
//!   that cross processes → [`Cause::Serialization`] at that edge ([`exchange`]);
//! - nothing busy → [`Cause::NoBottleneck`]: the input is the limit.
//!
//! Inside a chain, the per-operator (exclusive) busy time names the operator; on Flink, which
//! reports none, the flame graph's frames do ([`chain`]: the operator wrapper classes nest in
//! chain order), and a busy source chain is a source ceiling only when the time is the source's.
//!
//! Source lag (FLIP-33 `pendingRecords`) is evidence ([`lag`]): growing while the source is
//! backpressured, the source is throttled by the bottleneck; about 0 with nothing busy, the input
//! is the limit.
//! On a Flink cluster with TaskManager processes each sample carries its subtask's
//! [`HostSample`] (see [`flink_rest::taskmanagers`]): the TaskManager's GC, heap and process CPU.
//! Where a vertex runs alone on its TaskManager, the process CPU is the vertex's CPU (Flink has
//! none per task), which tells blocking calls from computation.
//! When the busy subtasks' flame graphs are given ([`VertexView::profile`], see [`profile`]),
//! their top self-time frames are evidence, and they decide where metrics are missing (Flink
//! reports no CPU time per subtask, nor state-access time): mostly off CPU inside the operator
//! → blocking calls; mostly on CPU in state frames → state access; in serialization frames →
//! serialization cost.
//! Times are in ms per second (Flink's `…TimeMsPerSecond`), rates in records per second.
#![warn(missing_docs)]

use std::fmt;

pub mod chain;
mod checkpoints;
mod error;
pub mod examine;
pub mod exchange;
pub mod flink_rest;
mod json;
pub mod lag;
pub mod profile;
mod rules;

pub use checkpoints::{checkpoint_advice, CheckpointStats};
pub use error::DoctorError;
pub use examine::{examine, Examination, ExamineOptions, Probe, RestProbe, RestSource};
pub use json::{plan_change_json, plan_change_spec, to_json, to_shape};
pub use profile::{FlameTree, ProfileSummary, VertexProfile};

/// A subtask is busy from this many ms/s of busy time.
pub const BUSY_MS: f64 = 600.0;
/// A subtask is backpressured from this many ms/s (Flink's "ok" level ends at 10 %).
pub const BACKPRESSURED_MS: f64 = 100.0;
/// Busy share a raised parallelism aims at.
pub const TARGET_BUSY: f64 = 0.7;
/// CPU per busy time below this means the busy time is spent waiting (blocking calls).
pub const LOW_CPU_RATIO: f64 = 0.3;
/// State-access time per busy time from this share means state access dominates.
pub const STATE_RATIO: f64 = 0.5;
/// A TaskManager whose JVM collects garbage this many ms of every second stalls its tasks: they
/// are stopped a tenth of the time, counted as busy.
pub const GC_STALL_MS: f64 = 100.0;

/// One subtask's metrics (one sample, or the average over a window). `None`: not reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubtaskSample {
    /// Time spent processing records, ms/s (`busyTimeMsPerSecond`).
    pub busy: Option<f64>,
    /// Time blocked on full output buffers, ms/s (`backPressuredTimeMsPerSecond`).
    pub backpressured: Option<f64>,
    /// Time waiting for input, ms/s (`idleTimeMsPerSecond`).
    pub idle: Option<f64>,
    /// Records received per second (`numRecordsInPerSecond`).
    pub records_in: Option<f64>,
    /// Records emitted per second (`numRecordsOutPerSecond`).
    pub records_out: Option<f64>,
    /// CPU time of the task thread, ms/s (Sluice's `cpuTimeMsPerSecond`; Flink has none).
    pub cpu: Option<f64>,
    /// Time runnable but waiting for a free CPU, ms/s (Sluice's `cpuWaitTimeMsPerSecond`): busy
    /// time that is neither computation nor blocking — the machine is oversubscribed.
    pub cpu_wait: Option<f64>,
    /// Exclusive busy time per chained operator, ms/s (Sluice's `<op>.busyTimeMsPerSecond`).
    pub operator_busy: Vec<(String, f64)>,
    /// Time in keyed-state calls, ms/s.
    pub state_access: Option<f64>,
    /// Time the network exchange spent encoding the subtask's outgoing buffers for other
    /// processes, ms/s (Sluice's `serializationTimeMsPerSecond`): on the exchange's own thread,
    /// so not inside busy time.
    pub serialization: Option<f64>,
    /// Time the network exchange spent decoding the buffers the subtask receives from other
    /// processes, ms/s (Sluice's `deserializationTimeMsPerSecond`).
    pub deserialization: Option<f64>,
    /// A source subtask's lag: records in its splits not yet read (FLIP-33 `pendingRecords`).
    pub pending_records: Option<f64>,
    /// Splits (Kafka partitions) assigned to a source subtask (Sluice's `assignedSplits`).
    pub assigned_splits: Option<f64>,
    /// A sink subtask's time for its last write to the external system, ms (FLIP-33
    /// `currentSendTime`).
    pub send_time: Option<f64>,
    /// Records per second into the chain's last operator (Flink's operator metric
    /// `<operator>.numRecordsInPerSecond`): a sink chained behind a source has no task-level
    /// input rate.
    pub last_records_in: Option<f64>,
    /// A lookup join's key repeat ratio (0..=1): the share of its recent lookups whose key came
    /// earlier among them (Sluice's `lookupKeyRepeatPerMille` ÷ 1000) — what a cache would hit.
    pub key_repeat: Option<f64>,
    /// The TaskManager the subtask runs on and its JVM's figures at that moment (a Flink
    /// cluster's `/taskmanagers/:tmid/metrics`); `None`: not reported (a MiniCluster or Sluice).
    pub host: Option<HostSample>,
}

/// A TaskManager process as the subtasks it hosts see it: its JVM's garbage collection, heap and
/// CPU (Flink's `Status.JVM.*` metrics), its configured task heap, and whether the subtask's
/// vertex is all it runs. `None` fields: not reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostSample {
    /// The TaskManager's id (`/taskmanagers`' `id`, its resource id).
    pub taskmanager: String,
    /// Time the JVM spent in garbage collection, ms/s (`Status.JVM.GarbageCollector.All.TimeMsPerSecond`).
    pub gc_ms: Option<f64>,
    /// Collections since the JVM started (`…GarbageCollector.All.Count`).
    pub gc_count: Option<f64>,
    /// Time spent collecting since the JVM started, ms (`…GarbageCollector.All.Time`, else the
    /// collectors' sum): where `gc_ms` is not reported, a window's growth of it gives GC ms/s.
    pub gc_time_total: Option<f64>,
    /// Old-generation (full or mixed) collections since the JVM started (the collector whose name
    /// holds `Old` or `MarkSweep`, e.g. `G1_Old_Generation`).
    pub old_gc_count: Option<f64>,
    /// Collections, and old-generation ones, between a window's first and last sample (set when
    /// a window is averaged).
    pub gc_in_window: Option<f64>,
    /// See `gc_in_window`.
    pub old_gc_in_window: Option<f64>,
    /// Heap in use and its maximum, bytes (`Status.JVM.Memory.Heap.Used` / `.Max`).
    pub heap_used: Option<f64>,
    /// See `heap_used`.
    pub heap_max: Option<f64>,
    /// The task heap the TaskManager was configured with, bytes (`memoryConfiguration.taskHeap`).
    pub task_heap: Option<f64>,
    /// The process's recent CPU load over all cores, 0..=1 (`Status.JVM.CPU.Load`).
    pub cpu_load: Option<f64>,
    /// Cores of the machine (`hardware.cpuCores`).
    pub cores: Option<f64>,
    /// Tasks the TaskManager runs when they all belong to this subtask's vertex (the vertex lives
    /// alone there, so the process's CPU is its CPU); `None` when it runs others too.
    pub alone_tasks: Option<f64>,
    /// The job's failures recorded on this TaskManager (`/jobs/:jid/exceptions`' history: a
    /// JVM stuck collecting garbage misses its heartbeats or runs out of memory).
    pub failures: Option<f64>,
    /// The latest of them, its first line.
    pub last_failure: Option<String>,
}

impl SubtaskSample {
    /// Busy ms/s: reported, else Flink's `1000 − idle − backpressured` when those are known, else 0.
    pub fn busy_ms(&self) -> f64 {
        match (self.busy, self.idle, self.backpressured) {
            (Some(b), _, _) => b,
            (None, Some(i), Some(bp)) => (1000.0 - i - bp).max(0.0),
            _ => 0.0,
        }
    }

    /// Backpressured ms/s, 0 when not reported.
    pub fn backpressured_ms(&self) -> f64 {
        self.backpressured.unwrap_or(0.0)
    }

    /// Idle ms/s, 0 when not reported.
    pub fn idle_ms(&self) -> f64 {
        self.idle.unwrap_or(0.0)
    }

    /// Records per second through the subtask: in, or out for a source.
    fn rate(&self) -> Option<f64> {
        match (self.records_in, self.records_out) {
            (Some(i), _) if i > 0.0 => Some(i),
            (_, Some(o)) => Some(o),
            (i, None) => i,
        }
    }
}

/// A heavy key of a keyed vertex and its share of the vertex's records (0..=1).
#[derive(Clone, Debug, PartialEq)]
pub struct HotKey {
    /// The key as the engine prints it.
    pub key: String,
    /// Its share of the vertex's records, 0..=1.
    pub share: f64,
}

/// A vertex (a chain of operators) with its subtasks' metrics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexView {
    /// The engine's vertex id (Flink's job vertex id).
    pub id: String,
    /// The vertex's name as the engine reports it.
    pub name: String,
    /// Subtasks the vertex runs.
    pub parallelism: usize,
    /// Upstream vertices (indices into [`JobView::vertices`]), one per input.
    pub inputs: Vec<usize>,
    /// Ship strategy of each input (Flink's strings: `HASH`, `FORWARD`, `REBALANCE`, …).
    pub ship_strategies: Vec<String>,
    /// Whether the vertex has no inputs (it reads from a connector).
    pub is_source: bool,
    /// Whether no vertex reads from it (it writes to a connector).
    pub is_sink: bool,
    /// Chained operator names, in chain order.
    pub operators: Vec<String>,
    /// Metrics of each subtask, by subtask index.
    pub subtasks: Vec<SubtaskSample>,
    /// Heavy keys when the engine reports them; `None`: not reported.
    pub hot_keys: Option<Vec<HotKey>>,
    /// Connector options of the vertex's operators (a sink's batch size …), as the plan holds
    /// them: what a [`PlanChange::SinkOption`] may change.
    pub options: Vec<ConnectorOption>,
    /// Flame graphs of the busy subtasks when fetched (see [`profile`]); `None`: not sampled.
    pub profile: Option<VertexProfile>,
}

/// A connector option of an operator, as its plan node holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConnectorOption {
    /// The operator the option belongs to.
    pub operator: String,
    /// Option name (e.g. `sink.buffer-flush.max-rows`).
    pub key: String,
    /// Its current value, as written in the plan.
    pub value: String,
}

/// Flink JDBC sink's batch-size option: rows buffered before a write.
pub const MAX_ROWS_OPTION: &str = "sink.buffer-flush.max-rows";
/// The batch size "batch the writes" proposes (a sink with fewer rows per write is batched up
/// to it).
pub const BATCH_ROWS: usize = 1000;

/// A job: its vertices, and the cores a fix may use when known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobView {
    /// The job's vertices; inputs refer to them by index.
    pub vertices: Vec<VertexView>,
    /// Cores the job may use in total, bounding a proposed parallelism; `None`: unknown.
    pub available_cores: Option<usize>,
}

/// Metrics of every subtask at one moment: `[vertex][subtask]`.
pub type Snapshot = Vec<Vec<SubtaskSample>>;

/// The bottleneck: a vertex, the operator inside its chain when known, the busy subtasks.
#[derive(Clone, Debug, PartialEq)]
pub struct Bottleneck {
    /// Index into [`JobView::vertices`].
    pub vertex: usize,
    /// The vertex's display name.
    pub vertex_name: String,
    /// Subtasks of the vertex.
    pub parallelism: usize,
    /// The chained operator that takes the busy time, when the metrics single one out.
    pub operator: Option<String>,
    /// The operator's share (0..=1) of the chain's flame-graph samples, when the frames named
    /// it (Flink reports no time per operator; see [`chain`]).
    pub operator_share: Option<f64>,
    /// Busy, not backpressured subtasks (0-based).
    pub subtasks: Vec<usize>,
}

/// Why the bottleneck is busy.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// A few subtasks of a keyed vertex do the work: hot keys.
    KeySkew {
        /// The heavy keys found (empty when the engine does not report keys).
        hot_keys: Vec<HotKey>,
    },
    /// A few subtasks of a non-keyed vertex get most of the records.
    UnevenLoad,
    /// All subtasks busy computing: too few of them, or too expensive a function.
    UnderProvisioned,
    /// Busy but hardly on the CPU: synchronous I/O.
    BlockingCalls,
    /// Busy in keyed-state calls.
    StateAccess,
    /// Busy serializing and deserializing records or state (seen in the flame graph).
    Serialization,
    /// The source itself runs flat out.
    SourceCeiling,
    /// The sink is busy writing.
    SinkLimit,
    /// Periodic stalls: busy time not following the record rate.
    Stalls,
    /// The JVM of the TaskManager hosting the bottleneck spends much of each second in garbage
    /// collection, which stops the task thread mid-record (Flink cluster metrics).
    GcStalls {
        /// The TaskManager whose garbage collection stalls the bottleneck.
        taskmanager: String,
    },
    /// Nothing is busy: the input is the limit.
    NoBottleneck,
}

impl Cause {
    /// Stable short name (JSON, tests).
    pub fn name(&self) -> &'static str {
        match self {
            Cause::KeySkew { .. } => "key-skew",
            Cause::UnevenLoad => "uneven-load",
            Cause::UnderProvisioned => "under-provisioned",
            Cause::BlockingCalls => "blocking-calls",
            Cause::StateAccess => "state-access",
            Cause::Serialization => "serialization",
            Cause::SourceCeiling => "source-ceiling",
            Cause::SinkLimit => "sink-limit",
            Cause::Stalls => "stalls",
            Cause::GcStalls { .. } => "gc-stalls",
            Cause::NoBottleneck => "no-bottleneck",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Cause::KeySkew { .. } => "key skew",
            Cause::UnevenLoad => "uneven load over subtasks",
            Cause::UnderProvisioned => "under-provisioned or expensive work",
            Cause::BlockingCalls => "blocking calls",
            Cause::StateAccess => "state access",
            Cause::Serialization => "serialization cost",
            Cause::SourceCeiling => "source ceiling",
            Cause::SinkLimit => "sink limit",
            Cause::Stalls => "periodic stalls",
            Cause::GcStalls { taskmanager } => {
                return write!(f, "GC stalls on TaskManager `{taskmanager}`");
            }
            Cause::NoBottleneck => "no bottleneck: the input is the limit",
        };
        f.write_str(s)
    }
}

/// The plan change a fix proposes: the one type the fixer (`sluice_datastream::fixer`) applies.
pub use sluice_plan::{PlanChange, ShipStrategy};

/// What a source-ceiling diagnosis found about a partitioned source.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceSplits {
    /// Partitions (splits) the source reads: the sum of its subtasks' assigned splits.
    pub partitions: usize,
    /// Subtasks (0-based) that own no partition and so idle.
    pub idle_subtasks: Vec<usize>,
}

/// A proposed fix: prose, the one-line change, and the machine form when it is a plan change.
#[derive(Clone, Debug, PartialEq)]
pub struct FixProposal {
    /// What the fix does and why, in prose.
    pub description: String,
    /// The change in one line (a plan edit, or a code change to make).
    pub change: String,
    /// The change in machine form, when the plan can express it (else a code change).
    pub plan_change: Option<PlanChange>,
}

/// The doctor's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnosis {
    /// Where the job is limited; `None` when nothing is busy.
    pub bottleneck: Option<Bottleneck>,
    /// Why the bottleneck is busy.
    pub cause: Cause,
    /// 0..=1.
    pub confidence: f64,
    /// The observations the cause was read from, one line each.
    pub evidence: Vec<String>,
    /// What to change, when there is something to change.
    pub fix: Option<FixProposal>,
    /// What the fix should do to the job's figures, in prose.
    pub expected_effect: String,
    /// What could not be determined from the data given.
    pub undetermined: Vec<String>,
    /// A partitioned source at its ceiling: its partitions and idle subtasks.
    pub source_splits: Option<SourceSplits>,
    /// The sources' lag over the window, when they report it.
    pub lag: Option<lag::LagTrend>,
}

impl Diagnosis {
    /// One line: `key skew in sum-per-key (vertex "…", subtask 2/2)`.
    pub fn verdict(&self) -> String {
        match &self.bottleneck {
            None => self.cause.to_string(),
            Some(b) => {
                let mut s = format!("{} at `{}`", self.cause, b.vertex_name);
                if let Some(op) = &b.operator {
                    if *op != b.vertex_name {
                        s.push_str(&format!(", operator `{op}`"));
                        if let Some(share) = b.operator_share {
                            s.push_str(&format!(
                                " ({:.0}% of the chain's flame-graph samples)",
                                share * 100.0
                            ));
                        }
                    }
                }
                let p = b.parallelism.max(1);
                let subs: Vec<String> = b
                    .subtasks
                    .iter()
                    .map(|i| format!("{}/{p}", i + 1))
                    .collect();
                let idx: Vec<String> = b.subtasks.iter().map(|i| i.to_string()).collect();
                s.push_str(&format!(
                    ", subtask(s) {} (index {})",
                    subs.join(", "),
                    idx.join(", ")
                ));
                s
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------

fn mean_opt(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values.flatten() {
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += v;
        n += 1;
    }
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

fn pct(ms: f64) -> String {
    format!("{:.0}%", (ms / 10.0).clamp(0.0, 100.0))
}

/// Averages a window of snapshots subtask by subtask (values not reported are left out).
pub fn average(samples: &[Snapshot]) -> Snapshot {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|v| {
            let n = samples.iter().map(|s| s.get(v).map_or(0, Vec::len)).max();
            (0..n.unwrap_or(0))
                .map(|i| {
                    let all: Vec<&SubtaskSample> =
                        samples.iter().filter_map(|s| s.get(v)?.get(i)).collect();
                    let avg =
                        |f: fn(&SubtaskSample) -> Option<f64>| mean_opt(all.iter().map(|s| f(s)));
                    let mut ops: Vec<(String, f64, usize)> = Vec::new();
                    for s in &all {
                        for (name, ms) in &s.operator_busy {
                            match ops.iter_mut().find(|(n, _, _)| n == name) {
                                Some(o) => {
                                    o.1 += ms;
                                    o.2 += 1;
                                }
                                None => ops.push((name.clone(), *ms, 1)),
                            }
                        }
                    }
                    SubtaskSample {
                        busy: avg(|s| s.busy),
                        backpressured: avg(|s| s.backpressured),
                        idle: avg(|s| s.idle),
                        records_in: avg(|s| s.records_in),
                        records_out: avg(|s| s.records_out),
                        cpu: avg(|s| s.cpu),
                        cpu_wait: avg(|s| s.cpu_wait),
                        operator_busy: ops
                            .into_iter()
                            .map(|(n, sum, c)| (n, sum / c as f64))
                            .collect(),
                        state_access: avg(|s| s.state_access),
                        serialization: avg(|s| s.serialization),
                        deserialization: avg(|s| s.deserialization),
                        pending_records: avg(|s| s.pending_records),
                        assigned_splits: avg(|s| s.assigned_splits),
                        send_time: avg(|s| s.send_time),
                        last_records_in: avg(|s| s.last_records_in),
                        key_repeat: avg(|s| s.key_repeat),
                        host: average_host(&all),
                    }
                })
                .collect()
        })
        .collect()
}

/// A subtask's TaskManager figures averaged over a window: its id from the first sample that has
/// one, GC time and CPU load averaged, the heap at its peak, the collection counts the last
/// sample's and their growth over the window; the vertex is alone on it only if it was in every
/// sample.
fn average_host(all: &[&SubtaskSample]) -> Option<HostSample> {
    let hosts: Vec<&HostSample> = all.iter().filter_map(|s| s.host.as_ref()).collect();
    let first = hosts.first()?;
    let avg = |f: fn(&HostSample) -> Option<f64>| mean_opt(hosts.iter().map(|h| f(h)));
    let last = |f: fn(&HostSample) -> Option<f64>| hosts.iter().rev().find_map(|h| f(h));
    let peak =
        |f: fn(&HostSample) -> Option<f64>| hosts.iter().filter_map(|h| f(h)).reduce(f64::max);
    let first_of = |f: fn(&HostSample) -> Option<f64>| hosts.iter().find_map(|h| f(h));
    let delta = |f: fn(&HostSample) -> Option<f64>| {
        (hosts.len() >= 2).then_some(())?;
        Some((last(f)? - first_of(f)?).max(0.0))
    };
    Some(HostSample {
        taskmanager: first.taskmanager.clone(),
        // Flink's own rate, else the growth of the total over the window: examine() takes one
        // sample a second, so n samples span n - 1 seconds.
        gc_ms: avg(|h| h.gc_ms).or_else(|| {
            let span = hosts.len().checked_sub(1).filter(|s| *s > 0)? as f64;
            Some(delta(|h| h.gc_time_total)? / span)
        }),
        gc_time_total: last(|h| h.gc_time_total),
        gc_count: last(|h| h.gc_count),
        old_gc_count: last(|h| h.old_gc_count),
        gc_in_window: delta(|h| h.gc_count),
        old_gc_in_window: delta(|h| h.old_gc_count),
        heap_used: peak(|h| h.heap_used),
        heap_max: last(|h| h.heap_max),
        task_heap: last(|h| h.task_heap),
        cpu_load: avg(|h| h.cpu_load),
        cores: last(|h| h.cores),
        alone_tasks: if hosts.iter().all(|h| h.alone_tasks.is_some()) {
            avg(|h| h.alone_tasks)
        } else {
            None
        },
        failures: last(|h| h.failures),
        last_failure: hosts.iter().rev().find_map(|h| h.last_failure.clone()),
    })
}

/// Vertices from the sources downstream (Kahn's order, ties by index; a cycle's rest at the end).
pub fn topological_order(job: &JobView) -> Vec<usize> {
    let n = job.vertices.len();
    let mut pending: Vec<usize> = job
        .vertices
        .iter()
        .map(|v| v.inputs.iter().filter(|&&u| u < n).count())
        .collect();
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let next = (0..n).find(|&i| !done[i] && pending[i] == 0);
        let Some(i) = next.or_else(|| (0..n).find(|&i| !done[i])) else {
            break;
        };
        done[i] = true;
        order.push(i);
        for (j, v) in job.vertices.iter().enumerate() {
            for &u in &v.inputs {
                if u == i && pending[j] > 0 {
                    pending[j] -= 1;
                }
            }
        }
    }
    order
}

/// Diagnoses averaged samples (each vertex's `subtasks`).
pub fn diagnose(job: &JobView) -> Diagnosis {
    diagnose_inner(job, &[])
}

/// Diagnoses a window of snapshots: averages them into the vertices, then diagnoses, using the
/// series itself to recognise periodic stalls.
pub fn diagnose_window(job: &JobView, samples: &[Snapshot]) -> Diagnosis {
    if samples.is_empty() {
        return diagnose(job);
    }
    let avg = average(samples);
    let mut job = job.clone();
    for (v, subs) in job.vertices.iter_mut().zip(avg) {
        v.subtasks = subs;
    }
    diagnose_inner(&job, samples)
}

fn diagnose_inner(job: &JobView, samples: &[Snapshot]) -> Diagnosis {
    let mut evidence = Vec::new();
    let mut undetermined = Vec::new();
    let all_subs = || job.vertices.iter().flat_map(|v| v.subtasks.iter());
    // A TaskManager that runs one vertex alone gives that vertex's CPU (`rules::jvm`).
    let has_cpu = all_subs().any(|s| {
        s.cpu.is_some()
            || s.host
                .as_ref()
                .is_some_and(|h| h.alone_tasks.is_some() && h.cpu_load.is_some())
    });
    let has_ops = all_subs().any(|s| !s.operator_busy.is_empty());
    let has_state = all_subs().any(|s| s.state_access.is_some());
    if !has_cpu {
        undetermined.push(
            "CPU time: could not be determined (not reported by this server; Flink does not \
             report it), so blocking calls cannot be told from computation"
                .to_string(),
        );
    }
    if !has_ops {
        undetermined.push(
            "time per chained operator: could not be determined (not reported), so the operator \
             inside a chain is not named"
                .to_string(),
        );
    }
    if !has_state {
        undetermined.push("state-access time: could not be determined (not reported)".to_string());
    }

    let mut found = None;
    let mut any_backpressured = false;
    for vi in topological_order(job) {
        let v = &job.vertices[vi];
        let hot: Vec<usize> = v
            .subtasks
            .iter()
            .enumerate()
            .filter(|(_, s)| busy_not_backpressured(s))
            .map(|(i, _)| i)
            .collect();
        let max_bp = v
            .subtasks
            .iter()
            .map(|s| s.backpressured_ms())
            .fold(0.0, f64::max);
        if !hot.is_empty() {
            found = Some((vi, hot));
            break;
        }
        if max_bp >= BACKPRESSURED_MS {
            any_backpressured = true;
            evidence.push(format!(
                "`{}` is backpressured (max {}): it waits on a vertex downstream",
                v.name,
                pct(max_bp)
            ));
        }
    }
    if let Some((vi, hot)) = &found {
        if let Some((w, w_hot, note)) = starved_by_a_busier_vertex(job, *vi, hot) {
            evidence.push(note);
            found = Some((w, w_hot));
        }
    }
    let trend = lag::trend(job, samples);
    if found.is_none() && any_backpressured {
        if let Some(mut d) = exchange::codec_limit(job) {
            evidence.extend(d.evidence);
            d.evidence = evidence;
            d.undetermined = undetermined;
            d.lag = trend;
            return d;
        }
    }
    let Some((vi, hot)) = found else {
        evidence.push(format!(
            "no subtask is busy ≥ {} without being backpressured",
            pct(BUSY_MS)
        ));
        if let Some(t) = &trend {
            evidence.push(t.idle_evidence());
        }
        let (confidence, effect) = if any_backpressured {
            evidence.push(
                "backpressure without a busy vertex downstream: the metrics may be stale or \
                 the window too short"
                    .to_string(),
            );
            (0.4, "none: sample again over a longer window".to_string())
        } else {
            // Lag about 0 confirms the sources read all there is; a growing lag with nothing
            // busy does not fit "the input is the limit".
            let confidence = match &trend {
                Some(t) if t.near_zero() => 0.9,
                Some(t) if t.growing() => 0.5,
                _ => 0.8,
            };
            (
                confidence,
                "none: the job keeps up with its input; more input would be processed as it comes"
                    .to_string(),
            )
        };
        return Diagnosis {
            bottleneck: None,
            cause: Cause::NoBottleneck,
            confidence,
            evidence,
            fix: None,
            expected_effect: effect,
            undetermined,
            source_splits: None,
            lag: trend,
        };
    };
    if let Some(t) = &trend {
        evidence.extend(t.bottleneck_evidence(any_backpressured));
    }
    let mut d = rules::classify(job, vi, hot, samples, evidence, undetermined);
    d.lag = trend;
    d
}

/// A busy subtask that spent at least this share of its busy time runnable but waiting for a
/// free CPU is starved by an oversubscribed machine: its busy time is not its own work.
pub const CPU_STARVED: f64 = 1.0 / 3.0;

/// What the walk looks for: a subtask busy on its own account, not waiting on a consumer.
fn busy_not_backpressured(s: &SubtaskSample) -> bool {
    s.busy_ms() >= BUSY_MS && s.backpressured_ms() < BACKPRESSURED_MS
}

/// Busy time spent computing: busy minus the time runnable but waiting for a free CPU.
fn working_ms(s: &SubtaskSample) -> f64 {
    (s.busy_ms() - s.cpu_wait.unwrap_or(0.0)).max(0.0)
}

/// The walk found vertex `vi` busy, but on an oversubscribed machine a producer that is not
/// preempted by its consumers' wake-ups (Sluice's `--task-scheduling batch`, or simply more
/// runnable threads than cores) waits for a core where it would otherwise wait for credit:
/// its busy time is then mostly that wait, not work. When every busy subtask of `vi` is so
/// starved and a vertex downstream has a busy, not backpressured subtask that works more per
/// second, that vertex is what the machine's cores are spent on: it is the bottleneck.
/// Returns it, its busy subtasks and the evidence line.
fn starved_by_a_busier_vertex(
    job: &JobView,
    vi: usize,
    hot: &[usize],
) -> Option<(usize, Vec<usize>, String)> {
    let v = &job.vertices[vi];
    let starved = hot.iter().all(|&i| {
        let s = &v.subtasks[i];
        s.cpu_wait.is_some_and(|w| w >= CPU_STARVED * s.busy_ms())
    });
    if !starved {
        return None;
    }
    // The busy subtask that worked most stands for the vertex.
    let &top_i = hot
        .iter()
        .max_by(|&&a, &&b| working_ms(&v.subtasks[a]).total_cmp(&working_ms(&v.subtasks[b])))?;
    let top_s = &v.subtasks[top_i];
    let worked = working_ms(top_s);
    let order = topological_order(job);
    let after = order.iter().position(|&x| x == vi)? + 1;
    order[after..].iter().find_map(|&wi| {
        let w = &job.vertices[wi];
        let w_hot: Vec<usize> = w
            .subtasks
            .iter()
            .enumerate()
            .filter(|(_, s)| busy_not_backpressured(s) && working_ms(s) > worked)
            .map(|(i, _)| i)
            .collect();
        let top = w_hot
            .iter()
            .map(|&i| working_ms(&w.subtasks[i]))
            .fold(0.0, f64::max);
        (!w_hot.is_empty()).then(|| {
            (
                wi,
                w_hot,
                format!(
                    "`{}` is busy {} but waited {} of it for a free CPU (it worked {}): the \
                     machine is oversubscribed and `{}`, downstream, works {}: the cores go there",
                    v.name,
                    pct(top_s.busy_ms()),
                    pct(top_s.cpu_wait.unwrap_or(0.0)),
                    pct(worked),
                    w.name,
                    pct(top)
                ),
            )
        })
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_connectors;
#[cfg(test)]
mod tests_flink_chain;
