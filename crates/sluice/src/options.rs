//! The flags of a run, as clap arguments: [`EnvArgs`] (Flink's job settings: parallelism,
//! buffers, metrics, checkpoints, restarts, restore, fault injection), [`RestArgs`] (the embedded
//! REST API) and [`RunOptions`], both together, for a user's own program. `sluice run` flattens
//! the same structs, so a built-in job and a user's job take the same flags.

use std::time::Duration;

use clap::{Args, Parser};
use sluice_datastream::{EnvConfig, StreamEnv};

use crate::bounds::{between, MAX_MS};
use crate::SluiceError;

/// Highest `-p`: Flink's upper bound on max parallelism (32,768). A job's subtasks and
/// exchange buffers are capped again before launch (`sluice_datastream::launch_checks`).
pub const MAX_PARALLELISM: usize = 1 << 15;
/// Most credits per channel or gate a flag takes (Flink's defaults are 2 and 8).
pub const MAX_CREDITS: usize = 1024;

/// `--metrics-interval` and `--metrics-window` by default, seconds (Flink's 5 s updates and
/// 60 s meters).
const DEFAULT_METRICS: (f64, f64) = (5.0, 60.0);

/// Settings every job takes (Flink's names in brackets).
// The fields' docs are the `--help` text, where `<n>` is a placeholder, not HTML.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Args, Debug, Clone)]
pub struct EnvArgs {
    /// Default operator parallelism [parallelism.default].
    #[arg(short = 'p', long, default_value_t = 2, value_parser = between(1usize, MAX_PARALLELISM, ""))]
    pub parallelism: usize,
    /// Key groups [pipeline.max-parallelism]; default derived from the parallelism.
    #[arg(long)]
    pub max_parallelism: Option<u32>,
    /// Buffer timeout in ms; 0 flushes every record [execution.buffer-timeout.interval].
    #[arg(long, default_value_t = 100, value_parser = between(0, MAX_MS, " ms"))]
    pub buffer_timeout_ms: u64,
    /// Network buffer size in bytes [taskmanager.memory.segment-size].
    #[arg(long, default_value_t = 32 * 1024, value_parser = between(64usize, 64 << 20, " bytes"))]
    pub buffer_size: usize,
    /// Exclusive credits per channel [taskmanager.network.memory.buffers-per-channel].
    #[arg(long, default_value_t = 2, value_parser = between(0usize, MAX_CREDITS, ""))]
    pub exclusive_credits: usize,
    /// Floating credits per input gate [taskmanager.network.memory.floating-buffers-per-gate].
    #[arg(long, default_value_t = 8, value_parser = between(0usize, MAX_CREDITS, ""))]
    pub floating_credits: usize,
    /// Buffers a task may ship without credit while emitting one input record's outputs, per
    /// output gate [taskmanager.network.memory.max-overdraft-buffers-per-gate].
    #[arg(long, default_value_t = 5, value_parser = between(0usize, MAX_CREDITS, ""))]
    pub max_overdraft_buffers_per_gate: usize,
    /// Buffer debloating: size buffers so the data in flight takes --buffer-debloat-target to
    /// consume [taskmanager.network.memory.buffer-debloat.enabled].
    #[arg(long)]
    pub buffer_debloat: bool,
    /// Time the data in flight should take to consume, ms [taskmanager.network.memory.buffer-debloat.target].
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = between(1, MAX_MS, " ms"))]
    pub buffer_debloat_target: u64,
    /// How often buffer sizes are recalculated, ms [taskmanager.network.memory.buffer-debloat.period].
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = between(1, MAX_MS, " ms"))]
    pub buffer_debloat_period: u64,
    /// Periods the size is averaged over [taskmanager.network.memory.buffer-debloat.samples].
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = between(1u32, 10_000, ""))]
    pub buffer_debloat_samples: u32,
    /// Smallest change of the buffer size announced, percent [taskmanager.network.memory.buffer-debloat.threshold-percentages].
    #[arg(long, value_name = "PCT", default_value_t = 25, value_parser = between(0u32, 100, " %"))]
    pub buffer_debloat_threshold_percentages: u32,
    /// Smallest debloated buffer, bytes [taskmanager.memory.min-segment-size].
    #[arg(long, value_name = "BYTES", default_value_t = 256, value_parser = between(1usize, 64 << 20, " bytes"))]
    pub min_segment_size: usize,
    /// Buffer size a debloating gate starts with, bytes [taskmanager.memory.starting-segment-size].
    #[arg(long, value_name = "BYTES", default_value_t = 1024, value_parser = between(1usize, 64 << 20, " bytes"))]
    pub starting_segment_size: usize,
    /// Disable operator chaining [pipeline.operator-chaining.enabled=false].
    #[arg(long)]
    pub disable_chaining: bool,
    /// Seconds between metric updates (Flink: 5), 0.001 to 3600.
    #[arg(long, default_value_t = DEFAULT_METRICS.0, value_parser = between(0.001, 3600.0, " seconds"))]
    pub metrics_interval: f64,
    /// Length of the metrics' moving window in seconds (Flink: 60); a multiple of the interval,
    /// at most 1,000 intervals.
    #[arg(long, default_value_t = DEFAULT_METRICS.1, value_parser = between(0.001, 3_600_000.0, " seconds"))]
    pub metrics_window: f64,
    /// Do not sample the time spent per chained operator (to measure its overhead).
    #[arg(long)]
    pub no_operator_timing: bool,
    /// The OS scheduling policy of task threads: `normal` (the process's policy; a woken task
    /// may run at once when every core is busy) or `batch` (SCHED_BATCH: a woken task does not
    /// preempt a running one, so a bottleneck subtask keeps its core; throughput).
    #[arg(long, value_name = "POLICY", default_value = "normal", value_parser = ["batch", "normal"])]
    pub task_scheduling: String,
    /// Take a checkpoint every MS milliseconds [execution.checkpointing.interval].
    #[arg(long, value_name = "MS", value_parser = between(10, MAX_MS, " ms"))]
    pub checkpoint_interval: Option<u64>,
    /// Checkpoint timeout in ms [execution.checkpointing.timeout] (10 min).
    #[arg(long, value_name = "MS", default_value_t = 600_000, value_parser = between(1, MAX_MS, " ms"))]
    pub checkpoint_timeout: u64,
    /// Unaligned checkpoints: barriers overtake the buffers queued before them, which are
    /// stored with the checkpoint [execution.checkpointing.unaligned.enabled].
    #[arg(long)]
    pub unaligned_checkpoints: bool,
    /// Failed checkpoints in a row tolerated before the job fails; 0 = the first failure fails it [execution.checkpointing.tolerable-failed-checkpoints].
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        alias = "tolerable-checkpoint-failures"
    )]
    pub tolerable_failed_checkpoints: u32,
    /// Where checkpoints are written (DIR/<job id>/chk-<n>/ with a _metadata manifest; checked writable at start): a directory, or s3://BUCKET/PREFIX on an S3-compatible store (settings from AWS_* variables: AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, keys, region); by default sluice-<uid>/checkpoints in the temporary directory, private to the user (mode 0700; refused if it is a link, another user's or open to others) [execution.checkpointing.dir].
    #[arg(long, value_name = "DIR|s3://BUCKET/PREFIX")]
    pub checkpoint_dir: Option<std::path::PathBuf>,
    /// none | fixed-delay:<attempts>:<delay ms> | failure-rate:<max>:<interval ms>:<delay ms> [restart-strategy.type].
    #[arg(long, value_name = "STRATEGY", value_parser = sluice_runtime::checkpoint::RestartStrategy::parse)]
    pub restart: Option<sluice_runtime::checkpoint::RestartStrategy>,
    /// Start from a savepoint or checkpoint (chk-<n>) directory, or a job's checkpoint directory (its newest complete chk-<n>), at any parallelism [execution.state-recovery.path].
    #[arg(long, value_name = "DIR", conflicts_with = "from_checkpoint")]
    pub from_savepoint: Option<std::path::PathBuf>,
    /// Restoring, drop checkpoint state that no operator of this job takes instead of refusing to start [execution.state-recovery.ignore-unclaimed-state].
    #[arg(long)]
    pub allow_non_restored_state: bool,
    /// Start from a job's checkpoint directory (DIR/<job id> of --checkpoint-dir: its newest complete chk-<n>) or one chk-<n> directory [execution.state-recovery.path].
    #[arg(long, value_name = "DIR")]
    pub from_checkpoint: Option<std::path::PathBuf>,
    /// Fail subtask SUBTASK of the vertex whose name contains VERTEX after it received N records: VERTEX:SUBTASK:N. Repeat for one failure per attempt.
    #[arg(long, value_name = "VERTEX:SUBTASK:N", value_parser = parse_fault)]
    pub inject_failure: Vec<sluice_datastream::FaultSpec>,
}

