//! `sluice explain-analyze [JOB]`: a running SQL job's plan with its live figures
//! (`sluice_client::explain`), printed as `EXPLAIN` prints the plan, figures per line.

use std::process::ExitCode;

use sluice_client::explain::ExplainArgs;

pub fn explain_analyze(a: ExplainArgs) -> anyhow::Result<ExitCode> {
    let ep = sluice_client::Endpoint::with(&a.url, &a.client)?;
    let overview = ep.get_json("/jobs/overview", std::time::Duration::from_secs(5))?;
    let jid = crate::top::pick_job(&overview, a.job.as_deref(), &ep.base_url())?;
    let e = sluice_client::explain::explain_analyze(&ep, &jid)?;
    print!("{}", sluice_client::explain::render(&e));
    Ok(ExitCode::SUCCESS)
}
