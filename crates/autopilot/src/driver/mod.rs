//! The autopilot's driver: the loop of [`crate::Autopilot`] against a live REST API, for
//! `sluice doctor --url URL --apply [--watch]` and `sluice run … --autopilot` (the same loop on
//! a thread, [`InProcess`], against the job's own REST API).
//!
//! It measures through the doctor's one call ([`sluice_doctor::examine()`]), decides with
//! [`crate::Autopilot`] (pure) and applies through an [`Actuator`]: [`SluiceActuator`] (plan
//! changes through the job's own server) or [`FlinkActuator`] (a parallelism through
//! `PUT /jobs/:jid/resource-requirements`, anything else advised). What it says goes through
//! the caller's `say`: the driver prints nothing itself.

mod flink;
mod sluice;

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sluice_client::{detect_engine, ClientArgs, ClientError, Endpoint, Engine, LiveSource};
use sluice_doctor::{examine, Diagnosis, ExamineOptions, PlanChange, RestProbe, RestSource};
use sluice_rest_api::JobDetails;

pub use flink::{flink_code_advice, FlinkActuator};
pub use sluice::{change_json, SluiceActuator};

use crate::{Autopilot, AutopilotError, Decision, Policy, Proposal, Verdict};

/// How long one request of the driver may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Applies the autopilot's changes to one job.
pub trait Actuator {
    /// Whether the target can apply `change` itself (else it is printed as advice).
    fn can_apply(&self, change: &PlanChange) -> bool;
    /// Applies `change`; `Ok(notes)` for the log (plan diff, time to take effect).
    fn apply(&self, change: &PlanChange) -> Result<Vec<String>, String>;
    /// Undoes `change`, by `to` when the way back is a plan change itself.
    fn roll_back(
        &self,
        change: &PlanChange,
        to: Option<&PlanChange>,
    ) -> Result<Vec<String>, String>;
    /// Reports a decision to the server's log (Sluice); Flink has none.
    fn record(&self, decision: &Decision) -> Result<(), String>;
    /// Advice for a fix the target cannot apply: what to change, precisely.
    fn advice(&self, d: &Diagnosis, text: &str) -> String;
    /// The policy suited to the target.
    fn policy(&self) -> Policy;
    /// Before this time (ms since the epoch) the target's rates do not mean anything yet.
    fn first_measurement_ms(&self) -> u64 {
        0
    }
    /// Why the loop waits for [`Actuator::first_measurement_ms`].
    fn not_steady_yet(&self) -> String {
        "the job's rates are not steady yet".to_string()
    }
}

/// Milliseconds since the epoch (the autopilot's clock is the caller's).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A client error as the log's words.
/// A REST answer read as one of Flink's shapes (`sluice-rest-api`); an answer of another shape
/// reads as the shape's default (every field missing), so the caller decides what is missing.
fn read<T: serde::de::DeserializeOwned + Default>(answer: serde_json::Value) -> T {
    serde_json::from_value(answer).unwrap_or_default()
}

fn http(e: ClientError) -> String {
    e.to_string()
}

