//! The autopilot: the doctor's fixes applied to a running job, kept only when they help.
//!
//! Main types: [`Autopilot`] (the decision loop as a pure state machine), [`Policy`] (window,
//! stabilisation, cooldown, gain, limits), [`Measurement`] (the two figures a decision compares),
//! [`Decision`] (one log entry with its evidence and [`Outcome`]), [`Proposal`] and [`Verdict`]
//! (what the caller must do next). No threads, no I/O, no clock in the decisions: the caller
//! samples the job, applies changes and hands the autopilot the averaged windows and the
//! current time. The [`driver`] is that caller against a REST API (`sluice doctor --apply`,
//! `sluice run --autopilot`): [`driver::run_loop`] measures through the doctor's one call
//! ([`sluice_doctor::examine()`]) and applies through an [`driver::Actuator`] for Sluice or Flink.
//!
//! Invariant: the decision modules (`pilot`, `decision`, `measure`, `policy`) do no I/O and read
//! no clock; only [`driver`] talks HTTP (through `sluice-client`), and it prints nothing.
//!
//! ## The loop
//!
//! 1. **Diagnose** over a window ([`Policy::window`]): the doctor names the bottleneck and a fix.
//! 2. **Propose** ([`Autopilot::propose`]): a plan change the target can apply is proposed with
//!    the figures before it ([`Measurement`]: the bottleneck's records per second and the job's
//!    sinks' records per second). A parallelism is capped at the job's max parallelism and the
//!    slots/cores available, and never proposed when the vertex is already there; a change that
//!    was found ineffective (or failed to apply) is not proposed again; a fix the target cannot
//!    apply (Flink cannot rewrite a plan) is logged as advice, once.
//! 3. **Apply** (the caller) and report ([`Autopilot::applied`]): the job then settles for
//!    [`Policy::stabilisation`].
//! 4. **Re-measure** over a window and **judge** ([`Autopilot::judge`]): the change is kept only
//!    if the bottleneck's rate *and* the job's throughput rose by [`Policy::min_gain`]
//!    (relative). Otherwise the caller rolls it back ([`Verdict::RollBack`], with the way back
//!    when it is a plan change itself: the old parallelism) and the change is remembered as
//!    ineffective — Flink's autoscaler has the same idea ("ineffective scale-up": a scale-up whose
//!    processing rate did not follow is not repeated). A window in which the input ran dry
//!    (every source subtask waiting for input, nothing busy) is no evidence either way: it is
//!    measured again up to [`MAX_REMEASURE`] times ([`Verdict::NotYet`]), then a change still not
//!    shown to help is rolled back as inconclusive and not remembered.
//! 5. **Cool down** ([`Policy::cooldown`]) before the next proposal.
//!
//! Every proposal that was acted on, skipped for a reason, or advised is a [`Decision`] in the log
//! ([`Autopilot::to_json`] is what `GET /jobs/:jid/autopilot` serves and the dashboard draws).
//!
//! ## Why these defaults, against Flink's Kubernetes autoscaler
//!
//! Flink's autoscaler decides from busy time averaged over a 15-minute metric window, after a
//! 5-minute stabilisation, and rescales by restarting the job. It takes the *maximum* busy time
//! over a vertex's subtasks, because skew fooled the average — but changing parallelism cannot
//! fix skew, and a vertex 100 % busy on one hot subtask can be scaled *down* when the others are
//! idle. The goal here is a decision within 10 s, so:
//! - **window 5 s**: the doctor classifies per subtask (busy, backpressured, CPU, hot keys) and
//!   the window only has to average out the 1 Hz sampling noise, not guess a cause from one
//!   number; skew is found as skew and fixed by two-phase aggregation, not by parallelism.
//! - **stabilisation 2 s** on Sluice: a savepoint-and-restore change takes well under a second
//!   and the server's gauges follow within their update interval; on Flink ([`Policy::flink`])
//!   70 s after Flink reports the new parallelism, because its per-second rates are 60 s meters
//!   and its REST metric fetcher caches for 10 s (Flink itself then takes 20–30 s to rescale).
//! - **cooldown 10 s** (Flink: 30 s, its adaptive scheduler's own cooldown after rescaling).
//! - **gain 10 %** on both figures: a change that speeds the bottleneck but not the job moved
//!   the bottleneck elsewhere without helping, and is undone.
//! - the autopilot never lowers a parallelism except to undo its own change; a scale-down is not
//!   a fix the doctor proposes.
#![warn(missing_docs)]

mod decision;
pub mod driver;
mod error;
mod measure;
mod pilot;
mod policy;

pub use decision::{gain, Decision, Outcome};
pub use error::AutopilotError;
pub use measure::{measure, source_rate, vertex_of, Measurement};
pub use pilot::{
    policy_json, Autopilot, Ineffective, Proposal, Verdict, MAX_REMEASURE, MIN_CONFIDENCE,
};
pub use policy::Policy;

#[cfg(test)]
mod tests;
