//! `sluice savepoint DIR [--stop]`: takes a savepoint of a running job through its
//! Flink-compatible REST API (`POST /jobs/:id/savepoints` or `/stop`, then polls), and prints
//! where it went. Works against Flink too.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::top::pick_job;
use clap::Args;
use sluice_client::savepoint::take_savepoint;
use sluice_client::Endpoint;

/// Arguments of `sluice savepoint`.
#[derive(Args, Debug)]
pub struct SavepointArgs {
    /// The directory to write the savepoint into (a new savepoint-<job>-<id> directory inside
    /// it); it must lie under the job's savepoint directory (`state.savepoints.dir`, `sluice
    /// run --savepoint-dir`), which is the default.
    pub dir: Option<PathBuf>,
    /// Stop the job once the savepoint completed (stop-with-savepoint).
    #[arg(long)]
    pub stop: bool,
    /// The REST API of the job (http:// or https://).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    pub url: String,
    #[command(flatten)]
    pub client: sluice_client::ClientArgs,
    /// The job id (default: the first running job).
    #[arg(long)]
    pub job: Option<String>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600, value_parser = sluice::bounds::between(1u64, 86_400, " seconds"))]
    pub timeout: u64,
}

const REQUEST: Duration = Duration::from_secs(5);

/// `sluice savepoint`: the client takes it ([`take_savepoint`]); this prints where it went.
pub fn savepoint(a: SavepointArgs) -> anyhow::Result<ExitCode> {
    let ep = Endpoint::with(&a.url, &a.client)?;
    let dir = match &a.dir {
        Some(d) => Some(std::path::absolute(d)?.display().to_string()),
        None => None,
    };
    let overview = ep.get_json("/jobs/overview", REQUEST)?;
    let jid = pick_job(&overview, a.job.as_deref(), &ep.base_url())?;
    let timeout = Duration::from_secs(a.timeout);
    let loc = take_savepoint(&ep, &jid, dir.as_deref(), a.stop, timeout)?;
    println!("savepoint of job {jid}: {loc}");
    if a.stop {
        println!(
            "the job stops now; resume it with `sluice run … --from-savepoint {}`",
            loc.trim_start_matches("file:")
        );
    }
    Ok(ExitCode::SUCCESS)
}
