//! Command-line arguments. Job flags are shared by `run` and `plan`, so a plan shows exactly
//! what the same flags would run.

use sluice::bounds::between;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use sluice::{EnvArgs, RestArgs};

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
    /// Run a Flink SQL script: `sluice sql -f job.sql` means `sluice run sql -f job.sql` (and
    /// takes the same flags as `run`: REST, `--processes`, `--autopilot`…).
    Sql(SqlArgs),
    /// Serve Flink's SQL Gateway REST API (sessions, statements, result pages) on --port 8083.
    SqlGateway(sluice::sql_gateway::GatewayArgs),
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
    /// A running SQL job's plan, each operator with its live figures (EXPLAIN ANALYZE).
    ExplainAnalyze(sluice_client::explain::ExplainArgs),
    /// Write a workload's records to Kafka (`produce skew --records N --to kafka://HOST:PORT/TOPIC?partitions=P`).
    Produce(crate::produce::ProduceArgs),
    /// A vertex's flame graph (Sluice or Flink REST API) as folded stacks or an SVG.
    Profile(crate::profile_cmd::ProfileArgs),
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
    /// The embedded REST API's flags.
    #[command(flatten)]
    pub rest: RestArgs,
    /// Sample flame graphs of every subtask back to back while the job runs (native stacks
    /// and thread looks, as a flame graph request does): what `sluice bench --profiler`
    /// measures the profiler's cost with. The runs taken are reported.
    #[arg(long, global = true)]
    pub profile_all: bool,
    /// With `--profile-all`: native stack samples per second of CPU time (the profiler's
    /// default, 99 a second, unless given), to compare rates in one benchmark.
    #[arg(long, global = true, value_parser = clap::value_parser!(i32).range(1..=999))]
    pub profile_hz: Option<i32>,
    /// `--processes`, `--process-index`, `--peers`, `--job-id`, `--heartbeat-timeout`,
    /// `--autopilot`.
    #[command(flatten)]
    pub processes: sluice::ProcessArgs,
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
    /// A Flink SQL script (`-f FILE` or `-e SQL`): each INSERT, statement set or query is a job,
    /// run in order; `EXPLAIN` prints the plan.
    Sql(SqlArgs),
}

/// `sluice sql` / `sluice run sql`: the script and its variables.
#[derive(Args, Debug, Clone)]
pub struct SqlArgs {
    /// The script to run (neither it nor `-e`: the interactive client, statements on stdin).
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "execute"
    )]
    pub file: Option<PathBuf>,
    /// SQL text to run (one statement, or several separated by `;`).
    #[arg(short = 'e', long = "execute", value_name = "SQL")]
    pub execute: Option<String>,
    /// Substitute `${KEY}` in the script by VALUE (repeatable).
    #[arg(short = 'D', long = "var", value_name = "KEY=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Which job of the script this run is (set as the script's jobs run in order).
    #[arg(long, hide = true)]
    pub job_index: Option<usize>,
    #[command(flatten)]
    pub env: EnvArgs,
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got '{s}'")),
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
    /// slow-sink only: instead of the remote table, a sink burning ROUNDS of CPU per record (~1–2 µs per 1000, machine-dependent), as the debloating benchmark runs it.
    #[arg(long, value_name = "ROUNDS", value_parser = between(0u32, 100_000_000, ""))]
    pub sink_work: Option<u32>,
    /// slow-sink with --sink-work only: ROUNDS of CPU burn per record in the map chained to the
    /// source, so the source costs what a parsing source would.
    #[arg(long, value_name = "ROUNDS", value_parser = between(0u32, 100_000_000, ""))]
    pub source_work: Option<u32>,
    /// blocking only: distinct keys looked up (default 100000, so keys hardly repeat); few keys
    /// repeat, and the doctor proposes a cache instead of async.
    #[arg(long, value_name = "N", value_parser = between(1u64, sluice_jobs::blocking::LOOKUP_KEYS, ""))]
    pub keys: Option<u64>,
    /// blocking only: look up in a PostgreSQL table instead of the in-process HTTP service,
    /// postgres://USER@HOST:PORT/DB?table=T (columns `key` bigint, `score` bigint).
    #[arg(long, value_name = "URL", value_parser = sluice_jobs::connectors::parse_lookup)]
    pub lookup: Option<sluice_jobs::blocking::PostgresTable>,
    /// source-ceiling only: the input comes in N parts that cannot be cut further (as files, or
    /// partitions of a system that does not report them); subtasks beyond N read nothing.
    #[arg(long, value_name = "N", value_parser = between(1u64, 1_000_000, ""))]
    pub splits: Option<u64>,
    /// On a real source (source-ceiling, input-limited): kafka://HOST:PORT/TOPIC of
    /// `key,value` lines.
    #[arg(long, value_name = "URL", value_parser = sluice_jobs::connectors::parse_from)]
    pub from: Option<sluice_jobs::connectors::FromUrl>,
    /// With a Kafka --from: stop at the end offsets seen at start.
    #[arg(long, requires = "from")]
    pub bounded: bool,
    /// On a real sink (slow-sink): postgres://USER@HOST:PORT/DB?table=T.
    #[arg(long, value_name = "URL", value_parser = sluice_jobs::connectors::parse_to)]
    pub to: Option<sluice_jobs::connectors::ToUrl>,
    /// Apply the doctor's blocking-calls fix before the start: OPERATOR (a lookup join or an
    /// async operator, e.g. blocking's `blocking-call`) keeps N requests in flight, ordered.
    #[arg(long, value_name = "OPERATOR=N")]
    pub async_capacity: Option<String>,
    #[command(flatten)]
    pub env: EnvArgs,
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
    /// CPU work per record in the keyed sum's update (rounds; 0: a plain sum).
    #[arg(long, default_value_t = 0)]
    pub sum_work: u32,
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
    /// Read the records instead of generating them: kafka://HOST:PORT/TOPIC (`key,value`
    /// lines, as `sluice produce skew` writes them) or socket://HOST:PORT.
    #[arg(long, value_name = "URL", value_parser = sluice_jobs::connectors::parse_from)]
    pub from: Option<sluice_jobs::connectors::FromUrl>,
    /// With a Kafka --from: stop at the end offsets seen at start (a bounded run).
    #[arg(long, requires = "from")]
    pub bounded: bool,
    /// Write the running sums (so the final sum per key) here too:
    /// postgres://USER@HOST:PORT/DB?table=T (upserted by key; the table is created if missing;
    /// `&append`: one row per running sum, exactly once by two-phase commit under checkpoints)
    /// or kafka://HOST:PORT/TOPIC[?exactly-once][&partitions=P] (`key,sum` lines keyed by key).
    #[arg(long, value_name = "URL", value_parser = sluice_jobs::connectors::parse_to)]
    pub to: Option<sluice_jobs::connectors::ToUrl>,
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
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// A connector benchmark instead of the reference jobs.
    #[command(subcommand)]
    pub target: Option<crate::bench_connectors::BenchTarget>,
    /// The reference jobs' settings.
    #[command(flatten)]
    pub cases: sluice_bench::BenchCases,
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
