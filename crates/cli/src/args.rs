//! Command-line arguments. Job flags are shared by `run` and `plan`, so a plan shows exactly
//! what the same flags would run.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::bounds::{between, MAX_MS};

/// Highest `-p`: Flink's upper bound on max parallelism (32,768). A job's subtasks and
/// exchange buffers are capped again before launch (`sluice_graph::launch_checks`).
pub const MAX_PARALLELISM: usize = 1 << 15;
/// Most credits per channel or gate a flag takes (Flink's defaults are 2 and 8).
pub const MAX_CREDITS: usize = 1024;

#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    version,
    about = "Sluice: a stream processing engine on Flink's model"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a built-in job on this machine (an embedded cluster: one thread per subtask).
    Run(RunArgs),
    /// Print the plan of a built-in job, for the same flags `run` takes.
    Plan(PlanArgs),
    /// Apply a plan fix to a built-in job and show the plan diff (optionally verify the results).
    Fix(FixArgs),
    /// Where Flink places keys: CSV `key,key_group,subtask` (keys from arguments or stdin lines).
    KeyGroup(KeyGroupArgs),
    /// Benchmark the reference jobs (each in a fresh process) and print records/s, CPU and memory.
    Bench(BenchArgs),
    /// Live per-subtask busy / backpressure / idle of a running job, from its Flink-compatible REST API.
    Top(crate::top::TopArgs),
    /// Find a running job's bottleneck, name the cause and propose a fix (Sluice or Flink REST API).
    Doctor(crate::doctor_cmd::DoctorArgs),
    /// The doctor end to end on the skew job (~15 s): live table, verdict, fix, proof.
    Demo(crate::demo::DemoArgs),
    /// Nexmark: run a query on the deterministic generator, export its events, or benchmark all queries.
    Nexmark(crate::nexmark_cmd::NexmarkArgs),
    /// Take a savepoint of a running job (optionally stopping it) through its REST API.
    Savepoint(crate::savepoint_cmd::SavepointArgs),
    /// Write a workload's records to Kafka (`produce skew --records N --to kafka://HOST:PORT/TOPIC?partitions=P`).
    Produce(crate::produce::ProduceArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(subcommand)]
    pub job: JobCmd,
    /// Never draw the progress bar (it is drawn only on a terminal anyway).
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Print the run's figures as one JSON line on stdout (used by `sluice bench`).
    #[arg(long, global = true)]
    pub stats_json: bool,
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
    /// target [state.savepoints.dir]; default: sluice-savepoints in the temporary directory.
    #[arg(long, global = true, value_name = "DIR")]
    pub savepoint_dir: Option<PathBuf>,
    /// Do not start the REST API.
    #[arg(long, global = true, conflicts_with = "keep_rest")]
    pub no_rest: bool,
    /// Keep the REST API up after a bounded job ends (until Ctrl-C), so its final metrics can be read.
    #[arg(long, global = true)]
    pub keep_rest: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum PlanFormatArg {
    /// Flink's getExecutionPlan() stream-graph JSON.
    Json,
    /// Flink's REST /jobs/:id/plan JSON of the chained job graph.
    JobGraph,
    Text,
    Dot,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(subcommand)]
    pub job: JobCmd,
    #[arg(long, global = true, value_enum, default_value = "json")]
    pub format: PlanFormatArg,
}

#[derive(Subcommand, Debug, Clone)]
pub enum JobCmd {
    /// generator -> map -> discard: the engine's per-record overhead.
    Passthrough(PassthroughArgs),
    /// The skew workload: generator -> map -> key_by -> running sum, with a hot key.
    Skew(SkewArgs),
    /// A doctor scenario: one job per bottleneck cause (see `sluice_jobs::scenarios`).
    Scenario(ScenarioArgs),
}

impl JobCmd {
    /// The settings every job takes.
    pub fn env(&self) -> &EnvArgs {
        match self {
            JobCmd::Passthrough(a) => &a.env,
            JobCmd::Skew(a) => &a.env,
            JobCmd::Scenario(a) => &a.env,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ScenarioArgs {
    /// skew, under-provisioned, blocking, state-heavy, slow-sink, stalls, source-ceiling,
    /// input-limited.
    pub name: String,
    /// Records to generate (default: effectively unbounded, for live diagnosis).
    #[arg(long, default_value_t = sluice_jobs::scenarios::UNBOUNDED)]
    pub records: u64,
    #[command(flatten)]
    pub env: EnvArgs,
}

/// Settings every job takes (Flink's names in brackets).
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
    /// Disable operator chaining [pipeline.operator-chaining.enabled=false].
    #[arg(long)]
    pub disable_chaining: bool,
    /// Seconds between metric updates (Flink: 5), 0.001 to 3600.
    #[arg(long, default_value_t = 5.0, value_parser = between(0.001, 3600.0, " seconds"))]
    pub metrics_interval: f64,
    /// Length of the metrics' moving window in seconds (Flink: 60); a multiple of the interval,
    /// at most 1,000 intervals.
    #[arg(long, default_value_t = 60.0, value_parser = between(0.001, 3_600_000.0, " seconds"))]
    pub metrics_window: f64,
    /// Do not sample the time spent per chained operator (to measure its overhead).
    #[arg(long)]
    pub no_operator_timing: bool,
    /// Take a checkpoint every MS milliseconds [execution.checkpointing.interval].
    #[arg(long, value_name = "MS", value_parser = between(10, MAX_MS, " ms"))]
    pub checkpoint_interval: Option<u64>,
    /// Checkpoint timeout in ms [execution.checkpointing.timeout] (10 min).
    #[arg(long, value_name = "MS", default_value_t = 600_000, value_parser = between(1, MAX_MS, " ms"))]
    pub checkpoint_timeout: u64,
    /// Failed checkpoints in a row tolerated before the job fails; 0 = the first failure fails it [execution.checkpointing.tolerable-failed-checkpoints].
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        alias = "tolerable-checkpoint-failures"
    )]
    pub tolerable_failed_checkpoints: u32,
    /// Where checkpoints are written (DIR/<job id>/chk-<n>/ with a _metadata manifest; checked writable at start); a temporary directory by default.
    #[arg(long, value_name = "DIR")]
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
    pub inject_failure: Vec<sluice_graph::FaultSpec>,
}