/// `VERTEX:SUBTASK:N` → a fault (the vertex name may itself contain colons).
pub fn parse_fault(s: &str) -> Result<sluice_datastream::FaultSpec, String> {
    let mut parts = s.rsplitn(3, ':');
    let (Some(n), Some(sub), Some(vertex)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("--inject-failure '{s}': expected VERTEX:SUBTASK:N"));
    };
    Ok(sluice_datastream::FaultSpec {
        vertex: vertex.to_string(),
        subtask: sub.parse().map_err(|_| {
            format!("--inject-failure '{s}': SUBTASK must be a number, got '{sub}'")
        })?,
        after_records: n
            .parse()
            .map_err(|_| format!("--inject-failure '{s}': N must be a number, got '{n}'"))?,
    })
}

impl EnvArgs {
    /// `(metrics_interval, metrics_window)` when neither is given.
    pub fn default_metrics() -> (f64, f64) {
        DEFAULT_METRICS
    }

    /// The job's configuration, with the checks across flags (clap bounded each flag on its
    /// own) and the runtime's own validation: a bad setting is refused before anything starts.
    pub fn to_config(&self) -> Result<EnvConfig, SluiceError> {
        let a = self;
        let interval = a.metrics_interval;
        if !(interval > 0.0 && a.metrics_window >= interval) {
            return Err(SluiceError::Config(format!(
                "--metrics-window ({}) must be at least --metrics-interval ({interval})",
                a.metrics_window,
            )));
        }
        let slots = (a.metrics_window / interval).round();
        let max_slots = sluice_runtime::job_master::MAX_METRICS_WINDOW_SLOTS;
        if slots > max_slots as f64 {
            return Err(SluiceError::Config(format!(
                "--metrics-window ({}) may be at most {max_slots} times --metrics-interval \
                 ({interval}), got {slots} times",
                a.metrics_window,
            )));
        }
        let update_interval = Duration::try_from_secs_f64(interval)
            .map_err(|e| SluiceError::Config(format!("--metrics-interval {interval}: {e}")))?;
        let metrics = sluice_runtime::telemetry::MetricsConfig {
            update_interval,
            window_slots: (slots as usize).max(1),
        };
        let cfg = EnvConfig {
            metrics,
            operator_timing: !a.no_operator_timing,
            task_scheduling: a.task_scheduling.parse().map_err(SluiceError::Config)?,
            parallelism: a.parallelism,
            max_parallelism: a.max_parallelism,
            buffer_timeout: Duration::from_millis(a.buffer_timeout_ms),
            buffer_bytes: a.buffer_size,
            exclusive_credits: a.exclusive_credits,
            floating_credits: a.floating_credits,
            max_overdraft_buffers: a.max_overdraft_buffers_per_gate,
            buffer_debloat: sluice_datastream::DebloatConfig {
                enabled: a.buffer_debloat,
                target: Duration::from_millis(a.buffer_debloat_target),
                period: Duration::from_millis(a.buffer_debloat_period),
                samples: a.buffer_debloat_samples,
                threshold_percentages: a.buffer_debloat_threshold_percentages,
                min_bytes: a.min_segment_size,
                starting_bytes: a.starting_segment_size,
            },
            chaining: !a.disable_chaining,
            checkpoints: sluice_runtime::checkpoint::CheckpointConfig {
                interval: a.checkpoint_interval.map(Duration::from_millis),
                timeout: Duration::from_millis(a.checkpoint_timeout),
                tolerable_failures: a.tolerable_failed_checkpoints,
                unaligned: a.unaligned_checkpoints,
                ..Default::default()
            },
            checkpoint_dir: a.checkpoint_dir.clone(),
            restart: a.restart.clone(),
            restore_from: a
                .from_savepoint
                .clone()
                .or_else(|| a.from_checkpoint.clone()),
            allow_non_restored_state: a.allow_non_restored_state,
            faults: a.inject_failure.clone(),
            ..EnvConfig::default()
        };
        cfg.validate().map_err(SluiceError::Config)?;
        Ok(cfg)
    }

