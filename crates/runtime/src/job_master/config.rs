//! A job's settings (what a `StreamEnv` configures), with Flink's names and defaults.

use std::time::Duration;

use sluice_plan::partition::UPPER_BOUND_MAX_PARALLELISM;

/// Shortest metrics update interval: a sampler thread reads every subtask's counters once per
/// interval, so below a millisecond it would be busier than the job.
pub const MIN_METRICS_INTERVAL: Duration = Duration::from_millis(1);
/// Longest metrics update interval (an hour; Flink's default is 5 s).
pub const MAX_METRICS_INTERVAL: Duration = Duration::from_secs(3600);
/// Most update intervals in one metrics window. Every subtask keeps a count history of this
/// length per meter (Flink's default window is 12 slots); 1,000 keeps that under ~100 KB per
/// subtask.
pub const MAX_METRICS_WINDOW_SLOTS: usize = 1000;

/// Settings of a job: planning (parallelism, chaining), the exchange, metrics, state,
/// checkpoints and recovery. Validated before a job starts; the job master keeps them for the
/// job's life (the REST API shows them).
#[derive(Clone, Debug, PartialEq)]
pub struct EnvConfig {
    /// `pipeline.name`: the name shown in results, logs and the REST API.
    pub job_name: String,
    /// `parallelism.default`; Flink's local environments default to the number of cores.
    pub parallelism: usize,
    /// `pipeline.max-parallelism`; `None` = derived per operator from its parallelism.
    pub max_parallelism: Option<u32>,
    /// `execution.buffer-timeout.interval` (100 ms); zero flushes after every record.
    pub buffer_timeout: Duration,
    /// `taskmanager.memory.segment-size` (32 KiB).
    pub buffer_bytes: usize,
    /// `taskmanager.network.memory.buffers-per-channel` (2).
    pub exclusive_credits: usize,
    /// `taskmanager.network.memory.floating-buffers-per-gate` (8).
    pub floating_credits: usize,
    /// `taskmanager.network.memory.max-overdraft-buffers-per-gate` (5).
    pub max_overdraft_buffers: usize,
    /// `taskmanager.network.memory.buffer-debloat.*` and `taskmanager.memory.min-segment-size`
    /// (off by default, as in Flink).
    pub buffer_debloat: sluice_channel::DebloatConfig,
    /// `pipeline.operator-chaining.enabled` (true).
    pub chaining: bool,
    /// Metric update interval and window (Flink: 5 s over 60 s).
    pub metrics: crate::telemetry::MetricsConfig,
    /// Sample the time spent in each chained operator (one record in 256 is timed).
    pub operator_timing: bool,
    /// The OS scheduling policy of task threads (`normal` by default; `batch`: no wake-up
    /// preemption among them; see [`crate::sched`]).
    pub task_scheduling: crate::sched::TaskScheduling,
    /// Where keyed state lives (`state.backend.type`): in memory (default) or in an embedded LSM
    /// store. Read when a stateful keyed operator is added to the job.
    pub state_backend: crate::state::StateBackendKind,
    /// Checkpointing (off unless an interval is set): `execution.checkpointing.*`.
    pub checkpoints: crate::checkpoint::CheckpointConfig,
    /// Where completed checkpoints go (`execution.checkpointing.dir`); when unset,
    /// `<temp dir>/sluice-<uid>/checkpoints` (a private per-user root, see
    /// [`crate::private_dir`]), discarded when the job finishes.
    pub checkpoint_dir: Option<std::path::PathBuf>,
    /// `restart-strategy.type`; when unset: fixed delay (unlimited attempts, 1 s) with
    /// checkpoints, no restart without (Flink's defaults).
    pub restart: Option<crate::checkpoint::RestartStrategy>,
    /// Start from this checkpoint or savepoint directory (`execution.state-recovery.path`), or
    /// from the newest complete `chk-<n>` of a job's checkpoint directory.
    pub restore_from: Option<std::path::PathBuf>,
    /// Restoring, drop checkpoint state that no operator of the job takes instead of refusing
    /// to start (Flink's `--allowNonRestoredState`, `execution.state-recovery.ignore-unclaimed-state`).
    pub allow_non_restored_state: bool,
    /// Injected failures, one per attempt (attempt k fails as `faults[k]` says).
    pub faults: Vec<FaultSpec>,
    /// Run under this job id instead of a fresh one: a live plan change restores the same job
    /// on a new job graph, and REST clients keep its id.
    pub job_id: Option<sluice_types::JobId>,
}

