//! `sluice doctor`: samples a running job's Flink-compatible REST API over a window, builds a
//! [`sluice_doctor::JobView`] and prints the doctor's diagnosis (or `--json`). Uses Flink's paths and
//! metric names, plus Sluice's extras when the server has them (`cpuTimeMsPerSecond`,
//! `<operator>.busyTimeMsPerSecond`, `/hot-keys`), so it works against Sluice and Apache Flink alike.
//!
//! The REST answers come through one interface, [`RestSource`], with two implementations: a live
//! server ([`LiveSource`]) and a directory of saved answers ([`DirSource`], `--from-dir`, in the
//! layout of `tests/fixtures/flink/flink-rest/skew/`). `--save DIR` wraps the live source in a
//! [`SavingSource`] that writes every answer it reads into that layout (the last sample wins, so
//! the directory holds one snapshot).
//!
//! `sluice doctor fix <job> [job flags]` runs a built-in job live, diagnoses it through its own REST
//! server, turns the proposed plan change into a [`sluice_graph::fixer::Fix`], shows the plan diff,
//! then runs the original and the fixed job on the same bounded input and compares their output.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;
use sluice_doctor::flink_rest::{self, checkpoint_stats, read_graph, read_hot_keys, slot_cap};
use sluice_doctor::CheckpointStats;
use sluice_doctor::{
    average, checkpoint_advice, diagnose_window, Diagnosis, HotKey, JobView, PlanChange, Snapshot,
    VertexView,
};
use sluice_graph::fixer::{apply, Fix, PlanDiff};

use crate::args::{EnvArgs, JobCmd};
use crate::http_client::{Endpoint, HttpError};
use crate::run::{build_job, BuiltJob};
use crate::top::pick_job;

/// Arguments of `sluice doctor`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DoctorArgs {
    /// REST API of the job: Sluice's, or an Apache Flink JobManager's (http:// or https://).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    pub url: String,
    #[command(flatten)]
    pub client: crate::http_client::ClientArgs,
    /// Job id; default: the first RUNNING job, else the most recently started one.
    #[arg(long)]
    pub job: Option<String>,
    /// Seconds to sample over (one sample per second, averaged); default 10.
    #[arg(long, value_name = "SECS")]
    pub window: Option<f64>,
    /// Print the diagnosis as JSON.
    #[arg(long)]
    pub json: bool,
    /// Diagnose a directory of saved REST answers instead of a live server (one snapshot; the
    /// layout of tests/fixtures/flink/flink-rest/skew/: jobs-overview.json, job.json,
    /// vN-<name>-subtaskK-metrics.json, ...).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["url", "save", "window"])]
    pub from_dir: Option<PathBuf>,
    /// Also write the REST answers read into DIR, in the `--from-dir` layout (the last sample).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Do not read the bottleneck's flame graphs (they take the server ~5 s to sample; on
    /// Flink they need rest.flamegraph.enabled: true).
    #[arg(long)]
    pub no_flame_graphs: bool,
    /// Apply the fix to the running job (the autopilot): diagnose, apply, re-measure, keep the
    /// change only if the bottleneck's rate and the job's throughput rose, else roll it back.
    /// Sluice: through POST /jobs/:jid/doctor/apply; Flink: a parallelism through PUT
    /// /jobs/:jid/resource-requirements (adaptive scheduler), anything else printed as the code
    /// change to make. Exit status 2 when the fix could only be advised.
    #[arg(long, conflicts_with_all = ["from_dir", "save", "json"])]
    pub apply: bool,
    /// With --apply: keep deciding (cooldown between changes) until interrupted.
    #[arg(long, requires = "apply")]
    pub watch: bool,
    #[command(subcommand)]
    pub action: Option<DoctorAction>,
}

#[derive(clap::Subcommand, Debug)]
pub enum DoctorAction {
    /// Run a built-in job, diagnose it live, apply the proposed fix and prove it: plan diff, the
    /// original and the fixed job run on the same bounded input, identical output, busy shares.
    Fix(DoctorFixArgs),
}

#[derive(clap::Args, Debug)]
pub struct DoctorFixArgs {
    /// The job and its flags, as `sluice run` takes them (`--records` bounds the compared runs).
    #[command(subcommand)]
    pub job: JobCmd,
    /// Seconds to sample the live run over before diagnosing.
    #[arg(long, global = true, default_value_t = 2.0, value_name = "SECS")]
    pub sample_window: f64,
    /// Write the fixed run's output (the skew job's final sums as CSV `key,sum`, sorted by
    /// key) to FILE, e.g. to check it against an independent oracle.
    #[arg(long, global = true, value_name = "FILE")]
    pub fixed_output: Option<std::path::PathBuf>,
}

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Where REST answers come from
// ---------------------------------------------------------------------------------------------

