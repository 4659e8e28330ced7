//! `sluice sql -f job.sql` (= `sluice run sql …`) and `sluice plan sql …`: a Flink SQL script
//! (without `-f`/`-e`: the interactive client, `sluice::sql_client`)
//! read and planned whole by `sluice_table::SqlScript` (every refusal, with its line and
//! column, before any job starts: exit status 2), then its steps in order — `EXPLAIN` and
//! `SHOW` text printed, each job run to its end by `sluice run`'s machinery (REST, checkpoints,
//! `--processes`, `--autopilot`).
//!
//! Settings: `SET 'parallelism.default'` is the jobs' parallelism unless `-p`/`--parallelism`
//! is on the command line (the command line wins, as Flink's `-p` overrides the configuration);
//! `SET 'execution.checkpointing.interval'` is the checkpoint interval unless
//! `--checkpoint-interval` is given.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::Context;
use sluice_datastream::StreamEnv;
use sluice_table::{DroppedRows, PlannedJob, QueryOutput, SqlScript, Step};

use crate::args::{JobCmd, PlanArgs, RunArgs, SqlArgs};

/// The exit status of a script refused before it ran (bad input, as clap's usage errors).
const REFUSED: u8 = 2;

/// `sluice sql …` is read as `sluice run sql …`.
pub fn alias(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut v: Vec<OsString> = args.collect();
    if v.get(1).is_some_and(|a| a == "sql") {
        v.insert(1, "run".into());
    }
    v
}

/// Whether `-p`/`--parallelism` is on the command line (its default is not a choice).
fn parallelism_given() -> bool {
    std::env::args().any(|a| {
        a == "--parallelism"
            || a.starts_with("--parallelism=")
            || (a.starts_with("-p") && !a.starts_with("--"))
    })
}

fn text(a: &SqlArgs) -> anyhow::Result<String> {
    match (&a.file, &a.execute) {
        (Some(f), _) => {
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))
        }
        (None, Some(e)) => Ok(e.clone()),
        (None, None) => anyhow::bail!("give a script with -f FILE or SQL text with -e"),
    }
}

/// Reads and plans the script (an error here is the script's, with its place).
fn prepare(a: &SqlArgs) -> anyhow::Result<Result<SqlScript, sluice_sql::SqlError>> {
    let text = text(a)?;
    let vars: BTreeMap<String, String> = a.vars.iter().cloned().collect();
    Ok(SqlScript::prepare(&text, &vars))
}

fn refused(a: &SqlArgs, e: &sluice_sql::SqlError) -> ExitCode {
    let what = match &a.file {
        Some(f) => format!("{}: ", f.display()),
        None => String::new(),
    };
    eprintln!("error: {what}{e}");
    ExitCode::from(REFUSED)
}

/// The script's job `index` (after `prepare` succeeded once, it succeeds again).
fn job(a: &SqlArgs) -> anyhow::Result<PlannedJob> {
    let script = prepare(a)?.map_err(anyhow::Error::new)?;
    let i = a.job_index.unwrap_or(0);
    script
        .jobs()
        .get(i)
        .map(|j| (*j).clone())
        .with_context(|| format!("the script has no job {i}"))
}

/// The command line's settings for one job: the script's SETs where the flags are silent.
fn with_settings(a: &SqlArgs, job: &PlannedJob, index: usize) -> SqlArgs {
    let mut a = a.clone();
    a.job_index = Some(index);
    if let Some(p) = job.parallelism().filter(|_| !parallelism_given()) {
        a.env.parallelism = p as usize;
    }
    if a.env.checkpoint_interval.is_none() {
        a.env.checkpoint_interval = job
            .checkpoint_interval()
            .map(|d| d.as_millis().max(1) as u64);
    }
    a
}

/// `build_on` for a SQL job: its operators on `env`; a query's rows print on stdout.
pub fn build(env: &StreamEnv, a: &SqlArgs) -> anyhow::Result<DroppedRows> {
    let built = job(a)?.build(env, QueryOutput::Stdout)?;
    Ok(built.dropped())
}

/// Runs a script's steps in order; stops at the first job that fails.
pub fn run_script(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    let JobCmd::Sql(a) = args.job.clone() else {
        anyhow::bail!("not a SQL job");
    };
    if a.file.is_none() && a.execute.is_none() {
        let refused = sluice::sql_client::run_stdin(a.env.clone())?;
        return Ok(ExitCode::from(u8::from(refused > 0)));
    }
    let script = match prepare(&a)? {
        Ok(s) => s,
        Err(e) => return Ok(refused(&a, &e)),
    };
    let jobs = script.jobs().len();
    if args.processes.processes > 1 && jobs > 1 {
        anyhow::bail!(
            "--processes runs one job; this script has {jobs} (put its INSERTs in a STATEMENT SET, or run them one by one)"
        );
    }
    let mut index = 0;
    for step in &script.steps {
        match step {
            Step::Show(text) => println!("{}", text.trim_end()),
            Step::Job(job) => {
                if jobs > 1 {
                    eprintln!("job {} of {jobs}: {}", index + 1, job.name);
                }
                args.job = JobCmd::Sql(with_settings(&a, job, index));
                let code = crate::run::run_one(&mut args)?;
                if code != ExitCode::SUCCESS {
                    return Ok(code);
                }
                index += 1;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `sluice plan sql …`: each job's graph, in the format asked, in order.
pub fn plan(args: &PlanArgs, a: &SqlArgs) -> anyhow::Result<ExitCode> {
    let script = match prepare(a)? {
        Ok(s) => s,
        Err(e) => return Ok(refused(a, &e)),
    };
    let jobs = script.jobs();
    for (i, job) in jobs.iter().enumerate() {
        if jobs.len() > 1 {
            println!("-- job {} of {}: {}", i + 1, jobs.len(), job.name);
        }
        let cmd = JobCmd::Sql(with_settings(a, job, i));
        println!(
            "{}",
            crate::plan_cmd::plan_text(&cmd, args.format)?.trim_end()
        );
    }
    Ok(ExitCode::SUCCESS)
}
