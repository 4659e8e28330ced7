//! Live plan changes: a job that changes its plan while it runs, losing nothing.
//!
//! [`LiveJob`] runs a job from its build function and applies a change (a doctor
//! [`PlanChange`], a per-vertex parallelism, or the rollback of the
//! newest change) as: check the change on a freshly built plan (the fixer refuses what would
//! alter results, before the job is touched) → aligned stop-with-savepoint → rebuild the job
//! with the changes in force → restore from the savepoint with state migration (keyed state
//! redistributed by key group, sources at their positions, exactly-once sinks committing what
//! the savepoint names) under the same job id. The planning half is [`plan`]; this module does
//! the I/O. Each change is recorded ([`RescaleRecord`]) with its pause: the time nothing is
//! processed, from the last record the old plan's last vertices (its sinks) took in — they go
//! on taking in the backlog ahead of the savepoint's barrier — to the first record the new
//! plan's sources emit; and how long the sources stood still, from the stop request (after its
//! barrier they emit nothing) to that same first record, the barrier's alignment included.

pub mod plan;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_datastream::config::EnvConfig;
use sluice_datastream::fixer::{self, PlanChange, PlanDiff};
use sluice_datastream::{JobExecution, JobGraph, JobHandle, JobMonitor, JobOutcome, StreamEnv};
use sluice_rest::live::{
    change_json, plan_nodes, ApplyRequest, LiveControl, LiveError, RecordedChange, RescaleRecord,
    RescaleState, VertexParallelism,
};
use sluice_rest::JobRegistry;
use sluice_types::{Id128, JobId};

use crate::SluiceError;

/// Builds the job's operators on an environment (called again for every plan change, on a
/// fresh environment with the same configuration plus the restore point).
pub type BuildFn = Arc<dyn Fn(&StreamEnv) -> Result<(), String> + Send + Sync>;

/// How long an applied change waits for the new plan's first record before it answers without
/// a pause figure (a source with no input emits nothing).
pub const FIRST_RECORD_WAIT: Duration = Duration::from_secs(10);

/// After the new plan's first source record, how long a change still watches for the plan
/// failing as it starts (unless its last vertices take in a record first).
const START_GRACE: Duration = Duration::from_millis(500);

struct State {
    handle: Option<JobHandle>,
    monitor: Arc<JobMonitor>,
    log: plan::ChangeLog,
    history: Vec<RescaleRecord>,
    /// Plans run so far (1 = the first).
    generation: u32,
    /// Records the sources of the plans before this one emitted.
    emitted_before: u64,
}

/// A running job whose plan can change while it runs (see the module docs). Register it with a
/// REST server's registry ([`LiveJob::start`] does) to serve `PUT resource-requirements`,
/// `POST doctor/apply` and the rescale history.
pub struct LiveJob {
    build: BuildFn,
    base: EnvConfig,
    savepoint_dir: PathBuf,
    registry: Option<Arc<JobRegistry>>,
    job_id: JobId,
    state: Mutex<State>,
    /// A change is under way: the old plan's end is not the job's end.
    changing: AtomicBool,
}

fn fresh_env(cfg: EnvConfig, build: &BuildFn, fixes: &[PlanChange]) -> Result<StreamEnv, String> {
    let env = StreamEnv::with_config(cfg);
    build(&env)?;
    for f in fixes {
        fixer::apply(&env, f).map_err(|e| format!("{} ({f:?})", e))?;
    }
    Ok(env)
}

impl LiveJob {
    /// Builds and launches the job with `cfg`; savepoints for plan changes go under
    /// `savepoint_dir`. With `registry`, the job and its live control are registered there.
    pub fn start(
        build: BuildFn,
        cfg: EnvConfig,
        savepoint_dir: PathBuf,
        registry: Option<Arc<JobRegistry>>,
    ) -> Result<Arc<LiveJob>, SluiceError> {
        let env = fresh_env(cfg.clone(), &build, &[]).map_err(SluiceError::Config)?;
        let handle = env.launch()?;
        let monitor = handle.monitor();
        let job_id = monitor.job_id;
        let job = Arc::new(LiveJob {
            build,
            base: cfg,
            savepoint_dir,
            registry,
            job_id,
            state: Mutex::new(State {
                handle: Some(handle),
                monitor: monitor.clone(),
                log: plan::ChangeLog::default(),
                history: Vec::new(),
                generation: 1,
                emitted_before: 0,
            }),
            changing: AtomicBool::new(false),
        });
        if let Some(r) = &job.registry {
            r.register(monitor);
            r.register_live(job_id, job.clone());
        }
        Ok(job)
    }

