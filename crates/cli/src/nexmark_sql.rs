//! `sluice nexmark --query qN --sql --queries DIR [--verify]`: the official query files run as
//! the benchmark's runner runs them (`sluice_table::official`); `--verify` captures the rows and
//! compares them with the hand-written query's on the same events.

use std::process::ExitCode;

use anyhow::Context;
use sluice_datastream::StreamEnv;
use sluice_jobs::nexmark::OutputKind;
use sluice_sql::plan::PhysicalOp;
use sluice_table::official::{as_handwritten, capture_sinks, runner_script, runner_vars};
use sluice_table::{DroppedRows, QueryOutput, SqlScript};

use crate::nexmark_cmd::{job_of, measure, NexmarkArgs};

/// Where the official queries come from, for the error without `--queries`.
const WHERE: &str = "--sql reads the official query files: give --queries DIR, the `queries` folder of the nexmark repository (nexmark-flink/src/main/resources/queries, holding ddl_gen.sql, ddl_views.sql and q0.sql…)";

pub fn run(a: &NexmarkArgs) -> anyhow::Result<ExitCode> {
    let dir = a.queries.as_ref().context(WHERE)?;
    if !dir.join("ddl_gen.sql").is_file() {
        anyhow::bail!("{} holds no ddl_gen.sql. {WHERE}", dir.display());
    }
    let query = a.query.name();
    let mut text = runner_script(dir, query)?;
    let capture = if a.verify {
        let d = std::env::temp_dir().join(format!("sluice-nexmark-{query}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        text = capture_sinks(&text, &d)?;
        Some(d)
    } else {
        None
    };
    let script = match SqlScript::prepare(&text, &runner_vars(a.events, a.rate)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {query}: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let jobs = script.jobs();
    let [job] = jobs.as_slice() else {
        anyhow::bail!("{query}.sql holds {} jobs; one was expected", jobs.len());
    };
    let env = StreamEnv::new();
    env.set_parallelism(a.parallelism);
    if let Some(ms) = a.checkpoint_interval {
        env.enable_checkpointing(std::time::Duration::from_millis(ms.max(10)));
    }
    let built = job.build(&env, QueryOutput::Stdout)?;
    measure(a, &env)?;
    for line in DroppedRows::summary([&built.dropped()]) {
        eprintln!("{line}");
    }
    let Some(capture) = capture else {
        return Ok(ExitCode::SUCCESS);
    };
    // The sink's column types: timestamps are compared as the hand-written CSV writes them.
    let types: Vec<_> = job
        .plan
        .roots
        .iter()
        .find_map(|r| match &r.op {
            PhysicalOp::Sink(s) => Some(s.columns.iter().map(|c| c.1.clone()).collect()),
            _ => None,
        })
        .unwrap_or_default();
    let mut sql: Vec<String> = sluice_runtime::sinks::committed_lines(&capture)
        .with_context(|| format!("reading {}", capture.display()))?
        .iter()
        .map(|l| as_handwritten(l, &types))
        .collect();
    sql.sort();
    let twin = capture.join("handwritten.csv");
    let env = StreamEnv::new();
    job_of(a)
        .build(&env, OutputKind::File(twin.clone()))
        .map_err(anyhow::Error::msg)?;
    env.execute()?;
    // One file at parallelism 1, a directory of part files above.
    let mut hand = if twin.is_dir() {
        sluice_runtime::sinks::committed_lines(&twin)
            .with_context(|| format!("reading {}", twin.display()))?
    } else {
        let text = std::fs::read_to_string(&twin)
            .with_context(|| format!("reading {}", twin.display()))?;
        text.lines().map(str::to_string).collect()
    };
    hand.sort();
    let _ = std::fs::remove_dir_all(&capture);
    if sql == hand {
        println!(
            "verified: {query} (official SQL) equals the hand-written {query}: {} rows",
            sql.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let first = sql
        .iter()
        .zip(&hand)
        .find(|(s, h)| s != h)
        .map(|(s, h)| format!("SQL: {s}\n  hand-written: {h}"))
        .unwrap_or_default();
    anyhow::bail!(
        "{query}: the official SQL's {} rows differ from the hand-written query's {}; first difference:\n  {first}",
        sql.len(),
        hand.len()
    )
}
