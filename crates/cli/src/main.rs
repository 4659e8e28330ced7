//! `sluice`: run built-in jobs, show their plans, place keys, benchmark.

mod args;
mod autopilot_cmd;
mod bench;
mod bench_connectors;
mod demo;
mod doctor_cmd;
mod explain_cmd;
mod fix_cmd;
mod key_group;
mod nexmark_cmd;
mod nexmark_sql;
mod plan_cmd;
mod preflight;
mod produce;
mod profile_cmd;
mod progress;
mod run;
mod savepoint_cmd;
mod sql_cmd;
mod top;

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse_from(sql_cmd::alias(std::env::args_os()));
    init_logs(&cli.command);
    let outcome = match cli.command {
        Command::Run(r) => run::run(r),
        // Never reached: `sluice sql …` is read as `sluice run sql …` (sql_cmd::alias).
        Command::Sql(_) => Err(anyhow::anyhow!("`sluice sql` is `sluice run sql`")),
        Command::SqlGateway(g) => sluice::sql_gateway::run_until_stopped(&g)
            .map(|()| ExitCode::SUCCESS)
            .map_err(Into::into),
        Command::Plan(p) => plan_cmd::plan(p),
        Command::Fix(f) => fix_cmd::fix(f),
        Command::KeyGroup(k) => key_group::key_group(k),
        Command::Bench(b) => bench::bench(b),
        Command::Top(t) => top::top(t),
        Command::Doctor(d) => doctor_cmd::doctor(d),
        Command::Demo(d) => demo::demo(d),
        Command::Nexmark(n) => nexmark_cmd::nexmark(n),
        Command::Savepoint(s) => savepoint_cmd::savepoint(s),
        Command::ExplainAnalyze(e) => explain_cmd::explain_analyze(e),
        Command::Produce(p) => produce::produce(p),
        Command::Profile(p) => profile_cmd::profile(p),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            // A process of a split job refused before its start exits so that its launcher
            // does not restart it.
            match e.downcast_ref::<sluice::SluiceError>() {
                Some(e) => e.exit_code(),
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// Structured logs (`tracing`) on stderr, filtered by `RUST_LOG` (e.g. `RUST_LOG=debug`,
/// `RUST_LOG=sluice_runtime=debug`). Without it: `info` for the commands that run a job and
/// print as it goes (`run`, `nexmark`, `fix`: one line per job start/end, checkpoint, failure,
/// restart, savepoint), `warn` where a live display or machine output would be interleaved
/// with them (`--stats-json`, `demo`, `doctor`, `top`, `bench`).
fn init_logs(command: &Command) {
    let quiet = match command {
        Command::Run(r) => r.stats_json,
        Command::Nexmark(_) | Command::Fix(_) => false,
        _ => true,
    };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(if quiet { "warn" } else { "info" }));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}
