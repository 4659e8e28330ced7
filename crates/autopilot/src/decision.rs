//! One entry of the decision log: what was diagnosed, what was changed, the figures before and
//! after, and what became of the change.

use serde_json::{json, Value};
use sluice_doctor::{plan_change_json, PlanChange};

use crate::Measurement;

/// What became of a decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The change was applied; the job is settling before it is re-measured.
    Applied,
    /// Re-measured: both figures rose by the policy's gain; the change stays.
    Kept,
    /// Re-measured: a figure did not rise enough; the change was undone and is not retried.
    RolledBack {
        /// Why the change was undone (a figure short of the gain, an inconclusive measurement).
        reason: String,
    },
    /// The proposal was not applied (a limit, known to be ineffective, low confidence).
    Skipped {
        /// The limit or rule that held it back.
        reason: String,
    },
    /// Applying the change failed (the server refused it); it is not retried.
    Failed {
        /// The executor's error.
        reason: String,
    },
    /// The fix is not a change the target can apply (a code change): printed as advice.
    Advised,
}

impl Outcome {
    /// Stable short name (JSON, dashboard, tests).
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Kept => "kept",
            Outcome::RolledBack { .. } => "rolled-back",
            Outcome::Skipped { .. } => "skipped",
            Outcome::Failed { .. } => "failed",
            Outcome::Advised => "advised",
        }
    }

    fn reason(&self) -> Option<&str> {
        match self {
            Outcome::RolledBack { reason }
            | Outcome::Skipped { reason }
            | Outcome::Failed { reason } => Some(reason),
            _ => None,
        }
    }
}

/// A decision with its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// 1, 2, … in the order decisions were taken.
    pub id: u64,
    /// When the diagnosis that led to it was complete (the caller's clock, ms; the CLI uses
    /// milliseconds since the Unix epoch).
    pub at_ms: u64,
    /// When its outcome was settled (kept, rolled back, skipped …).
    pub decided_ms: Option<u64>,
    /// The doctor's cause name (`under-provisioned`, `key-skew`, …) and verdict line.
    pub cause: String,
    /// See `cause`: the doctor's verdict line.
    pub verdict: String,
    /// The change in machine form, when the fix is a plan change.
    pub change: Option<PlanChange>,
    /// The fix in one line (a code change for advice).
    pub change_text: String,
    /// The doctor's evidence for the diagnosis.
    pub evidence: Vec<String>,
    /// The job measured before the change was applied.
    pub before: Option<Measurement>,
    /// The job re-measured once the change settled; `None` until judged.
    pub after: Option<Measurement>,
    /// Where the decision stands.
    pub outcome: Outcome,
    /// What the executor reported (plan diff, time to reach a new parallelism, …).
    pub notes: Vec<String>,
}

impl Decision {
    /// `(bottleneck rate, throughput)` gains, relative (`0.5` = +50 %), when re-measured.
    pub fn gains(&self) -> Option<(f64, f64)> {
        let (b, a) = (self.before.as_ref()?, self.after.as_ref()?);
        Some((
            gain(b.bottleneck_rate, a.bottleneck_rate),
            gain(b.throughput, a.throughput),
        ))
    }

    /// The decision as the autopilot's JSON log entry (kebab-case keys).
    pub fn to_json(&self) -> Value {
        let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({
            "id": self.id,
            "time": self.at_ms,
            "decided-time": self.decided_ms,
            "cause": self.cause,
            "verdict": self.verdict,
            "change": self.change.as_ref().map(plan_change_json),
            "change-text": self.change_text,
            "evidence": self.evidence,
            "before": self.before.as_ref().map(Measurement::to_json),
            "after": self.after.as_ref().map(Measurement::to_json),
            "gain": self.gains().map(|(r, t)| json!({
                "bottleneck-rate": round3(r),
                "throughput": round3(t),
            })),
            "outcome": self.outcome.name(),
            "reason": self.outcome.reason(),
            "notes": self.notes,
        })
    }

    /// One line for a terminal: `#2 kept: parallelism of heavy-map 1 -> 2 (rate 410 -> 790/s …)`.
    pub fn summary(&self) -> String {
        let mut s = format!("#{} {}: {}", self.id, self.outcome.name(), self.change_text);
        if let Some(b) = &self.before {
            s.push_str(&format!(
                " — before: {} at parallelism {} {:.0}/s, job {:.0}/s",
                b.bottleneck, b.parallelism, b.bottleneck_rate, b.throughput
            ));
        }
        if let Some(a) = &self.after {
            s.push_str(&format!(
                "; after: parallelism {} {:.0}/s, job {:.0}/s",
                a.parallelism, a.bottleneck_rate, a.throughput
            ));
        }
        if let Some((r, t)) = self.gains() {
            s.push_str(&format!(
                " ({:+.0} % rate, {:+.0} % throughput)",
                r * 100.0,
                t * 100.0
            ));
        }
        if let Some(r) = self.outcome.reason() {
            s.push_str(&format!(" — {r}"));
        }
        s
    }
}

/// Relative gain from `before` to `after`; from 0 any rise is infinite, no rise 0.
pub fn gain(before: f64, after: f64) -> f64 {
    if before > 0.0 {
        after / before - 1.0
    } else if after > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}
