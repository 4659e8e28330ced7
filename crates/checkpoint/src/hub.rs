//! What the tasks and the coordinator thread of one job share: the barrier to inject, the
//! acknowledgements, the last completed checkpoint, the state to restore, and the statistics
//! the REST API reports.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use sluice_types::{Barrier, CheckpointKind};

use super::link::{HubMessage, HubRole, ProcessLink};

use super::savepoints::Savepoints;
pub use super::savepoints::{SavepointRefused, SavepointRequest, SavepointStatus};
use super::{CheckpointConfig, CompletedCheckpoint};

/// One task's acknowledgement of a checkpoint: the snapshots of its operators.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TaskAck {
    /// The checkpoint acknowledged.
    pub checkpoint_id: u64,
    /// The task's vertex index.
    pub vertex: usize,
    /// The task's subtask index.
    pub subtask: usize,
    /// `(operator id, bytes)` for each operator of the chain that has state (emptied once the
    /// checkpoint is written: statistics keep only `state_bytes`).
    pub states: Vec<(String, Vec<u8>)>,
    /// Total bytes of `states`.
    pub state_bytes: usize,
    /// From the first barrier to the last on the task's inputs (0 for sources).
    pub alignment_ns: u64,
    /// Time taking the snapshots (synchronous part).
    pub sync_ns: u64,
    /// From the trigger to the barrier reaching the task.
    pub start_delay_ms: u64,
    /// When the task acknowledged, ms since the epoch.
    pub ack_ms: i64,
}

/// Where a checkpoint stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointStatus {
    /// Triggered; acknowledgements are outstanding.
    InProgress,
    /// Acknowledged by every task and written.
    Completed,
    /// Expired, declined or not written; `failure` says why.
    Failed,
}

/// One checkpoint's statistics (Flink's history entry).
#[derive(Debug, Clone)]
pub struct CheckpointRecord {
    /// The checkpoint's id.
    pub id: u64,
    /// Aligned, unaligned or a savepoint.
    pub kind: CheckpointKind,
    /// Where it stands.
    pub status: CheckpointStatus,
    /// Trigger time, ms since the epoch.
    pub trigger_ms: i64,
    /// Time of the latest acknowledgement (the trigger time until one arrives).
    pub latest_ack_ms: i64,
    /// The tasks' acknowledgements so far.
    pub acks: Vec<TaskAck>,
    /// Total state bytes of the acknowledgements.
    pub state_size: u64,
    /// Why it failed, if it did.
    pub failure: Option<String>,
    /// Where it was written, once it completed.
    pub external_path: Option<String>,
}

impl CheckpointRecord {
    /// From trigger to the latest acknowledgement, ms (never negative).
    pub fn end_to_end_ms(&self) -> i64 {
        (self.latest_ack_ms - self.trigger_ms).max(0)
    }
}

/// Kept statistics (Flink's `web.checkpoints.history`, default 10).
pub const HISTORY: usize = 10;

#[derive(Default)]
struct Acks {
    queue: Vec<TaskAck>,
    declines: Vec<(u64, String)>,
}

/// Shared by every task of a job and its coordinator thread.
pub struct CheckpointHub {
    /// The job's checkpointing configuration.
    pub config: CheckpointConfig,
    /// Where completed checkpoints are written.
    pub dir: PathBuf,
    /// The latest barrier to inject; sources compare its id with the last one they injected.
    barrier: Mutex<Option<Barrier>>,
    barrier_id: AtomicU64,
    acks: Mutex<Acks>,
    ack_cv: Condvar,
    completed: AtomicU64,
    restore: Mutex<Option<Arc<CompletedCheckpoint>>>,
    stats: Mutex<Stats>,
    /// Number of tasks that finished; after the first, no barrier could pass them.
    finished_tasks: AtomicU64,
    /// The final checkpoint ([`CheckpointHub::source_at_end`]): source subtasks of this
    /// attempt and those at the end of their input, then the last checkpoint id triggered
    /// before the last of them got there (a checkpoint with a higher id holds every source at
    /// its end).
    sources: Mutex<SourcesAtEnd>,
    final_after: AtomicU64,
    /// The current attempt (0 = the first run); restarts count up.
    attempt: AtomicU64,
    /// What transactional sinks publish once the whole job has finished (their output after the
    /// last checkpoint): run only after every task ended successfully.
    final_commits: Mutex<Vec<FinalCommit>>,
    created_ms: u64,
    /// The id of a stop-with-savepoint in progress (0: none): a source that injected its
    /// barrier emits nothing more (Flink's synchronous savepoint) until the job stops, or the
    /// savepoint fails and this is cleared.
    stop_savepoint: AtomicU64,
    /// Savepoint requests waiting to be triggered, and every request's status.
    savepoints: Savepoints,
    /// In-flight records of unaligned checkpoints, by checkpoint and `(vertex, subtask)`. Kept
    /// in memory (records are typed values, not serialized), so an unaligned checkpoint
    /// restores only in the process that took it.
    channel_states: Mutex<BTreeMap<u64, TaskChannelStates>>,
    /// Every failed checkpoint and storage problem, in order, as one line each: what a
    /// front end prints (`sluice run` to stderr). Never trimmed: failures are few.
    log: Mutex<Vec<String>>,
    /// The other processes' hubs, when the job is split over processes (see [`super::link`]).
    link: OnceLock<(HubRole, Arc<dyn ProcessLink>)>,
    /// Where the leader puts the other processes' metrics reports (see
    /// [`crate::telemetry::cluster`]).
    reports: OnceLock<ReportSink>,
    /// Where inspection messages go (a follower's requests, the leader's replies; see
    /// `sluice-runtime`'s `job_master::inspect`).
    inspections: OnceLock<InspectionSink>,
}