    /// The job's id (the same over all its plans).
    pub fn job_id(&self) -> JobId {
        self.job_id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The monitor of the plan running now.
    pub fn monitor(&self) -> Arc<JobMonitor> {
        self.lock().monitor.clone()
    }

    /// Records the job's sources emitted, over all its plans (each plan counts from 0).
    pub fn records_emitted(&self) -> u64 {
        let s = self.lock();
        s.emitted_before + s.monitor.records_emitted_by_sources()
    }

    /// Cancels the job (the plan running now).
    pub fn cancel(&self) {
        if let Some(h) = &self.lock().handle {
            h.cancel();
        }
    }

    /// Whether the job ended (a plan change's stop is not an end).
    pub fn is_finished(&self) -> bool {
        if self.changing.load(Ordering::Acquire) {
            return false;
        }
        match self.state.try_lock() {
            Ok(s) => s.handle.as_ref().is_none_or(|h| h.is_finished()),
            // A change holds the lock: the job runs on.
            Err(_) => false,
        }
    }

    /// Waits until the job ends (not a plan change's stop): finished, failed or cancelled.
    pub fn wait(&self) -> Result<JobExecution, SluiceError> {
        loop {
            if !self.changing.load(Ordering::Acquire) {
                if let Ok(mut s) = self.state.try_lock() {
                    if s.handle.is_none() {
                        // A change whose new plan and previous plan both failed to start left
                        // no plan running (its error named the savepoint to restore).
                        return Err(SluiceError::from(sluice_runtime::JobError::job(format!(
                            "job {} has no running plan: a plan change stopped it at a savepoint \
                             and neither plan could start from it",
                            self.job_id
                        ))));
                    }
                    if s.handle.as_ref().is_some_and(|h| h.is_finished()) {
                        if let Some(h) = s.handle.take() {
                            drop(s);
                            return Ok(h.wait()?);
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn config_for(&self, generation: u32, restore: Option<PathBuf>) -> EnvConfig {
        let mut cfg = self.base.clone();
        cfg.job_id = Some(self.job_id);
        if generation > 1 {
            // Each plan checkpoints into a directory of its own: the restored plan counts its
            // checkpoints afresh and must not meet the previous plan's `chk-<n>`.
            let base = cfg
                .checkpoint_dir
                .clone()
                .unwrap_or_else(|| sluice_runtime::private_dir::default_dir("checkpoints"));
            cfg.checkpoint_dir = Some(base.join(format!("{}-plan-{generation}", self.job_id)));
        }
        if restore.is_some() {
            cfg.restore_from = restore;
        }
        cfg
    }

    /// Applies `request` (see the module docs); returns the change's record once the job runs
    /// the new plan.
    pub fn apply(&self, request: ApplyRequest) -> Result<RescaleRecord, LiveError> {
        let mut s = self.lock();
        if s.handle.as_ref().is_none_or(|h| h.is_finished()) {
            return Err(LiveError::conflict(format!(
                "Job {} has ended; only a running job changes its plan.",
                self.job_id
            )));
        }
        if let Some(reason) = ended_tasks(&s.monitor) {
            return Err(LiveError::conflict(reason));
        }
        let before_graph = s.monitor.graph.clone();
        let (trigger, new_fixes, fixes, change, rollback_of) = match &request {
            ApplyRequest::Change(c) => {
                let all = s.log.with(std::slice::from_ref(c));
                (
                    "doctor-apply",
                    vec![c.clone()],
                    all,
                    Some(change_json(c)),
                    None,
                )
            }
            ApplyRequest::Parallelism(targets) => {
                let f = plan::rescale_fixes(&before_graph, targets).map_err(LiveError::refused)?;
                let all = s.log.with(&f);
                let change = RecordedChange::ResourceRequirements {
                    vertices: targets
                        .iter()
                        .map(|(id, p)| VertexParallelism {
                            id: id.to_string(),
                            parallelism: *p as u64,
                        })
                        .collect(),
                };
                ("resource-requirements", f, all, Some(change), None)
            }
            ApplyRequest::Rollback => {
                let (undo, rest) = s
                    .log
                    .rollback()
                    .ok_or_else(|| LiveError::conflict("There is no plan change to roll back."))?;
                let change = s
                    .history
                    .iter()
                    .find(|r| r.uuid == undo)
                    .and_then(|r| r.change.clone());
                ("rollback", Vec::new(), rest, change, Some(undo))
            }
        };
        // The change is checked on a fresh build before the running job is touched.
        let trial = fresh_env(self.config_for(1, None), &self.build, &fixes)
            .map_err(|e| LiveError::refused(format!("Refused plan change: {e}")))?;
        let after_graph: JobGraph = trial
            .job_graph()
            .map_err(|e| LiveError::refused(format!("Refused plan change: {e}")))?;
        drop(trial);
        let diff = PlanDiff::between(&before_graph.nodes, &after_graph.nodes);
        let changes: Vec<String> = diff.to_string().lines().map(str::to_string).collect();
        let attempt = s.history.len() as u64 + 1;
        let uuid = Id128::hash_of(
            format!(
                "rescale:{}:{attempt}:{}",
                self.job_id,
                crate::live::now_ms()
            )
            .as_bytes(),
        );
        let start_ms = now_ms();

        self.changing.store(true, Ordering::Release);
        let result = self.switch(&mut s, &fixes);
        self.changing.store(false, Ordering::Release);
        let (state, savepoint, pause_ms, sources_paused_ms, plan_after) = match result {
            Ok(Switched {
                savepoint,
                pause_ms,
                sources_paused_ms,
            }) => (
                RescaleState::Completed,
                Some(savepoint.display().to_string()),
                pause_ms,
                sources_paused_ms,
                plan_nodes(&s.monitor.graph),
            ),
            Err(e) => {
                let record = RescaleRecord {
                    uuid,
                    attempt,
                    trigger,
                    change,
                    rollback_of,
                    start_ms,
                    end_ms: now_ms(),
                    state: RescaleState::Failed(e.message.clone()),
                    vertices: Vec::new(),
                    plan_before: plan_nodes(&before_graph),
                    plan_after: plan_nodes(&s.monitor.graph),
                    changes,
                    pause_ms: None,
                    sources_paused_ms: None,
                    savepoint: None,
                };
                s.history.push(record);
                return Err(e);
            }
        };
        match rollback_of {
            Some(undone) => s.log.undo(undone),
            None => s.log.push(uuid, new_fixes),
        }
        let record = RescaleRecord {
            uuid,
            attempt,
            trigger,
            change,
            rollback_of,
            start_ms,
            end_ms: now_ms(),
            state,
            vertices: plan::vertex_rescales(&before_graph, &s.monitor.graph),
            plan_before: plan_nodes(&before_graph),
            plan_after,
            changes,
            pause_ms,
            sources_paused_ms,
            savepoint,
        };
        tracing::info!(
            job = %self.job_id,
            trigger,
            pause_ms = pause_ms.unwrap_or(-1.0),
            sources_paused_ms = sources_paused_ms.unwrap_or(-1.0),
            "plan change applied"
        );
        s.history.push(record.clone());
        Ok(record)
    }

    /// Stops the running plan with a savepoint and starts `fixes`' plan from it; when the new
    /// plan cannot start, the previous one is started again from the same savepoint.
    fn switch(&self, s: &mut State, fixes: &[PlanChange]) -> Result<Switched, LiveError> {
        let requested = Instant::now();
        let old = s.monitor.clone();
        let watching = AtomicBool::new(true);
        // While the old plan drains to its savepoint, records still reach its sinks (the
        // backlog ahead of the barrier): the output's gap starts at the last of them.
        let (savepoint, last_out) = std::thread::scope(|scope| {
            let watcher =
                scope.spawn(|| last_change(&watching, || old.records_into_last_vertices()));
            let savepoint = old
                .savepoint(self.savepoint_dir.clone(), true)
                .map_err(|e| {
                    // A source may end between the check in `apply` and the savepoint.
                    match ended_tasks(&old) {
                        Some(reason) => LiveError::conflict(reason),
                        None => LiveError::internal(format!(
                            "The stop-with-savepoint failed, the plan is unchanged: {e}"
                        )),
                    }
                });
            if savepoint.is_ok() {
                if let Some(h) = s.handle.take() {
                    // Ends as cancelled after the savepoint: expected.
                    let _ = h.wait();
                }
            }
            watching.store(false, Ordering::Release);
            let last_out = watcher.join().unwrap_or(requested).max(requested);
            (savepoint, last_out)
        });
        let savepoint = savepoint?;
        // Its checkpoint id: the new plan's own checkpoints count on from it.
        let savepoint_id = old
            .control
            .checkpoints()
            .and_then(|h| h.stats().latest_savepoint)
            .map_or(0, |r| r.id);
        let generation = s.generation + 1;
        let launch = |fixes: &[PlanChange], generation: u32| -> Result<JobHandle, String> {
            let env = fresh_env(
                self.config_for(generation, Some(savepoint.clone())),
                &self.build,
                fixes,
            )?;
            env.launch().map_err(|e| e.to_string())
        };
        // The new plan did not start (`what`): the previous one runs again from the savepoint,
        // as a generation of its own (its own checkpoint directory: the failed plan's
        // `chk-<n>` are not its).
        let fall_back = |s: &mut State, what: String| -> LiveError {
            match launch(&s.log.active(), generation + 1) {
                Ok(h) => {
                    self.install(s, h, generation + 1);
                    LiveError::internal(format!(
                        "The new plan {what}; the previous plan runs again from savepoint {}",
                        savepoint.display()
                    ))
                }
                Err(e2) => LiveError::internal(format!(
                    "The new plan {what}, and the previous one did not start ({e2}); the job is stopped at savepoint {} — restore it from there",
                    savepoint.display()
                )),
            }
        };
        let handle = match launch(fixes, generation) {
            Ok(h) => h,
            Err(e) => return Err(fall_back(s, format!("did not start ({e})"))),
        };
        self.install(s, handle, generation);
        let first_in = watch_new_plan(s, FIRST_RECORD_WAIT, |m| m.records_emitted_by_sources() > 0)
            .then(Instant::now);
        // A task that refuses the restore fails while opening, around the sources' first
        // records: until the last vertices take in a record (or a moment passes), a failure
        // of the new plan is a failed start, and the previous plan runs again.
        watch_new_plan(s, START_GRACE, |m| m.records_into_last_vertices() > 0);
        if let JobOutcome::Failed { message, .. } = s.monitor.outcome() {
            // A plan that committed a checkpoint published output after the savepoint:
            // restarting the previous plan from the savepoint would publish it again. Its
            // handle stays: waiting on the job returns its failure.
            if let Some(n) = committed_after(&s.monitor, savepoint_id) {
                let dir = self
                    .config_for(generation, None)
                    .checkpoint_dir
                    .map_or_else(String::new, |d| format!(" in {}", d.display()));
                return Err(LiveError::internal(format!(
                    "The new plan failed ({message}) after it committed checkpoint {n}; it is not \
                     rolled back to savepoint {} (what it published would be published again). \
                     The job has failed: restore it from its latest checkpoint{dir}",
                    savepoint.display()
                )));
            }
            if let Some(h) = s.handle.take() {
                let _ = h.wait();
            }
            return Err(fall_back(s, format!("failed as it started ({message})")));
        }
        let ms = |from: Instant, to: Instant| to.duration_since(from).as_secs_f64() * 1e3;
        let pause_ms = first_in.map(|t| ms(last_out, t));
        let sources_paused_ms = first_in.map(|t| ms(requested, t));
        Ok(Switched {
            savepoint,
            pause_ms,
            sources_paused_ms,
        })
    }

    fn install(&self, s: &mut State, handle: JobHandle, generation: u32) {
        let monitor = handle.monitor();
        if let Some(r) = &self.registry {
            r.replace(monitor.clone());
        }
        s.emitted_before += s.monitor.records_emitted_by_sources();
        s.monitor = monitor;
        s.handle = Some(handle);
        s.generation = generation;
    }
}

/// The newest checkpoint the running plan completed (and its sinks committed) after savepoint
/// `savepoint_id` it started from, if any (also when it restarted from one of its own
/// checkpoints meanwhile).
fn committed_after(monitor: &JobMonitor, savepoint_id: u64) -> Option<u64> {
    let done = monitor.control.checkpoints()?.completed_checkpoint();
    (done > savepoint_id).then_some(done)
}

/// Why a job whose bounded input ended on some task cannot change its plan: a savepoint needs
/// every task running (Flink refuses it the same way), so the change would only fail.
fn ended_tasks(monitor: &JobMonitor) -> Option<String> {
    let ended = monitor
        .control
        .checkpoints()
        .map_or(0, |h| h.finished_tasks());
    (ended > 0).then(|| {
        format!(
            "Job {}: {ended} task(s) have ended (bounded input read to its end), and a plan \
             change needs a savepoint of every running task; run the job on unbounded input \
             to change its plan live.",
            monitor.job_id
        )
    })
}

struct Switched {
    savepoint: PathBuf,
    pause_ms: Option<f64>,
    sources_paused_ms: Option<f64>,
}

/// Polls the running plan every 0.5 ms until `seen` holds (true), its job ends or `wait` passes
/// (false).
fn watch_new_plan(s: &State, wait: Duration, seen: impl Fn(&JobMonitor) -> bool) -> bool {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if seen(&s.monitor) {
            return true;
        }
        if s.handle.as_ref().is_none_or(|h| h.is_finished()) {
            return false;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    false
}

/// Polls `count` until `watching` is cleared; returns when it last changed (or when polling
/// began, if it never did).
fn last_change(watching: &AtomicBool, count: impl Fn() -> u64) -> Instant {
    let (mut last, mut at) = (count(), Instant::now());
    while watching.load(Ordering::Acquire) {
        let n = count();
        if n != last {
            (last, at) = (n, Instant::now());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    at
}

fn now_ms() -> i64 {
    sluice_runtime::executor::epoch_ms() as i64
}

impl LiveControl for LiveJob {
    fn apply(&self, request: ApplyRequest) -> Result<RescaleRecord, LiveError> {
        LiveJob::apply(self, request)
    }

    fn history(&self) -> Vec<RescaleRecord> {
        self.lock().history.clone()
    }
}
