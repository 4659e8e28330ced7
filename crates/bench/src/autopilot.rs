//! `sluice bench --autopilot`: the autopilot on live jobs, each case a fresh `sluice run …
//! --autopilot` process whose first decision is read from its own `GET /jobs/:jid/autopilot`
//! once judged. The figures are the autopilot's own windows (same run, before and after the
//! change), so the ratio does not drift with the machine as absolute rates do.
//!
//! | case | the job | expected |
//! |---|---|---|
//! | under-provisioned | an expensive map chained behind the source at parallelism 1 | raised behind REBALANCE, kept |
//! | source-ceiling | an expensive source whose input is one split that cannot be cut | raised, ineffective, rolled back |
//! | skew | the skew job at parallelism 2 with checkpoints | two-phase aggregation on the hot key |

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{human, BenchCases, BenchError};

type Result<T> = std::result::Result<T, BenchError>;

/// How long one case may take before its decision is judged (a 5 s window, 2 s to settle, a
/// 5 s window again, the change itself, and the job's start).
const CASE_DEADLINE: Duration = Duration::from_secs(180);
const HTTP: Duration = Duration::from_secs(10);

struct AutopilotCase {
    name: &'static str,
    args: &'static [&'static str],
}

const CASES: &[AutopilotCase] = &[
    AutopilotCase {
        name: "under-provisioned",
        args: &["scenario", "under-provisioned", "-p", "1"],
    },
    AutopilotCase {
        name: "source-ceiling",
        args: &["scenario", "source-ceiling", "--splits", "1", "-p", "1"],
    },
    AutopilotCase {
        name: "skew",
        args: &[
            "skew",
            "--records",
            "1000000000000",
            "-p",
            "2",
            "--checkpoint-interval",
            "1000",
        ],
    },
];

/// A `sluice run` child, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One case's first judged decision and the process's cost.
struct Outcome {
    outcome: String,
    change: String,
    before: f64,
    after: f64,
    pause_ms: Option<f64>,
    /// Seconds from the job's start to the diagnosis the change was decided on.
    decided_s: f64,
    /// Process CPU per record the sources wrote, in the window before the change and in the
    /// last window before the verdict.
    cpu_ns_per_record: (Option<f64>, Option<f64>),
    rss_kib: Option<u64>,
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// CPU ns per record between the first and last samples in `[from, to]` (ms) that belong to one
/// plan (records only grow: a change restarts the counters).
fn cpu_per_record(history: &[(f64, f64, f64)], from: f64, to: f64) -> Option<f64> {
    let inside: Vec<&(f64, f64, f64)> = history
        .iter()
        .filter(|(t, _, _)| (from..=to).contains(t))
        .collect();
    let last = *inside.last()?;
    let first = inside.iter().rev().take_while(|s| s.2 <= last.2).last()?;
    let records = last.2 - first.2;
    (records > 0.0).then(|| (last.1 - first.1) / records)
}

/// CPU time (user + system) of process `pid`, ns.
fn cpu_ns(pid: u32) -> Option<f64> {
    crate::procstat::cpu_time_ns_of(&pid.to_string()).map(|n| n as f64)
}

/// Peak RSS (VmHWM) of process `pid`, KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    crate::procstat::peak_rss_kib_of(&pid.to_string())
}

/// Records the job's sources wrote so far (their vertices' `write-records`).
fn source_records(job: &Value) -> Option<f64> {
    let vertices = job["vertices"].as_array()?;
    let sum: f64 = vertices
        .iter()
        .filter(|v| v["name"].as_str().is_some_and(|n| n.starts_with("Source")))
        .filter_map(|v| v["metrics"]["write-records"].as_f64())
        .sum();
    (sum > 0.0).then_some(sum)
}

/// The REST API of a case's process: plain HTTP on loopback, a timeout per request.
struct Endpoint {
    agent: ureq::Agent,
    url: String,
}

impl Endpoint {
    fn new(url: String) -> Endpoint {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(HTTP))
            .build();
        Endpoint {
            agent: config.into(),
            url,
        }
    }

    /// `GET path` as JSON; `None` for any failure (the caller polls again).
    fn get_json(&self, path: &str) -> Option<Value> {
        let mut r = self.agent.get(&format!("{}{path}", self.url)).call().ok()?;
        let text = r.body_mut().read_to_string().ok()?;
        serde_json::from_str(&text).ok()
    }
}

fn start(exe: &std::path::Path, args: &[&str]) -> Result<(Running, Endpoint)> {
    let mut child = Command::new(exe)
        .arg("run")
        .args(args)
        .args(["--autopilot", "--rest-port", "0", "--no-progress"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| BenchError::Start("sluice run".into(), e))?;
    let stderr = child.stderr.take();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Some(stderr) = stderr else { return };
        for line in BufReader::new(stderr)
            .lines()
            .map_while(std::result::Result::ok)
        {
            if let Some(rest) = line.strip_prefix("REST API: ") {
                let url = rest.split_whitespace().next().unwrap_or("").to_string();
                let _ = tx.send(url.trim_end_matches('/').to_string());
            }
        }
    });
    let running = Running(child);
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| BenchError::Failed("the job did not announce its REST API".into()))?;
    Ok((running, Endpoint::new(url)))
}

