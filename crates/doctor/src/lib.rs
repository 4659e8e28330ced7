//! The doctor: finds a running job's bottleneck from its graph and metric samples, names the cause
//! and proposes a fix (issue 5). Pure: no I/O, no threads; adapters (the CLI over a Flink-compatible
//! REST API, tests over captured fixtures) build a [`JobView`] and call [`diagnose`] or
//! [`diagnose_window`].
//!
//! The method: walk the vertices from the sources downstream, skip every vertex that is
//! backpressured (it waits on someone else); the first vertex with a subtask that is busy and not
//! backpressured is the bottleneck. Its subtask breakdown says why:
//! - a few busy subtasks, siblings idle, behind a HASH edge → [`Cause::KeySkew`] (fix: two-phase);
//! - a few busy subtasks behind a non-keyed edge → [`Cause::UnevenLoad`] (fix: REBALANCE);
//! - all busy, busy time not following the record rate now and then → [`Cause::Stalls`];
//! - all busy, little CPU per busy ms → [`Cause::BlockingCalls`] (fix: async I/O);
//! - all busy, most of it in state calls → [`Cause::StateAccess`];
//! - all busy in a source operator → [`Cause::SourceCeiling`]; in a sink → [`Cause::SinkLimit`];
//! - all busy otherwise → [`Cause::UnderProvisioned`] (fix: parallelism N behind REBALANCE/HASH);
//! - nothing busy → [`Cause::NoBottleneck`]: the input is the limit.
//!
//! Inside a chain, the per-operator (exclusive) busy time names the operator.
//! Times are in ms per second (Flink's `…TimeMsPerSecond`), rates in records per second.

use std::fmt;

mod checkpoints;
mod json;

pub use checkpoints::{checkpoint_advice, CheckpointStats};
pub use json::{plan_change_json, to_json};

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

/// One subtask's metrics (one sample, or the average over a window). `None`: not reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubtaskSample {
    pub busy: Option<f64>,
    pub backpressured: Option<f64>,
    pub idle: Option<f64>,
    pub records_in: Option<f64>,
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

    pub fn backpressured_ms(&self) -> f64 {
        self.backpressured.unwrap_or(0.0)
    }

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
    pub key: String,
    pub share: f64,
}

/// A vertex (a chain of operators) with its subtasks' metrics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexView {
    pub id: String,
    pub name: String,
    pub parallelism: usize,
    /// Upstream vertices (indices into [`JobView::vertices`]), one per input.
    pub inputs: Vec<usize>,
    /// Ship strategy of each input (Flink's strings: `HASH`, `FORWARD`, `REBALANCE`, …).
    pub ship_strategies: Vec<String>,
    pub is_source: bool,
    pub is_sink: bool,
    /// Chained operator names, in chain order.
    pub operators: Vec<String>,
    pub subtasks: Vec<SubtaskSample>,
    /// Heavy keys when the engine reports them; `None`: not reported.
    pub hot_keys: Option<Vec<HotKey>>,
}

/// A job: its vertices, and the cores a fix may use when known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobView {
    pub vertices: Vec<VertexView>,
    pub available_cores: Option<usize>,
}

/// Metrics of every subtask at one moment: `[vertex][subtask]`.
pub type Snapshot = Vec<Vec<SubtaskSample>>;

/// The bottleneck: a vertex, the operator inside its chain when known, the busy subtasks.
#[derive(Clone, Debug, PartialEq)]
pub struct Bottleneck {
    /// Index into [`JobView::vertices`].
    pub vertex: usize,
    pub vertex_name: String,
    /// Subtasks of the vertex.
    pub parallelism: usize,
    pub operator: Option<String>,
    /// Busy, not backpressured subtasks (0-based).
    pub subtasks: Vec<usize>,
}

