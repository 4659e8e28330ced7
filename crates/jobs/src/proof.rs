//! `sluice doctor fix`'s proof: the original and the fixed job run to completion on the same
//! bounded input, their outputs compared ([`JobOutput`]) and their busiest subtasks set side
//! by side ([`BusyShare`], [`BoundedRun`], [`FixProof`]).
//!
//! It runs jobs and reads their final metrics; it does not diagnose (the fix comes in as a
//! [`PlanChange`]) and prints nothing (the CLI prints [`FixProof::text`] and draws its progress
//! through a [`Watch`]).
//!
//! Besides the outputs, the proof says what the fix buys: both runs' throughputs, and — because
//! a throughput measured on a shared machine depends on what else runs there — the throughput
//! each run's own CPU use allows on a given number of free cores ([`CpuUse::bound`]): a fix
//! that spreads a hot subtask's work over more threads pays only where cores are free for them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_datastream::fixer::{apply, PlanChange, PlanDiff};
use sluice_datastream::{JobMonitor, StreamEnv};

use crate::built::BuiltJob;
use crate::connectors::{truncate_table, Result, SinkHandle};

/// A job's output, for comparing the original and the fixed run.
#[derive(Debug, PartialEq)]
pub enum JobOutput {
    /// The skew job's final sum per key.
    Sums(BTreeMap<i64, i64>),
    /// Records the sink discarded.
    Count(u64),
    /// What a table sink left in its table: key → value.
    Table(BTreeMap<i64, i64>),
    /// What the `blocking` scenario's lookup join emitted: digests in order per subtask (equal
    /// = identical output) and as a multiset.
    Lookup(crate::blocking::LookupDigest),
}

impl JobOutput {
    /// What the output is, for the proof's first line.
    pub fn describe(&self) -> String {
        match self {
            JobOutput::Sums(s) => format!("{} keys' final sums", s.len()),
            JobOutput::Count(n) => format!("{n} records at the sink"),
            JobOutput::Table(t) => format!("the table's {} rows", t.len()),
            JobOutput::Lookup(d) => format!(
                "the {} looked-up records (in order on each of {} subtasks)",
                d.multiset.1,
                d.ordered.len()
            ),
        }
    }
}

/// One subtask's share of its life spent busy, from the final metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct BusyShare {
    /// The vertex's name.
    pub vertex: String,
    /// The subtask's index (0-based).
    pub subtask: usize,
    /// The vertex's parallelism.
    pub parallelism: usize,
    /// Busy time over lifetime, 0 to 1.
    pub share: f64,
}

impl std::fmt::Display for BusyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>3.0}%  {} ({}/{})",
            100.0 * self.share,
            self.vertex,
            self.subtask + 1,
            self.parallelism
        )
    }
}

/// The CPU time a run's subtask threads used, from their final metrics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuUse {
    /// All subtasks together, ms.
    pub total_ms: f64,
    /// The subtask that used the most, ms: the run's critical path, which no number of cores
    /// shortens.
    pub busiest_ms: f64,
}

impl CpuUse {
    /// Records per second this CPU use allows on `cores` free cores: the run cannot end before
    /// its busiest thread has run, nor before all of its CPU time has been spread over the cores.
    /// It does not depend on what else the machine runs (a thread's CPU time does not grow
    /// while it waits for a core), so two runs compare by it on a loaded machine too.
    pub fn bound(&self, records: u64, cores: usize) -> f64 {
        let ms = self.busiest_ms.max(self.total_ms / cores.max(1) as f64);
        records as f64 * 1000.0 / ms.max(1e-3)
    }
}

/// A bounded run's figures.
pub struct BoundedRun {
    /// What the job produced, when it compares.
    pub output: Option<JobOutput>,
    /// From launch to the end.
    pub wall: Duration,
    /// Records the sources emitted.
    pub records: u64,
    /// `[vertex][subtask]` busy shares (accumulated busy / lifetime).
    pub busy: Vec<Vec<BusyShare>>,
    /// The subtask threads' CPU time (`None` where the platform does not report it).
    pub cpu: Option<CpuUse>,
}