    /// A fresh environment with this configuration.
    pub fn stream_env(&self) -> Result<StreamEnv, SluiceError> {
        Ok(StreamEnv::with_config(self.to_config()?))
    }
}

/// The embedded REST API's flags (Flink's option names in brackets).
// The fields' docs are the `--help` text, where `<uid>` is a placeholder, not HTML.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Args, Debug, Clone)]
pub struct RestArgs {
    /// Port of the embedded REST API (Flink's paths; 0 picks a free port) [rest.port].
    #[arg(long, global = true, default_value_t = 8081)]
    pub rest_port: u16,
    /// Address the REST API listens on [rest.bind-address]; anything but loopback needs
    /// --rest-token.
    #[arg(long, global = true, default_value = "127.0.0.1", value_name = "IP")]
    pub rest_address: std::net::IpAddr,
    /// Bearer token that cancel, stop and savepoint requests must carry.
    #[arg(long, global = true, env = "SLUICE_REST_TOKEN", hide_env_values = true)]
    pub rest_token: Option<String>,
    /// A host name (NAME or NAME:PORT) the REST API answers to besides its address and
    /// localhost, e.g. behind a proxy; repeat for several. Other Host headers are refused
    /// (DNS rebinding).
    #[arg(long, global = true, value_name = "NAME")]
    pub rest_allowed_host: Vec<String>,
    /// The only directory REST clients may have savepoints written under, and their default
    /// target [state.savepoints.dir]; default: sluice-<uid>/savepoints in the temporary directory.
    #[arg(long, global = true, value_name = "DIR")]
    pub savepoint_dir: Option<std::path::PathBuf>,
    /// Do not start the REST API.
    #[arg(long, global = true, conflicts_with = "keep_rest")]
    pub no_rest: bool,
    /// Keep the REST API up after a bounded job ends (until Ctrl-C), so its final metrics can be read.
    #[arg(long, global = true)]
    pub keep_rest: bool,
}

