//! One entry of the decision log: what was diagnosed, what was changed, the figures before and
//! after, and what became of the change.

use serde_json::Value;
use sluice_doctor::{plan_change_spec, PlanChange};
use sluice_rest_api::{AutopilotDecision, DecisionGain};

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

    /// The decision as the autopilot's log entry in its REST shape (the body of `PUT
    /// /jobs/:jid/autopilot`, kebab-case keys).
    pub fn to_shape(&self) -> AutopilotDecision {
        let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
        AutopilotDecision {
            id: self.id,
            time: self.at_ms,
            decided_time: self.decided_ms,
            cause: self.cause.clone(),
            verdict: self.verdict.clone(),
            change: self.change.as_ref().map(plan_change_spec),
            change_text: self.change_text.clone(),
            evidence: self.evidence.clone(),
            before: self.before.as_ref().map(Measurement::to_shape),
            after: self.after.as_ref().map(Measurement::to_shape),
            gain: self.gains().map(|(r, t)| DecisionGain {
                bottleneck_rate: round3(r),
                throughput: round3(t),
            }),
            outcome: self.outcome.name().to_string(),
            reason: self.outcome.reason().map(str::to_string),
            notes: self.notes.clone(),
        }
    }

    /// The decision as the autopilot's JSON log entry ([`Decision::to_shape`]).
    pub fn to_json(&self) -> Value {
        // Plain data of strings and numbers: serde_json never refuses it.
        serde_json::to_value(self.to_shape()).unwrap_or(Value::Null)
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

#[cfg(test)]
mod tests {
    //! The shape writes exactly what the `json!` builder it replaced wrote (copied here as it
    //! was: the reference), and reads back.

    use serde_json::{json, Value};
    use sluice_doctor::{plan_change_json, ShipStrategy};

    use super::*;

    fn old_measurement_json(m: &Measurement) -> Value {
        let round1 = |x: f64| (x * 10.0).round() / 10.0;
        json!({
            "bottleneck": m.bottleneck,
            "parallelism": m.parallelism,
            "bottleneck-rate": round1(m.bottleneck_rate),
            "throughput": round1(m.throughput),
            "working-subtasks": m.working_subtasks,
        })
    }

    fn old_to_json(d: &Decision) -> Value {
        let s = d;
        let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({
            "id": s.id,
            "time": s.at_ms,
            "decided-time": s.decided_ms,
            "cause": s.cause,
            "verdict": s.verdict,
            "change": s.change.as_ref().map(plan_change_json),
            "change-text": s.change_text,
            "evidence": s.evidence,
            "before": s.before.as_ref().map(old_measurement_json),
            "after": s.after.as_ref().map(old_measurement_json),
            "gain": s.gains().map(|(r, t)| json!({
                "bottleneck-rate": round3(r),
                "throughput": round3(t),
            })),
            "outcome": s.outcome.name(),
            "reason": s.outcome.reason(),
            "notes": s.notes,
        })
    }

    #[test]
    fn the_shape_writes_what_the_builder_wrote_and_reads_back() {
        let m = |rate: f64| Measurement {
            bottleneck: "map".into(),
            parallelism: 1,
            bottleneck_rate: rate,
            throughput: 990.04,
            working_subtasks: 1,
        };
        let open = Decision {
            id: 1,
            at_ms: 1_796_000_000_000,
            decided_ms: None,
            cause: "under-provisioned".into(),
            verdict: "map is busy".into(),
            change: Some(PlanChange::Parallelism {
                operator: "map".into(),
                parallelism: 2,
                ship: ShipStrategy::Rebalance,
            }),
            change_text: "parallelism of `map` 1 -> 2".into(),
            evidence: vec!["busy 990 ms/s".into()],
            before: Some(m(1000.26)),
            after: None,
            outcome: Outcome::Applied,
            notes: Vec::new(),
        };
        let kept = Decision {
            decided_ms: Some(1_796_000_030_000),
            after: Some(m(1900.55)),
            outcome: Outcome::Kept,
            notes: vec!["plan diff: ~ [2] map".into()],
            ..open.clone()
        };
        let rolled_back = Decision {
            outcome: Outcome::RolledBack {
                reason: "no gain".into(),
            },
            ..kept.clone()
        };
        let advised = Decision {
            change: None,
            before: None,
            outcome: Outcome::Advised,
            ..open.clone()
        };
        for d in [open, kept, rolled_back, advised] {
            let text = d.to_json().to_string();
            assert_eq!(text, old_to_json(&d).to_string());
            let back: AutopilotDecision = serde_json::from_str(&text).unwrap();
            assert_eq!(back, d.to_shape());
        }
    }
}
