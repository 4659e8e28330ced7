//! The checkpoint coordinator's decisions, as a pure state machine over observed facts (the
//! clock, acknowledgements, declines). The job's coordinator thread feeds it and carries out
//! what it returns; tests drive it directly.
//!
//! Rules (Flink's `CheckpointCoordinator` defaults and semantics):
//! - trigger every `interval`, but never sooner than `min_pause` after the last checkpoint
//!   completed, and never with `max_concurrent` checkpoints already pending;
//! - a pending checkpoint that is not fully acknowledged within `timeout` expires (fails);
//! - each failure (expiry, a task's decline, a failure to persist the snapshot) counts against
//!   `tolerable_failures` (Flink's `execution.checkpointing.tolerable-failed-checkpoints`,
//!   default 0: the first counted failure fails the job); one more than tolerated fails the
//!   job, and any completion resets the count. Not counted, as in Flink: a subsumed checkpoint,
//!   an aligned checkpoint retried unaligned, a failed savepoint;
//! - a fully acknowledged checkpoint is complete only once it is durably stored: `ack` asks
//!   for that ([`Action::Complete`]), the driver reports back with
//!   [`persisted`](Coordinator::persisted) or [`persist_failed`](Coordinator::persist_failed);
//! - checkpoint ids increase by one from 1.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sluice_types::CheckpointKind;

/// Flink's defaults: timeout 10 min, min pause 0, 1 concurrent, 0 tolerable failures.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointConfig {
    /// `execution.checkpointing.interval`; checkpoints are off when `None`.
    pub interval: Option<Duration>,
    /// A checkpoint not complete after this long expires (`execution.checkpointing.timeout`).
    pub timeout: Duration,
    /// Least time from one checkpoint's completion to the next trigger (`min-pause`).
    pub min_pause: Duration,
    /// Most checkpoints in progress at once (`max-concurrent-checkpoints`).
    pub max_concurrent: usize,
    /// Checkpoint failures in a row tolerated before the job fails (`tolerable-failed-checkpoints`).
    pub tolerable_failures: u32,
    /// Barriers overtake queued buffers, which are stored with the snapshot.
    pub unaligned: bool,
    /// An aligned checkpoint whose alignment takes longer than this switches to unaligned
    /// (`execution.checkpointing.aligned-checkpoint-timeout`); zero = never.
    pub aligned_timeout: Duration,
    /// Completed checkpoints kept on disk (`state.checkpoints.num-retained`, default 1).
    pub retained: usize,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            interval: None,
            timeout: Duration::from_secs(600),
            min_pause: Duration::ZERO,
            max_concurrent: 1,
            tolerable_failures: 0,
            unaligned: false,
            aligned_timeout: Duration::ZERO,
            retained: 1,
        }
    }
}

impl CheckpointConfig {
    /// Rejects settings that cannot work, naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.interval.is_some_and(|i| i < Duration::from_millis(10)) {
            return Err("checkpoint interval must be at least 10 ms".into());
        }
        if self.timeout.is_zero() {
            return Err("checkpoint timeout must be positive".into());
        }
        if self.max_concurrent == 0 {
            return Err("max concurrent checkpoints must be at least 1".into());
        }
        if self.retained == 0 {
            return Err("retained checkpoints must be at least 1".into());
        }
        Ok(())
    }
}

/// What the coordinator thread must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Inject barrier `id` at every source.
    Trigger {
        /// The new checkpoint's id (ids increase).
        id: u64,
        /// Aligned, unaligned or a savepoint.
        kind: CheckpointKind,
        /// Trigger time, ms since the epoch (carried by the barrier).
        timestamp_ms: i64,
    },
    /// Every task acknowledged `id`: persist it durably, then report back with
    /// [`Coordinator::persisted`] (which publishes it) or [`Coordinator::persist_failed`].
    Complete {
        /// The checkpoint every task acknowledged.
        id: u64,
    },
    /// `id` failed (expired, declined, not persisted, subsumed, retried unaligned); its partial
    /// acknowledgements are dropped. `counted`: it counts against the tolerable failures.
    Abort {
        /// The failed checkpoint.
        id: u64,
        /// Why it failed, for the history and the log.
        reason: String,
        /// Whether it counts against the tolerable failures.
        counted: bool,
    },
    /// More checkpoints failed in a row than tolerated.
    FailJob {
        /// Why, for the job's failure cause.
        reason: String,
    },
}

