//! The decision loop as a state machine: the caller measures and applies, the [`Autopilot`]
//! decides. Time is the caller's (ms), so every step is a pure function of its inputs.

use serde_json::{json, Value};
use sluice_doctor::{Diagnosis, JobView, PlanChange};

use crate::decision::gain;
use crate::{measure, Decision, Outcome, Policy};

/// The operator Sluice's two-phase rewrite puts where the aggregation's records arrive
/// (`sluice_datastream`'s `two_phase`; the combiner is `<aggregation> (combine)`).
pub const TWO_PHASE_PRE_AGGREGATE: &str = "pre-aggregate (salted)";

/// The doctor's confidence below which the autopilot does not act.
pub const MIN_CONFIDENCE: f64 = 0.5;

/// What [`Autopilot::propose`] asks the caller to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Proposal {
    /// Nothing to change (no bottleneck, waiting, or a proposal skipped — then logged); why.
    Nothing(String),
    /// Print this advice (a code change the target cannot apply itself); logged.
    Advice {
        /// The logged decision's id.
        decision: u64,
        /// The advice to print.
        text: String,
    },
    /// Apply `change`, then report with [`Autopilot::applied`].
    Apply {
        /// The logged decision's id, to report back with.
        decision: u64,
        /// The plan change to apply.
        change: PlanChange,
    },
}

/// What [`Autopilot::judge`] concluded after re-measuring.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Still stabilising until this time (ms): measure later.
    NotYet {
        /// When the job counts as settled (the caller's clock).
        until_ms: u64,
    },
    /// Nothing was applied: nothing to judge.
    Idle,
    /// The change helped: it stays.
    Keep {
        /// The kept decision's id.
        decision: u64,
    },
    /// The change did not help: undo it, with `to` when the way back is itself a plan change
    /// (a parallelism back to its old value), else the executor's own undo of `change`.
    RollBack {
        /// The rolled-back decision's id.
        decision: u64,
        /// The change that was applied.
        change: PlanChange,
        /// The change that restores the old plan, when there is one.
        to: Option<PlanChange>,
    },
}

/// A change found not to help (or refused), never proposed again.
#[derive(Clone, Debug, PartialEq)]
pub struct Ineffective {
    /// The operator the change targeted.
    pub operator: String,
    /// The plan change's kind (`parallelism`, `two-phase`, …).
    pub kind: String,
    /// For a parallelism: the value tried; this and every higher one are not retried (Flink's
    /// autoscaler blocks further scale-ups of a vertex whose last one was ineffective).
    pub parallelism: Option<usize>,
    /// Why it is not retried (the rollback's or failure's reason).
    pub reason: String,
}

impl Ineffective {
    fn blocks(&self, c: &PlanChange) -> bool {
        if c.operator() != self.operator || kind(c) != self.kind {
            return false;
        }
        match (c, self.parallelism) {
            (PlanChange::Parallelism { parallelism, .. }, Some(tried)) => *parallelism >= tried,
            _ => true,
        }
    }
}

fn kind(c: &PlanChange) -> &'static str {
    match c {
        PlanChange::Parallelism { .. } => "parallelism",
        PlanChange::TwoPhase { .. } => "two-phase",
        PlanChange::AsyncCapacity { .. } => "async-io",
        PlanChange::SinkOption { .. } => "sink-option",
        PlanChange::LookupCache { .. } => "lookup-cache",
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// Free to propose from this time on.
    Ready { not_before_ms: u64 },
    /// The proposal is out: waiting for [`Autopilot::applied`].
    Applying {
        index: usize,
        revert: Option<PlanChange>,
    },
    /// Applied: re-measure from `settle_until_ms`; `remeasured` windows were found
    /// inconclusive already (the input ran dry).
    Settling {
        index: usize,
        revert: Option<PlanChange>,
        settle_until_ms: u64,
        remeasured: u32,
    },
}

/// The autopilot: its policy, where it is in the loop, the decision log and what not to retry.
#[derive(Clone, Debug)]
pub struct Autopilot {
    policy: Policy,
    phase: Phase,
    log: Vec<Decision>,
    ineffective: Vec<Ineffective>,
}

impl Autopilot {
    /// An autopilot ready to propose at once, with an empty log.
    pub fn new(policy: Policy) -> Autopilot {
        Autopilot {
            policy,
            phase: Phase::Ready { not_before_ms: 0 },
            log: Vec::new(),
            ineffective: Vec::new(),
        }
    }

    /// The policy it decides by.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Every decision so far, oldest first.
    pub fn log(&self) -> &[Decision] {
        &self.log
    }

    /// Changes that will not be proposed again.
    pub fn ineffective(&self) -> &[Ineffective] {
        &self.ineffective
    }