/// A source of REST answers, by Flink REST path (with its query).
pub trait RestSource {
    /// The answer to `GET path`; `Ok(None)` when there is no such resource (404, or no file).
    fn get(&self, path: &str) -> anyhow::Result<Option<Value>>;
    /// Where the answers come from, for the report's header.
    fn describe(&self) -> String;
    /// Whether repeated reads can change (a live server), so sampling over a window makes sense.
    fn is_live(&self) -> bool;
}

/// A live REST API over HTTP.
pub struct LiveSource {
    ep: Endpoint,
}

impl LiveSource {
    /// A loopback Sluice server with the default client settings.
    pub fn new(url: &str) -> anyhow::Result<LiveSource> {
        LiveSource::with(url, &crate::http_client::ClientArgs::default())
    }

    /// A server reached with `client`'s TLS trust and token.
    pub fn with(url: &str, client: &crate::http_client::ClientArgs) -> anyhow::Result<LiveSource> {
        Ok(LiveSource {
            ep: Endpoint::with(url, client).map_err(anyhow::Error::msg)?,
        })
    }
}

impl RestSource for LiveSource {
    fn get(&self, path: &str) -> anyhow::Result<Option<Value>> {
        match self.ep.get_json(path, REQUEST_TIMEOUT) {
            Ok(v) => Ok(Some(v)),
            Err(HttpError::Status { status: 404, .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
    fn describe(&self) -> String {
        self.ep.base_url()
    }
    fn is_live(&self) -> bool {
        true
    }
}

/// A vertex's file-name stem: `v<position>-<name slug>` (`v1-sum-per-key-counting-sink-writer`).
pub fn vertex_stem(position: usize, name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    format!("v{position}-{}", slug.trim_end_matches('-'))
}

/// Vertex id → file stem, from `/jobs/:id` (positions in its `vertices` list).
fn stems_of(job: &Value) -> HashMap<String, String> {
    job["vertices"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            Some((
                v["id"].as_str()?.to_string(),
                vertex_stem(i, v["name"].as_str().unwrap_or("")),
            ))
        })
        .collect()
}

/// The file holding the answer to `path` in the saved layout; `None` for paths it has no file for.
pub fn file_for(path: &str, stems: &HashMap<String, String>) -> Option<String> {
    let route = path.split('?').next().unwrap_or(path);
    let seg: Vec<&str> = route.trim_matches('/').split('/').collect();
    let stem = |vid: &str| stems.get(vid).cloned();
    Some(match seg.as_slice() {
        ["jobs", "overview"] => "jobs-overview.json".to_string(),
        ["jobs", _] => "job.json".to_string(),
        ["jobs", _, "vertices", vid] => format!("{}.json", stem(vid)?),
        ["jobs", _, "vertices", vid, "subtasks", "metrics"] => {
            format!("{}-subtasks-metrics-aggregated.json", stem(vid)?)
        }
        ["jobs", _, "vertices", vid, "subtasks", n, "metrics"] => {
            n.parse::<usize>().ok()?;
            format!("{}-subtask{n}-metrics.json", stem(vid)?)
        }
        ["jobs", _, "vertices", vid, "hot-keys"] => format!("{}-hot-keys.json", stem(vid)?),
        ["jobs", _, "vertices", vid, "flamegraph"] => {
            // `…-flamegraph-on_cpu.json`, `…-flamegraph-off_cpu-subtask1.json`: one per query.
            let query = path.split_once('?').map_or("", |(_, q)| q);
            let param = |k: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            };
            let ty = param("type").unwrap_or("full");
            if !["full", "on_cpu", "off_cpu"].contains(&ty) {
                return None;
            }
            match param("subtaskindex") {
                Some(n) => {
                    n.parse::<usize>().ok()?;
                    format!("{}-flamegraph-{ty}-subtask{n}.json", stem(vid)?)
                }
                None => format!("{}-flamegraph-{ty}.json", stem(vid)?),
            }
        }
        ["jobs", _, "checkpoints"] => "job-checkpoints.json".to_string(),
        ["jobs", _, "checkpoints", "config"] => "job-checkpoints-config.json".to_string(),
        ["jobs", _, "config"] => "job-config.json".to_string(),
        ["jobs", _, "jobmanager", "config"] => "job-jobmanager-config.json".to_string(),
        _ => return None,
    })
}

/// Saved REST answers in a directory (`--from-dir`): one snapshot.
pub struct DirSource {
    dir: PathBuf,
    stems: HashMap<String, String>,
}

impl DirSource {
    pub fn open(dir: &Path) -> anyhow::Result<DirSource> {
        let job = read_json_file(&dir.join("job.json")).with_context(|| {
            format!(
                "{} is not a directory of saved REST answers (it needs job.json, \
                 jobs-overview.json and vN-<vertex>-subtaskK-metrics.json files)",
                dir.display()
            )
        })?;
        Ok(DirSource {
            dir: dir.to_path_buf(),
            stems: stems_of(&job),
        })
    }
}

fn read_json_file(path: &Path) -> anyhow::Result<Value> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    crate::http_client::parse_json(&bytes)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))
}