/// Why the bottleneck is busy.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// A few subtasks of a keyed vertex do the work: hot keys.
    KeySkew { hot_keys: Vec<HotKey> },
    /// A few subtasks of a non-keyed vertex get most of the records.
    UnevenLoad,
    /// All subtasks busy computing: too few of them, or too expensive a function.
    UnderProvisioned,
    /// Busy but hardly on the CPU: synchronous I/O.
    BlockingCalls,
    /// Busy in keyed-state calls.
    StateAccess,
    /// The source itself runs flat out.
    SourceCeiling,
    /// The sink is busy writing.
    SinkLimit,
    /// Periodic stalls: busy time not following the record rate.
    Stalls,
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
            Cause::SourceCeiling => "source-ceiling",
            Cause::SinkLimit => "sink-limit",
            Cause::Stalls => "stalls",
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
            Cause::SourceCeiling => "source ceiling",
            Cause::SinkLimit => "sink limit",
            Cause::Stalls => "periodic stalls",
            Cause::NoBottleneck => "no bottleneck: the input is the limit",
        };
        f.write_str(s)
    }
}

/// A plan change in machine form; mirrors `sluice_graph::fixer::Fix` (ship strategies as Flink's
/// strings) plus async I/O, which the fixer cannot apply yet.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanChange {
    Parallelism {
        operator: String,
        parallelism: usize,
        ship: String,
    },
    TwoPhase {
        operator: String,
        buckets: u32,
    },
    AsyncIo {
        operator: String,
        capacity: usize,
    },
}

/// A proposed fix: prose, the one-line change, and the machine form when it is a plan change.
#[derive(Clone, Debug, PartialEq)]
pub struct FixProposal {
    pub description: String,
    pub change: String,
    pub plan_change: Option<PlanChange>,
}

/// The doctor's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnosis {
    pub bottleneck: Option<Bottleneck>,
    pub cause: Cause,
    /// 0..=1.
    pub confidence: f64,
    pub evidence: Vec<String>,
    pub fix: Option<FixProposal>,
    pub expected_effect: String,
    /// What could not be determined from the data given.
    pub undetermined: Vec<String>,
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
                    }
                })
                .collect()
        })
        .collect()
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
    let has_cpu = all_subs().any(|s| s.cpu.is_some());
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
            .filter(|(_, s)| s.busy_ms() >= BUSY_MS && s.backpressured_ms() < BACKPRESSURED_MS)
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
    let Some((vi, hot)) = found else {
        evidence.push(format!(
            "no subtask is busy ≥ {} without being backpressured",
            pct(BUSY_MS)
        ));
        let (confidence, effect) = if any_backpressured {
            evidence.push(
                "backpressure without a busy vertex downstream: the metrics may be stale or \
                 the window too short"
                    .to_string(),
            );
            (0.4, "none: sample again over a longer window".to_string())
        } else {
            (
                0.8,
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
        };
    };
    classify(job, vi, hot, samples, evidence, undetermined)
}

/// The operator taking most exclusive busy time over the given subtasks.
fn hottest_operator(v: &VertexView, subs: &[usize]) -> Option<(String, f64)> {
    let mut totals: Vec<(String, f64)> = Vec::new();
    for &i in subs {
        for (name, ms) in &v.subtasks[i].operator_busy {
            match totals.iter_mut().find(|(n, _)| n == name) {
                Some(t) => t.1 += ms,
                None => totals.push((name.clone(), *ms)),
            }
        }
    }
    let total: f64 = totals.iter().map(|t| t.1).sum();
    let (name, ms) = totals.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (total > 0.0).then_some((name, ms / total))
}

/// The busiest operator of a chain other than its head, with its share of the operator time.
fn busiest_chained_operator(v: &VertexView, subs: &[usize]) -> Option<(String, f64)> {
    let head = v.operators.first()?;
    let mut totals: Vec<(String, f64)> = Vec::new();
    let mut total = 0.0;
    for &i in subs {
        for (name, ms) in &v.subtasks[i].operator_busy {
            total += ms;
            if name == head {
                continue;
            }
            match totals.iter_mut().find(|(n, _)| n == name) {
                Some(t) => t.1 += ms,
                None => totals.push((name.clone(), *ms)),
            }
        }
    }
    let (name, ms) = totals.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (total > 0.0).then_some((name, ms / total))
}