/// What a hub does with an inspection message of another process.
pub type InspectionSink = Box<dyn Fn(HubMessage) + Send + Sync>;

/// What the leader does with a metrics report of another process (an error refuses it, logged).
pub type ReportSink =
    Box<dyn Fn(sluice_metrics::report::ProcessReport) -> Result<(), String> + Send + Sync>;

/// One task's in-flight input records of an unaligned checkpoint (a `Vec<T>`).
pub type ChannelState = Arc<Mutex<Box<dyn std::any::Any + Send>>>;

/// The channel states of one checkpoint by `(vertex, subtask)`.
type TaskChannelStates = BTreeMap<(usize, usize), ChannelState>;

/// A sink's publication of its last output, run when the job finishes successfully.
pub type FinalCommit = Box<dyn FnOnce() -> Result<(), sluice_types::OperatorError> + Send>;

/// How many source subtasks the attempt has and how many reached their end. `total` is
/// `None` until the attempt counted them: on the leader of a split job another process's
/// sources can report their end before this process built its attempt (it was still reading
/// the checkpoint), and that must not read as "every source is at its end".
#[derive(Default)]
struct SourcesAtEnd {
    total: Option<u64>,
    at_end: u64,
}

#[derive(Default)]
struct Stats {
    history: BTreeMap<u64, CheckpointRecord>,
    completed: u64,
    failed: u64,
    restored: u64,
    latest_completed: Option<u64>,
    latest_failed: Option<u64>,
    latest_savepoint: Option<u64>,
    restored_from: Option<(u64, i64, String)>,
    /// All completed end-to-end durations and sizes, for the summary.
    durations: Vec<i64>,
    sizes: Vec<u64>,
}

/// Summary numbers for the REST API.
#[derive(Debug, Clone, Default)]
pub struct StatsView {
    /// Checkpoints completed since the job started.
    pub completed: u64,
    /// Checkpoints failed since the job started.
    pub failed: u64,
    /// Times the job restored from a checkpoint.
    pub restored: u64,
    /// Checkpoints of the history still in progress.
    pub in_progress: u64,
    /// The last [`HISTORY`] checkpoints, newest first.
    pub history: Vec<CheckpointRecord>,
    /// The latest completed checkpoint, while it is in the history.
    pub latest_completed: Option<CheckpointRecord>,
    /// The latest failed checkpoint, while it is in the history.
    pub latest_failed: Option<CheckpointRecord>,
    /// The latest savepoint, while it is in the history.
    pub latest_savepoint: Option<CheckpointRecord>,
    /// `(id, restore time ms, path)` of the checkpoint the job restored from last.
    pub restored_from: Option<(u64, i64, String)>,
    /// Every completed checkpoint's end-to-end duration, ms, for the summary.
    pub durations: Vec<i64>,
    /// Every completed checkpoint's state size, bytes, for the summary.
    pub sizes: Vec<u64>,
}