impl RestSource for DirSource {
    fn get(&self, path: &str) -> anyhow::Result<Option<Value>> {
        let Some(file) = file_for(path, &self.stems) else {
            return Ok(None);
        };
        let full = self.dir.join(file);
        if !full.exists() {
            return Ok(None);
        }
        read_json_file(&full).map(Some)
    }
    fn describe(&self) -> String {
        format!("saved answers in {}", self.dir.display())
    }
    fn is_live(&self) -> bool {
        false
    }
}

/// Reads through `inner` and writes every answer into `dir` in the `--from-dir` layout.
pub struct SavingSource<'a> {
    inner: &'a dyn RestSource,
    dir: PathBuf,
    stems: Mutex<HashMap<String, String>>,
}

impl<'a> SavingSource<'a> {
    pub fn new(inner: &'a dyn RestSource, dir: &Path) -> anyhow::Result<SavingSource<'a>> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(SavingSource {
            inner,
            dir: dir.to_path_buf(),
            stems: Mutex::default(),
        })
    }
}

impl RestSource for SavingSource<'_> {
    fn get(&self, path: &str) -> anyhow::Result<Option<Value>> {
        let answer = self.inner.get(path)?;
        if let Some(v) = &answer {
            let mut stems = self.stems.lock().unwrap_or_else(|p| p.into_inner());
            if file_for(path, &HashMap::new()).as_deref() == Some("job.json") {
                *stems = stems_of(v);
            }
            if let Some(file) = file_for(path, &stems) {
                let full = self.dir.join(file);
                std::fs::write(&full, serde_json::to_string(v)?)
                    .with_context(|| format!("writing {}", full.display()))?;
            }
        }
        Ok(answer)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn is_live(&self) -> bool {
        self.inner.is_live()
    }
}

fn required(src: &dyn RestSource, path: &str) -> anyhow::Result<Value> {
    src.get(path)?
        .with_context(|| format!("{}: no answer for {path}", src.describe()))
}

fn snapshot(src: &dyn RestSource, jid: &str, vertices: &[VertexView]) -> anyhow::Result<Snapshot> {
    let mut snap = Vec::with_capacity(vertices.len());
    for v in vertices {
        let mut subs = Vec::with_capacity(v.parallelism);
        for n in 0..v.parallelism {
            let path = flink_rest::subtask_metrics_path(jid, v, n);
            subs.push(flink_rest::subtask_sample(
                &required(src, &path)?,
                &v.operators,
            ));
        }
        snap.push(subs);
    }
    Ok(snap)
}

