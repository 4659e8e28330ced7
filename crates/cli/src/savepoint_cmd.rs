//! `sluice savepoint DIR [--stop]`: takes a savepoint of a running job through its
//! Flink-compatible REST API (`POST /jobs/:id/savepoints` or `/stop`, then polls), and prints
//! where it went. Works against Flink too.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use crate::http_client::Endpoint;
use crate::top::pick_job;

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
    pub client: crate::http_client::ClientArgs,
    /// The job id (default: the first running job).
    #[arg(long)]
    pub job: Option<String>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600, value_parser = sluice::bounds::between(1u64, 86_400, " seconds"))]
    pub timeout: u64,
}

const REQUEST: Duration = Duration::from_secs(5);

pub fn savepoint(a: SavepointArgs) -> anyhow::Result<ExitCode> {
    let ep = Endpoint::with(&a.url, &a.client).map_err(anyhow::Error::msg)?;
    let dir = match &a.dir {
        Some(d) => Some(std::path::absolute(d)?.display().to_string()),
        None => None,
    };
    let overview = ep.get_json("/jobs/overview", REQUEST)?;
    let jid = pick_job(&overview, a.job.as_deref(), &ep.base_url())?;
    let trigger = if a.stop {
        let mut body = json!({ "drain": false });
        if let Some(d) = &dir {
            body["targetDirectory"] = json!(d);
        }
        ep.post_json(&format!("/jobs/{jid}/stop"), &body, REQUEST)?
    } else {
        let mut body = json!({ "cancel-job": false });
        if let Some(d) = &dir {
            body["target-directory"] = json!(d);
        }
        ep.post_json(&format!("/jobs/{jid}/savepoints"), &body, REQUEST)?
    };
    let id = trigger["request-id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no request-id in the answer: {trigger}"))?
        .to_string();
    let started = Instant::now();
    loop {
        let st = ep.get_json(&format!("/jobs/{jid}/savepoints/{id}"), REQUEST)?;
        if st["status"]["id"] == "COMPLETED" {
            if let Some(loc) = st["operation"]["location"].as_str() {
                println!("savepoint of job {jid}: {loc}");
                if a.stop {
                    println!(
                        "the job stops now; resume it with `sluice run … --from-savepoint {}`",
                        loc.trim_start_matches("file:")
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
            let why = &st["operation"]["failure-cause"]["stack-trace"];
            anyhow::bail!(
                "savepoint failed: {}",
                why.as_str().unwrap_or("unknown cause")
            );
        }
        if started.elapsed() > Duration::from_secs(a.timeout) {
            anyhow::bail!("savepoint {id} did not complete within {} s", a.timeout);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
