//! `sluice nexmark --query qN --sql --queries DIR [--verify]`: the official query files run as
//! the benchmark's runner runs them, and checked against DuckDB and the hand-written twin
//! (`sluice_jobs::nexmark_sql`); this prints what it finds.

use std::process::ExitCode;

use anyhow::Context;
use sluice_datastream::StreamEnv;
use sluice_jobs::nexmark_sql::{OfficialError, OfficialQuery};

use crate::nexmark_cmd::{measure, NexmarkArgs};

/// Where the official queries come from, for the error without `--queries`.
const WHERE: &str = "--sql reads the official query files: give --queries DIR, the `queries` folder of the nexmark repository (nexmark-flink/src/main/resources/queries, holding ddl_gen.sql, ddl_views.sql and q0.sql…)";

pub fn run(a: &NexmarkArgs) -> anyhow::Result<ExitCode> {
    let dir = a.queries.as_ref().context(WHERE)?;
    if !dir.join("ddl_gen.sql").is_file() {
        anyhow::bail!("{} holds no ddl_gen.sql. {WHERE}", dir.display());
    }
    let query = &a.query;
    let official = match OfficialQuery::prepare(dir, query, a.events, a.rate, a.verify) {
        Ok(q) => q,
        Err(OfficialError::Sql(e)) => {
            eprintln!("error: {query}: {e}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e.into()),
    };
    let env = StreamEnv::new();
    env.set_parallelism(a.parallelism);
    if let Some(ms) = a.checkpoint_interval {
        env.enable_checkpointing(std::time::Duration::from_millis(ms.max(10)));
    }
    let job = official.build(&env)?;
    measure(a, &env)?;
    for line in OfficialQuery::drops(&job) {
        eprintln!("{line}");
    }
    if !a.verify {
        return Ok(ExitCode::SUCCESS);
    }
    let verdicts = official.verify(&job, a.parallelism)?;
    for v in &verdicts {
        if v.passed {
            println!("{}", v.text);
        } else {
            eprintln!("error: {}", v.text);
        }
    }
    Ok(if verdicts.iter().all(|v| v.passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