/// `/hot-keys` (a Sluice extension): `None` when the source does not have it (Flink: 404).
fn hot_keys(
    src: &dyn RestSource,
    jid: &str,
    v: &VertexView,
) -> anyhow::Result<Option<Vec<HotKey>>> {
    Ok(src
        .get(&flink_rest::hot_keys_path(jid, v))?
        .map(|body| read_hot_keys(&body)))
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

/// The diagnosis as JSON ([`sluice_doctor::to_json`]).
pub fn diagnosis_json(d: &Diagnosis) -> Value {
    sluice_doctor::to_json(d)
}

/// A diagnosis with what it was made from.
pub struct Report {
    pub job_name: String,
    pub job_id: String,
    pub source: String,
    pub samples: usize,
    pub window: f64,
    /// The job with each subtask's samples averaged over the window.
    pub job: JobView,
    pub diagnosis: Diagnosis,
    /// Advice on the checkpoint mode when the server reports checkpoint statistics.
    pub checkpoint_advice: Option<String>,
}

impl Report {
    /// The text report: header, per-subtask table, verdict, evidence, fix, unknowns.
    pub fn text(&self) -> String {
        let over = if self.samples > 1 {
            format!("{} samples over {}s", self.samples, self.window)
        } else {
            "1 sample".to_string()
        };
        let mut text = format!(
            "{}  {}  {}  ({over})\n\n{}\n{}",
            self.job_name,
            self.job_id,
            self.source,
            render_table(&self.job),
            render_diagnosis(&self.diagnosis)
        );
        if let Some(a) = &self.checkpoint_advice {
            text.push_str(&format!("\nAlso: {a}\n"));
        }
        text
    }
}

/// Flink's checkpoint statistics and configuration, when the server has them.
/// The job's own setting decides whether enabling buffer debloating is advice worth giving
/// (`/jobs/:id/jobmanager/config` on Flink, the `user-config` of `/jobs/:id/config` on Sluice);
/// unknown counts as off, Flink's default.
fn read_checkpoint_stats(src: &dyn RestSource, jid: &str) -> Option<CheckpointStats> {
    let stats = src.get(&format!("/jobs/{jid}/checkpoints")).ok()??;
    let config = src.get(&format!("/jobs/{jid}/checkpoints/config")).ok()??;
    let job_config = src.get(&format!("/jobs/{jid}/config")).ok().flatten();
    let jm_config = src
        .get(&format!("/jobs/{jid}/jobmanager/config"))
        .ok()
        .flatten();
    Some(CheckpointStats {
        buffer_debloat: flink_rest::buffer_debloat_enabled(job_config.as_ref(), jm_config.as_ref())
            .unwrap_or(false),
        ..checkpoint_stats(&stats, &config)
    })
}

/// Samples a job through `src` (one sample per second over `window` seconds when the source is
/// live, else one) and diagnoses it from its metrics alone.
pub fn sample_and_diagnose(
    src: &dyn RestSource,
    job: Option<&str>,
    window: f64,
) -> anyhow::Result<Report> {
    // `demo` and `doctor fix` diagnose a built-in job to prove a plan change: no profiling.
    sample_and_diagnose_with(src, job, window, true)
}

/// How long the doctor waits for a server's flame graph sampling run.
const FLAME_GRAPH_WAIT: Duration = Duration::from_secs(30);

/// The flame graphs (on- and off-CPU) of `subtasks` of a vertex, merged; `Err` says why there
/// are none; `Ok(None)` when saved answers (`--from-dir`) hold none.
fn bottleneck_profile(
    src: &dyn RestSource,
    jid: &str,
    vid: &str,
    subtasks: &[usize],
    parallelism: usize,
) -> anyhow::Result<Option<sluice_doctor::VertexProfile>> {
    use crate::profile_cmd::{fetch_flame_graph, FlameType};
    // Every subtask at once when all are busy (one request per type); else each busy one.
    let picks: Vec<Option<usize>> = if subtasks.is_empty() || subtasks.len() >= parallelism {
        vec![None]
    } else {
        subtasks.iter().map(|&i| Some(i)).collect()
    };
    if !src.is_live() {
        let mut probe = format!("/jobs/{jid}/vertices/{vid}/flamegraph?type=on_cpu");
        if let Some(Some(i)) = picks.first() {
            probe.push_str(&format!("&subtaskindex={i}"));
        }
        if src.get(&probe)?.is_none() {
            return Ok(None);
        }
    }
    let mut profile = sluice_doctor::VertexProfile::default();
    for pick in picks {
        // Saved answers are final: asking again would not change them.
        let wait = if src.is_live() {
            FLAME_GRAPH_WAIT
        } else {
            Duration::ZERO
        };
        let (on, _) = fetch_flame_graph(src, jid, vid, FlameType::OnCpu, pick, wait)?;
        let (off, _) = fetch_flame_graph(src, jid, vid, FlameType::OffCpu, pick, wait)?;
        profile.on_cpu.merge(&on);
        profile.off_cpu.merge(&off);
    }
    Ok(Some(profile))
}

/// Like [`sample_and_diagnose`]; unless `no_flame_graphs`, a live source's bottleneck is then
/// profiled (its busy subtasks' flame graphs) and diagnosed again with them as evidence.
pub fn sample_and_diagnose_with(
    src: &dyn RestSource,
    job: Option<&str>,
    window: f64,
    no_flame_graphs: bool,
) -> anyhow::Result<Report> {
    if !(window.is_finite() && (0.0..=3600.0).contains(&window)) {
        anyhow::bail!("--window must be between 0 and 3600 seconds");
    }
    let window = if src.is_live() { window } else { 0.0 };
    let jid = pick_job(&required(src, "/jobs/overview")?, job, &src.describe())?;
    let job_json = required(src, &format!("/jobs/{jid}"))?;
    let name = job_json["name"].as_str().unwrap_or("").to_string();
    let mut vertices = read_graph(&job_json)?;
    let started = Instant::now();
    let span = Duration::from_secs_f64(window);
    let mut samples = Vec::new();
    let mut k = 0u32;
    loop {
        samples.push(snapshot(src, &jid, &vertices)?);
        k += 1;
        let next = Duration::from_secs(k as u64);
        if next > span {
            break;
        }
        std::thread::sleep(next.saturating_sub(started.elapsed()));
    }
    let mut extra_unknown = None;
    for v in &mut vertices {
        // Flink's aggregated view, kept for `--save` (the doctor itself reads the subtasks).
        let _ = src.get(&format!(
            "/jobs/{jid}/vertices/{}/subtasks/metrics?get=busyTimeMsPerSecond,\
             backPressuredTimeMsPerSecond,idleTimeMsPerSecond",
            v.id
        ));
        let hot = hot_keys(src, &jid, v)?;
        v.hot_keys = hot;
        if v.hot_keys.is_none() {
            extra_unknown = Some("hot keys: not reported by this server".to_string());
        }
    }
    // On a Flink cluster the slots cap the parallelism a fix may propose; Sluice has no cap.
    let available_cores = src
        .get("/overview")
        .ok()
        .flatten()
        .and_then(|o| slot_cap(&o));
    let job = JobView {
        vertices,
        available_cores,
    };
    let mut job = job;
    let mut d = diagnose_window(&job, &samples);
    let mut flame_note = None;
    if let (Some(b), false) = (d.bottleneck.clone(), no_flame_graphs) {
        let v = &job.vertices[b.vertex];
        match bottleneck_profile(src, &jid, &v.id.clone(), &b.subtasks, v.parallelism) {
            Ok(Some(p)) => {
                job.vertices[b.vertex].profile = Some(p);
                d = diagnose_window(&job, &samples);
            }
            Ok(None) => {}
            Err(e) => flame_note = Some(format!("flame graphs: {e:#}")),
        }
    }
    if let Some(n) = flame_note {
        d.undetermined.push(n);
    }
    if let Some(u) = extra_unknown {
        if !d.undetermined.iter().any(|x| x.starts_with("hot keys")) {
            d.undetermined.push(u);
        }
    }
    let mut averaged = job;
    for (v, subs) in averaged.vertices.iter_mut().zip(average(&samples)) {
        v.subtasks = subs;
    }
    let checkpoint_advice =
        read_checkpoint_stats(src, &jid).and_then(|c| checkpoint_advice(&c, &averaged));
    Ok(Report {
        job_name: name,
        job_id: jid,
        source: src.describe(),
        samples: samples.len(),
        window,
        job: averaged,
        diagnosis: d,
        checkpoint_advice,
    })
}

pub fn doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    if let Some(DoctorAction::Fix(f)) = args.action {
        if args.json {
            anyhow::bail!("`doctor fix` prints text only; drop --json");
        }
        return doctor_fix(&f.job, f.sample_window, f.fixed_output.as_deref());
    }
    if args.apply {
        let (src, jid, act, engine) =
            crate::autopilot_cmd::connect(&args.url, &args.client, args.job.as_deref())?;
        println!("autopilot on {engine:?} job {jid} at {}", src.describe());
        let opts = crate::autopilot_cmd::LoopOptions {
            watch: args.watch,
            window: args.window,
            no_flame_graphs: args.no_flame_graphs,
            stop: None,
        };
        let out =
            crate::autopilot_cmd::run_loop(&src, &jid, act.as_ref(), &opts, &|l| println!("{l}"))?;
        return Ok(if out.advised {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        });
    }
    let window = args.window.unwrap_or(10.0);
    let report = match (&args.from_dir, &args.save) {
        (Some(dir), _) => sample_and_diagnose_with(
            &DirSource::open(dir)?,
            args.job.as_deref(),
            0.0,
            args.no_flame_graphs,
        )?,
        (None, Some(dir)) => {
            let live = LiveSource::with(&args.url, &args.client)?;
            let saving = SavingSource::new(&live, dir)?;
            let r = sample_and_diagnose_with(
                &saving,
                args.job.as_deref(),
                window,
                args.no_flame_graphs,
            )?;
            eprintln!(
                "saved the REST answers of the last sample to {}",
                dir.display()
            );
            r
        }
        (None, None) => sample_and_diagnose_with(
            &LiveSource::with(&args.url, &args.client)?,
            args.job.as_deref(),
            window,
            args.no_flame_graphs,
        )?,
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&{
                let mut j = diagnosis_json(&report.diagnosis);
                j["checkpoint-advice"] = report.checkpoint_advice.clone().into();
                j
            })?
        );
    } else {
        print!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// doctor fix: diagnose a built-in job live, fix its plan, prove the fix
// ---------------------------------------------------------------------------------------------

fn env_args(cmd: &mut JobCmd) -> Option<&mut EnvArgs> {
    #[allow(unreachable_patterns)]
    match cmd {
        JobCmd::Skew(a) => Some(&mut a.env),
        JobCmd::Passthrough(a) => Some(&mut a.env),
        JobCmd::Scenario(a) => Some(&mut a.env),
    }
}

fn records_mut(cmd: &mut JobCmd) -> Option<&mut u64> {
    #[allow(unreachable_patterns)]
    match cmd {
        JobCmd::Skew(a) => Some(&mut a.records),
        JobCmd::Passthrough(a) => Some(&mut a.records),
        JobCmd::Scenario(a) => Some(&mut a.records),
    }
}

/// A running job with its REST API up on a free port of 127.0.0.1.
pub struct LiveJob {
    pub url: String,
    handle: Option<sluice_graph::JobHandle>,
    _server: sluice_rest::RestServer,
}

impl LiveJob {
    /// Starts `cmd` with fast metrics (0.2 s updates, 1 s window) and, when it has a record count,
    /// effectively unbounded input (it runs until [`LiveJob::stop`]).
    pub fn start(cmd: &JobCmd) -> anyhow::Result<LiveJob> {
        let mut cmd = cmd.clone();
        if let Some(env) = env_args(&mut cmd) {
            env.metrics_interval = 0.2;
            env.metrics_window = 1.0;
        }
        if let Some(r) = records_mut(&mut cmd) {
            *r = 100_000_000_000;
        }
        let (env, _job, _) = build_job(&cmd)?;
        let registry = std::sync::Arc::new(sluice_rest::JobRegistry::new());
        let server = sluice_rest::serve(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            registry.clone(),
        )
        .context("starting the REST API")?;
        let handle = env.launch()?;
        registry.register(handle.monitor());
        Ok(LiveJob {
            url: format!("http://{}", server.local_addr()),
            handle: Some(handle),
            _server: server,
        })
    }

    /// Cancels the job and waits for its threads.
    pub fn stop(mut self) {
        if let Some(h) = self.handle.take() {
            h.cancel();
            let _ = h.wait();
        }
    }
}

impl Drop for LiveJob {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.cancel();
            let _ = h.wait();
        }
    }
}

