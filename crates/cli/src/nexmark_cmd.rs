//! `sluice nexmark`: run a Nexmark query, export the events for the DuckDB oracle, or benchmark
//! every implemented query.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use sluice_datastream::StreamEnv;
use sluice_jobs::nexmark::{NexmarkJob, OutputKind, Query};

use crate::progress::{human, Progress};
use sluice_bench::procstat;

#[derive(Args, Debug)]
pub struct NexmarkArgs {
    /// The query: hand-written q0, q1, q2, q3, q4, q5, q7, q8, q9, q11, q14, q21 or q22; with
    /// --sql any official query file (q20…).
    #[arg(long, short, default_value = "q0", value_parser = sluice_jobs::nexmark_sql::query_name)]
    pub query: String,
    /// Events to generate (over all source subtasks).
    #[arg(long, default_value_t = 10_000_000)]
    pub events: u64,
    /// Event-time rate in events per second (sets how many windows the run spans; the Flink
    /// suite uses 10 M).
    #[arg(long, default_value_t = 10_000_000)]
    pub rate: u64,
    /// Parallelism of every operator.
    #[arg(long, short, default_value_t = 1)]
    pub parallelism: usize,
    /// Write the query's rows as CSV lines to FILE (one file per sink subtask: FILE, FILE.1...).
    /// Without it the rows go to a blackhole sink, as in the Flink benchmark.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Instead of running a query, write the events to DIR/events.csv (the table the DuckDB
    /// oracle reads).
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Benchmark every implemented query (each in a fresh process) and print one table.
    #[arg(long, conflicts_with_all = ["export", "output"])]
    pub bench: bool,
    /// Never draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Print the run's figures as one JSON line (used by --bench).
    #[arg(long)]
    pub stats_json: bool,
    /// Take a checkpoint every MS milliseconds (to measure their cost).
    #[arg(long, value_name = "MS")]
    pub checkpoint_interval: Option<u64>,
    /// Run the official SQL of the query (from --queries) instead of the hand-written job.
    #[arg(long, conflicts_with_all = ["export", "bench", "output"])]
    pub sql: bool,
    /// The official query files: the `queries` folder of the nexmark repository
    /// (nexmark-flink/src/main/resources/queries: ddl_gen.sql, ddl_views.sql, q0.sql…).
    #[arg(long, value_name = "DIR", requires = "sql")]
    pub queries: Option<PathBuf>,
    /// With --sql: capture the query's rows (its blackhole sink becomes a csv file sink) and
    /// check they equal DuckDB's answer over the same events (Python's duckdb module:
    /// SLUICE_PYTHON, else python3) and the hand-written query's, where there is one.
    #[arg(long, requires = "sql")]
    pub verify: bool,
}

pub fn nexmark(a: NexmarkArgs) -> anyhow::Result<ExitCode> {
    if a.bench {
        return bench(&a);
    }
    if let Some(dir) = &a.export {
        return export(&a, dir);
    }
    if a.sql {
        return crate::nexmark_sql::run(&a);
    }
    run(&a)
}

pub fn job_of(a: &NexmarkArgs) -> anyhow::Result<NexmarkJob> {
    Ok(NexmarkJob {
        query: Query::parse(&a.query).map_err(anyhow::Error::msg)?,
        events: a.events,
        rate: a.rate,
        parallelism: a.parallelism,
    })
}

fn export(a: &NexmarkArgs, dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let config = job_of(a)?.validate().map_err(anyhow::Error::msg)?;
    let generator = sluice_nexmark::NexmarkGenerator::new(config)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("events.csv");
    let file =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let started = Instant::now();
    let n = sluice_nexmark::write_csv(generator.iter(), std::io::BufWriter::new(file))
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "wrote {n} events to {} in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn run(a: &NexmarkArgs) -> anyhow::Result<ExitCode> {
    let job = job_of(a)?;
    let env = StreamEnv::new();
    if let Some(ms) = a.checkpoint_interval {
        env.enable_checkpointing(std::time::Duration::from_millis(ms.max(10)));
    }
    let output = match &a.output {
        Some(p) => {
            crate::preflight::output_file(p, "--output")?;
            OutputKind::File(p.clone())
        }
        None => OutputKind::Discard,
    };
    job.build(&env, output).map_err(anyhow::Error::msg)?;
    measure(a, &env)?;
    if let Some(p) = &a.output {
        println!("rows written to {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the job on `env` with a progress bar and prints its figures (one JSON line with
/// `--stats-json`).
pub fn measure(a: &NexmarkArgs, env: &StreamEnv) -> anyhow::Result<()> {
    let cpu0 = procstat::cpu_time_ns();
    let started = Instant::now();
    let handle = env.launch()?;
    let progress = Progress::start(handle.monitor(), a.events, !a.no_progress && !a.stats_json);
    let outcome = handle.wait();
    progress.finish();
    outcome?;
    let secs = started.elapsed().as_secs_f64();
    let cpu_secs = match (cpu0, procstat::cpu_time_ns()) {
        (Some(a), Some(b)) => Some((b - a) as f64 / 1e9),
        _ => None,
    };
    let rate = a.events as f64 / secs;
    let per_core = cpu_secs.map(|c| a.events as f64 / c);
    let peak = procstat::peak_rss_kib();
    if a.stats_json {
        println!(
            "{{\"query\":\"{}\",\"events\":{},\"wall_s\":{:.4},\"events_per_sec\":{:.0},\"cores\":{},\"events_per_core_sec\":{},\"peak_rss_kib\":{}}}",
            a.query,
            a.events,
            secs,
            rate,
            cpu_secs.map_or("null".into(), |c| format!("{:.3}", c / secs)),
            per_core.map_or("null".into(), |p| format!("{p:.0}")),
            peak.map_or("null".into(), |k| k.to_string()),
        );
    } else {
        println!(
            "{} p={}: {} events in {:.2} s: {} events/s, {} per core ({} cores used), peak RSS {}",
            a.query,
            a.parallelism,
            human(a.events as f64),
            secs,
            human(rate),
            per_core.map_or("n/a".into(), human),
            cpu_secs.map_or("n/a".into(), |c| format!("{:.2}", c / secs)),
            peak.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
        );
    }
    Ok(())
}

fn bench(a: &NexmarkArgs) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()?;
    let settings = sluice_bench::nexmark::Settings {
        events: a.events,
        rate: a.rate,
        parallelism: a.parallelism,
        checkpoint_interval: a.checkpoint_interval,
    };
    sluice_bench::nexmark::bench_queries(&exe, &settings)?;
    Ok(ExitCode::SUCCESS)
}