/// Everything [`crate::run`] takes from the command line: the job's settings and the REST
/// API's. A user's program parses them with [`RunOptions::from_args`] (`--help` lists them).
#[derive(Parser, Debug, Clone)]
#[command(about = "A Sluice job: Flink's settings as flags, the REST API and dashboard built in")]
pub struct RunOptions {
    /// The job's settings (`-p`, checkpoints, restarts, metrics, …).
    #[command(flatten)]
    pub env: EnvArgs,
    /// The REST API's settings.
    #[command(flatten)]
    pub rest: RestArgs,
    /// `--processes`, `--process-index`, `--peers`, `--job-id`, `--autopilot` (see
    /// [`crate::launch`]; [`crate::run`] runs the job in this process and ignores them).
    #[command(flatten)]
    pub processes: crate::processes::ProcessArgs,
    /// Print nothing but errors (no start and end lines on stderr).
    #[arg(long, global = true)]
    pub quiet: bool,
}

impl RunOptions {
    /// Parses the process's arguments; prints the usage and exits on `--help` or a bad flag
    /// (naming it), as a command-line program does.
    pub fn from_args() -> RunOptions {
        RunOptions::parse()
    }

    /// Parses `args` (the first is the program name); a bad flag is an error naming it.
    pub fn try_from_args<I, T>(args: I) -> Result<RunOptions, SluiceError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        RunOptions::try_parse_from(args).map_err(|e| SluiceError::Flags(e.to_string()))
    }

    /// A fresh environment configured by the flags: build the job on it, then [`crate::run`].
    pub fn stream_env(&self) -> Result<StreamEnv, SluiceError> {
        self.env.stream_env()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_the_environment_config() {
        let o = RunOptions::try_from_args([
            "job",
            "-p",
            "3",
            "--checkpoint-interval",
            "250",
            "--rest-port",
            "0",
            "--restart",
            "fixed-delay:5:0",
        ])
        .unwrap();
        let cfg = o.env.to_config().unwrap();
        assert_eq!(cfg.parallelism, 3);
        assert_eq!(
            cfg.checkpoints.interval,
            Some(std::time::Duration::from_millis(250))
        );
        assert_eq!(o.rest.rest_port, 0);
        assert!(cfg.restart.is_some());
    }

    #[test]
    fn bad_flags_are_refused_naming_them() {
        let e = RunOptions::try_from_args(["job", "-p", "0"]).unwrap_err();
        assert!(e.to_string().contains("--parallelism"), "{e}");
        let o =
            RunOptions::try_from_args(["job", "--metrics-interval", "5", "--metrics-window", "1"])
                .unwrap();
        let e = o.env.to_config().unwrap_err();
        assert!(e.to_string().contains("--metrics-window"), "{e}");
    }
}