impl CheckpointHub {
    /// A hub for one job, writing completed checkpoints under `dir`.
    pub fn new(config: CheckpointConfig, dir: PathBuf) -> Arc<CheckpointHub> {
        let created_ms = sluice_metrics::clock::epoch_ms();
        Arc::new(CheckpointHub {
            config,
            dir,
            barrier: Mutex::new(None),
            barrier_id: AtomicU64::new(0),
            acks: Mutex::new(Acks::default()),
            ack_cv: Condvar::new(),
            completed: AtomicU64::new(0),
            restore: Mutex::new(None),
            stats: Mutex::new(Stats::default()),
            finished_tasks: AtomicU64::new(0),
            sources: Mutex::new(SourcesAtEnd::default()),
            final_after: AtomicU64::new(u64::MAX),
            attempt: AtomicU64::new(0),
            final_commits: Mutex::new(Vec::new()),
            created_ms,
            stop_savepoint: AtomicU64::new(0),
            savepoints: Savepoints::new(created_ms),
            channel_states: Mutex::new(BTreeMap::new()),
            log: Mutex::new(Vec::new()),
            link: OnceLock::new(),
            reports: OnceLock::new(),
            inspections: OnceLock::new(),
        })
    }

    /// Makes this the hub of one process of a split job (once, before any task runs).
    pub fn set_link(&self, role: HubRole, link: Arc<dyn ProcessLink>) {
        let _ = self.link.set((role, link));
    }

    /// This hub's role in a split job (`None`: the job runs in one process).
    pub fn role(&self) -> Option<HubRole> {
        self.link.get().map(|(r, _)| *r)
    }

    /// A follower runs no coordinator: the leader's triggers and completions arrive by
    /// [`receive`](Self::receive).
    pub fn is_follower(&self) -> bool {
        self.role() == Some(HubRole::Follower)
    }

    /// Where the leader puts the metrics reports of the other processes.
    pub fn on_reports(&self, sink: ReportSink) {
        let _ = self.reports.set(sink);
    }

    /// A follower's metrics report to the leader, best effort: one that cannot be sent is
    /// skipped (the next carries the same counters); `false` when this hub is no follower or
    /// the send failed.
    pub fn send_report(&self, report: sluice_metrics::report::ProcessReport) -> bool {
        match self.link.get() {
            Some((HubRole::Follower, link)) => link
                .send_best_effort(HubMessage::Metrics(report).encode())
                .is_ok(),
            _ => false,
        }
    }

    /// Where this hub puts the inspection messages it receives.
    pub fn on_inspections(&self, sink: InspectionSink) {
        let _ = self.inspections.set(sink);
    }

    /// Sends an inspection message: from the leader to every other process, from a follower
    /// to the leader; best effort either way (an inspection never fails a job). `false` when
    /// the job is not split or the send failed.
    pub fn send_inspection(&self, m: HubMessage) -> bool {
        match self.link.get() {
            Some((_, link)) => link.send_best_effort(m.encode()).is_ok(),
            None => false,
        }
    }

    /// Sends `m` to the other processes if this hub has role `role`.
    fn relay_as(&self, role: HubRole, m: impl FnOnce() -> HubMessage) -> bool {
        match self.link.get() {
            Some((r, link)) if *r == role => {
                link.send(m().encode());
                true
            }
            _ => false,
        }
    }

    /// A message from another process's hub (see [`super::link`]).
    pub fn receive(&self, bytes: &[u8]) -> Result<(), String> {
        match HubMessage::decode(bytes)? {
            HubMessage::Trigger(b) => self.trigger(b.barrier()?),
            // The leader sends only completions that may be committed.
            HubMessage::Completed(id) => {
                self.record_completed(id, Vec::new(), 0, None);
                self.publish_completed(id);
            }
            HubMessage::FinalAfter(id) => self.final_after.store(id, Ordering::Release),
            HubMessage::StopSavepoint(id) => self.stop_savepoint.store(id, Ordering::SeqCst),
            HubMessage::TaskFinishedElsewhere => {
                self.finished_tasks.fetch_add(1, Ordering::Relaxed);
                self.ack_cv.notify_all();
            }
            HubMessage::Ack(a) => self.ack(a),
            HubMessage::Decline(id, reason) => self.decline(id, reason),
            HubMessage::TaskFinished => self.task_finished(),
            HubMessage::SourceAtEnd => self.source_at_end(),
            m @ (HubMessage::InspectRequest { .. } | HubMessage::InspectReply { .. }) => {
                if let Some(sink) = self.inspections.get() {
                    sink(m);
                }
            }
            HubMessage::Metrics(report) => {
                // A report process 0 cannot place (processes that disagree on the layout) is
                // logged and dropped: metrics never fail a job.
                if let Some(Err(e)) = self.reports.get().map(|sink| sink(report)) {
                    tracing::warn!("metrics report refused: {e}");
                }
            }
        }
        Ok(())
    }