    /// The earliest time the next step makes sense: the cooldown's end, the stabilisation's end.
    pub fn ready_at(&self) -> u64 {
        match &self.phase {
            Phase::Ready { not_before_ms } => *not_before_ms,
            Phase::Applying { .. } => 0,
            Phase::Settling {
                settle_until_ms, ..
            } => *settle_until_ms,
        }
    }

    /// Whether a change is out and waits to be re-measured ([`Autopilot::judge`]).
    pub fn awaiting_judgement(&self) -> bool {
        matches!(self.phase, Phase::Settling { .. })
    }

    /// Decides on a diagnosis over a window ending at `now_ms`, `job` being the window's
    /// averaged metrics. `can_apply` says which plan changes the target can apply; the others
    /// are advice.
    pub fn propose(
        &mut self,
        now_ms: u64,
        d: &Diagnosis,
        job: &JobView,
        can_apply: &dyn Fn(&PlanChange) -> bool,
    ) -> Proposal {
        match self.phase {
            Phase::Ready { not_before_ms } if now_ms < not_before_ms => {
                return Proposal::Nothing(format!(
                    "cooling down for {} ms more",
                    not_before_ms - now_ms
                ));
            }
            Phase::Ready { .. } => {}
            _ => return Proposal::Nothing("a change is being applied or measured".into()),
        }
        let (Some(b), Some(fix)) = (&d.bottleneck, &d.fix) else {
            return Proposal::Nothing(format!("{}: nothing to change", d.verdict()));
        };
        let measured = b.operator.clone().unwrap_or_else(|| b.vertex_name.clone());
        let before = measure(job, &measured).or_else(|| measure(job, &b.vertex_name));
        let mut decision = Decision {
            id: self.log.len() as u64 + 1,
            at_ms: now_ms,
            decided_ms: None,
            cause: d.cause.name().to_string(),
            verdict: d.verdict(),
            change: fix.plan_change.clone(),
            change_text: fix.change.clone(),
            evidence: d.evidence.clone(),
            before,
            after: None,
            outcome: Outcome::Applied,
            notes: Vec::new(),
        };
        let skip = |this: &mut Autopilot, mut decision: Decision, reason: String| {
            // The same skip again (every loop while nothing changes) is not a new decision.
            let repeat = this.log.last().is_some_and(|l| {
                l.outcome
                    == Outcome::Skipped {
                        reason: reason.clone(),
                    }
                    && l.change == decision.change
            });
            if !repeat {
                decision.decided_ms = Some(now_ms);
                decision.outcome = Outcome::Skipped {
                    reason: reason.clone(),
                };
                this.log.push(decision);
            }
            Proposal::Nothing(reason)
        };
        if d.confidence < MIN_CONFIDENCE {
            let reason = format!(
                "confidence {:.2} below {MIN_CONFIDENCE}: not acting on it",
                d.confidence
            );
            return skip(self, decision, reason);
        }
        let Some(mut change) = fix.plan_change.clone() else {
            // Not a plan change at all (add partitions, a code change): advice, once.
            return self.advise(decision, fix.change.clone(), now_ms);
        };
        if !can_apply(&change) {
            return self.advise(decision, fix.change.clone(), now_ms);
        }
        let mut revert = None;
        if let PlanChange::Parallelism {
            operator,
            parallelism,
            ship,
        } = &mut change
        {
            let cap = self.policy.parallelism_cap();
            if *parallelism > cap {
                decision.notes.push(format!(
                    "proposed parallelism {parallelism} capped at {cap} (max parallelism / \
                     available slots)"
                ));
                *parallelism = cap;
            }
            if *parallelism <= b.parallelism {
                let reason = format!(
                    "`{operator}` is at parallelism {} and the limit is {cap}: cannot raise it",
                    b.parallelism
                );
                return skip(self, decision, reason);
            }
            revert = Some(PlanChange::Parallelism {
                operator: operator.clone(),
                parallelism: b.parallelism,
                ship: *ship,
            });
            decision.change_text = format!(
                "parallelism of `{operator}` {} -> {parallelism} behind {ship}",
                b.parallelism
            );
        }
        if let Some(i) = self.ineffective.iter().find(|i| i.blocks(&change)) {
            let reason = format!("not retried: {}", i.reason);
            return skip(self, decision, reason);
        }
        if decision.before.is_none() {
            let reason = format!("no rates for `{measured}`: cannot judge a change");
            return skip(self, decision, reason);
        }
        decision.change = Some(change.clone());
        let id = decision.id;
        self.log.push(decision);
        self.phase = Phase::Applying {
            index: self.log.len() - 1,
            revert,
        };
        Proposal::Apply {
            decision: id,
            change,
        }
    }