#[derive(Clone, Debug)]
struct Pending {
    kind: CheckpointKind,
    triggered_ms: i64,
    /// The `(vertex, subtask)`s that acknowledged: a checkpoint completes when every subtask
    /// did, once each (a second acknowledgement of one subtask counts nothing).
    acked: BTreeSet<(usize, usize)>,
}

/// The decision state of one job's checkpoints. Times are ms on any monotonic clock.
#[derive(Clone, Debug)]
pub struct Coordinator {
    config: CheckpointConfig,
    tasks: usize,
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    last_trigger_ms: Option<i64>,
    last_completion_ms: Option<i64>,
    consecutive_failures: u32,
    /// Fully acknowledged checkpoints being persisted, with their kind.
    persisting: BTreeMap<u64, CheckpointKind>,
    /// A savepoint requested by the user, triggered at the next opportunity.
    savepoint_requested: bool,
    /// No more triggers (a task finished, or the job is stopping).
    stopped: bool,
}

impl Coordinator {
    /// A coordinator for a job of `tasks` subtasks, continuing after checkpoint `last_id`
    /// (0 for a fresh job) so ids stay unique across restarts.
    pub fn new(config: CheckpointConfig, tasks: usize, last_id: u64) -> Coordinator {
        Coordinator {
            config,
            tasks,
            next_id: last_id + 1,
            pending: BTreeMap::new(),
            last_trigger_ms: None,
            last_completion_ms: None,
            consecutive_failures: 0,
            persisting: BTreeMap::new(),
            savepoint_requested: false,
            stopped: false,
        }
    }

    /// The configuration the coordinator decides by.
    pub fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    /// Ids of the pending checkpoints.
    pub fn pending(&self) -> Vec<u64> {
        self.pending.keys().copied().collect()
    }

    /// Asks for a savepoint at the next tick (it waits for pending checkpoints to finish).
    pub fn request_savepoint(&mut self) {
        self.savepoint_requested = true;
    }

    /// A savepoint asked for and not triggered yet is no longer wanted.
    pub fn drop_savepoint_request(&mut self) {
        self.savepoint_requested = false;
    }

    /// Savepoint `id` was withdrawn by its requester: it fails (not counted, as every failed
    /// savepoint).
    pub fn withdraw(&mut self, id: u64, reason: String) -> Vec<Action> {
        self.fail(id, reason)
    }

    /// No further checkpoints will be triggered (e.g. a source finished: its barriers could
    /// no longer flow). Pending ones may still complete.
    pub fn stop_triggering(&mut self) {
        self.stopped = true;
    }