/// `VERTEX:SUBTASK:N` → a fault (the vertex name may itself contain colons).
pub fn parse_fault(s: &str) -> Result<sluice_graph::FaultSpec, String> {
    let mut parts = s.rsplitn(3, ':');
    let (Some(n), Some(sub), Some(vertex)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("--inject-failure '{s}': expected VERTEX:SUBTASK:N"));
    };
    Ok(sluice_graph::FaultSpec {
        vertex: vertex.to_string(),
        subtask: sub.parse().map_err(|_| {
            format!("--inject-failure '{s}': SUBTASK must be a number, got '{sub}'")
        })?,
        after_records: n
            .parse()
            .map_err(|_| format!("--inject-failure '{s}': N must be a number, got '{n}'"))?,
    })
}

#[derive(Args, Debug, Clone)]
pub struct PassthroughArgs {
    #[arg(long, default_value_t = 10_000_000)]
    pub records: u64,
    /// Put rebalance() between the source and the map (otherwise all operators chain).
    #[arg(long)]
    pub rebalance: bool,
    #[command(flatten)]
    pub env: EnvArgs,
}

#[derive(Args, Debug, Clone)]
pub struct SkewArgs {
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Share of records with the hot key 0.
    #[arg(long, default_value_t = 0.8)]
    pub hot_key_share: f64,
    /// Number of other keys (1..=keys).
    #[arg(long, default_value_t = 10_000)]
    pub keys: u64,
    /// CPU work per record in the map (multiply/xor-shift rounds).
    #[arg(long, default_value_t = 4)]
    pub map_work: u32,
    #[arg(long)]
    pub source_parallelism: Option<usize>,
    #[arg(long)]
    pub map_parallelism: Option<usize>,
    #[arg(long)]
    pub sum_parallelism: Option<usize>,
    /// Put rebalance() between the source and the map.
    #[arg(long)]
    pub rebalance_before_map: bool,
    /// Aggregate in two phases (salt → pre-aggregate on (key, salt) → combine on key): the hot-key fix.
    #[arg(long)]
    pub two_phase: bool,
    /// Salt buckets of the two-phase aggregation.
    #[arg(long, default_value_t = 16, requires = "two_phase")]
    pub buckets: u32,
    /// With --two-phase: salt only keys a heavy-hitter sketch reports hot (≥ 5% of records).
    #[arg(long, requires = "two_phase")]
    pub adaptive: bool,
    /// Write the final sum per key as CSV `key,sum`, sorted by key.
    #[arg(long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub env: EnvArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum KeyTypeArg {
    I64,
    String,
}

#[derive(Args, Debug)]
pub struct KeyGroupArgs {
    /// Key type (Java hashCode of Long or String).
    #[arg(long = "type", value_enum)]
    pub key_type: KeyTypeArg,
    /// Parallelism of the keyed operator.
    #[arg(short = 'p', long)]
    pub parallelism: u32,
    /// Max parallelism (key groups); default derived from the parallelism as Flink does.
    #[arg(long)]
    pub max_parallelism: Option<u32>,
    /// Keys; read one per line from stdin when none are given.
    pub keys: Vec<String>,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Records per run for the passthrough jobs.
    #[arg(long, default_value_t = 50_000_000)]
    pub passthrough_records: u64,
    /// Records per run for the skew job.
    #[arg(long, default_value_t = 20_000_000)]
    pub skew_records: u64,
    /// Runs per case; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    #[arg(short = 'p', long, default_value_t = 2)]
    pub parallelism: usize,
}

#[derive(Args, Debug)]
pub struct FixArgs {
    #[command(subcommand)]
    pub job: JobCmd,
    /// Raise an operator's parallelism: `OPERATOR=N` (operator by name, name prefix or node id).
    #[arg(long, global = true, value_name = "OPERATOR=N")]
    pub set_parallelism: Option<String>,
    /// Ship strategy into that operator: rebalance, rescale or hash (a keyed operator keeps hash).
    #[arg(long, global = true, default_value = "rebalance")]
    pub ship: String,
    /// Rewrite a keyed aggregation in two phases: `OPERATOR[=BUCKETS]` (default 16 buckets).
    #[arg(long, global = true, value_name = "OPERATOR[=BUCKETS]")]
    pub two_phase_at: Option<String>,
    /// Run the original and the fixed job and check their results are identical (bounded jobs).
    #[arg(long, global = true)]
    pub verify: bool,
    /// Plan format for the fixed job.
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub format: PlanFormatArg,
}