impl BoundedRun {
    /// Records per second, from launch to the end.
    pub fn throughput(&self) -> f64 {
        self.records as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The busiest subtask among vertices whose name contains `operator` (all when `None`).
    pub fn busiest(&self, operator: Option<&str>) -> Option<BusyShare> {
        self.busy
            .iter()
            .flatten()
            .filter(|b| operator.is_none_or(|op| b.vertex.contains(op)))
            .max_by(|a, b| a.share.total_cmp(&b.share))
            .cloned()
    }
}

/// Watches a bounded run (the CLI's progress bar): called at launch with the run's label
/// (`original`, `fixed`) and its monitor; what it returns is called when the run has ended.
pub type Watch<'a> = &'a dyn Fn(&str, Arc<JobMonitor>) -> Box<dyn FnOnce()>;

/// Runs `job`, built on `env` (with `fix` applied first when given), to completion, watched
/// by `watch` as `label`.
pub fn run_bounded(
    env: &StreamEnv,
    job: &BuiltJob,
    fix: Option<&PlanChange>,
    (label, watch): (&str, Watch<'_>),
) -> Result<(BoundedRun, PlanDiff)> {
    let diff = match fix {
        Some(f) => apply(env, f).map_err(|e| e.to_string())?,
        None => PlanDiff::default(),
    };
    // A table both runs write to starts empty for each, so their contents compare.
    if let BuiltJob::RealScenario(s) = job {
        if let Some(SinkHandle::Postgres { conn, table, .. }) = &s.sink {
            truncate_table(conn, table)?;
        }
    }
    let t0 = Instant::now();
    let handle = env.launch().map_err(|e| e.to_string())?;
    let monitor = handle.monitor();
    let watching = watch(label, monitor.clone());
    let exec = handle.wait();
    let wall = t0.elapsed();
    watching();
    let exec = exec.map_err(|e| e.to_string())?;
    let metrics = monitor.vertex_metrics();
    let cpu: Vec<f64> = metrics
        .iter()
        .flat_map(|v| v.subtasks.iter().map(|s| s.accumulated_cpu_ms))
        .collect();
    let cpu = (!cpu.is_empty() && cpu.iter().all(|c| c.is_finite())).then(|| CpuUse {
        total_ms: cpu.iter().sum(),
        busiest_ms: cpu.iter().copied().fold(0.0, f64::max),
    });
    let busy = exec
        .graph
        .vertices
        .iter()
        .zip(&metrics)
        .map(|(v, m)| {
            m.subtasks
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let life = (s.accumulated_busy_ms
                        + s.accumulated_idle_ms
                        + s.accumulated_backpressured_ms)
                        .max(1.0);
                    BusyShare {
                        vertex: v.name.clone(),
                        subtask: i,
                        parallelism: m.subtasks.len(),
                        share: s.accumulated_busy_ms / life,
                    }
                })
                .collect()
        })
        .collect();
    Ok((
        BoundedRun {
            output: job.output()?,
            wall,
            records: monitor.records_emitted_by_sources(),
            busy,
            cpu,
        },
        diff,
    ))
}

/// Label column of [`FixProof::text`].
const W: usize = 34;

/// What `doctor fix` found and proved.
pub struct FixProof {
    /// The plan change the fix made.
    pub diff: PlanDiff,
    /// The run without the fix.
    pub original: BoundedRun,
    /// The run with the fix.
    pub fixed: BoundedRun,
    /// The operator the fix targets.
    pub operator: String,
}

impl FixProof {
    /// Builds the job twice with `build` and runs it without and with `fix`, each watched by
    /// `watch`.
    pub fn run(
        build: impl Fn() -> Result<(StreamEnv, BuiltJob)>,
        fix: &PlanChange,
        watch: Watch<'_>,
    ) -> Result<FixProof> {
        let (env, job) = build()?;
        let (original, _) = run_bounded(&env, &job, None, ("original", watch))?;
        let (env, job) = build()?;
        let (fixed, diff) = run_bounded(&env, &job, Some(fix), ("fixed", watch))?;
        Ok(FixProof {
            diff,
            original,
            fixed,
            operator: fix.operator().to_string(),
        })
    }

    /// Both runs produced the same comparable output.
    pub fn identical(&self) -> bool {
        self.original.output.is_some() && self.original.output == self.fixed.output
    }

    /// The fixed run's throughput over the original's, measured.
    pub fn speedup(&self) -> f64 {
        self.fixed.throughput() / self.original.throughput().max(1e-9)
    }

    /// The fixed run's CPU-allowed throughput over the original's on `cores` free cores
    /// ([`CpuUse::bound`]); `None` without CPU figures.
    pub fn cpu_speedup(&self, cores: usize) -> Option<f64> {
        let (o, f) = (self.original.cpu?, self.fixed.cpu?);
        Some(f.bound(self.fixed.records, cores) / o.bound(self.original.records, cores).max(1e-9))
    }

    /// What the fix bought on this machine of `cores` cores, or plainly that it did not pay
    /// (a gain under 10% is within what a shared machine's noise makes of two runs).
    pub fn payoff(&self, cores: usize) -> String {
        let (x, o, f) = (
            self.speedup(),
            self.original.throughput(),
            self.fixed.throughput(),
        );
        if x >= 1.1 {
            return format!(
                "What the fix buys: {x:.2}x the throughput ({} -> {} records/s) on this machine's {cores} cores.",
                rate(o),
                rate(f)
            );
        }
        let why = match self.cpu_speedup(cores) {
            Some(c) if c >= 1.1 => format!(
                "the CPU the runs used would allow {c:.2}x on {cores} free cores, so other work on this machine took the cores the fix needs"
            ),
            _ => format!(
                "the fix spreads work over more threads, which pays only with free cores (this machine has {cores}) and enough work per record to outweigh what it adds"
            ),
        };
        format!(
            "The fix does NOT pay on this machine: the fixed job ran at {x:.2}x the original's throughput ({} -> {} records/s); {why}.",
            rate(o),
            rate(f)
        )
    }