/// How long the metric window needs to fill after a start with fast metrics.
pub const WARM_UP: Duration = Duration::from_millis(1200);

/// The fixer's form of the doctor's plan change.
pub fn to_fix(change: &PlanChange) -> anyhow::Result<Fix> {
    sluice::live::plan::to_fix(change).map_err(anyhow::Error::msg)
}

/// A job's output, for comparing the original and the fixed run.
#[derive(Debug, PartialEq)]
pub enum JobOutput {
    /// The skew job's final sum per key.
    Sums(BTreeMap<i64, i64>),
    /// Records the sink discarded.
    Count(u64),
    /// What a table sink left in its table: key → value.
    Table(BTreeMap<i64, i64>),
    /// What the `blocking` scenario's lookup join emitted: digests in order per subtask (equal
    /// = identical output) and as a multiset.
    Lookup(sluice_jobs::blocking::LookupDigest),
}

impl JobOutput {
    pub fn describe(&self) -> String {
        match self {
            JobOutput::Sums(s) => format!("{} keys' final sums", s.len()),
            JobOutput::Count(n) => format!("{n} records at the sink"),
            JobOutput::Table(t) => format!("the table's {} rows", t.len()),
            JobOutput::Lookup(d) => format!(
                "the {} looked-up records (in order on each of {} subtasks)",
                d.multiset.1,
                d.ordered.len()
            ),
        }
    }
}