fn run_case(exe: &std::path::Path, case: &AutopilotCase) -> Result<Outcome> {
    let (running, ep) = start(exe, case.args)?;
    let deadline = Instant::now() + CASE_DEADLINE;
    let (jid, started_ms) = loop {
        let o = ep.get_json("/jobs/overview");
        let j = o.as_ref().map(|o| &o["jobs"][0]);
        if let Some((jid, t)) =
            j.and_then(|j| Some((j["jid"].as_str()?.to_string(), j["start-time"].as_f64()?)))
        {
            break (jid, t);
        }
        if Instant::now() >= deadline {
            return Err(BenchError::Failed(format!("{}: no job", case.name)));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let pid = running.0.id();
    // (ms since the epoch, process CPU ns, records the sources wrote in the plan running then).
    let mut history: Vec<(f64, f64, f64)> = Vec::new();
    let d = loop {
        let job = ep.get_json(&format!("/jobs/{jid}")).unwrap_or_default();
        if let (Some(c), Some(r)) = (cpu_ns(pid), source_records(&job)) {
            history.push((now_ms(), c, r));
        }
        let log = ep
            .get_json(&format!("/jobs/{jid}/autopilot"))
            .unwrap_or_default();
        let d = log["decisions"][0].clone();
        if let Some("kept" | "rolled-back" | "failed" | "skipped" | "advised") =
            d["outcome"].as_str()
        {
            break d;
        }
        if Instant::now() >= deadline {
            return Err(BenchError::Failed(format!(
                "{}: no judged decision in {} s: {log}",
                case.name,
                CASE_DEADLINE.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // `time` is when the diagnosis that led to the change was complete (the end of its
    // window), `decided-time` when the outcome was settled (the end of the re-measurement).
    let judged_ms = now_ms();
    let diagnosed_ms = d["time"].as_f64().unwrap_or(f64::NAN);
    let window_ms = sluice_autopilot::Policy::default().window.as_secs_f64() * 1e3;
    let cpu_before = cpu_per_record(&history, diagnosed_ms - window_ms, diagnosed_ms);
    let cpu_after = cpu_per_record(&history, judged_ms - window_ms, judged_ms);
    let pause_ms = d["notes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str()?.split("pause ").nth(1)?.strip_suffix(" ms"))
        .find_map(|p| p.parse().ok());
    Ok(Outcome {
        outcome: d["outcome"].as_str().unwrap_or("?").to_string(),
        change: d["change-text"].as_str().unwrap_or("").to_string(),
        before: d["before"]["throughput"].as_f64().unwrap_or(f64::NAN),
        after: d["after"]["throughput"].as_f64().unwrap_or(f64::NAN),
        decided_s: (diagnosed_ms - started_ms) / 1e3,
        pause_ms,
        cpu_ns_per_record: (cpu_before, cpu_after),
        rss_kib: rss_kib(pid),
    })
}

/// Runs every case `a.runs` times; prints each run and, per case, the median after/before ratio.
pub fn bench_autopilot(exe: &std::path::Path, a: &BenchCases) -> Result<()> {
    println!(
        "{:<18} {:<12} {:>11} {:>11} {:>7} {:>10} {:>9} {:>17} {:>10}  change",
        "case",
        "outcome",
        "before/s",
        "after/s",
        "ratio",
        "decided s",
        "pause ms",
        "CPU-ns/rec bef/aft",
        "peak RSS"
    );
    for case in CASES {
        let mut ratios = Vec::new();
        for _ in 0..a.runs.max(1) {
            let o = run_case(exe, case)?;
            let ratio = o.after / o.before;
            println!(
                "{:<18} {:<12} {:>11} {:>11} {:>7.2} {:>10.1} {:>9} {:>17} {:>10}  {}",
                case.name,
                o.outcome,
                human(o.before),
                human(o.after),
                ratio,
                o.decided_s,
                o.pause_ms.map_or("-".into(), |p| format!("{p:.0}")),
                {
                    let f = |c: Option<f64>| c.map_or("-".into(), |c| format!("{c:.0}"));
                    format!("{}/{}", f(o.cpu_ns_per_record.0), f(o.cpu_ns_per_record.1))
                },
                o.rss_kib
                    .map_or("-".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
                o.change
            );
            if ratio.is_finite() {
                ratios.push(ratio);
            }
        }
        if !ratios.is_empty() {
            ratios.sort_by(f64::total_cmp);
            println!(
                "{:<18} after/before throughput: median {:.2} [{:.2}, {:.2}] over {} run(s)",
                case.name,
                ratios[ratios.len() / 2],
                ratios[0],
                ratios[ratios.len() - 1],
                ratios.len()
            );
        }
    }
    Ok(())
}