    fn advise(&mut self, mut decision: Decision, text: String, now_ms: u64) -> Proposal {
        let repeat = self
            .log
            .iter()
            .any(|l| l.outcome == Outcome::Advised && l.change_text == text);
        if repeat {
            return Proposal::Nothing(format!("advised before: {text}"));
        }
        decision.outcome = Outcome::Advised;
        decision.decided_ms = Some(now_ms);
        let id = decision.id;
        self.log.push(decision);
        self.phase = Phase::Ready {
            not_before_ms: now_ms + ms(self.policy.cooldown),
        };
        Proposal::Advice { decision: id, text }
    }

    /// The executor's answer to [`Proposal::Apply`]: `Ok(notes)` (plan diff, timing) or why it
    /// failed. A failed change is remembered and not retried.
    pub fn applied(&mut self, now_ms: u64, result: Result<Vec<String>, String>) {
        let Phase::Applying { index, revert } = self.phase.clone() else {
            return;
        };
        let d = &mut self.log[index];
        match result {
            Ok(notes) => {
                d.notes.extend(notes);
                self.phase = Phase::Settling {
                    index,
                    revert,
                    settle_until_ms: now_ms + ms(self.policy.stabilisation),
                    remeasured: 0,
                };
            }
            Err(reason) => {
                d.decided_ms = Some(now_ms);
                d.outcome = Outcome::Failed {
                    reason: reason.clone(),
                };
                if let Some(c) = &d.change {
                    self.ineffective
                        .push(ineffective(c, format!("applying it failed: {reason}")));
                }
                self.phase = Phase::Ready {
                    not_before_ms: now_ms + ms(self.policy.cooldown),
                };
            }
        }
    }

    /// Re-measures after the stabilisation (for a two-phase change, at the pre-aggregation
    /// that took over the aggregation's input, the job's throughput at its sources): `job` is a window's averaged metrics ending at
    /// `now_ms`. Keeps the change when the bottleneck's rate and the job's throughput both rose
    /// by the policy's gain, else asks for a roll-back and remembers the change as ineffective.
    pub fn judge(&mut self, now_ms: u64, job: &JobView) -> Verdict {
        let Phase::Settling {
            index,
            revert,
            settle_until_ms,
            remeasured,
        } = self.phase.clone()
        else {
            return Verdict::Idle;
        };
        if now_ms < settle_until_ms {
            return Verdict::NotYet {
                until_ms: settle_until_ms,
            };
        }
        let min_gain = self.policy.min_gain;
        let d = &mut self.log[index];
        // `propose` applies nothing without figures and a plan change; both are there.
        let (Some(before), Some(change)) = (d.before.clone(), d.change.clone()) else {
            return Verdict::Idle;
        };
        d.after = measure(job, &before.bottleneck).or_else(|| match &change {
            // The rewrite replaced the aggregation: its records now enter the pre-aggregation
            // (the combiner sees only partials), so that is where the stage's rate is.
            PlanChange::TwoPhase { .. } => measure(job, TWO_PHASE_PRE_AGGREGATE),
            _ => None,
        });
        if let (PlanChange::TwoPhase { .. }, Some(after)) = (&change, d.after.as_mut()) {
            // The sinks now receive combined partials, fewer than the records: the job's
            // throughput is what its sources emit (before, a running sum passed every record
            // on, so the sinks' rate was the sources').
            after.throughput = crate::source_rate(job);
        }
        d.decided_ms = Some(now_ms);
        self.phase = Phase::Ready {
            not_before_ms: now_ms + ms(self.policy.cooldown),
        };
        let reason = match &d.after {
            None => Some(format!(
                "`{}` is no longer in the job: the effect cannot be measured",
                before.bottleneck
            )),
            Some(after)
                if matches!(change, PlanChange::Parallelism { .. })
                    && after.parallelism > before.parallelism
                    && after.working_subtasks <= before.working_subtasks =>
            {
                // Whatever the rates did (on a shared machine they drift between windows),
                // the work did not spread: the added subtasks idle.
                Some(format!(
                    "ineffective: the work did not spread over the added subtasks ({} of {} \
                     subtasks working, {} of {} before)",
                    after.working_subtasks,
                    after.parallelism,
                    before.working_subtasks,
                    before.parallelism
                ))
            }
            Some(after) => {
                let r = gain(before.bottleneck_rate, after.bottleneck_rate);
                let t = gain(before.throughput, after.throughput);
                let need = min_gain * 100.0;
                match (r >= min_gain, t >= min_gain) {
                    (true, true) => None,
                    (false, _) => Some(format!(
                        "ineffective: the bottleneck's rate changed {:+.0} % (needs +{need:.0} %)",
                        r * 100.0
                    )),
                    (true, false) => Some(format!(
                        "ineffective: the job's throughput changed {:+.0} % (needs +{need:.0} %) \
                         though the bottleneck's rate rose {:+.0} %",
                        t * 100.0,
                        r * 100.0
                    )),
                }
            }
        };
        let dry = reason.is_some().then(|| input_ran_dry(job)).flatten();
        if let Some(idle) = &dry {
            if remeasured < MAX_REMEASURE {
                // No verdict from a window in which the input, not the plan, set the pace.
                d.after = None;
                d.decided_ms = None;
                d.notes.push(format!(
                    "re-measuring: the input ran dry in the window ({idle}), which says nothing \
                     about the change"
                ));
                self.phase = Phase::Settling {
                    index,
                    revert,
                    settle_until_ms: now_ms,
                    remeasured: remeasured + 1,
                };
                return Verdict::NotYet { until_ms: now_ms };
            }
        }
        match reason {
            None => {
                d.outcome = Outcome::Kept;
                Verdict::Keep { decision: d.id }
            }
            Some(reason) if dry.is_some() => {
                // Not kept without a gain, but not remembered as ineffective either: the
                // change may be proposed again once there is input to judge it on.
                let reason = format!(
                    "inconclusive: the input ran dry in {} re-measurements; {reason}",
                    MAX_REMEASURE + 1
                );
                d.outcome = Outcome::RolledBack { reason };
                Verdict::RollBack {
                    decision: d.id,
                    change,
                    to: revert,
                }
            }
            Some(reason) => {
                d.outcome = Outcome::RolledBack {
                    reason: reason.clone(),
                };
                self.ineffective.push(ineffective(&change, reason));
                Verdict::RollBack {
                    decision: d.id,
                    change,
                    to: revert,
                }
            }
        }
    }

