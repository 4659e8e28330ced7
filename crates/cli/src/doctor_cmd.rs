//! `sluice doctor`: samples a running job's Flink-compatible REST API over a window, builds a
//! [`sluice_doctor::JobView`] and prints the doctor's diagnosis (or `--json`). Uses Flink's paths and
//! metric names, plus Sluice's extras when the server has them (`cpuTimeMsPerSecond`,
//! `<operator>.busyTimeMsPerSecond`, `/hot-keys`), so it works against Sluice and Apache Flink alike.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice_doctor::{
    average, diagnose_window, Cause, Diagnosis, HotKey, JobView, PlanChange, Snapshot,
    SubtaskSample, VertexView,
};

use crate::http_client::{Endpoint, HttpError};
use crate::top::{pick_job, read_job, read_values, subtask_view, SUBTASK_METRICS};

/// Arguments of `sluice doctor`.
#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// REST API of the job: Sluice's, or an Apache Flink JobManager's (plain http only).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    pub url: String,
    /// Job id; default: the first RUNNING job, else the most recently started one.
    #[arg(long)]
    pub job: Option<String>,
    /// Seconds to sample over (one sample per second, averaged).
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub window: f64,
    /// Print the diagnosis as JSON.
    #[arg(long)]
    pub json: bool,
}

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const OPERATOR_BUSY: &str = "busyTimeMsPerSecond";

/// Flink's metric-scope filter for operator names (as `sluice_rest::metrics` applies it).
fn scope(name: &str) -> String {
    name.chars()
        .take(80)
        .map(|c| match c {
            ' ' | '.' | ':' | ',' => '_',
            c => c,
        })
        .collect()
}

/// The job's vertices with inputs, ship strategies and chained operators (no metrics yet).
fn read_graph(job: &Value) -> anyhow::Result<Vec<VertexView>> {
    let (_, views) = read_job(job)?;
    let ids: Vec<String> = views.iter().map(|v| v.id.clone()).collect();
    let nodes = job["plan"]["nodes"].as_array().cloned().unwrap_or_default();
    let mut vertices: Vec<VertexView> = views
        .into_iter()
        .map(|v| {
            let inputs = nodes
                .iter()
                .find(|n| n["id"].as_str() == Some(v.id.as_str()))
                .and_then(|n| n["inputs"].as_array().cloned())
                .unwrap_or_default();
            let (mut upstream, mut ships) = (Vec::new(), Vec::new());
            for i in &inputs {
                if let Some(u) = ids
                    .iter()
                    .position(|id| Some(id.as_str()) == i["id"].as_str())
                {
                    upstream.push(u);
                    ships.push(i["ship_strategy"].as_str().unwrap_or("").to_string());
                }
            }
            VertexView {
                is_source: upstream.is_empty(),
                operators: v.name.split(" -> ").map(str::to_string).collect(),
                id: v.id,
                name: v.name,
                parallelism: v.parallelism,
                inputs: upstream,
                ship_strategies: ships,
                ..VertexView::default()
            }
        })
        .collect();
    for i in 0..vertices.len() {
        let consumed = vertices.iter().any(|d| d.inputs.contains(&i));
        vertices[i].is_sink = !consumed;
    }
    Ok(vertices)
}

/// One subtask's sample from its metric values (`{id, value}` list).
fn sample_of(
    values: &std::collections::HashMap<String, f64>,
    operators: &[String],
) -> SubtaskSample {
    let v = subtask_view(0, values);
    SubtaskSample {
        busy: v.busy,
        backpressured: v.backpressured,
        idle: v.idle,
        records_in: v.records_in,
        records_out: v.records_out,
        cpu: v.cpu,
        operator_busy: operators
            .iter()
            .filter_map(|op| {
                Some((
                    op.clone(),
                    *values.get(&format!("{}.{OPERATOR_BUSY}", scope(op)))?,
                ))
            })
            .collect(),
        state_access: None,
    }
}

fn snapshot(ep: &Endpoint, jid: &str, vertices: &[VertexView]) -> anyhow::Result<Snapshot> {
    let mut snap = Vec::with_capacity(vertices.len());
    for v in vertices {
        let mut names = SUBTASK_METRICS.to_string();
        for op in &v.operators {
            names.push_str(&format!(",{}.{OPERATOR_BUSY}", scope(op)));
        }
        let mut subs = Vec::with_capacity(v.parallelism);
        for n in 0..v.parallelism {
            let path = format!(
                "/jobs/{jid}/vertices/{}/subtasks/{n}/metrics?get={names}",
                v.id
            );
            let values = read_values(&ep.get_json(&path, REQUEST_TIMEOUT)?);
            subs.push(sample_of(&values, &v.operators));
        }
        snap.push(subs);
    }
    Ok(snap)
}