    /// Queues a savepoint into `dir` (stopping the job after it when `stop`); returns the
    /// trigger id to poll with [`savepoint_status`](Self::savepoint_status), or why it was
    /// refused (the queue is full, or a stop is already requested).
    /// Marks checkpoint `id` as a stop-with-savepoint in progress (0: none any more).
    pub fn set_stop_savepoint(&self, id: u64) {
        self.stop_savepoint.store(id, Ordering::SeqCst);
        self.relay_as(HubRole::Leader, || HubMessage::StopSavepoint(id));
    }

    /// Whether checkpoint `id` is a stop-with-savepoint still in progress.
    pub fn is_stop_savepoint(&self, id: u64) -> bool {
        id != 0 && self.stop_savepoint.load(Ordering::SeqCst) == id
    }

    /// Queues a savepoint into `dir` (stopping the job after it if `stop`); returns its trigger id.
    pub fn request_savepoint(&self, dir: PathBuf, stop: bool) -> Result<String, SavepointRefused> {
        let id = self.savepoints.request(dir, stop)?;
        self.ack_cv.notify_all();
        Ok(id)
    }

    /// The coordinator takes the oldest waiting savepoint request.
    pub fn take_savepoint_request(&self) -> Option<SavepointRequest> {
        self.savepoints.take()
    }

    /// A request the coordinator took and could not finish goes back to the front.
    pub fn requeue_savepoint_request(&self, req: SavepointRequest) {
        self.savepoints.requeue(req);
    }

    /// Fails every waiting savepoint request with `reason`.
    pub fn fail_queued_savepoints(&self, reason: &str) {
        self.savepoints.fail_queued(reason);
    }

    /// See [`Savepoints::claim`](super::savepoints::Savepoints::claim).
    pub fn claim_savepoint(&self, trigger_id: &str) -> bool {
        self.savepoints.claim(trigger_id)
    }

    /// Where savepoint `trigger_id` stands; `None` if the id is unknown.
    pub fn savepoint_status(&self, trigger_id: &str) -> Option<SavepointStatus> {
        self.savepoints.status(trigger_id)
    }

    /// Records where savepoint `trigger_id` stands.
    pub fn set_savepoint_status(&self, trigger_id: &str, status: SavepointStatus) {
        self.savepoints.set_status(trigger_id, status);
    }

    /// Waits until savepoint `trigger_id` completed or failed (or `timeout` passed).
    pub fn wait_savepoint(
        &self,
        trigger_id: &str,
        timeout: std::time::Duration,
    ) -> SavepointStatus {
        self.savepoints.wait(trigger_id, timeout)
    }