    /// Adds the executor's report of a roll-back to its decision (`Err`: the roll-back itself
    /// failed, which the log says).
    pub fn rolled_back(&mut self, decision: u64, result: Result<Vec<String>, String>) {
        if let Some(d) = self.log.iter_mut().find(|d| d.id == decision) {
            match result {
                Ok(notes) => d.notes.extend(notes),
                Err(e) => d.notes.push(format!("rolling back failed: {e}")),
            }
        }
    }

    /// The decision log as JSON (`GET /jobs/:jid/autopilot`): decisions oldest first, the
    /// changes not retried, the policy.
    pub fn to_json(&self) -> Value {
        json!({
            "decisions": self.log.iter().map(Decision::to_json).collect::<Vec<_>>(),
            "ineffective": self.ineffective.iter().map(|i| json!({
                "operator": i.operator,
                "kind": i.kind,
                "parallelism": i.parallelism,
                "reason": i.reason,
            })).collect::<Vec<_>>(),
            "policy": policy_json(&self.policy),
        })
    }
}

/// The policy as JSON (seconds).
pub fn policy_json(p: &Policy) -> Value {
    json!({
        "window-seconds": p.window.as_secs_f64(),
        "stabilisation-seconds": p.stabilisation.as_secs_f64(),
        "cooldown-seconds": p.cooldown.as_secs_f64(),
        "min-gain": p.min_gain,
        "max-parallelism": p.max_parallelism,
        "available-slots": p.available_slots,
    })
}

/// Windows re-measured when the input ran dry, before the change is judged on what there is.
pub const MAX_REMEASURE: u32 = 2;

/// The job's pace is its input's, not its plan's: every source subtask mostly idle (waiting for
/// input, ≥ 500 ms/s) and none backpressured, and no vertex busy. Says how idle the sources were.
fn input_ran_dry(job: &JobView) -> Option<String> {
    let sources: Vec<&sluice_doctor::SubtaskSample> = job
        .vertices
        .iter()
        .filter(|v| v.is_source)
        .flat_map(|v| v.subtasks.iter())
        .collect();
    if sources.is_empty() {
        return None;
    }
    let waiting = sources.iter().all(|s| {
        s.idle.unwrap_or(0.0) >= 500.0
            && s.backpressured.unwrap_or(0.0) < sluice_doctor::BACKPRESSURED_MS
    });
    let busy = job
        .vertices
        .iter()
        .flat_map(|v| v.subtasks.iter())
        .any(|s| s.busy.unwrap_or(0.0) >= sluice_doctor::BUSY_MS);
    if !waiting || busy {
        return None;
    }
    let idle = sources.iter().map(|s| s.idle.unwrap_or(0.0)).sum::<f64>() / sources.len() as f64;
    Some(format!("sources idle {:.0} %, nothing busy", idle / 10.0))
}

fn ineffective(c: &PlanChange, reason: String) -> Ineffective {
    Ineffective {
        operator: c.operator().to_string(),
        kind: kind(c).to_string(),
        parallelism: match c {
            PlanChange::Parallelism { parallelism, .. } => Some(*parallelism),
            _ => None,
        },
        reason,
    }
}

fn ms(d: std::time::Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}