/// One subtask's share of its life spent busy, from the final metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct BusyShare {
    pub vertex: String,
    pub subtask: usize,
    pub parallelism: usize,
    pub share: f64,
}

impl std::fmt::Display for BusyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>3.0}%  {} ({}/{})",
            100.0 * self.share,
            self.vertex,
            self.subtask + 1,
            self.parallelism
        )
    }
}

/// A bounded run's figures.
pub struct BoundedRun {
    pub output: Option<JobOutput>,
    pub wall: Duration,
    /// `[vertex][subtask]` busy shares (accumulated busy / lifetime).
    pub busy: Vec<Vec<BusyShare>>,
}

impl BoundedRun {
    /// The busiest subtask among vertices whose name contains `operator` (all when `None`).
    pub fn busiest(&self, operator: Option<&str>) -> Option<BusyShare> {
        self.busy
            .iter()
            .flatten()
            .filter(|b| operator.is_none_or(|op| b.vertex.contains(op)))
            .max_by(|a, b| a.share.total_cmp(&b.share))
            .cloned()
    }
}

fn output_of(job: &BuiltJob) -> anyhow::Result<Option<JobOutput>> {
    if let BuiltJob::RealScenario(s) = job {
        return Ok(match &s.sink {
            Some(crate::connectors::SinkHandle::Postgres { conn, table, .. }) => Some(
                JobOutput::Table(crate::connectors::read_table(conn, table)?),
            ),
            _ => Some(JobOutput::Count(
                s.sunk.load(std::sync::atomic::Ordering::Relaxed),
            )),
        });
    }
    Ok(match job {
        BuiltJob::Skew(j, _, _) => Some(JobOutput::Sums(j.final_sums())),
        BuiltJob::Passthrough(p) => Some(JobOutput::Count(p.discarded.count())),
        BuiltJob::Scenario(s) => match (s.skew_job(), s.table(), s.lookup_output()) {
            (Some(j), _, _) => Some(JobOutput::Sums(j.final_sums())),
            (None, Some(t), _) => Some(JobOutput::Table(t.contents())),
            (None, None, Some(d)) => Some(JobOutput::Lookup(d)),
            (None, None, None) => None,
        },
        BuiltJob::RealScenario(_) => None,
    })
}

