//! Partition commit for the partitioned file sink (Flink's `PartitionCommitter` with its
//! `process-time` and `partition-time` triggers and the `success-file` policy).
//!
//! Flink runs a single committer task behind the writers; each writer tells it, per
//! completed checkpoint, the partitions it wrote into and its watermark. Here the writers of
//! one sink share one [`PartitionCommitter`] (it lives in the job's process, created when the
//! sink is built): when a writer has published the files of a completed checkpoint it reports
//! (checkpoint, watermark at that barrier, partitions written before it). A partition is
//! committed — its success file written — once every writer has reported a checkpoint at
//! least as late as the one that first brought the partition (so every writer's data of it
//! up to there is published) and the trigger agrees:
//!
//! * `partition-time`: the smallest of the writers' watermarks is past the partition's time +
//!   delay (Flink: `watermark > partition time + delay`); after it no writer has more rows
//!   for the partition, except late ones.
//! * `process-time`: the wall clock is past the partition's creation (when a writer first
//!   wrote into it) + delay.
//!
//! At the end of a bounded job every partition is committed (Flink's committer commits all at
//! end of input), after the last files are published.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sluice_types::OperatorError;

/// The partition's time (epoch ms) from its relative directory (`dt=…/hm=…`); `Err` says why
/// it cannot be read.
pub type PartitionTime = Arc<dyn Fn(&str) -> Result<i64, String> + Send + Sync>;

/// When a partition may be committed (`sink.partition-commit.trigger`).
#[derive(Clone)]
pub enum CommitTrigger {
    /// The wall clock past the partition's creation + delay.
    ProcessTime,
    /// The watermark past the partition's time + delay.
    PartitionTime(PartitionTime),
}

/// How partitions are committed: the trigger, `sink.partition-commit.delay` and the success
/// file's name (`sink.partition-commit.success-file.name`).
#[derive(Clone)]
pub struct CommitPolicy {
    /// When.
    pub trigger: CommitTrigger,
    /// `sink.partition-commit.delay` in ms.
    pub delay_ms: i64,
    /// The empty file written into a committed partition.
    pub success_file: String,
}

impl std::fmt::Debug for CommitPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let trigger = match self.trigger {
            CommitTrigger::ProcessTime => "process-time",
            CommitTrigger::PartitionTime(_) => "partition-time",
        };
        write!(
            f,
            "CommitPolicy({trigger}, delay {} ms, {})",
            self.delay_ms, self.success_file
        )
    }
}

/// What a writer knows of a partition it wrote into.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartitionInfo {
    /// When the writer first wrote into it (ms since the epoch).
    pub created_ms: u64,
}

#[derive(Default)]
struct State {
    attempt: u64,
    /// Each writer's latest report: (checkpoint, watermark at its barrier).
    latest: HashMap<usize, (u64, i64)>,
    /// Partitions not committed yet: what is known and the checkpoint that first brought it.
    pending: BTreeMap<String, (PartitionInfo, u64)>,
    committed: HashSet<String>,
    ended: HashSet<usize>,
}

/// The committer the writers of one sink share (module docs).
pub struct PartitionCommitter {
    root: PathBuf,
    policy: CommitPolicy,
    state: Mutex<State>,
}