/// `/hot-keys` (a Sluice extension): `None` when the server does not have it (Flink: 404).
fn hot_keys(ep: &Endpoint, jid: &str, vid: &str) -> anyhow::Result<Option<Vec<HotKey>>> {
    match ep.get_json(
        &format!("/jobs/{jid}/vertices/{vid}/hot-keys"),
        REQUEST_TIMEOUT,
    ) {
        Ok(body) => Ok(Some(
            body["hot-keys"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| {
                    let key = match &k["key"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    Some(HotKey {
                        key,
                        share: k["share-of-vertex"].as_f64()?,
                    })
                })
                .collect(),
        )),
        Err(HttpError::Status { status: 404, .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn pct(ms: Option<f64>) -> String {
    ms.map_or_else(
        || "n/a".to_string(),
        |ms| format!("{:.0}%", (ms / 10.0).clamp(0.0, 100.0)),
    )
}

fn rate(v: Option<f64>) -> String {
    match v {
        None => "n/a".to_string(),
        Some(x) if x >= 1e6 => format!("{:.2}M/s", x / 1e6),
        Some(x) if x >= 1e3 => format!("{:.1}k/s", x / 1e3),
        Some(x) => format!("{x:.0}/s"),
    }
}

/// The per-subtask table, one block per vertex, columns aligned.
pub fn render_table(job: &JobView) -> String {
    let mut out = String::new();
    let show_cpu = job
        .vertices
        .iter()
        .flat_map(|v| &v.subtasks)
        .any(|s| s.cpu.is_some());
    for v in &job.vertices {
        let p = v.subtasks.len();
        for (i, s) in v.subtasks.iter().enumerate() {
            let label = format!("{} ({}/{p})", v.name, i + 1);
            let mut line = format!(
                "{label:<w$}  busy {:>4}  backpressured {:>4}  idle {:>4}",
                pct(Some(s.busy_ms())),
                pct(s.backpressured),
                pct(s.idle),
                w = job
                    .vertices
                    .iter()
                    .map(|v| v.name.chars().count() + 4 + 2 * digits(v.subtasks.len()))
                    .max()
                    .unwrap_or(0)
            );
            if show_cpu {
                line.push_str(&format!("  cpu {:>4}", pct(s.cpu)));
            }
            line.push_str(&format!(
                "  in {:>8}  out {:>8}",
                rate(s.records_in),
                rate(s.records_out)
            ));
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

fn digits(n: usize) -> usize {
    n.max(1).to_string().len()
}

/// The report after the table: verdict, evidence, fix, effect, unknowns.
pub fn render_diagnosis(d: &Diagnosis) -> String {
    let mut out = format!(
        "Verdict: {}  (confidence {:.0}%)\n",
        d.verdict(),
        d.confidence * 100.0
    );
    out.push_str("Evidence:\n");
    for e in &d.evidence {
        out.push_str(&format!("  - {e}\n"));
    }
    match &d.fix {
        Some(f) => {
            out.push_str(&format!("Fix: {}\n  {}\n", f.change, f.description));
        }
        None => out.push_str("Fix: none proposed\n"),
    }
    out.push_str(&format!("Expected effect: {}\n", d.expected_effect));
    if !d.undetermined.is_empty() {
        out.push_str("Could not determine:\n");
        for u in &d.undetermined {
            out.push_str(&format!("  - {u}\n"));
        }
    }
    out
}

/// The diagnosis as JSON.
pub fn diagnosis_json(d: &Diagnosis) -> Value {
    let hot_keys = match &d.cause {
        Cause::KeySkew { hot_keys } => hot_keys
            .iter()
            .map(|k| json!({"key": k.key, "share": k.share}))
            .collect(),
        _ => Vec::new(),
    };
    let change = |c: &PlanChange| match c {
        PlanChange::Parallelism {
            operator,
            parallelism,
            ship,
        } => {
            json!({"kind": "parallelism", "operator": operator, "parallelism": parallelism, "ship": ship})
        }
        PlanChange::TwoPhase { operator, buckets } => {
            json!({"kind": "two-phase", "operator": operator, "buckets": buckets})
        }
        PlanChange::AsyncIo { operator, capacity } => {
            json!({"kind": "async-io", "operator": operator, "capacity": capacity})
        }
    };
    json!({
        "verdict": d.verdict(),
        "bottleneck": d.bottleneck.as_ref().map(|b| json!({
            "vertex": b.vertex,
            "vertex-name": b.vertex_name,
            "operator": b.operator,
            "subtasks": b.subtasks,
        })),
        "cause": d.cause.name(),
        "hot-keys": hot_keys,
        "confidence": (d.confidence * 100.0).round() / 100.0,
        "evidence": d.evidence,
        "fix": d.fix.as_ref().map(|f| json!({
            "description": f.description,
            "change": f.change,
            "plan-change": f.plan_change.as_ref().map(change),
        })),
        "expected-effect": d.expected_effect,
        "undetermined": d.undetermined,
    })
}

pub fn doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let ep = Endpoint::parse(&args.url).map_err(anyhow::Error::msg)?;
    if !(args.window.is_finite() && args.window >= 0.0 && args.window <= 3600.0) {
        anyhow::bail!("--window must be between 0 and 3600 seconds");
    }
    let base = ep.base_url();
    let jid = pick_job(
        &ep.get_json("/jobs/overview", REQUEST_TIMEOUT)?,
        args.job.as_deref(),
        &base,
    )?;
    let job_json = ep.get_json(&format!("/jobs/{jid}"), REQUEST_TIMEOUT)?;
    let name = job_json["name"].as_str().unwrap_or("").to_string();
    let mut vertices = read_graph(&job_json)?;
    let started = Instant::now();
    let window = Duration::from_secs_f64(args.window);
    let mut samples = Vec::new();
    let mut k = 0u32;
    loop {
        samples.push(snapshot(&ep, &jid, &vertices)?);
        k += 1;
        let next = Duration::from_secs(k as u64);
        if next > window {
            break;
        }
        std::thread::sleep(next.saturating_sub(started.elapsed()));
    }
    let mut extra_unknown = None;
    for v in &mut vertices {
        v.hot_keys = hot_keys(&ep, &jid, &v.id)?;
        if v.hot_keys.is_none() {
            extra_unknown = Some("hot keys: not reported by this server".to_string());
        }
    }
    let job = JobView {
        vertices,
        available_cores: None,
    };
    let mut d = diagnose_window(&job, &samples);
    if let Some(u) = extra_unknown {
        if !d.undetermined.iter().any(|x| x.starts_with("hot keys")) {
            d.undetermined.push(u);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&diagnosis_json(&d))?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut averaged = job.clone();
    for (v, subs) in averaged.vertices.iter_mut().zip(average(&samples)) {
        v.subtasks = subs;
    }
    println!(
        "{name}  {jid}  {base}  ({} sample(s) over {}s)\n",
        samples.len(),
        args.window
    );
    print!("{}", render_table(&averaged));
    println!();
    print!("{}", render_diagnosis(&d));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/flink/flink-rest/skew/"
    );

    fn fixture(name: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}{name}")).unwrap())
            .unwrap()
    }

    #[test]
    fn reads_flinks_graph_and_diagnoses_it() {
        let mut vertices = read_graph(&fixture("job.json")).unwrap();
        assert_eq!(vertices[1].inputs, vec![0]);
        assert_eq!(vertices[1].ship_strategies, vec!["HASH"]);
        assert!(vertices[0].is_source && vertices[1].is_sink);
        assert_eq!(
            vertices[1].operators,
            ["sum-per-key", "counting-sink: Writer"]
        );
        let slugs = [
            "v0-source-generator-map",
            "v1-sum-per-key-counting-sink-writer",
        ];
        for (v, slug) in vertices.iter_mut().zip(slugs) {
            v.subtasks = (0..v.parallelism)
                .map(|n| {
                    let values = read_values(&fixture(&format!("{slug}-subtask{n}-metrics.json")));
                    sample_of(&values, &v.operators)
                })
                .collect();
        }
        let job = JobView {
            vertices,
            available_cores: None,
        };
        let d = sluice_doctor::diagnose(&job);
        let j = diagnosis_json(&d);
        assert_eq!(j["cause"], "key-skew");
        assert_eq!(j["bottleneck"]["subtasks"], json!([1]));
        assert_eq!(j["fix"]["plan-change"]["kind"], "two-phase");
        let table = render_table(&job);
        assert!(
            table.contains("sum-per-key -> counting-sink: Writer (2/2)  busy 100%  backpressured   0%  idle   0%"),
            "{table}"
        );
        let report = render_diagnosis(&d);
        assert!(
            report.starts_with("Verdict: key skew at `sum-per-key -> counting-sink: Writer`"),
            "{report}"
        );
    }

    #[test]
    fn operator_scopes_follow_flink() {
        assert_eq!(scope("Sink: final-sums"), "Sink__final-sums");
    }
}