    /// The clock moved to `now_ms`: expire and trigger.
    pub fn tick(&mut self, now_ms: i64) -> Vec<Action> {
        let mut actions = Vec::new();
        let timeout = self.config.timeout.as_millis() as i64;
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| now_ms - p.triggered_ms >= timeout)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            actions.extend(self.fail(id, format!("checkpoint {id} expired before completing")));
        }
        if self.stopped || actions.iter().any(|a| matches!(a, Action::FailJob { .. })) {
            return actions;
        }
        // Aligned checkpoint timeout: an aligned checkpoint still pending after it is
        // replaced by an unaligned one right away (not counted as a failure). Flink switches
        // per subtask; Sluice switches the whole checkpoint.
        let aligned_timeout = self.config.aligned_timeout.as_millis() as i64;
        if aligned_timeout > 0 {
            let slow: Vec<u64> = self
                .pending
                .iter()
                .filter(|(_, p)| {
                    p.kind == CheckpointKind::Aligned && now_ms - p.triggered_ms >= aligned_timeout
                })
                .map(|(id, _)| *id)
                .collect();
            for id in slow {
                self.pending.remove(&id);
                actions.push(Action::Abort {
                    id,
                    reason: format!(
                        "checkpoint {id}: alignment took longer than the aligned-checkpoint timeout \
                         ({aligned_timeout} ms); retried as an unaligned checkpoint"
                    ),
                    counted: false,
                });
                let next = self.next_id;
                self.next_id += 1;
                self.pending.insert(
                    next,
                    Pending {
                        kind: CheckpointKind::Unaligned,
                        triggered_ms: now_ms,
                        acked: BTreeSet::new(),
                    },
                );
                actions.push(Action::Trigger {
                    id: next,
                    kind: CheckpointKind::Unaligned,
                    timestamp_ms: now_ms,
                });
            }
        }
        if self.pending.len() >= self.config.max_concurrent {
            return actions;
        }
        let savepoint = self.savepoint_requested && self.pending.is_empty();
        let due = match self.config.interval {
            None => false,
            Some(interval) => {
                let interval = interval.as_millis() as i64;
                let after_trigger = self.last_trigger_ms.is_none_or(|t| now_ms - t >= interval);
                let after_pause = self
                    .last_completion_ms
                    .is_none_or(|t| now_ms - t >= self.config.min_pause.as_millis() as i64);
                after_trigger && after_pause
            }
        };
        if savepoint || due {
            let id = self.next_id;
            self.next_id += 1;
            let kind = if savepoint {
                self.savepoint_requested = false;
                CheckpointKind::Savepoint
            } else if self.config.unaligned {
                CheckpointKind::Unaligned
            } else {
                CheckpointKind::Aligned
            };
            self.pending.insert(
                id,
                Pending {
                    kind,
                    triggered_ms: now_ms,
                    acked: BTreeSet::new(),
                },
            );
            self.last_trigger_ms = Some(now_ms);
            actions.push(Action::Trigger {
                id,
                kind,
                timestamp_ms: now_ms,
            });
        }
        actions
    }

    /// Subtask `subtask` of vertex `vertex` acknowledged `id` (its snapshot is stored). Returns
    /// `Complete` once every subtask did: the checkpoint is then to be persisted, and is no
    /// longer pending. Acknowledgements are counted per subtask, not per message: a subtask
    /// that acknowledged twice (a protocol bug) cannot stand in for one that did not.
    pub fn ack(&mut self, id: u64, vertex: usize, subtask: usize) -> Vec<Action> {
        let Some(p) = self.pending.get_mut(&id) else {
            return Vec::new(); // expired or aborted: a late acknowledgement
        };
        if !p.acked.insert((vertex, subtask)) {
            tracing::warn!(
                checkpoint = id,
                vertex,
                subtask,
                "a second acknowledgement of one subtask is ignored"
            );
        }
        if p.acked.len() < self.tasks {
            return Vec::new();
        }
        let kind = p.kind;
        self.pending.remove(&id);
        self.persisting.insert(id, kind);
        vec![Action::Complete { id }]
    }

    /// Checkpoint `id` is durably stored: it is complete. Resets the failure count and
    /// subsumes older pending checkpoints (as Flink does).
    pub fn persisted(&mut self, id: u64, now_ms: i64) -> Vec<Action> {
        if self.persisting.remove(&id).is_none() {
            return Vec::new();
        }
        let older: Vec<u64> = self.pending.range(..id).map(|(i, _)| *i).collect();
        let mut actions = Vec::new();
        for o in older {
            self.pending.remove(&o);
            actions.push(Action::Abort {
                id: o,
                reason: format!("subsumed by checkpoint {id}"),
                counted: false,
            });
        }
        self.consecutive_failures = 0;
        self.last_completion_ms = Some(now_ms);
        actions
    }

    /// Checkpoint `id` could not be stored (e.g. an I/O error): a failure like an expiry.
    pub fn persist_failed(&mut self, id: u64, reason: String) -> Vec<Action> {
        match self.persisting.remove(&id) {
            Some(kind) => self.count_failure(id, kind, reason),
            None => Vec::new(),
        }
    }

    /// A task declined `id` (it could not snapshot).
    pub fn decline(&mut self, id: u64, reason: String) -> Vec<Action> {
        if !self.pending.contains_key(&id) {
            return Vec::new();
        }
        self.fail(id, reason)
    }

    /// The kind of pending checkpoint `id`.
    pub fn kind(&self, id: u64) -> Option<CheckpointKind> {
        self.pending.get(&id).map(|p| p.kind)
    }

    /// The kind of checkpoint `id`, fully acknowledged and being persisted.
    pub fn persisting_kind(&self, id: u64) -> Option<CheckpointKind> {
        self.persisting.get(&id).copied()
    }

    /// Consecutive counted failures since the last completion.
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    fn fail(&mut self, id: u64, reason: String) -> Vec<Action> {
        match self.pending.remove(&id) {
            Some(p) => self.count_failure(id, p.kind, reason),
            None => Vec::new(),
        }
    }

    fn count_failure(&mut self, id: u64, kind: CheckpointKind, reason: String) -> Vec<Action> {
        // A failed savepoint is reported, not counted against the job.
        let counted = kind != CheckpointKind::Savepoint;
        let mut actions = vec![Action::Abort {
            id,
            reason: reason.clone(),
            counted,
        }];
        if counted {
            self.consecutive_failures += 1;
            if self.consecutive_failures > self.config.tolerable_failures {
                actions.push(Action::FailJob {
                    reason: format!(
                        "checkpoint {id} failed and the job tolerates {} failed checkpoint(s) in \
                         a row (execution.checkpointing.tolerable-failed-checkpoints): {reason}",
                        self.config.tolerable_failures
                    ),
                });
            }
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(interval_ms: u64) -> CheckpointConfig {
        CheckpointConfig {
            interval: Some(Duration::from_millis(interval_ms)),
            timeout: Duration::from_millis(500),
            tolerable_failures: 1,
            ..CheckpointConfig::default()
        }
    }

    fn trigger_ids(a: &[Action]) -> Vec<u64> {
        a.iter()
            .filter_map(|a| match a {
                Action::Trigger { id, .. } => Some(*id),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn triggers_on_the_interval_one_at_a_time_and_completes_on_the_last_ack() {
        let mut c = Coordinator::new(cfg(100), 3, 0);
        assert_eq!(trigger_ids(&c.tick(0)), vec![1]);
        assert!(trigger_ids(&c.tick(150)).is_empty(), "max 1 concurrent");
        assert!(c.ack(1, 0, 0).is_empty());
        assert!(c.ack(1, 0, 1).is_empty());
        assert_eq!(c.ack(1, 1, 0), vec![Action::Complete { id: 1 }]);
        assert!(c.pending().is_empty(), "being persisted, no longer pending");
        assert!(c.persisted(1, 163).is_empty());
        assert_eq!(
            trigger_ids(&c.tick(170)),
            vec![2],
            "interval passed since trigger"
        );
        assert!(c.ack(9, 0, 0).is_empty(), "unknown ids are ignored");
    }

    #[test]
    fn a_subtask_acknowledging_twice_does_not_stand_in_for_another() {
        let mut c = Coordinator::new(cfg(100), 2, 0);
        c.tick(0);
        assert!(c.ack(1, 0, 0).is_empty());
        assert!(
            c.ack(1, 0, 0).is_empty(),
            "subtask 0 twice is one subtask of 2"
        );
        assert_eq!(c.pending(), vec![1]);
        assert_eq!(c.ack(1, 0, 1), vec![Action::Complete { id: 1 }]);
    }

    #[test]
    fn min_pause_counts_from_the_last_completion() {
        let mut c = Coordinator::new(
            CheckpointConfig {
                min_pause: Duration::from_millis(300),
                ..cfg(100)
            },
            1,
            0,
        );
        c.tick(0);
        c.ack(1, 0, 0);
        c.persisted(1, 250);
        assert!(trigger_ids(&c.tick(400)).is_empty());
        assert_eq!(trigger_ids(&c.tick(550)), vec![2]);
    }

    #[test]
    fn expiry_fails_and_too_many_failures_fail_the_job() {
        let mut c = Coordinator::new(cfg(100), 2, 41);
        assert_eq!(
            trigger_ids(&c.tick(0)),
            vec![42],
            "ids continue after a restore"
        );
        c.ack(42, 0, 0);
        let a = c.tick(500);
        assert!(
            matches!(&a[0], Action::Abort { id: 42, reason, counted: true } if reason.contains("expired"))
        );
        assert!(
            !a.iter().any(|a| matches!(a, Action::FailJob { .. })),
            "1 tolerated"
        );
        assert_eq!(trigger_ids(&a), vec![43]);
        let a = c.decline(43, "task failed".into());
        assert!(
            a.iter().any(|a| matches!(a, Action::FailJob { .. })),
            "{a:?}"
        );
    }

    #[test]
    fn a_completion_resets_the_failure_count_and_subsumes_older_checkpoints() {
        let mut c = Coordinator::new(
            CheckpointConfig {
                max_concurrent: 2,
                ..cfg(100)
            },
            1,
            0,
        );
        c.tick(0);
        c.tick(100);
        assert_eq!(c.ack(2, 0, 0), vec![Action::Complete { id: 2 }]);
        assert_eq!(c.pending(), vec![1], "subsumed only once 2 is stored");
        assert_eq!(
            c.persisted(2, 121),
            vec![Action::Abort {
                id: 1,
                reason: "subsumed by checkpoint 2".into(),
                counted: false,
            }]
        );
        assert!(c.pending().is_empty());
    }

    #[test]
    fn savepoints_wait_for_pending_checkpoints_and_do_not_count_as_failures() {
        let mut c = Coordinator::new(cfg(1_000), 1, 0);
        c.tick(0);
        c.request_savepoint();
        assert!(trigger_ids(&c.tick(10)).is_empty());
        c.ack(1, 0, 0);
        c.persisted(1, 20);
        let a = c.tick(30);
        assert_eq!(
            a,
            vec![Action::Trigger {
                id: 2,
                kind: CheckpointKind::Savepoint,
                timestamp_ms: 30
            }]
        );
        let a = c.decline(2, "no".into());
        assert_eq!(a.len(), 1, "a failed savepoint does not fail the job");
    }

    #[test]
    fn a_slow_aligned_checkpoint_is_retried_unaligned_without_counting_a_failure() {
        let mut c = Coordinator::new(
            CheckpointConfig {
                aligned_timeout: Duration::from_millis(50),
                tolerable_failures: 0,
                ..cfg(100)
            },
            1,
            0,
        );
        c.tick(0);
        let a = c.tick(60);
        assert!(
            matches!(&a[0], Action::Abort { id: 1, reason, counted: false } if reason.contains("unaligned"))
        );
        assert_eq!(
            a[1],
            Action::Trigger {
                id: 2,
                kind: CheckpointKind::Unaligned,
                timestamp_ms: 60
            }
        );
        assert!(!a.iter().any(|a| matches!(a, Action::FailJob { .. })));
        assert_eq!(c.ack(2, 0, 0), vec![Action::Complete { id: 2 }]);
    }

    #[test]
    fn no_trigger_after_stop_or_without_an_interval() {
        let mut c = Coordinator::new(CheckpointConfig::default(), 1, 0);
        assert!(c.tick(10_000).is_empty());
        let mut c = Coordinator::new(cfg(100), 1, 0);
        c.stop_triggering();
        assert!(c.tick(0).is_empty());
        assert!(CheckpointConfig {
            max_concurrent: 0,
            ..cfg(100)
        }
        .validate()
        .is_err());
    }

    #[test]
    fn by_default_the_first_counted_failure_fails_the_job() {
        let mut c = Coordinator::new(
            CheckpointConfig {
                interval: Some(Duration::from_millis(100)),
                timeout: Duration::from_millis(500),
                ..CheckpointConfig::default()
            },
            1,
            0,
        );
        assert_eq!(c.config().tolerable_failures, 0, "Flink's default");
        c.tick(0);
        let a = c.tick(500);
        assert!(
            matches!(&a[..], [Action::Abort { id: 1, counted: true, .. }, Action::FailJob { reason }]
                if reason.contains("expired") && reason.contains("tolerates 0")),
            "{a:?}"
        );
    }

    #[test]
    fn a_checkpoint_that_could_not_be_stored_counts_as_a_failure_and_does_not_reset_the_count() {
        let mut c = Coordinator::new(cfg(100), 1, 0);
        c.tick(0);
        assert_eq!(c.decline(1, "declined".into()).len(), 1, "1 tolerated");
        assert_eq!(c.consecutive_failures(), 1);
        c.tick(100);
        assert_eq!(c.ack(2, 0, 0), vec![Action::Complete { id: 2 }]);
        let a = c.persist_failed(2, "disk full".into());
        assert!(
            matches!(&a[..], [Action::Abort { id: 2, counted: true, .. }, Action::FailJob { reason }]
                if reason.contains("disk full")),
            "{a:?}"
        );
    }
}