/// Builds `cmd` (with `fix` applied when given) and runs it to completion.
pub fn run_bounded(cmd: &JobCmd, fix: Option<&Fix>) -> anyhow::Result<(BoundedRun, PlanDiff)> {
    let (env, job, _) = build_job(cmd)?;
    let diff = match fix {
        Some(f) => apply(&env, f)?,
        None => PlanDiff::default(),
    };
    // A table both runs write to starts empty for each, so their contents compare.
    if let BuiltJob::RealScenario(s) = &job {
        if let Some(crate::connectors::SinkHandle::Postgres { conn, table, .. }) = &s.sink {
            crate::connectors::truncate_table(conn, table)?;
        }
    }
    let t0 = Instant::now();
    let handle = env.launch()?;
    let monitor = handle.monitor();
    let exec = handle.wait()?;
    let wall = t0.elapsed();
    let metrics = monitor.vertex_metrics();
    let busy = exec
        .graph
        .vertices
        .iter()
        .zip(&metrics)
        .map(|(v, m)| {
            m.subtasks
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let life = (s.accumulated_busy_ms
                        + s.accumulated_idle_ms
                        + s.accumulated_backpressured_ms)
                        .max(1.0);
                    BusyShare {
                        vertex: v.name.clone(),
                        subtask: i,
                        parallelism: m.subtasks.len(),
                        share: s.accumulated_busy_ms / life,
                    }
                })
                .collect()
        })
        .collect();
    Ok((
        BoundedRun {
            output: output_of(&job)?,
            wall,
            busy,
        },
        diff,
    ))
}

/// Label column of [`FixProof::text`].
const W: usize = 34;

/// What `doctor fix` found and proved.
pub struct FixProof {
    pub diff: PlanDiff,
    pub original: BoundedRun,
    pub fixed: BoundedRun,
    /// The operator the fix targets.
    pub operator: String,
}

impl FixProof {
    pub fn identical(&self) -> bool {
        self.original.output.is_some() && self.original.output == self.fixed.output
    }

    /// The proof as text: outputs compared, wall times, busy shares before and after.
    pub fn text(&self) -> String {
        let mut out = String::new();
        match (&self.original.output, self.identical()) {
            (Some(o), true) => out.push_str(&format!(
                "output: identical ({} equal in both runs)\n",
                o.describe()
            )),
            (Some(o), false) => out.push_str(&format!(
                "output: DIFFERENT (original: {}; fixed: {})\n",
                o.describe(),
                self.fixed
                    .output
                    .as_ref()
                    .map_or("none".to_string(), JobOutput::describe)
            )),
            (None, _) => out.push_str("output: this job's output cannot be compared\n"),
        }
        out.push_str(&format!(
            "{:<W$}original {:>6.2} s   fixed {:>6.2} s\n",
            "wall time",
            self.original.wall.as_secs_f64(),
            self.fixed.wall.as_secs_f64()
        ));
        let op = Some(self.operator.as_str());
        let rows = [
            (
                format!("busiest `{}` subtask", self.operator),
                self.original.busiest(op),
                self.fixed.busiest(op),
            ),
            (
                "busiest subtask of the job".to_string(),
                self.original.busiest(None),
                self.fixed.busiest(None),
            ),
        ];
        for (label, before, after) in rows {
            if let (Some(b), Some(a)) = (before, after) {
                out.push_str(&format!("{label:<W$}before {b}\n{:<W$}after  {a}\n", ""));
            }
        }
        out
    }
}