impl PartitionCommitter {
    /// A committer of partitions under `root`.
    pub fn new(root: PathBuf, policy: CommitPolicy) -> Arc<PartitionCommitter> {
        Arc::new(PartitionCommitter {
            root,
            policy,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self, attempt: u64) -> std::sync::MutexGuard<'_, State> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // A new attempt restarts from a checkpoint: its writers report again what they
        // restored; what the failed attempt reported after that checkpoint is void.
        if attempt > s.attempt {
            *s = State {
                attempt,
                ..State::default()
            };
        }
        s
    }

    /// Whether `partition` was committed (its writers may forget it).
    pub fn is_committed(&self, partition: &str) -> bool {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.committed.contains(partition)
    }

    /// Writer `subtask` of `parallelism` (in `attempt`) published its files up to checkpoint
    /// `checkpoint`, whose barrier it passed at `watermark` after writing into `partitions`.
    /// Commits what became committable.
    pub fn report(
        &self,
        (attempt, subtask, parallelism): (u64, usize, usize),
        checkpoint: u64,
        watermark: i64,
        partitions: &[(String, PartitionInfo)],
    ) -> Result<(), OperatorError> {
        let mut s = self.state(attempt);
        add(&mut s, partitions, checkpoint);
        s.latest.insert(subtask, (checkpoint, watermark));
        if s.latest.len() < parallelism {
            return Ok(());
        }
        let min_c = s.latest.values().map(|l| l.0).min().unwrap_or(0);
        let min_w = s.latest.values().map(|l| l.1).min().unwrap_or(i64::MIN);
        let now = now_ms();
        let mut due = Vec::new();
        for (p, (info, first)) in &s.pending {
            if *first > min_c {
                continue;
            }
            let ready = match &self.policy.trigger {
                CommitTrigger::ProcessTime => {
                    now as i128 > info.created_ms as i128 + self.policy.delay_ms as i128
                }
                CommitTrigger::PartitionTime(time) => {
                    let t = time(p).map_err(|e| {
                        OperatorError::failed(format!(
                            "partition '{p}': cannot extract its time for 'sink.partition-commit.trigger' = 'partition-time': {e}"
                        ))
                    })?;
                    min_w as i128 > t as i128 + self.policy.delay_ms as i128
                }
            };
            if ready {
                due.push(p.clone());
            }
        }
        for p in due {
            self.commit(&p)?;
            s.pending.remove(&p);
            s.committed.insert(p);
        }
        Ok(())
    }

    /// Writer `subtask` reached the end of its input after writing into `partitions`; the
    /// last of the writers has every pending partition committed once the job's last files
    /// are published (`register` runs a closure then: the checkpoint hub's final commits, or
    /// at once without one).
    pub fn end_of_input(
        self: &Arc<Self>,
        (attempt, subtask, parallelism): (u64, usize, usize),
        partitions: &[(String, PartitionInfo)],
        register: impl FnOnce(Box<dyn FnOnce() -> Result<(), OperatorError> + Send>),
    ) -> Result<(), OperatorError> {
        let mut s = self.state(attempt);
        add(&mut s, partitions, 0);
        s.ended.insert(subtask);
        if s.ended.len() < parallelism {
            return Ok(());
        }
        drop(s);
        let me = self.clone();
        register(Box::new(move || {
            let mut s = me.state.lock().unwrap_or_else(|p| p.into_inner());
            let all: Vec<String> = s.pending.keys().cloned().collect();
            for p in all {
                me.commit(&p)?;
                s.pending.remove(&p);
                s.committed.insert(p);
            }
            Ok(())
        }));
        Ok(())
    }

    /// The success-file policy: an empty file named by the policy in the partition.
    fn commit(&self, partition: &str) -> Result<(), OperatorError> {
        let dir = self.root.join(partition);
        std::fs::create_dir_all(&dir)
            .map_err(|e| OperatorError::io(format!("creating {}", dir.display()), e))?;
        let file = dir.join(&self.policy.success_file);
        std::fs::write(&file, b"")
            .map_err(|e| OperatorError::io(format!("writing {}", file.display()), e))?;
        crate::checkpoint::storage::sync_dir(&dir)
    }
}

fn add(s: &mut State, partitions: &[(String, PartitionInfo)], checkpoint: u64) {
    for (p, info) in partitions {
        if s.committed.contains(p) {
            continue;
        }
        let e = s.pending.entry(p.clone()).or_insert((*info, checkpoint));
        e.0.created_ms = e.0.created_ms.min(info.created_ms);
    }
}

/// The wall clock in ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
