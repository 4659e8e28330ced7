//! # sluice-bench: Sluice's benchmark harness
//!
//! What `sluice bench` measures and how: every case runs in a fresh `sluice run --stats-json`
//! process, so its CPU time and peak memory are its own ([`reference`](mod@reference),
//! [`autopilot`]); that process samples its in-flight bytes ([`in_flight`]) and, for the
//! profiler's cost, alternates sampling windows with windows without ([`profile_all`]), and
//! prints one [`RunStats`] line; [`procstat`] reads CPU time and peak RSS from `/proc`. The
//! Nexmark queries run the same way, each in a fresh `sluice nexmark --stats-json` process
//! ([`nexmark`]); [`nexmark_sql`] sets the official SQL beside the hand-written queries, and
//! beside the official Flink suite's figures read from its harness's output
//! ([`flink_results`]).
//!
//! Main types: [`BenchCases`] (the flags), [`RunStats`], [`profile_all::ProfileAll`],
//! [`in_flight::InFlightSampler`], [`BenchError`].
//!
//! Invariant: the harness measures, it never changes a job: it starts `sluice run` processes
//! with the flags a user would give, and reads what they print and serve.
#![warn(missing_docs)]

pub mod autopilot;
pub mod flink_results;
pub mod in_flight;
pub mod nexmark;
pub mod nexmark_sql;
pub mod procstat;
pub mod profile_all;
pub mod reference;
mod stats;

use clap::Args;

pub use stats::RunStats;

/// What can go wrong in a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A program (a case's `sluice run`, the floor program) could not be started.
    #[error("starting {0}: {1}")]
    Start(String, #[source] std::io::Error),
    /// A case failed or answered something unreadable; the message names it.
    #[error("{0}")]
    Failed(String),
}

/// 12.3M, 4.5k, 999.
pub fn human(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// `sluice bench`'s flags for the reference cases, the profiler, the autopilot and the
/// debloating comparison.
#[derive(Args, Debug, Clone)]
pub struct BenchCases {
    /// Records per run for the passthrough jobs.
    #[arg(long, default_value_t = 50_000_000)]
    pub passthrough_records: u64,
    /// Records per run for the skew job.
    #[arg(long, default_value_t = 20_000_000)]
    pub skew_records: u64,
    /// Runs per case; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Parallelism of the jobs.
    #[arg(short = 'p', long, default_value_t = 2)]
    pub parallelism: usize,
    /// Measure the profiler instead: the skew and passthrough jobs with 5 s flame graph
    /// sampling windows between 5 s windows without sampling, in one run
    /// (`sluice run --profile-all`), and the on / off ratios of throughput and CPU-ns/record.
    #[arg(long)]
    pub profiler: bool,
    /// With `--profiler`: the sampling rate of the "on" runs (`sluice run --profile-hz`).
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=999))]
    pub profile_hz: Option<i32>,
    /// With `--profiler`: records of the passthrough job (enough for it to run ~40 s on an
    /// idle 2-core machine: 4 sampling windows of 5 s between off windows).
    #[arg(long, default_value_t = 8_000_000_000)]
    pub profiler_passthrough_records: u64,
    /// With `--profiler`: records of the skew job (~40 s on an idle 2-core machine).
    #[arg(long, default_value_t = 500_000_000)]
    pub profiler_skew_records: u64,
    /// Instead of the reference cases: the autopilot on live jobs (`sluice run … --autopilot`):
    /// an under-provisioned map at parallelism 1, a source whose input is one split, the skew
    /// job; each case's first decision with its throughput before and after the change.
    #[arg(long)]
    pub autopilot: bool,
    /// Instead of the reference cases: the buffer-debloating comparison — a sink ~1000× slower
    /// than its source with aligned checkpoints, run without and with debloating.
    #[arg(long)]
    pub debloat: bool,
    /// Records per run of the debloating comparison (~40 s a run with the default work: long
    /// enough for the debloated size to settle and for aligned checkpoints to complete without
    /// debloating, where each waits for ~20 s of buffered records to drain).
    #[arg(long, default_value_t = 150_000)]
    pub debloat_records: u64,
    /// Sink CPU burn per record in the debloating comparison (rounds, ~2 µs per 1000 here):
    /// 1000× the source's.
    #[arg(long, default_value_t = 250_000)]
    pub debloat_sink_work: u32,
    /// Source CPU burn per record in the debloating comparison (rounds): ~0.5 µs, the cost of a
    /// source that parses what it reads (~2 M records/s a core).
    #[arg(long, default_value_t = 250)]
    pub debloat_source_work: u32,
    /// The floor program's release binary (`shared/floor`, `cargo build --release` there): run
    /// right before each skew run with the same record count, so every skew row also shows its
    /// throughput as a fraction of floor (c) measured in the same minute.
    #[arg(long, value_name = "PATH")]
    pub floor: Option<std::path::PathBuf>,
    /// Debloating target in the comparison, ms (Flink's default 1000).
    #[arg(long, default_value_t = 1000)]
    pub debloat_target_ms: u64,
    /// Instead of the reference cases: the Nexmark queries, each in a fresh process
    /// (`sluice nexmark --bench`'s table of the hand-written queries; with `--sql`, the
    /// official SQL beside them).
    #[arg(long)]
    pub nexmark: bool,
    /// With `--nexmark`: every official SQL query Sluice runs beside its hand-written twin in
    /// the same session (runs alternating): events/s, the SQL/hand-written ratio, CPU-ns per
    /// event and peak RSS of each; the official Flink suite's figures beside them with
    /// `--flink-results`.
    #[arg(long, requires = "nexmark")]
    pub sql: bool,
    /// With `--sql`: the official query files, the `queries` folder of the nexmark repository
    /// (nexmark-flink/src/main/resources/queries: ddl_gen.sql, ddl_views.sql, q0.sql…).
    #[arg(long, value_name = "DIR", requires = "sql")]
    pub queries: Option<std::path::PathBuf>,
    /// With `--sql`: only these queries (`--query q5,q7`); all 14 by default.
    #[arg(
        long = "query",
        value_name = "qN",
        value_delimiter = ',',
        requires = "sql"
    )]
    pub nexmark_queries: Vec<String>,
    /// With `--nexmark`: events per run.
    #[arg(long, default_value_t = 10_000_000)]
    pub events: u64,
    /// With `--nexmark`: the event-time rate, events per second (10 M: the Flink suite's V1
    /// setting, which its harness uses).
    #[arg(long, default_value_t = 10_000_000)]
    pub rate: u64,
    /// With `--sql`: the Flink harness's output (its `out/results.txt` of `RESULT` lines, or
    /// its folder), from `run.sh QUERY EVENTS P` with the same events and parallelism: Flink's
    /// events/s, CPU-ns per event and peak RSS beside Sluice's, and the SQL/Flink ratio.
    #[arg(long, value_name = "FILE", requires = "sql")]
    pub flink_results: Option<std::path::PathBuf>,
    /// With `--sql`: print the table as markdown (for the book's figures).
    #[arg(long, requires = "sql")]
    pub markdown: bool,
}
