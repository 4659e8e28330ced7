//! `sluice plan <job> [job flags] [--format ...]`.

use std::process::ExitCode;

use sluice_datastream::plan::{job_graph_dot, job_graph_text, job_plan_json};
use sluice_types::Id128;

use crate::args::{JobCmd, PlanArgs, PlanFormatArg};
use crate::run::build_job;

pub fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    if let JobCmd::Sql(a) = &args.job {
        return crate::sql_cmd::plan(&args, a);
    }
    println!("{}", plan_text(&args.job, args.format)?.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// The plan of the job `job` describes, in `format`.
pub fn plan_text(job: &JobCmd, format: PlanFormatArg) -> anyhow::Result<String> {
    let (env, _job, _) = build_job(job)?;
    Ok(match format {
        PlanFormatArg::Json => env.execution_plan()?,
        PlanFormatArg::JobGraph => {
            let g = env.job_graph()?;
            // A plan that is not running has no job id yet; derive a stable one from the name.
            job_plan_json(&g, Id128::hash_of(g.name.as_bytes())).to_string()
        }
        PlanFormatArg::Text => job_graph_text(&env.job_graph()?),
        PlanFormatArg::Dot => job_graph_dot(&env.job_graph()?),
    })
}