/// How the loop runs.
pub struct LoopOptions {
    /// Keep deciding (else one decision: propose, apply, re-measure, keep or roll back).
    pub watch: bool,
    /// Window override (seconds); default the policy's.
    pub window: Option<f64>,
    /// Read no flame graphs (faster; the doctor then decides from metrics alone).
    pub no_flame_graphs: bool,
    /// Stop when this becomes true (checked between steps).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// What a finished loop did.
#[derive(Debug, Default)]
pub struct LoopOutcome {
    /// The decision log, as it ended.
    pub decisions: Vec<Decision>,
    /// A change was needed but could only be advised (not applied).
    pub advised: bool,
}

/// Connects to `url`, picks the job, builds the actuator for its engine.
pub fn connect(
    url: &str,
    client: &ClientArgs,
    job: Option<&str>,
) -> Result<(LiveSource, String, Box<dyn Actuator>, Engine), AutopilotError> {
    let src = LiveSource::with(url, client)?;
    let ep = Endpoint::with(url, client)?;
    let config = ep
        .get_json("/config", TIMEOUT)
        .map_err(|e| AutopilotError::read("reading /config", e))?;
    let engine = detect_engine(&config);
    let overview = src
        .get("/jobs/overview")?
        .ok_or(AutopilotError::NoOverview)?;
    let jid = sluice_doctor::flink_rest::pick_job(&overview, job, url)?;
    let act: Box<dyn Actuator> = match engine {
        Engine::Sluice => {
            let started_ms = ep
                .get_json(&format!("/jobs/{jid}"), TIMEOUT)
                .ok()
                .and_then(|j| read::<JobDetails>(j).start_time)
                .and_then(|t| u64::try_from(t).ok());
            Box::new(SluiceActuator {
                ep,
                jid: jid.clone(),
                started_ms,
            })
        }
        Engine::Flink => Box::new(FlinkActuator::connect(ep, &jid)?),
    };
    Ok((src, jid, act, engine))
}

/// Runs the loop; `say` prints a line.
pub fn run_loop(
    src: &dyn RestSource,
    jid: &str,
    act: &dyn Actuator,
    opts: &LoopOptions,
    say: &dyn Fn(String),
) -> Result<LoopOutcome, AutopilotError> {
    let mut policy = act.policy();
    if let Some(w) = opts.window {
        if !(w.is_finite() && (1.0..=3600.0).contains(&w)) {
            return Err(AutopilotError::Window);
        }
        policy.window = Duration::from_secs_f64(w);
    }
    let window = policy.window.as_secs_f64();
    let mut ap = Autopilot::new(policy);
    let mut sent: HashMap<u64, String> = HashMap::new();
    let mut outcome = LoopOutcome::default();
    let stopped = || {
        opts.stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    };
    let first = act.first_measurement_ms();
    loop {
        if stopped() {
            break;
        }
        let mut wait = ap.ready_at().saturating_sub(now_ms());
        if ap.log().is_empty() && first > now_ms() {
            wait = wait.max(first - now_ms());
            say(format!("autopilot: {}", act.not_steady_yet()));
        }
        if wait > 0 {
            say(format!("autopilot: waiting {:.1} s", wait as f64 / 1000.0));
            let until = Instant::now() + Duration::from_millis(wait);
            while Instant::now() < until && !stopped() {
                std::thread::sleep(
                    Duration::from_millis(100).min(until.saturating_duration_since(Instant::now())),
                );
            }
            if stopped() {
                break;
            }
        }
        let started = Instant::now();
        let report = examine(
            &RestProbe::new(src),
            Some(jid),
            &ExamineOptions {
                window,
                flame_graphs: !opts.no_flame_graphs,
            },
        )?;
        let now = now_ms();
        let done;
        if ap.awaiting_judgement() {
            match ap.judge(now, &report.job) {
                Verdict::RollBack {
                    decision,
                    change,
                    to,
                } => {
                    let r = act.roll_back(&change, to.as_ref());
                    match &r {
                        Ok(notes) => notes
                            .iter()
                            .for_each(|n| say(format!("autopilot: rolled back: {n}"))),
                        Err(e) => say(format!("autopilot: rolling back failed: {e}")),
                    }
                    ap.rolled_back(decision, r);
                }
                Verdict::NotYet { .. } => continue,
                Verdict::Keep { .. } | Verdict::Idle => {}
            }
            if let Some(d) = ap.log().last() {
                say(format!("autopilot: {}", d.summary()));
            }
            done = !opts.watch;
        } else {
            match ap.propose(now, &report.diagnosis, &report.job, &|c| act.can_apply(c)) {
                Proposal::Nothing(reason) => {
                    say(format!("autopilot: no change ({reason})"));
                    done = !opts.watch;
                }
                Proposal::Advice { text, .. } => {
                    say(format!(
                        "autopilot: {}\nautopilot: the fix is a change to make by hand:\n{}",
                        report.diagnosis.verdict(),
                        act.advice(&report.diagnosis, &text)
                    ));
                    outcome.advised = true;
                    done = !opts.watch;
                }
                Proposal::Apply { change, .. } => {
                    say(format!(
                        "autopilot: {} — decided {:.1} s after sampling began; applying {}",
                        report.diagnosis.verdict(),
                        started.elapsed().as_secs_f64(),
                        ap.log()
                            .last()
                            .map_or(String::new(), |d| d.change_text.clone())
                    ));
                    let r = act.apply(&change);
                    match &r {
                        Ok(notes) => notes.iter().for_each(|n| say(format!("autopilot: {n}"))),
                        Err(e) => say(format!("autopilot: applying failed: {e}")),
                    }
                    let failed = r.is_err();
                    ap.applied(now_ms(), r);
                    done = failed && !opts.watch;
                }
            }
        }
        for d in ap.log() {
            let text = d.to_json().to_string();
            if sent.get(&d.id) != Some(&text) {
                if let Err(e) = act.record(d) {
                    say(format!(
                        "autopilot: could not report decision {}: {e}",
                        d.id
                    ));
                }
                sent.insert(d.id, text);
            }
        }
        if done {
            break;
        }
    }
    outcome.decisions = ap.log().to_vec();
    Ok(outcome)
}

/// `sluice run … --autopilot`: the loop on a thread of its own against the job's REST API.
pub struct InProcess {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl InProcess {
    /// Starts the loop (watching, no flame graphs) on a thread named `autopilot`; `say` prints
    /// a line of its log.
    pub fn start(
        url: &str,
        token: Option<String>,
        jid: String,
        say: fn(String),
    ) -> Result<InProcess, AutopilotError> {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (url, flag) = (url.to_string(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("autopilot".into())
            .spawn(move || {
                let client = ClientArgs {
                    token,
                    ..ClientArgs::default()
                };
                let opts = LoopOptions {
                    watch: true,
                    window: None,
                    // Sluice reports CPU time per subtask: metrics decide within the window,
                    // where a flame graph would add its ~5 s sampling run to every decision.
                    no_flame_graphs: true,
                    stop: Some(flag.clone()),
                };
                let run = || -> Result<(), AutopilotError> {
                    let (src, jid, act, _) = connect(&url, &client, Some(&jid))?;
                    run_loop(&src, &jid, act.as_ref(), &opts, &say)?;
                    Ok(())
                };
                if let Err(e) = run() {
                    // A finished job ends the loop mid-sample: only a live job's error is news.
                    if !flag.load(std::sync::atomic::Ordering::Relaxed) {
                        say(format!("autopilot stopped: {e}"));
                    }
                }
            })
            .map_err(|e| AutopilotError::Thread(e.to_string()))?;
        Ok(InProcess { stop, thread })
    }

    /// Stops the loop after its current step and waits for it.
    pub fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.thread.join();
    }
}