    /// The proof as text: records compared, outputs, wall times and throughputs, the throughput
    /// each run's CPU use allows on `cores` cores, busy shares before and after.
    pub fn text(&self, cores: usize) -> String {
        let mut out = String::new();
        match (&self.original.output, self.identical()) {
            (Some(o), true) => out.push_str(&format!(
                "output: identical ({} equal in both runs)\n",
                o.describe()
            )),
            (Some(o), false) => out.push_str(&format!(
                "output: DIFFERENT (original: {}; fixed: {})\n",
                o.describe(),
                self.fixed
                    .output
                    .as_ref()
                    .map_or("none".to_string(), JobOutput::describe)
            )),
            (None, _) => out.push_str("output: this job's output cannot be compared\n"),
        }
        out.push_str(&format!(
            "{:<W$}original {}   fixed {}\n",
            "records compared", self.original.records, self.fixed.records
        ));
        out.push_str(&format!(
            "{:<W$}original {:>6.2} s   fixed {:>6.2} s\n",
            "wall time",
            self.original.wall.as_secs_f64(),
            self.fixed.wall.as_secs_f64()
        ));
        out.push_str(&format!(
            "{:<W$}original {}/s   fixed {}/s   ({:.2}x)\n",
            "throughput (records/s)",
            rate(self.original.throughput()),
            rate(self.fixed.throughput()),
            self.speedup()
        ));
        if let (Some(o), Some(f), Some(x)) =
            (self.original.cpu, self.fixed.cpu, self.cpu_speedup(cores))
        {
            out.push_str(&format!(
                "{:<W$}original {}/s   fixed {}/s   ({x:.2}x)\n",
                format!("CPU-bound on {cores} cores"),
                rate(o.bound(self.original.records, cores)),
                rate(f.bound(self.fixed.records, cores)),
            ));
        }
        let op = Some(self.operator.as_str());
        let rows = [
            (
                format!("busiest `{}` subtask", self.operator),
                self.original.busiest(op),
                self.fixed.busiest(op),
            ),
            (
                "busiest subtask of the job".to_string(),
                self.original.busiest(None),
                self.fixed.busiest(None),
            ),
        ];
        for (label, before, after) in rows {
            if let (Some(b), Some(a)) = (before, after) {
                out.push_str(&format!("{label:<W$}before {b}\n{:<W$}after  {a}\n", ""));
            }
        }
        out
    }
}

/// `1.23M`, `456.7k`, `89`: a rate as the proof prints it.
fn rate(per_s: f64) -> String {
    match per_s {
        r if r >= 1e6 => format!("{:.2}M", r / 1e6),
        r if r >= 1e3 => format!("{:.1}k", r / 1e3),
        r => format!("{r:.0}"),
    }
}

/// A calibration run is long enough once it takes this long: start-up is then small beside it.
const CALIBRATION_RUN: Duration = Duration::from_millis(500);

/// Records for a proof run of the job `build` makes (given a record count) that takes about
/// `target`: runs it on 1000 records, then on 4x as many until a run takes
/// [`CALIBRATION_RUN`], and scales from that run's rate ([`records_for`]). A rate measured
/// while the job runs live would do for a fast job, but a slow one (a blocking lookup at a few
/// hundred records/s) moves its counters a buffer at a time; a bounded run's end is exact.
pub fn calibrate(
    build: impl Fn(u64) -> Result<(StreamEnv, BuiltJob)>,
    target: Duration,
) -> Result<u64> {
    let mut n = 1_000u64;
    loop {
        let (env, job) = build(n)?;
        let (run, _) = run_bounded(&env, &job, None, ("calibration", &|_, _| Box::new(|| ())))?;
        if run.wall >= CALIBRATION_RUN || n >= RECORDS_MAX / 4 {
            return Ok(records_for(run.throughput(), target));
        }
        n *= 4;
    }
}

/// The most records [`records_for`] proposes: a few seconds of the fastest built-in job.
const RECORDS_MAX: u64 = 20_000_000;

/// How long the proof's original run should take when the job's input is unbounded and the
/// user gave no record count: long enough that start-up and the metric ticks are small beside
/// it, short enough that both runs end within seconds.
pub const PROOF_RUN: Duration = Duration::from_secs(4);

/// Records for a bounded proof run of about `target` at `rate` records/s: at least 1000 (a
/// comparison on fewer says little), at most [`RECORDS_MAX`].
pub fn records_for(rate: f64, target: Duration) -> u64 {
    let n = if rate.is_finite() {
        rate * target.as_secs_f64()
    } else {
        0.0
    };
    (n as u64).clamp(1_000, RECORDS_MAX)
}