/// Applies the diagnosis' plan change to `cmd` and runs the original and the fixed job.
pub fn prove_fix(cmd: &JobCmd, d: &Diagnosis) -> anyhow::Result<FixProof> {
    let change = d
        .fix
        .as_ref()
        .and_then(|f| f.plan_change.as_ref())
        .context("the doctor proposes no plan change for this job, so there is nothing to apply")?;
    let fix = to_fix(change)?;
    let operator = fix.operator().to_string();
    let (original, _) = run_bounded(cmd, None)?;
    let (fixed, diff) = run_bounded(cmd, Some(&fix))?;
    Ok(FixProof {
        diff,
        original,
        fixed,
        operator,
    })
}

/// Diagnoses `cmd` running live (its own REST API, fast metrics) over `window` seconds.
pub fn diagnose_live(cmd: &JobCmd, window: f64) -> anyhow::Result<Report> {
    let live = LiveJob::start(cmd)?;
    std::thread::sleep(WARM_UP);
    let report = sample_and_diagnose(&LiveSource::new(&live.url)?, None, window);
    live.stop();
    report
}

fn doctor_fix(
    cmd: &JobCmd,
    window: f64,
    fixed_output: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    if let Some(path) = fixed_output {
        crate::preflight::output_file(path, "--fixed-output")?;
    }
    println!("== diagnosis (the job running live, sampled over {window}s)\n");
    let report = diagnose_live(cmd, window)?;
    print!("{}", report.text());
    let proof = prove_fix(cmd, &report.diagnosis)?;
    if let Some(f) = &report.diagnosis.fix {
        println!("\n== the fix: {}\n", f.change);
    }
    print!("plan diff:\n{}", proof.diff);
    println!("\n== original vs fixed, same bounded input\n");
    print!("{}", proof.text());
    if let Some(path) = fixed_output {
        let Some(JobOutput::Sums(sums)) = &proof.fixed.output else {
            anyhow::bail!("--fixed-output: this job has no per-key output to write");
        };
        let mut csv = String::from("key,sum\n");
        for (k, v) in sums {
            csv.push_str(&format!("{k},{v}\n"));
        }
        std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))?;
        println!("fixed run's output written to {}", path.display());
    }
    Ok(if proof.identical() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                    let answer = fixture(&format!("{slug}-subtask{n}-metrics.json"));
                    flink_rest::subtask_sample(&answer, &v.operators)
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
    fn file_names_follow_the_capture() {
        assert_eq!(
            vertex_stem(1, "sum-per-key -> counting-sink: Writer"),
            "v1-sum-per-key-counting-sink-writer"
        );
        assert_eq!(
            vertex_stem(0, "Source: generator -> map"),
            "v0-source-generator-map"
        );
        let stems = stems_of(&fixture("job.json"));
        let vid = "90bea66de1c231edf33913ecd54406c1";
        let f = |p: &str| file_for(p, &stems);
        assert_eq!(f("/jobs/overview").as_deref(), Some("jobs-overview.json"));
        assert_eq!(f("/jobs/abc").as_deref(), Some("job.json"));
        assert_eq!(
            f(&format!(
                "/jobs/abc/vertices/{vid}/subtasks/1/metrics?get=a,b"
            ))
            .as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-subtask1-metrics.json")
        );
        assert_eq!(
            f(&format!("/jobs/abc/vertices/{vid}/subtasks/metrics?get=a")).as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-subtasks-metrics-aggregated.json")
        );
        assert_eq!(f("/jobs/abc/vertices/unknown/subtasks/1/metrics"), None);
        assert_eq!(f("/taskmanagers"), None);
        assert_eq!(
            f(&format!(
                "/jobs/abc/vertices/{vid}/flamegraph?type=off_cpu&subtaskindex=1"
            ))
            .as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-flamegraph-off_cpu-subtask1.json")
        );
        assert_eq!(
            f(&format!("/jobs/abc/vertices/{vid}/flamegraph")).as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-flamegraph-full.json")
        );
        assert_eq!(
            f(&format!("/jobs/abc/vertices/{vid}/flamegraph?type=x")),
            None
        );
        // Every file the doctor reads from the capture exists.
        for n in 0..2 {
            let name = f(&format!("/jobs/abc/vertices/{vid}/subtasks/{n}/metrics")).unwrap();
            assert!(std::path::Path::new(FIXTURES).join(name).exists());
        }
    }

    #[test]
    fn the_directory_source_reads_the_capture() {
        let src = DirSource::open(std::path::Path::new(FIXTURES)).unwrap();
        let r = sample_and_diagnose(&src, None, 10.0).unwrap();
        assert_eq!(r.samples, 1, "a directory is one snapshot");
        assert_eq!(r.job_name, "RestScenario-skew");
        assert_eq!(r.diagnosis.cause.name(), "key-skew");
        assert!(r.text().contains("(1 sample)"));
    }
}
