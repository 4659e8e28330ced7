//! Checkpointing, restarts and restores in the DataStream API.

use std::path::PathBuf;
use std::time::Duration;

use sluice_runtime::checkpoint::{CheckpointConfig, RestartStrategy};

use crate::config::FaultSpec;
use crate::StreamEnv;

impl StreamEnv {
    /// Takes a checkpoint every `interval` (Flink's `enableCheckpointing`): barriers flow from
    /// the sources, every operator snapshots its state, and a failed job restarts from the
    /// latest completed checkpoint (fixed delay, unlimited attempts, unless
    /// [`set_restart_strategy`](Self::set_restart_strategy) says otherwise).
    pub fn enable_checkpointing(&self, interval: Duration) -> &Self {
        self.inner.borrow_mut().config.checkpoints.interval = Some(interval);
        self
    }

    /// Changes the other checkpoint settings (timeout, min pause, max concurrent, tolerable
    /// failures, unaligned, aligned timeout, retained).
    pub fn configure_checkpoints(&self, f: impl FnOnce(&mut CheckpointConfig)) -> &Self {
        f(&mut self.inner.borrow_mut().config.checkpoints);
        self
    }

    /// Where completed checkpoints are written: `<dir>/<job id>/chk-<id>` directories with a
    /// `_metadata` manifest, stored durably (fsynced) before a checkpoint counts as complete.
    /// A job that checkpoints is refused before it starts when the directory cannot be created
    /// or written. Default: a temporary directory, removed when the job finishes.
    pub fn set_checkpoint_dir(&self, dir: impl Into<PathBuf>) -> &Self {
        self.inner.borrow_mut().config.checkpoint_dir = Some(dir.into());
        self
    }

    /// What the job does when a task fails: give up, or restart from the latest completed
    /// checkpoint (`restart-strategy.type`). Unset: fixed delay (unlimited attempts, 1 s) when
    /// checkpointing, no restart otherwise, as in Flink.
    pub fn set_restart_strategy(&self, strategy: RestartStrategy) -> &Self {
        self.inner.borrow_mut().config.restart = Some(strategy);
        self
    }

    /// Starts the job from a checkpoint or savepoint directory (a `chk-<id>` directory or a
    /// savepoint), or from a job's checkpoint directory (`<checkpoint dir>/<job id>`, holding
    /// `chk-<id>` directories): then the newest complete one (with a valid `_metadata`) is
    /// taken. State files are verified against the manifest's sizes and CRC32s. The parallelism may differ from the run that wrote it: keyed state is split
    /// by key group, source positions are reassigned (the max parallelism must stay the same).
    pub fn restore_from(&self, dir: impl Into<PathBuf>) -> &Self {
        self.inner.borrow_mut().config.restore_from = Some(dir.into());
        self
    }

    /// Restoring, drops checkpoint state that no operator of this job takes, instead of
    /// refusing to start (Flink's `allowNonRestoredState`). Off by default.
    pub fn allow_non_restored_state(&self, allow: bool) -> &Self {
        self.inner.borrow_mut().config.allow_non_restored_state = allow;
        self
    }

    /// Fails tasks on purpose, one fault per attempt (for tests and demos of recovery).
    pub fn inject_faults(&self, faults: Vec<FaultSpec>) -> &Self {
        self.inner.borrow_mut().config.faults = faults;
        self
    }
}