fn classify(
    job: &JobView,
    vi: usize,
    hot: Vec<usize>,
    samples: &[Snapshot],
    mut evidence: Vec<String>,
    mut undetermined: Vec<String>,
) -> Diagnosis {
    let v = &job.vertices[vi];
    let p = v.subtasks.len().max(1);
    let busy: Vec<f64> = v.subtasks.iter().map(SubtaskSample::busy_ms).collect();
    let max_busy = busy.iter().copied().fold(0.0, f64::max);
    evidence.push(format!(
        "`{}` is the first vertex from the sources that is busy (max {}) and not backpressured",
        v.name,
        pct(max_busy)
    ));
    for d in job.vertices.iter().filter(|d| d.inputs.contains(&vi)) {
        let busiest = d
            .subtasks
            .iter()
            .map(SubtaskSample::busy_ms)
            .fold(0.0, f64::max);
        let idle = mean(d.subtasks.iter().map(SubtaskSample::idle_ms));
        evidence.push(format!(
            "downstream `{}` waits for input: idle {} on average, busy at most {}",
            d.name,
            pct(idle),
            pct(busiest)
        ));
    }
    let others: Vec<usize> = (0..v.subtasks.len()).filter(|i| !hot.contains(i)).collect();
    let hot_busy = mean(hot.iter().map(|&i| busy[i]));
    let others_busy = mean(others.iter().map(|&i| busy[i]));
    let others_idle = mean(others.iter().map(|&i| v.subtasks[i].idle_ms()));
    let skewed =
        p >= 2 && !others.is_empty() && hot.len() <= (p / 2).max(1) && others_busy < 0.5 * hot_busy;
    let keyed = v
        .ship_strategies
        .iter()
        .any(|s| s.eq_ignore_ascii_case("HASH"));
    let first_op = v.operators.first().cloned();
    let mut hottest = hottest_operator(v, &hot);
    // In a source chain the source's own time is derived (the task's busy time minus what the
    // chained operators were measured to take), so it also absorbs time the thread spent
    // preempted on a loaded machine. A chained operator with a quarter or more of the time is the
    // better suspect: the source is then not what limits the chain.
    if v.is_source
        && v.operators.len() > 1
        && hottest.as_ref().map(|(name, _)| name) == v.operators.first()
    {
        if let Some(other) = busiest_chained_operator(v, &hot).filter(|(_, s)| *s >= 0.25) {
            hottest = Some(other);
        }
    }
    let operator = match &hottest {
        Some((name, _)) => Some(name.clone()),
        None if v.operators.len() == 1 => first_op.clone(),
        None => None,
    };
    if let Some((name, share)) = &hottest {
        if v.operators.len() > 1 {
            evidence.push(format!(
                "inside the chain, `{name}` takes {:.0}% of the busy subtasks' operator time",
                share * 100.0
            ));
        }
    }
    let subtask_list = hot
        .iter()
        .map(|i| format!("{}/{}", i + 1, p))
        .collect::<Vec<_>>()
        .join(", ");
    let mut bottleneck = Bottleneck {
        vertex: vi,
        vertex_name: v.name.clone(),
        parallelism: p,
        operator: operator.clone(),
        subtasks: hot.clone(),
    };
    let op_or_vertex = operator.clone().unwrap_or_else(|| v.name.clone());
    let mut confidence: f64;
    let cause;
    let fix;
    let effect;

    if skewed {
        evidence.push(format!(
            "subtask(s) ({subtask_list}) busy {}, their {} sibling(s) busy {} / idle {}",
            pct(hot_busy),
            others.len(),
            pct(others_busy),
            pct(others_idle)
        ));
        let rates: Vec<Option<f64>> = v.subtasks.iter().map(|s| s.records_in).collect();
        let total: f64 = rates.iter().flatten().sum();
        let hot_rate: f64 = hot.iter().filter_map(|&i| rates[i]).sum();
        let hot_share = (total > 0.0).then(|| hot_rate / total);
        confidence = 0.7;
        if let Some(share) = hot_share {
            evidence.push(format!(
                "they receive {:.0}% of the vertex's records ({:.0}/s of {:.0}/s)",
                share * 100.0,
                hot_rate,
                total
            ));
            if share > hot.len() as f64 / p as f64 + 0.1 {
                confidence += 0.1;
            }
        }
        if keyed {
            let keys: Vec<HotKey> = v
                .hot_keys
                .iter()
                .flatten()
                .filter(|k| k.share >= 0.05)
                .take(5)
                .cloned()
                .collect();
            match &v.hot_keys {
                None => undetermined.push("hot keys: not reported by this server".to_string()),
                Some(_) if keys.is_empty() => {
                    evidence.push("no single key reaches 5% of the records: many warm keys share the hot subtask(s)".to_string())
                }
                Some(_) => {
                    confidence += 0.1;
                    for k in &keys {
                        evidence.push(format!(
                            "key `{}` carries {:.0}% of the vertex's records",
                            k.key,
                            k.share * 100.0
                        ));
                    }
                }
            }
            evidence.push(
                "raising the parallelism will not help: every record of a key goes to the one \
                 subtask that owns its key group"
                    .to_string(),
            );
            // The skew enters through the HASH input, i.e. at the chain's head (the keyed
            // operator): that is what to split, whichever chained operator spends the most time
            // on the hot subtask's records.
            let target = if keyed || (v.operators.len() > 1 && hottest.is_none()) {
                first_op.clone().unwrap_or_else(|| v.name.clone())
            } else {
                op_or_vertex.clone()
            };
            bottleneck.operator = Some(target.clone());
            let buckets = ((4 * p) as u32).next_power_of_two().max(16);
            let key_text = if keys.is_empty() {
                "the hot keys".to_string()
            } else {
                keys.iter()
                    .map(|k| format!("`{}`", k.key))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            fix = Some(FixProposal {
                description: format!(
                    "salt {key_text}: pre-aggregate on (key, salt) over {buckets} buckets, then \
                     combine per key (same results, the hot key's records spread over all subtasks)"
                ),
                change: format!("two-phase aggregation on `{target}` with {buckets} buckets"),
                plan_change: Some(PlanChange::TwoPhase {
                    operator: target,
                    buckets,
                }),
            });
            let gain = hot_share.map(|s| s * p as f64).filter(|g| *g > 1.0);
            effect = match gain {
                Some(g) => format!(
                    "the load spreads evenly over the {p} subtasks: up to {g:.1}x the throughput, \
                     the hot subtask's busy time falling toward {}",
                    pct(hot_busy / g)
                ),
                None => format!("the load spreads evenly over the {p} subtasks"),
            };
            cause = Cause::KeySkew { hot_keys: keys };
        } else {
            evidence.push(format!(
                "its input is {} (not keyed): records are unevenly spread by the upstream wiring",
                v.ship_strategies.join(", ")
            ));
            let target = first_op.clone().unwrap_or_else(|| v.name.clone());
            fix = Some(FixProposal {
                description: "spread records round-robin over all subtasks".to_string(),
                change: format!("feed `{target}` through REBALANCE at parallelism {p}"),
                plan_change: Some(PlanChange::Parallelism {
                    operator: target,
                    parallelism: p,
                    ship: "REBALANCE".to_string(),
                }),
            });
            effect = "every subtask gets an equal share of the records".to_string();
            cause = Cause::UnevenLoad;
        }
        return Diagnosis {
            bottleneck: Some(bottleneck),
            cause,
            confidence: confidence.min(0.95),
            evidence,
            fix,
            expected_effect: effect,
            undetermined,
        };
    }

    // All (busy) subtasks alike.
    evidence.push(format!(
        "all {p} subtask(s) are busy alike ({} on average, min {})",
        pct(mean(busy.iter().copied())),
        pct(busy.iter().copied().fold(f64::INFINITY, f64::min))
    ));
    let avg_busy = mean(busy.iter().copied());
    let cpu = mean_opt(hot.iter().map(|&i| v.subtasks[i].cpu));
    let cpu_wait = mean_opt(hot.iter().map(|&i| v.subtasks[i].cpu_wait));
    if let (Some(c), Some(w)) = (cpu, cpu_wait) {
        if w > 0.25 * hot_busy {
            evidence.push(format!(
                "the machine is oversubscribed: of busy {} the thread computed {} and waited {} for a free CPU",
                pct(hot_busy),
                pct(c),
                pct(w)
            ));
        }
    }
    let state = mean_opt(hot.iter().map(|&i| v.subtasks[i].state_access));
    let stall_samples = stalls(samples, vi);
    let is_last = |op: &Option<String>| op.is_some() && *op == v.operators.last().cloned();
    let is_first = |op: &Option<String>| op.is_some() && *op == first_op;
    let busy_ratio = (avg_busy / 1000.0).clamp(0.0, 1.0);
    let mut n = ((p as f64 * busy_ratio / TARGET_BUSY).ceil() as usize).max(p + 1);
    if let Some(cores) = job.available_cores {
        n = n.min(cores);
    }
    let saturated = avg_busy >= 950.0;

    if let Some(k) = stall_samples {
        cause = Cause::Stalls;
        confidence = 0.6;
        evidence.push(format!(
            "in {k} of {} samples the record rate fell below a third of its median while the \
             busy time stayed high, in every subtask at once",
            samples.len()
        ));
        fix = None;
        effect = "look for allocation, compaction or pauses (GC, swapping) at those moments; \
                  more parallelism would stall the same way"
            .to_string();
    } else if let Some(c) = cpu.filter(|c| {
        // Time waiting for a free core is not blocking: count it with the CPU time.
        *c + cpu_wait.unwrap_or(0.0) < LOW_CPU_RATIO * hot_busy
    }) {
        cause = Cause::BlockingCalls;
        confidence = 0.8;
        evidence.push(format!(
            "busy {} but on the CPU only {}: the thread waits inside the operator (synchronous I/O, sleeps, locks)",
            pct(hot_busy),
            pct(c)
        ));
        let capacity = ((hot_busy / c.max(1.0)).ceil() as usize).clamp(2, 100);
        fix = Some(FixProposal {
            description: format!(
                "call the external system asynchronously (async I/O) so {capacity} requests per \
                 subtask are in flight instead of one"
            ),
            change: format!("async I/O in `{op_or_vertex}` with capacity {capacity}"),
            plan_change: Some(PlanChange::AsyncIo {
                operator: op_or_vertex.clone(),
                capacity,
            }),
        });
        effect = format!(
            "up to {:.1}x the throughput before the CPU becomes the limit",
            hot_busy / c.max(1.0)
        );
    } else if let Some(s) = state.filter(|s| *s >= STATE_RATIO * hot_busy) {
        cause = Cause::StateAccess;
        confidence = 0.7;
        evidence.push(format!(
            "{} of the busy time goes to keyed-state calls ({} of {})",
            pct(1000.0 * s / hot_busy.max(1.0)),
            pct(s),
            pct(hot_busy)
        ));
        fix = Some(FixProposal {
            description: "use the memory backend if the state fits in memory, keep less state \
                          (TTL, smaller values), or raise the parallelism to split the key groups"
                .to_string(),
            change: format!("cheaper state access in `{op_or_vertex}`"),
            plan_change: None,
        });
        effect = "the busy time falls with the state-access time".to_string();
    } else if v.is_source && (is_first(&operator) || (operator.is_none() && v.operators.len() <= 1))
    {
        cause = Cause::SourceCeiling;
        confidence = if operator.is_some() { 0.75 } else { 0.6 };
        evidence.push(format!(
            "the source itself runs flat out ({}) and nothing downstream holds it back",
            pct(hot_busy)
        ));
        fix = Some(FixProposal {
            description: "read with more parallel source subtasks (up to the partitions/splits \
                          of the input); if the source already has one subtask per partition, the \
                          source system is the limit: add partitions"
                .to_string(),
            change: format!("raise the source to parallelism {n} if it has ≥ {n} partitions"),
            plan_change: None,
        });
        effect = format!(
            "up to {:.1}x the input rate with {n} source subtasks",
            n as f64 / p as f64
        );
    } else if v.is_source && operator.is_none() {
        cause = Cause::SourceCeiling;
        confidence = 0.5;
        evidence.push(format!(
            "a source chain is busy ({}) and not backpressured; without per-operator time the \
             source cannot be told from the operators chained to it",
            pct(hot_busy)
        ));
        fix = None;
        effect = "unknown until the operator inside the chain is known".to_string();
    } else if v.is_sink && (is_last(&operator) || (operator.is_none() && v.operators.len() <= 1)) {
        cause = Cause::SinkLimit;
        confidence = 0.7;
        evidence.push(format!("the sink is busy writing ({})", pct(hot_busy)));
        let target = operator.clone().unwrap_or_else(|| v.name.clone());
        fix = Some(FixProposal {
            description: "batch the writes (larger, fewer requests) or scale the sink".to_string(),
            change: format!(
                "raise `{target}` to parallelism {n} behind REBALANCE, or batch its writes"
            ),
            plan_change: Some(PlanChange::Parallelism {
                operator: target,
                parallelism: n,
                ship: "REBALANCE".to_string(),
            }),
        });
        effect = format!(
            "up to {:.1}x the write rate if the external system keeps up",
            n as f64 / p as f64
        );
    } else {
        cause = Cause::UnderProvisioned;
        confidence = if operator.is_some() || v.operators.len() <= 1 {
            0.75
        } else {
            0.6
        };
        if cpu.is_some() {
            evidence.push(format!(
                "the busy time is CPU time (cpu {} of busy {}): real work",
                pct(cpu.unwrap_or(0.0)),
                pct(hot_busy)
            ));
        }
        let target = operator.clone().unwrap_or_else(|| v.name.clone());
        // A keyed operator heading its chain keeps HASH; anything else gets REBALANCE (a chained
        // operator raised alone leaves its chain through a redistributing edge).
        let ship = if keyed && (is_first(&operator) || operator.is_none()) {
            "HASH"
        } else {
            "REBALANCE"
        };
        if n <= p {
            evidence.push(format!("no free cores beyond the {p} subtasks in use"));
            fix = Some(FixProposal {
                description: format!("make `{target}` cheaper: no cores are free to scale it"),
                change: format!("cheaper work in `{target}`"),
                plan_change: None,
            });
            effect = "the throughput rises as the per-record cost falls".to_string();
        } else {
            fix = Some(FixProposal {
                description: format!(
                    "run `{target}` on more subtasks: N = ceil({p} × {busy_ratio:.2} / {TARGET_BUSY}) \
                     = {n}{}, fed by {ship} instead of FORWARD; or make it cheaper",
                    if job.available_cores.is_some() { " (capped by the free cores)" } else { "" }
                ),
                change: format!("raise `{target}` to parallelism {n} behind {ship}"),
                plan_change: Some(PlanChange::Parallelism {
                    operator: target.clone(),
                    parallelism: n,
                    ship: ship.to_string(),
                }),
            });
            effect = format!(
                "{}{:.1}x the throughput, busy per subtask near {:.0}%",
                if saturated { "at least " } else { "about " },
                n as f64 / p as f64,
                TARGET_BUSY * 100.0
            );
            if saturated {
                evidence.push(
                    "the subtasks are saturated, so the true demand may be higher than N covers"
                        .to_string(),
                );
            }
        }
        if cpu.is_none() {
            confidence -= 0.1;
        }
    }
    Diagnosis {
        bottleneck: Some(bottleneck),
        cause,
        confidence,
        evidence,
        fix,
        expected_effect: effect,
        undetermined,
    }
}

/// Periodic stalls of vertex `vi` over the series: samples where the rate fell below a third of
/// its median while busy stayed at least at 80 % of its median, in every subtask at once, in some
/// but not most samples. Returns how many.
fn stalls(samples: &[Snapshot], vi: usize) -> Option<usize> {
    if samples.len() < 4 {
        return None;
    }
    let median = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let subs = samples[0].get(vi)?.len();
    if subs == 0 {
        return None;
    }
    let mut stalled = vec![true; samples.len()];
    for i in 0..subs {
        let rate: Vec<f64> = samples
            .iter()
            .map(|s| {
                s.get(vi)
                    .and_then(|v| v.get(i))
                    .and_then(|x| x.rate())
                    .unwrap_or(0.0)
            })
            .collect();
        let busy: Vec<f64> = samples
            .iter()
            .map(|s| {
                s.get(vi)
                    .and_then(|v| v.get(i))
                    .map_or(0.0, |x| x.busy_ms())
            })
            .collect();
        let (mr, mb) = (median(rate.clone()), median(busy.clone()));
        if mr <= 0.0 {
            return None;
        }
        for t in 0..samples.len() {
            if !(rate[t] < mr / 3.0 && busy[t] >= 0.8 * mb) {
                stalled[t] = false;
            }
        }
    }
    let k = stalled.iter().filter(|s| **s).count();
    (k >= 1 && 2 * k < samples.len()).then_some(k)
}

#[cfg(test)]
mod tests;
