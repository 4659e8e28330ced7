//! `EXPLAIN ANALYZE` of a running SQL job (`sluice explain-analyze`): `GET
//! /jobs/:jid/explain-analyze` read into its shape, and its text (the plan as `EXPLAIN` prints
//! it, figures appended per line) rendered here from the nodes, so a client shows the same text
//! whatever server version answered.

use std::time::Duration;

use sluice_rest_api::ExplainAnalyze;

use crate::{ClientError, Endpoint};

/// Arguments of `sluice explain-analyze`.
#[cfg(feature = "clap")]
#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The job id (default: the first running job).
    pub job: Option<String>,
    /// The REST API of the job (http:// or https://).
    #[arg(long, alias = "rest", default_value = "http://127.0.0.1:8081")]
    pub url: String,
    /// How to reach it.
    #[command(flatten)]
    pub client: crate::ClientArgs,
}

/// How long the request may take.
const REQUEST: Duration = Duration::from_secs(10);

/// The job's plan with its live figures. A job not planned from SQL is the server's 404
/// (`ClientError` keeps its message).
pub fn explain_analyze(ep: &Endpoint, jid: &str) -> Result<ExplainAnalyze, ClientError> {
    let path = format!("/jobs/{jid}/explain-analyze");
    let answer = ep.get_json(&path, REQUEST)?;
    serde_json::from_value(answer).map_err(|e| ClientError::Malformed {
        url: ep.url(&path),
        what: format!("not an EXPLAIN ANALYZE answer ({e})"),
    })
}

/// The text `sluice explain-analyze` prints: the job, then the plan with its figures.
pub fn render(e: &ExplainAnalyze) -> String {
    let mut out = format!("job {} ({})\n", e.jid, e.name);
    out.push_str(&e.render());
    out
}
