//! `sluice doctor fix`'s proof: the original and the fixed job run to completion on the same
//! bounded input, their outputs compared ([`JobOutput`]) and their busiest subtasks set side
//! by side ([`BusyShare`], [`BoundedRun`], [`FixProof`]).
//!
//! It runs jobs and reads their final metrics; it does not diagnose (the fix comes in as a
//! [`PlanChange`]) and prints nothing (the CLI prints [`FixProof::text`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sluice_datastream::fixer::{apply, PlanChange, PlanDiff};
use sluice_datastream::StreamEnv;

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

/// A bounded run's figures.
pub struct BoundedRun {
    /// What the job produced, when it compares.
    pub output: Option<JobOutput>,
    /// From launch to the end.
    pub wall: Duration,
    /// `[vertex][subtask]` busy shares (accumulated busy / lifetime).
    pub busy: Vec<Vec<BusyShare>>,
}

impl BoundedRun {
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

/// Runs `job`, built on `env` (with `fix` applied first when given), to completion.
pub fn run_bounded(
    env: &StreamEnv,
    job: &BuiltJob,
    fix: Option<&PlanChange>,
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
    let exec = handle.wait().map_err(|e| e.to_string())?;
    let wall = t0.elapsed();
    let metrics = monitor.vertex_metrics();
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
            busy,
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
    /// Builds the job twice with `build` and runs it without and with `fix`.
    pub fn run(
        build: impl Fn() -> Result<(StreamEnv, BuiltJob)>,
        fix: &PlanChange,
    ) -> Result<FixProof> {
        let (env, job) = build()?;
        let (original, _) = run_bounded(&env, &job, None)?;
        let (env, job) = build()?;
        let (fixed, diff) = run_bounded(&env, &job, Some(fix))?;
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

    /// The proof as text: outputs compared, wall times, busy shares before and after.
    pub fn text(&self) -> String {
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
            "{:<W$}original {:>6.2} s   fixed {:>6.2} s\n",
            "wall time",
            self.original.wall.as_secs_f64(),
            self.fixed.wall.as_secs_f64()
        ));
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