    /// Keeps a task's in-flight records of unaligned checkpoint `id`.
    pub fn store_channel_state(
        &self,
        id: u64,
        vertex: usize,
        subtask: usize,
        state: Box<dyn std::any::Any + Send>,
    ) {
        self.channel_states
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id)
            .or_default()
            .insert((vertex, subtask), Arc::new(Mutex::new(state)));
    }

    /// A task's in-flight records of checkpoint `id`, if any.
    pub fn channel_state(&self, id: u64, vertex: usize, subtask: usize) -> Option<ChannelState> {
        self.channel_states
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .and_then(|m| m.get(&(vertex, subtask)).cloned())
    }

    /// Whether this process holds the in-flight records of checkpoint `id`.
    pub fn has_channel_state(&self, id: u64) -> bool {
        self.channel_states
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&id)
    }

    /// Drops the in-flight records of checkpoints older than `id` (no longer restorable).
    fn prune_channel_states(&self, id: u64) {
        self.channel_states
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| *k >= id);
    }

    /// The attempt the tasks run in (0 = first).
    pub fn attempt(&self) -> u64 {
        self.attempt.load(Ordering::Relaxed)
    }

    /// A tag unique to this attempt of this job (also across jobs that restore each other's
    /// savepoints): `<the hub's creation time in ms>-<the attempt>`, whole (a tag that wrapped
    /// after some number of restarts would give a later attempt an earlier one's names).
    pub fn attempt_tag(&self) -> String {
        format!("{}-{}", self.created_ms, self.attempt())
    }

    /// When the hub was created (ms since the epoch).
    pub fn created_ms(&self) -> u64 {
        self.created_ms
    }

    /// The highest checkpoint id triggered so far (ids stay unique across restarts).
    pub fn last_triggered(&self) -> u64 {
        let stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        stats
            .history
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(stats.restored_from.as_ref().map_or(0, |(id, _, _)| *id))
    }

    /// Registers a sink's final publication (see [`FinalCommit`]).
    pub fn register_final_commit(&self, commit: FinalCommit) {
        self.final_commits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(commit);
    }

    /// The job finished: publish every sink's last output.
    pub fn run_final_commits(&self) -> Result<(), sluice_types::OperatorError> {
        let commits =
            std::mem::take(&mut *self.final_commits.lock().unwrap_or_else(|p| p.into_inner()));
        for c in commits {
            c()?;
        }
        Ok(())
    }

    // --- sources --------------------------------------------------------------------------

    /// The barrier a source should inject if it has not yet (`last` = the id it injected
    /// last). One relaxed load when there is nothing new.
    #[inline]
    pub fn barrier_after(&self, last: u64) -> Option<Barrier> {
        if self.barrier_id.load(Ordering::Acquire) <= last {
            return None;
        }
        *self.barrier.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a barrier newer than `last` is waiting to be injected (one relaxed load: cheap
    /// enough to ask per record).
    #[inline]
    pub fn barrier_pending(&self, last: u64) -> bool {
        self.barrier_id.load(Ordering::Relaxed) > last
    }

    /// Publishes a barrier for every source.
    pub fn trigger(&self, barrier: Barrier) {
        {
            let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            stats.history.insert(
                barrier.checkpoint_id,
                CheckpointRecord {
                    id: barrier.checkpoint_id,
                    kind: barrier.kind,
                    status: CheckpointStatus::InProgress,
                    trigger_ms: barrier.timestamp_ms,
                    latest_ack_ms: barrier.timestamp_ms,
                    acks: Vec::new(),
                    state_size: 0,
                    failure: None,
                    external_path: None,
                },
            );
            trim(&mut stats.history);
        }
        *self.barrier.lock().unwrap_or_else(|p| p.into_inner()) = Some(barrier);
        self.barrier_id
            .store(barrier.checkpoint_id, Ordering::Release);
        self.relay_as(HubRole::Leader, || HubMessage::Trigger(barrier.into()));
    }

    // --- tasks ----------------------------------------------------------------------------

    /// A task took its snapshots for a checkpoint (a follower forwards this to the leader).
    pub fn ack(&self, ack: TaskAck) {
        let Some(ack) = self.forward_to_leader(ack, HubMessage::Ack) else {
            return;
        };
        self.acks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .queue
            .push(ack);
        self.ack_cv.notify_all();
    }

    /// A task could not take its snapshot.
    pub fn decline(&self, checkpoint_id: u64, reason: String) {
        let Some((checkpoint_id, reason)) =
            self.forward_to_leader((checkpoint_id, reason), |(i, r)| HubMessage::Decline(i, r))
        else {
            return;
        };
        self.acks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .declines
            .push((checkpoint_id, reason));
        self.ack_cv.notify_all();
    }

    /// A task ended (bounded input); barriers can no longer pass it.
    pub fn task_finished(&self) {
        self.finished_tasks.fetch_add(1, Ordering::Relaxed);
        self.ack_cv.notify_all();
        self.relay_as(HubRole::Follower, || HubMessage::TaskFinished);
        self.relay_as(HubRole::Leader, || HubMessage::TaskFinishedElsewhere);
    }

    /// On a follower, sends `what` to the leader (`None` back); elsewhere gives it back.
    fn forward_to_leader<W>(&self, what: W, msg: impl FnOnce(W) -> HubMessage) -> Option<W> {
        match self.link.get() {
            Some((HubRole::Follower, link)) => {
                link.send(msg(what).encode());
                None
            }
            _ => Some(what),
        }
    }

    /// Tasks that reached the end of their input in this attempt.
    pub fn finished_tasks(&self) -> u64 {
        self.finished_tasks.load(Ordering::Relaxed)
    }

    // --- the final checkpoint -------------------------------------------------------------

    /// The number of source subtasks of the attempt about to start (before its tasks run, after
    /// its restore point is set). Sources of other processes that already reported their end
    /// count.
    pub fn set_sources(&self, n: u64) {
        let mut s = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        s.total = Some(n);
        if n > 0 && s.at_end >= n {
            self.all_sources_at_end();
        }
    }

    /// Source subtask reached the end of its bounded input and waits for the final
    /// checkpoint (Flink's checkpoints after tasks finish, FLIP-147): what a transactional
    /// sink received is then pre-committed under a checkpoint that holds every source at its
    /// end, and committed when that checkpoint completed, so nothing is published that a
    /// restore from the latest checkpoint would read again. Without it the sinks' last
    /// transactions are committed only after the job ended ([`Self::run_final_commits`]),
    /// beyond every checkpoint: a crash in the middle of those commits left some committed and
    /// the restore replayed their records (duplicates).
    pub fn source_at_end(&self) {
        if self.relay_as(HubRole::Follower, || HubMessage::SourceAtEnd) {
            return;
        }
        let mut s = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        s.at_end += 1;
        if s.total == Some(s.at_end) {
            self.all_sources_at_end();
        }
    }

    /// Every source is at its end (called under the `sources` lock, once per attempt): the
    /// next checkpoint triggered is the final one.
    fn all_sources_at_end(&self) {
        let last = self
            .barrier_id
            .load(Ordering::Acquire)
            .max(self.last_triggered());
        self.final_after.store(last, Ordering::Release);
        self.relay_as(HubRole::Leader, || HubMessage::FinalAfter(last));
    }

    /// Whether the waiting sources may end: the final checkpoint completed, or none can
    /// complete any more (a task already finished, e.g. a source that does not wait for it).
    pub fn final_checkpoint_done(&self) -> bool {
        let after = self.final_after.load(Ordering::Acquire);
        (after != u64::MAX && self.completed_checkpoint() > after) || self.finished_tasks() > 0
    }

    /// The id of the last completed checkpoint whose side effects may be published (0 = none):
    /// what transactional sinks commit up to, and Flink's `notifyCheckpointComplete`. A
    /// checkpoint counts, and a stop-with-savepoint; a savepoint that does not stop the job
    /// never does (Flink's rule): a failover restores from the latest checkpoint, which may be
    /// older than the savepoint, and would publish the records between them twice.
    #[inline]
    pub fn completed_checkpoint(&self) -> u64 {
        self.completed.load(Ordering::Acquire)
    }

    /// The checkpoint this attempt restores from.
    pub fn restore_point(&self) -> Option<Arc<CompletedCheckpoint>> {
        self.restore
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    // --- the coordinator thread -------------------------------------------------------------

    /// Wakes the coordinator thread waiting in [`take_acks`](Self::take_acks).
    pub fn wake(&self) {
        // Taking the lock orders the notification after a waiter that checked the queue.
        drop(self.acks.lock().unwrap_or_else(|p| p.into_inner()));
        self.ack_cv.notify_all();
    }

    /// Waits up to `timeout` for acknowledgements or declines, and takes them.
    pub fn take_acks(&self, timeout: std::time::Duration) -> (Vec<TaskAck>, Vec<(u64, String)>) {
        let mut a = self.acks.lock().unwrap_or_else(|p| p.into_inner());
        if a.queue.is_empty() && a.declines.is_empty() {
            a = self
                .ack_cv
                .wait_timeout(a, timeout)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        (
            std::mem::take(&mut a.queue),
            std::mem::take(&mut a.declines),
        )
    }

    /// Records a completed checkpoint of `kind` and, unless it is a savepoint that does not stop
    /// the job, publishes it to the tasks ([`completed_checkpoint`](Self::completed_checkpoint))
    /// and to the other processes.
    pub fn complete(
        &self,
        id: u64,
        kind: CheckpointKind,
        acks: Vec<TaskAck>,
        size: u64,
        path: Option<String>,
    ) {
        self.record_completed(id, acks, size, path);
        if kind == CheckpointKind::Savepoint && !self.is_stop_savepoint(id) {
            return;
        }
        self.publish_completed(id);
        self.relay_as(HubRole::Leader, || HubMessage::Completed(id));
    }

    /// Checkpoint `id` completed: its statistics.
    fn record_completed(&self, id: u64, acks: Vec<TaskAck>, size: u64, path: Option<String>) {
        {
            let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            let latest_ack = acks.iter().map(|a| a.ack_ms).max();
            if let Some(r) = stats.history.get_mut(&id) {
                r.status = CheckpointStatus::Completed;
                r.latest_ack_ms = latest_ack.unwrap_or(r.trigger_ms);
                // The bytes are on disk now; statistics keep their sizes only.
                r.acks = acks
                    .into_iter()
                    .map(|mut a| {
                        a.states = Vec::new();
                        a
                    })
                    .collect();
                r.state_size = size;
                r.external_path = path;
                let (d, kind) = (r.end_to_end_ms(), r.kind);
                stats.durations.push(d);
                stats.sizes.push(size);
                if kind == CheckpointKind::Savepoint {
                    stats.latest_savepoint = Some(id);
                }
            }
            stats.completed += 1;
            stats.latest_completed = Some(id);
        }
    }

    /// Checkpoint `id` completed and may be committed: sinks publish what they pre-committed up
    /// to it.
    fn publish_completed(&self, id: u64) {
        self.completed.fetch_max(id, Ordering::AcqRel);
        self.prune_channel_states(id);
    }

    /// Appends a line to the checkpoint log (see [`log_since`](Self::log_since)).
    pub fn log(&self, line: String) {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
    }

    /// The log lines after the first `seen`: every failed checkpoint with its reason, and
    /// problems removing old checkpoints.
    pub fn log_since(&self, seen: usize) -> Vec<String> {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.get(seen..).map(<[String]>::to_vec).unwrap_or_default()
    }

    /// Records a failed checkpoint.
    pub fn fail(&self, id: u64, reason: String, now_ms: i64) {
        let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = stats.history.get_mut(&id) {
            if r.status == CheckpointStatus::InProgress {
                r.status = CheckpointStatus::Failed;
                r.failure = Some(reason);
                r.latest_ack_ms = now_ms;
                stats.failed += 1;
                stats.latest_failed = Some(id);
            }
        }
    }

    /// Sets the checkpoint the next attempt restores from, and counts the restore.
    pub fn set_restore_point(
        &self,
        cp: Option<Arc<CompletedCheckpoint>>,
        path: String,
        now_ms: i64,
    ) {
        if let Some(c) = &cp {
            let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            stats.restored += 1;
            stats.restored_from = Some((c.id, now_ms, path));
            self.completed.fetch_max(c.id, Ordering::AcqRel);
        }
        *self.restore.lock().unwrap_or_else(|p| p.into_inner()) = cp;
    }

    /// A new attempt starts: forget barriers, acknowledgements and final commits of the
    /// failed one.
    pub fn reset_for_attempt(&self) {
        self.attempt.fetch_add(1, Ordering::Relaxed);
        self.stop_savepoint.store(0, Ordering::SeqCst);
        self.final_commits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self.barrier.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.barrier_id.store(0, Ordering::Release);
        let mut a = self.acks.lock().unwrap_or_else(|p| p.into_inner());
        a.queue.clear();
        a.declines.clear();
        self.finished_tasks.store(0, Ordering::Relaxed);
        *self.sources.lock().unwrap_or_else(|p| p.into_inner()) = SourcesAtEnd::default();
        self.final_after.store(u64::MAX, Ordering::Release);
    }

    /// The statistics for the REST API.
    pub fn stats(&self) -> StatsView {
        let stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        let get = |id: Option<u64>| id.and_then(|i| stats.history.get(&i).cloned());
        StatsView {
            completed: stats.completed,
            failed: stats.failed,
            restored: stats.restored,
            in_progress: stats
                .history
                .values()
                .filter(|r| r.status == CheckpointStatus::InProgress)
                .count() as u64,
            history: stats.history.values().rev().cloned().collect(),
            latest_completed: get(stats.latest_completed),
            latest_failed: get(stats.latest_failed),
            latest_savepoint: get(stats.latest_savepoint),
            restored_from: stats.restored_from.clone(),
            durations: stats.durations.clone(),
            sizes: stats.sizes.clone(),
        }
    }
}

fn trim(h: &mut BTreeMap<u64, CheckpointRecord>) {
    // Above HISTORY the map is non-empty, so each pass drops the oldest (lowest id).
    while h.len() > HISTORY {
        h.pop_first();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the hub sends to the other processes.
    #[derive(Default)]
    struct Recorded(Mutex<Vec<HubMessage>>);

    impl ProcessLink for Recorded {
        fn attach(&self, _hub: Arc<CheckpointHub>, _control: Arc<dyn crate::JobFailer>) {}
        fn send(&self, bytes: Vec<u8>) {
            self.0
                .lock()
                .unwrap()
                .push(HubMessage::decode(&bytes).unwrap());
        }
        fn send_best_effort(&self, bytes: Vec<u8>) -> Result<(), String> {
            self.send(bytes);
            Ok(())
        }
    }

    fn final_after(link: &Recorded) -> Vec<u64> {
        link.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|m| match m {
                HubMessage::FinalAfter(id) => Some(*id),
                _ => None,
            })
            .collect()
    }

    fn leader() -> (Arc<CheckpointHub>, Arc<Recorded>) {
        let hub = CheckpointHub::new(
            CheckpointConfig {
                interval: Some(std::time::Duration::from_millis(100)),
                ..CheckpointConfig::default()
            },
            std::env::temp_dir(),
        );
        let link = Arc::new(Recorded::default());
        hub.set_link(HubRole::Leader, link.clone());
        (hub, link)
    }

    fn restored(id: u64) -> Option<Arc<CompletedCheckpoint>> {
        Some(Arc::new(CompletedCheckpoint {
            id,
            kind: CheckpointKind::Aligned,
            timestamp_ms: 0,
            operators: BTreeMap::new(),
        }))
    }

    #[test]
    fn a_remote_source_at_its_end_before_the_leader_counted_its_sources_waits_for_the_rest() {
        // The follower's only source subtask had almost nothing left after the restore: its
        // end reaches the leader while the leader still reads checkpoint 9.
        let (hub, link) = leader();
        hub.receive(&HubMessage::SourceAtEnd.encode()).unwrap();
        assert!(
            final_after(&link).is_empty(),
            "1 of an unknown number of sources"
        );
        assert!(!hub.final_checkpoint_done());
        hub.set_restore_point(restored(9), "chk-9".into(), 0);
        hub.set_sources(2);
        assert!(final_after(&link).is_empty(), "1 of 2 sources at the end");
        hub.trigger(Barrier {
            checkpoint_id: 10,
            timestamp_ms: 0,
            kind: CheckpointKind::Aligned,
        });
        hub.source_at_end();
        assert_eq!(
            final_after(&link),
            vec![10],
            "checkpoint 11 is the final one"
        );
        hub.complete(10, CheckpointKind::Aligned, Vec::new(), 0, None);
        assert!(!hub.final_checkpoint_done());
        hub.complete(11, CheckpointKind::Aligned, Vec::new(), 0, None);
        assert!(hub.final_checkpoint_done());
    }

    #[test]
    fn attempt_tags_never_repeat_however_often_the_job_restarts() {
        // They used to wrap every 1000 attempts (`created_ms * 1000 + attempt % 1000`): a
        // PostgreSQL sink's end-of-input transaction of attempt k + 1000 took attempt k's gid.
        let (hub, _) = leader();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..2_001 {
            assert!(
                seen.insert(hub.attempt_tag()),
                "{} again",
                hub.attempt_tag()
            );
            hub.reset_for_attempt();
        }
    }

    #[test]
    fn a_savepoint_that_does_not_stop_the_job_commits_nothing() {
        let (hub, link) = leader();
        let completions = |link: &Recorded| -> Vec<u64> {
            link.0
                .lock()
                .unwrap()
                .iter()
                .filter_map(|m| match m {
                    HubMessage::Completed(id) => Some(*id),
                    _ => None,
                })
                .collect()
        };
        hub.complete(3, CheckpointKind::Aligned, Vec::new(), 0, None);
        assert_eq!(hub.completed_checkpoint(), 3);
        // A savepoint after it: sinks must not publish what they pre-committed at it, since a
        // failover restores from checkpoint 3 and replays it.
        hub.complete(4, CheckpointKind::Savepoint, Vec::new(), 0, None);
        assert_eq!(hub.completed_checkpoint(), 3, "savepoint 4 was committed");
        assert_eq!(hub.stats().completed, 2, "still counted as completed");
        // The next checkpoint commits everything up to it, the savepoint's pre-commits too.
        hub.complete(5, CheckpointKind::Unaligned, Vec::new(), 0, None);
        assert_eq!(hub.completed_checkpoint(), 5);
        // A stop-with-savepoint commits before the job ends.
        hub.set_stop_savepoint(6);
        hub.complete(6, CheckpointKind::Savepoint, Vec::new(), 0, None);
        assert_eq!(hub.completed_checkpoint(), 6);
        assert_eq!(
            completions(&link),
            vec![3, 5, 6],
            "what the followers commit"
        );
        // A follower commits what the leader sends.
        let follower = CheckpointHub::new(CheckpointConfig::default(), std::env::temp_dir());
        follower
            .receive(&HubMessage::Completed(5).encode())
            .unwrap();
        assert_eq!(follower.completed_checkpoint(), 5);
    }

    #[test]
    fn every_source_at_its_end_before_the_count_decides_after_the_restore_point() {
        let (hub, link) = leader();
        hub.receive(&HubMessage::SourceAtEnd.encode()).unwrap();
        hub.receive(&HubMessage::SourceAtEnd.encode()).unwrap();
        hub.set_restore_point(restored(9), "chk-9".into(), 0);
        assert!(final_after(&link).is_empty());
        hub.set_sources(2);
        assert_eq!(
            final_after(&link),
            vec![9],
            "a checkpoint after the restored one holds every source at its end"
        );
        assert!(!hub.final_checkpoint_done(), "checkpoint 9 is not after 9");
    }
}
