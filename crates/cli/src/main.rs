//! `sluice`: run built-in jobs, show their plans, place keys, benchmark.

mod args;
mod bench;
mod bounds;
mod checkpoint_log;
mod demo;
mod doctor_cmd;
mod fix_cmd;
mod http_client;
mod key_group;
mod nexmark_cmd;
mod plan_cmd;
mod preflight;
mod procstat;
mod progress;
mod run;
mod run_report;
mod savepoint_cmd;
mod top;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(r) => run::run(r),
        Command::Plan(p) => plan_cmd::plan(p),
        Command::Fix(f) => fix_cmd::fix(f),
        Command::KeyGroup(k) => key_group::key_group(k),
        Command::Bench(b) => bench::bench(b),
        Command::Top(t) => top::top(t),
        Command::Doctor(d) => doctor_cmd::doctor(d),
        Command::Demo(d) => demo::demo(d),
        Command::Nexmark(n) => nexmark_cmd::nexmark(n),
        Command::Savepoint(s) => savepoint_cmd::savepoint(s),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
