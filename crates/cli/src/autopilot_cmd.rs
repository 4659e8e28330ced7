//! The autopilot loop against a live REST API: `sluice doctor --url URL --apply [--watch]` and
//! `sluice run … --autopilot` (the same loop on a thread, against the job's own REST API).
//!
//! The decisions are `sluice_autopilot`'s (pure); this module samples through the doctor's
//! [`sample_and_diagnose_with`], applies changes through an [`Actuator`] and reports:
//! - **Sluice** ([`SluiceActuator`]): `POST /jobs/:jid/doctor/apply` with the plan change (the
//!   way back is the reverse change, e.g. the old parallelism), and every decision to
//!   `PUT /jobs/:jid/autopilot`, the log the dashboard draws.
//! - **Flink** ([`FlinkActuator`]): only parallelism can change in place, through Flink's
//!   `PUT /jobs/:jid/resource-requirements` under the adaptive scheduler; the new parallelism
//!   is verified in Flink's own `/jobs/:jid` (Flink takes 20–30 s). On the default scheduler,
//!   or for any fix that is not a parallelism, the change the user must make is printed
//!   (Java code shapes for two-phase aggregation and async I/O).

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::{json, Value};
use sluice_autopilot::{Autopilot, Decision, Policy, Proposal, Verdict};
use sluice_doctor::{Cause, Diagnosis, PlanChange};

use crate::doctor_cmd::{sample_and_diagnose_with, LiveSource, RestSource};
use crate::http_client::{ClientArgs, Endpoint, HttpError};

const TIMEOUT: Duration = Duration::from_secs(10);
/// How long Flink gets to run a vertex at a new parallelism (observed: 20–30 s).
const FLINK_RESCALE_DEADLINE: Duration = Duration::from_secs(150);

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

/// Which engine answers at a URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sluice,
    Flink,
}