/// Fail subtask `subtask` of the vertex whose name contains `vertex` after it received
/// `after_records` records (for tests and demos of recovery).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    /// A substring of the vertex's name.
    pub vertex: String,
    /// Which subtask fails, from 0.
    pub subtask: usize,
    /// Records it receives before failing.
    pub after_records: u64,
}

impl EnvConfig {
    /// The restart strategy in force (see [`EnvConfig::restart`]).
    pub fn restart_strategy(&self) -> crate::checkpoint::RestartStrategy {
        use crate::checkpoint::RestartStrategy;
        self.restart
            .clone()
            .unwrap_or(if self.checkpoints.interval.is_some() {
                RestartStrategy::FixedDelay {
                    attempts: u32::MAX,
                    delay: Duration::from_secs(1),
                }
            } else {
                RestartStrategy::NoRestart
            })
    }
}

impl Default for EnvConfig {
    fn default() -> Self {
        EnvConfig {
            job_name: "Sluice Job".into(),
            parallelism: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            max_parallelism: None,
            buffer_timeout: Duration::from_millis(100),
            buffer_bytes: 32 * 1024,
            exclusive_credits: 2,
            floating_credits: 8,
            max_overdraft_buffers: 5,
            buffer_debloat: sluice_channel::DebloatConfig::default(),
            chaining: true,
            metrics: crate::telemetry::MetricsConfig::default(),
            operator_timing: true,
            task_scheduling: crate::sched::TaskScheduling::Normal,
            state_backend: crate::state::StateBackendKind::Memory,
            checkpoints: crate::checkpoint::CheckpointConfig::default(),
            checkpoint_dir: None,
            restart: None,
            restore_from: None,
            allow_non_restored_state: false,
            faults: Vec::new(),
            job_id: None,
        }
    }
}

impl EnvConfig {
    /// Checks every setting; the error names the setting and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |m: String| Err(m);
        if self.parallelism == 0 || self.parallelism > UPPER_BOUND_MAX_PARALLELISM as usize {
            return bad(format!(
                "parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}, got {}",
                self.parallelism
            ));
        }
        if let Some(m) = self.max_parallelism {
            if m == 0 || m > UPPER_BOUND_MAX_PARALLELISM {
                return bad(format!(
                    "max parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}, got {m}"
                ));
            }
        }
        if self.buffer_bytes == 0 {
            return bad("buffer size must be at least 1 byte, got 0".into());
        }
        let m = &self.metrics;
        if !(MIN_METRICS_INTERVAL..=MAX_METRICS_INTERVAL).contains(&m.update_interval) {
            return bad(format!(
                "metrics: the update interval must be between {MIN_METRICS_INTERVAL:?} and {MAX_METRICS_INTERVAL:?}, got {:?}",
                m.update_interval
            ));
        }
        if !(1..=MAX_METRICS_WINDOW_SLOTS).contains(&m.window_slots) {
            return bad(format!(
                "metrics: the window must be 1 to {MAX_METRICS_WINDOW_SLOTS} update intervals long, got {}",
                m.window_slots
            ));
        }
        if let Err(e) = self.checkpoints.validate() {
            return bad(e);
        }
        if let Some(p) = &self.restore_from {
            // A checkpoint or savepoint directory, or a job's checkpoint directory (its newest
            // complete chk-<n> is taken).
            if let Err(e) = crate::checkpoint::storage::resolve_restore_dir(p) {
                return bad(e.to_string());
            }
        }
        if self.exclusive_credits.saturating_add(self.floating_credits) == 0 {
            return bad("credits: buffers per channel + floating buffers per gate must be at least 1, got 0 + 0".into());
        }
        if self.buffer_debloat.enabled {
            self.buffer_debloat.validate(self.buffer_bytes)?;
        }
        Ok(())
    }

    /// The settings the planner reads.
    pub fn plan_config(&self) -> sluice_plan::PlanConfig {
        sluice_plan::PlanConfig {
            parallelism: self.parallelism,
            max_parallelism: self.max_parallelism,
            chaining: self.chaining,
        }
    }

    /// The exchange settings of every input gate and channel.
    pub fn exchange(&self) -> sluice_channel::ExchangeConfig {
        sluice_channel::ExchangeConfig {
            buffer_bytes: self.buffer_bytes,
            exclusive_credits: self.exclusive_credits,
            floating_credits: self.floating_credits,
            max_overdraft_buffers: self.max_overdraft_buffers,
            debloat: self.buffer_debloat.clone(),
        }
    }
}