/// Sluice names itself in `/config`'s `flink-revision` (`sluice-<version>`); anything else with
/// a `flink-version` is Flink.
pub fn detect_engine(config: &Value) -> Engine {
    match config["flink-revision"].as_str() {
        Some(r) if r.starts_with("sluice") => Engine::Sluice,
        _ => Engine::Flink,
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn http(e: HttpError) -> String {
    e.to_string()
}

// ---------------------------------------------------------------------------------------------
// Sluice
// ---------------------------------------------------------------------------------------------

/// A Sluice job's own REST API.
pub struct SluiceActuator {
    ep: Endpoint,
    jid: String,
    /// The job's `start-time` (ms since the epoch), if the server said.
    started_ms: Option<u64>,
}

impl SluiceActuator {
    /// `POST /jobs/:jid/doctor/apply` (savepoint → rewrite → restore, answered once done) with
    /// `body`: `{"plan-change": …}` or `{"rollback": true}`; the notes are the server's plan
    /// diff lines and the pause it measured.
    fn post_change(&self, body: &Value) -> Result<Vec<String>, String> {
        let path = format!("/jobs/{}/doctor/apply", self.jid);
        match self.ep.post_json(&path, body, Duration::from_secs(120)) {
            Ok(answer) => {
                if let Some(f) = answer["failure"].as_str() {
                    return Err(format!("the server could not apply it: {f}"));
                }
                let mut notes = Vec::new();
                if let Some(p) = answer["pauseMillis"].as_f64() {
                    notes.push(format!(
                        "applied by the server ({}), pause {p:.0} ms",
                        answer["state"].as_str().unwrap_or("done")
                    ));
                }
                if let Some(p) = answer["sourcesPausedMillis"].as_f64() {
                    notes.push(format!(
                        "sources stood still {p:.0} ms (the savepoint's alignment included)"
                    ));
                }
                for c in answer["changes"].as_array().into_iter().flatten() {
                    if let Some(c) = c.as_str() {
                        notes.push(format!("plan diff: {c}"));
                    }
                }
                if notes.is_empty() {
                    notes.push(format!("server answered: {answer}"));
                }
                Ok(notes)
            }
            Err(HttpError::Status { status: 404, .. }) => Err(format!(
                "this server has no POST {path} (live healing is not in this build)"
            )),
            Err(e) => Err(http(e)),
        }
    }
}

impl Actuator for SluiceActuator {
    fn can_apply(&self, _: &PlanChange) -> bool {
        true
    }
    fn apply(&self, change: &PlanChange) -> Result<Vec<String>, String> {
        self.post_change(&json!({"plan-change": sluice_rest::live::change_json(change)}))
    }
    /// The server keeps the plan before each change: a roll-back restores it, whatever the
    /// change was (so `to` is not needed).
    fn roll_back(&self, _: &PlanChange, _: Option<&PlanChange>) -> Result<Vec<String>, String> {
        self.post_change(&json!({"rollback": true}))
    }
    fn record(&self, d: &Decision) -> Result<(), String> {
        let path = format!("/jobs/{}/autopilot", self.jid);
        self.ep
            .put_json(&path, &d.to_json(), TIMEOUT)
            .map(|_| ())
            .map_err(http)
    }
    fn advice(&self, _: &Diagnosis, text: &str) -> String {
        text.to_string()
    }
    fn policy(&self) -> Policy {
        Policy {
            available_slots: std::thread::available_parallelism().ok().map(|n| n.get()),
            ..Policy::default()
        }
    }
    /// A job that has just started is still ramping up (threads starting, the first metric
    /// windows averaging in the time before its first record): the first "before" window
    /// begins one stabilisation after the start, as after a change, or it would make any
    /// change look like a gain.
    fn first_measurement_ms(&self) -> u64 {
        self.started_ms.map_or(0, |t| {
            t + Policy::default().stabilisation.as_millis() as u64
        })
    }
    fn not_steady_yet(&self) -> String {
        let ago = self
            .started_ms
            .map_or(0.0, |t| now_ms().saturating_sub(t) as f64 / 1000.0);
        format!("the job started {ago:.1} s ago: its rates are still ramping up")
    }
}

// ---------------------------------------------------------------------------------------------
// Flink
// ---------------------------------------------------------------------------------------------

/// A Flink cluster's REST API.
pub struct FlinkActuator {
    ep: Endpoint,
    jid: String,
    /// The job's scheduler as Flink names it (`Adaptive`, `Default`, …).
    scheduler: String,
    max_parallelism: Option<usize>,
    slots: Option<usize>,
    /// When the job's 60 s rate meters first cover only its running time (ms since the epoch).
    meters_full_ms: u64,
}

/// Flink's `…PerSecond` rates are meters over 60 s, and its REST metric fetcher caches 10 s:
/// a job (or task) younger than this reports rates too low.
const FLINK_METER_SPAN: Duration = Duration::from_secs(70);

impl FlinkActuator {
    /// Reads the job's scheduler (`/jobs/:jid` `schedulerType`, else the job manager's
    /// `jobmanager.scheduler`), its vertices' max parallelism and the cluster's slots.
    pub fn connect(ep: Endpoint, jid: &str) -> anyhow::Result<FlinkActuator> {
        let job = ep
            .get_json(&format!("/jobs/{jid}"), TIMEOUT)
            .context("reading the job")?;
        let mut scheduler = job["schedulerType"].as_str().unwrap_or("").to_string();
        if scheduler.is_empty() {
            if let Ok(Value::Array(cfg)) =
                ep.get_json(&format!("/jobs/{jid}/jobmanager/config"), TIMEOUT)
            {
                scheduler = cfg
                    .iter()
                    .find(|e| e["key"] == "jobmanager.scheduler")
                    .and_then(|e| e["value"].as_str())
                    .unwrap_or("Default")
                    .to_string();
            }
        }
        let max_parallelism = job["vertices"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["maxParallelism"].as_u64())
            .min()
            .map(|m| m as usize);
        let slots = ep
            .get_json("/overview", TIMEOUT)
            .ok()
            .and_then(|o| o["slots-total"].as_u64())
            .map(|s| s as usize)
            .filter(|&s| s > 0);
        let running_for = Duration::from_millis(job["duration"].as_u64().unwrap_or(0));
        let meters_full_ms =
            now_ms() + FLINK_METER_SPAN.saturating_sub(running_for).as_millis() as u64;
        Ok(FlinkActuator {
            ep,
            jid: jid.to_string(),
            scheduler,
            max_parallelism,
            slots,
            meters_full_ms,
        })
    }

    pub fn adaptive(&self) -> bool {
        self.scheduler.eq_ignore_ascii_case("adaptive")
    }

    /// The vertex id and current parallelism of the vertex named `operator` (or chaining it).
    fn vertex(&self, operator: &str) -> Result<(String, usize), String> {
        let job = self
            .ep
            .get_json(&format!("/jobs/{}", self.jid), TIMEOUT)
            .map_err(http)?;
        job["vertices"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| {
                let name = v["name"].as_str().unwrap_or("");
                name == operator || name.split(" -> ").any(|n| n == operator)
            })
            .and_then(|v| {
                Some((
                    v["id"].as_str()?.to_string(),
                    v["parallelism"].as_u64()? as usize,
                ))
            })
            .ok_or_else(|| format!("no vertex `{operator}` in Flink's /jobs/{}", self.jid))
    }

    /// Sets `operator`'s upper bound to `parallelism` and waits until Flink's `/jobs/:jid`
    /// shows the vertex running at it.
    fn rescale(&self, operator: &str, parallelism: usize) -> Result<Vec<String>, String> {
        let (vid, old) = self.vertex(operator)?;
        let path = format!("/jobs/{}/resource-requirements", self.jid);
        let mut req = self
            .ep
            .get_json(&path, TIMEOUT)
            .map_err(|e| format!("{} ({})", http(e), self.adaptive_needed()))?;
        let entry = req
            .get_mut(&vid)
            .and_then(|v| v.get_mut("parallelism"))
            .ok_or_else(|| format!("{path} lists no vertex {vid}"))?;
        let lower = entry["lowerBound"]
            .as_u64()
            .unwrap_or(1)
            .min(parallelism as u64);
        entry["lowerBound"] = json!(lower);
        entry["upperBound"] = json!(parallelism);
        let put = Instant::now();
        self.ep
            .put_json(&path, &req, TIMEOUT)
            .map_err(|e| match e {
                HttpError::Status { status, .. } if status < 600 => {
                    format!("{} ({})", http(e), self.adaptive_needed())
                }
                e => http(e),
            })?;
        let deadline = put + FLINK_RESCALE_DEADLINE;
        loop {
            let job = self
                .ep
                .get_json(&format!("/jobs/{}", self.jid), TIMEOUT)
                .map_err(http)?;
            let v = job["vertices"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v["id"] == vid.as_str());
            let at = v.and_then(|v| v["parallelism"].as_u64()).unwrap_or(0) as usize;
            let running = v.is_some_and(|v| v["status"] == "RUNNING") && job["state"] == "RUNNING";
            if at == parallelism && running {
                return Ok(vec![format!(
                    "Flink's /jobs/{} shows `{operator}` RUNNING at parallelism {parallelism} \
                     (was {old}) {:.1} s after PUT {path}",
                    self.jid,
                    put.elapsed().as_secs_f64()
                )]);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "Flink accepted the new requirements but `{operator}` is at parallelism \
                     {at} after {} s (free slots?)",
                    FLINK_RESCALE_DEADLINE.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn adaptive_needed(&self) -> String {
        format!(
            "in-place rescaling through PUT /jobs/:jid/resource-requirements needs Flink's \
             adaptive scheduler: this job runs the {} scheduler; set `jobmanager.scheduler: \
             adaptive` in the cluster's configuration and resubmit the job (or stop it with a \
             savepoint and resubmit at the new parallelism)",
            if self.scheduler.is_empty() {
                "default"
            } else {
                &self.scheduler
            }
        )
    }
}

impl Actuator for FlinkActuator {
    fn can_apply(&self, change: &PlanChange) -> bool {
        self.adaptive() && matches!(change, PlanChange::Parallelism { .. })
    }
    fn apply(&self, change: &PlanChange) -> Result<Vec<String>, String> {
        match change {
            PlanChange::Parallelism {
                operator,
                parallelism,
                ..
            } => self.rescale(operator, *parallelism),
            other => Err(format!("Flink cannot apply {other:?} to a running job")),
        }
    }
    fn roll_back(
        &self,
        change: &PlanChange,
        to: Option<&PlanChange>,
    ) -> Result<Vec<String>, String> {
        match to {
            Some(PlanChange::Parallelism {
                operator,
                parallelism,
                ..
            }) => self.rescale(operator, *parallelism),
            _ => Err(format!("no way back for {change:?} on Flink")),
        }
    }
    fn record(&self, _: &Decision) -> Result<(), String> {
        Ok(())
    }
    fn advice(&self, d: &Diagnosis, text: &str) -> String {
        let mut s = match flink_code_advice(d) {
            Some(code) => format!("{text}\nIn the job's code:\n{code}"),
            None => text.to_string(),
        };
        let parallelism = d
            .fix
            .as_ref()
            .and_then(|f| f.plan_change.as_ref())
            .is_some_and(|c| matches!(c, PlanChange::Parallelism { .. }));
        if parallelism && !self.adaptive() {
            s.push_str(&format!("\nNot applied: {}.", self.adaptive_needed()));
        }
        s
    }
    /// Only a change to be judged needs true rates: without the adaptive scheduler the fix is
    /// advice and need not wait for the meters.
    fn first_measurement_ms(&self) -> u64 {
        if self.adaptive() {
            self.meters_full_ms
        } else {
            0
        }
    }
    fn not_steady_yet(&self) -> String {
        format!(
            "the job is younger than its engine's {} s rate meters",
            FLINK_METER_SPAN.as_secs()
        )
    }
    fn policy(&self) -> Policy {
        Policy {
            max_parallelism: self.max_parallelism,
            available_slots: self.slots,
            ..Policy::flink()
        }
    }
}

/// The code change a Flink user makes for a fix that is not a parallelism: salting a hot key
/// (two-phase aggregation) or async I/O with a capacity.
pub fn flink_code_advice(d: &Diagnosis) -> Option<String> {
    let change = d.fix.as_ref()?.plan_change.as_ref();
    match (&d.cause, change) {
        (Cause::KeySkew { .. }, _) | (_, Some(PlanChange::TwoPhase { .. })) => {
            let buckets = match change {
                Some(PlanChange::TwoPhase { buckets, .. }) => *buckets,
                _ => 16,
            };
            Some(format!(
                "  // two-phase aggregation: salt the key, pre-aggregate per (key, salt), combine per key\n\
                 \x20 stream\n\
                 \x20   .map(r -> Tuple3.of(r.key, ThreadLocalRandom.current().nextInt({buckets}), r.value))\n\
                 \x20   .returns(Types.TUPLE(Types.STRING, Types.INT, Types.LONG))\n\
                 \x20   .keyBy(t -> t.f0 + \"#\" + t.f1)\n\
                 \x20   .window(TumblingProcessingTimeWindows.of(Duration.ofSeconds(1)))\n\
                 \x20   .reduce((a, b) -> Tuple3.of(a.f0, a.f1, a.f2 + b.f2))   // partial sums\n\
                 \x20   .keyBy(t -> t.f0)\n\
                 \x20   .reduce((a, b) -> Tuple3.of(a.f0, 0, a.f2 + b.f2));     // final sum per key"
            ))
        }
        (_, Some(PlanChange::AsyncIo { operator, capacity })) => Some(format!(
            "  // `{operator}`: replace the blocking call with an AsyncFunction\n\
             \x20 AsyncDataStream.unorderedWait(stream, new AsyncLookup(), 5, TimeUnit.SECONDS, {capacity});\n\
             \x20 // use orderedWait(...) instead when the output must keep the input order"
        )),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The loop
// ---------------------------------------------------------------------------------------------

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
    pub decisions: Vec<Decision>,
    /// A change was needed but could only be advised (not applied).
    pub advised: bool,
}

/// Connects to `url`, picks the job, builds the actuator for its engine.
pub fn connect(
    url: &str,
    client: &ClientArgs,
    job: Option<&str>,
) -> anyhow::Result<(LiveSource, String, Box<dyn Actuator>, Engine)> {
    let src = LiveSource::with(url, client)?;
    let ep = Endpoint::with(url, client).map_err(anyhow::Error::msg)?;
    let config = ep.get_json("/config", TIMEOUT).context("reading /config")?;
    let engine = detect_engine(&config);
    let overview = src
        .get("/jobs/overview")?
        .context("no /jobs/overview answer")?;
    let jid = crate::top::pick_job(&overview, job, url)?;
    let act: Box<dyn Actuator> = match engine {
        Engine::Sluice => {
            let started_ms = ep
                .get_json(&format!("/jobs/{jid}"), TIMEOUT)
                .ok()
                .and_then(|j| j["start-time"].as_u64());
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
) -> anyhow::Result<LoopOutcome> {
    let mut policy = act.policy();
    if let Some(w) = opts.window {
        if !(w.is_finite() && (1.0..=3600.0).contains(&w)) {
            anyhow::bail!("--window must be between 1 and 3600 seconds");
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
        let report = sample_and_diagnose_with(src, Some(jid), window, opts.no_flame_graphs)?;
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
    pub fn start(url: &str, token: Option<String>, jid: String) -> InProcess {
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
                let run = || -> anyhow::Result<()> {
                    let (src, jid, act, _) = connect(&url, &client, Some(&jid))?;
                    run_loop(&src, &jid, act.as_ref(), &opts, &|l| eprintln!("{l}"))?;
                    Ok(())
                };
                if let Err(e) = run() {
                    // A finished job ends the loop mid-sample: only a live job's error is news.
                    if !flag.load(std::sync::atomic::Ordering::Relaxed) {
                        eprintln!("autopilot stopped: {e:#}");
                    }
                }
            })
            .expect("spawning the autopilot thread");
        InProcess { stop, thread }
    }

    /// Stops the loop after its current step and waits for it.
    pub fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_doctor::{FixProposal, HotKey};

    fn diagnosis(cause: Cause, change: Option<PlanChange>) -> Diagnosis {
        Diagnosis {
            bottleneck: None,
            cause,
            confidence: 0.9,
            evidence: vec![],
            fix: Some(FixProposal {
                description: String::new(),
                change: "the fix".into(),
                plan_change: change,
            }),
            expected_effect: String::new(),
            undetermined: vec![],
            source_splits: None,
            lag: None,
        }
    }

    #[test]
    fn sluice_is_told_from_flink_by_its_revision() {
        let sluice = json!({"flink-version": "2.3.0", "flink-revision": "sluice-0.1.0"});
        let flink = json!({"flink-version": "2.3.0", "flink-revision": "c0f8d1a @ 2026-06-14"});
        assert_eq!(detect_engine(&sluice), Engine::Sluice);
        assert_eq!(detect_engine(&flink), Engine::Flink);
    }

    #[test]
    fn flink_advice_is_java_code() {
        let skew = diagnosis(
            Cause::KeySkew {
                hot_keys: vec![HotKey {
                    key: "0".into(),
                    share: 0.8,
                }],
            },
            Some(PlanChange::TwoPhase {
                operator: "sum".into(),
                buckets: 8,
            }),
        );
        let code = flink_code_advice(&skew).unwrap();
        assert!(
            code.contains("nextInt(8)") && code.contains(".keyBy(t -> t.f0)"),
            "{code}"
        );
        let blocking = diagnosis(
            Cause::BlockingCalls,
            Some(PlanChange::AsyncIo {
                operator: "lookup".into(),
                capacity: 24,
            }),
        );
        let code = flink_code_advice(&blocking).unwrap();
        assert!(
            code.contains(
                "AsyncDataStream.unorderedWait(stream, new AsyncLookup(), 5, TimeUnit.SECONDS, 24)"
            ),
            "{code}"
        );
        assert_eq!(
            flink_code_advice(&diagnosis(Cause::UnderProvisioned, None)),
            None
        );
    }
}
