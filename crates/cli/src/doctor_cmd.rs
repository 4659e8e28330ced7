//! `sluice doctor`: samples a running job's Flink-compatible REST API over a window, builds a
//! [`sluice_doctor::JobView`] and prints the doctor's diagnosis (or `--json`). Uses Flink's paths and
//! metric names, plus Sluice's extras when the server has them (`cpuTimeMsPerSecond`,
//! `<operator>.busyTimeMsPerSecond`, `/hot-keys`), so it works against Sluice and Apache Flink alike.
//!
//! The sampling and the diagnosis are the doctor's one call ([`sluice_doctor::examine()`]); the
//! REST answers come through a [`RestSource`] of `sluice-client`: a live server
//! ([`LiveSource`]), a directory of saved answers ([`DirSource`], `--from-dir`) or, with
//! `--save DIR`, a [`SavingSource`] around the live one. This module is flags and rendering.
//!
//! `sluice doctor fix <job> [job flags]` runs a built-in job live, diagnoses it through its own REST
//! server, applies the proposed plan change with [`sluice_datastream::fixer`], shows the plan diff,
//! then runs the original and the fixed job on the same bounded input and compares their output.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use sluice::served::ServedJob;
use sluice_client::{DirSource, SavingSource};
use sluice_doctor::{
    examine, Diagnosis, Examination, ExamineOptions, JobView, RestProbe, RestSource,
};
use sluice_jobs::proof::{FixProof, JobOutput};

pub use sluice_client::LiveSource;

use crate::args::{EnvArgs, JobCmd};
use crate::run::build_job;

/// Arguments of `sluice doctor`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DoctorArgs {
    /// REST API of the job: Sluice's, or an Apache Flink JobManager's (http:// or https://).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    pub url: String,
    #[command(flatten)]
    pub client: sluice_client::ClientArgs,
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

/// A diagnosis with what it was made from: the doctor's [`Examination`].
pub type Report = Examination;

/// The text report: header, per-subtask table, verdict, evidence, fix, unknowns.
pub fn report_text(r: &Examination) -> String {
    let over = if r.samples > 1 {
        format!("{} samples over {}s", r.samples, r.window)
    } else {
        "1 sample".to_string()
    };
    let mut text = format!(
        "{}  {}  {}  ({over})\n\n{}\n{}",
        r.job_name,
        r.job_id,
        r.source,
        render_table(&r.job),
        render_diagnosis(&r.diagnosis)
    );
    if let Some(a) = &r.checkpoint_advice {
        text.push_str(&format!("\nAlso: {a}\n"));
    }
    text
}

/// Samples a job through `src` (one sample per second over `window` seconds when the source is
/// live, else one) and diagnoses it from its metrics alone: `demo` and `doctor fix` diagnose a
/// built-in job to prove a plan change, with no profiling.
pub fn sample_and_diagnose(
    src: &dyn RestSource,
    job: Option<&str>,
    window: f64,
) -> anyhow::Result<Report> {
    sample_and_diagnose_with(src, job, window, true)
}

/// Like [`sample_and_diagnose`]; unless `no_flame_graphs`, a live source's bottleneck is then
/// profiled (its busy subtasks' flame graphs) and diagnosed again with them as evidence.
pub fn sample_and_diagnose_with(
    src: &dyn RestSource,
    job: Option<&str>,
    window: f64,
    no_flame_graphs: bool,
) -> anyhow::Result<Report> {
    let opts = ExamineOptions {
        window,
        flame_graphs: !no_flame_graphs,
    };
    Ok(examine(&RestProbe::new(src), job, &opts)?)
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
        print!("{}", report_text(&report));
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
        JobCmd::Sql(a) => Some(&mut a.env),
    }
}

fn records_mut(cmd: &mut JobCmd) -> Option<&mut u64> {
    #[allow(unreachable_patterns)]
    match cmd {
        JobCmd::Skew(a) => Some(&mut a.records),
        JobCmd::Passthrough(a) => Some(&mut a.records),
        JobCmd::Scenario(a) => Some(&mut a.records),
        JobCmd::Sql(_) => None,
    }
}

/// Starts `cmd` with fast metrics (0.2 s updates, 1 s window) and, when it has a record count,
/// effectively unbounded input (it runs until [`ServedJob::stop`]), its REST API on a free port.
pub fn start_live(cmd: &JobCmd) -> anyhow::Result<ServedJob> {
    let mut cmd = cmd.clone();
    if let Some(env) = env_args(&mut cmd) {
        env.metrics_interval = 0.2;
        env.metrics_window = 1.0;
    }
    if let Some(r) = records_mut(&mut cmd) {
        *r = 100_000_000_000;
    }
    let (env, _job, _) = build_job(&cmd)?;
    Ok(ServedJob::start(&env)?)
}

/// How long the metric window needs to fill after a start with fast metrics.
pub const WARM_UP: Duration = Duration::from_millis(1200);

/// Applies the diagnosis' plan change to `cmd` and runs the original and the fixed job of
/// `records` records each, with their progress on stderr.
pub fn prove_fix(cmd: &JobCmd, d: &Diagnosis, records: u64) -> anyhow::Result<FixProof> {
    let fix = plan_change(d)?.clone();
    let build = || {
        build_job(cmd)
            .map(|(env, job, _)| (env, job))
            .map_err(|e| format!("{e:#}"))
    };
    let watch = |label: &str, monitor| -> Box<dyn FnOnce()> {
        let p = crate::progress::Progress::labelled(label, monitor, records);
        Box::new(move || p.finish())
    };
    FixProof::run(build, &fix, &watch).map_err(anyhow::Error::msg)
}

fn plan_change(d: &Diagnosis) -> anyhow::Result<&sluice_doctor::PlanChange> {
    let change = d.fix.as_ref().and_then(|f| f.plan_change.as_ref());
    change.context("the doctor proposes no plan change for this job, so there is nothing to apply")
}

/// Diagnoses `cmd` running live (its own REST API, fast metrics) over `window` seconds.
pub fn diagnose_live(cmd: &JobCmd, window: f64) -> anyhow::Result<Report> {
    let live = start_live(cmd)?;
    std::thread::sleep(WARM_UP);
    let report = sample_and_diagnose(&LiveSource::new(&live.url)?, None, window);
    live.stop();
    report
}

/// Records for a proof run of `cmd` (a job with a record count) taking about `target`.
pub fn calibrate(cmd: &JobCmd, target: Duration) -> anyhow::Result<u64> {
    let build = |n| {
        let mut c = cmd.clone();
        if let Some(r) = records_mut(&mut c) {
            *r = n;
        }
        build_job(&c)
            .map(|(env, job, _)| (env, job))
            .map_err(|e| format!("{e:#}"))
    };
    sluice_jobs::proof::calibrate(build, target).map_err(anyhow::Error::msg)
}

/// The cores the proof's CPU-bound throughputs are computed for: this machine's.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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
    print!("{}", report_text(&report));
    plan_change(&report.diagnosis)?;
    // An unbounded scenario without --records: a proof input the original runs in seconds.
    let mut cmd = cmd.clone();
    let unbounded = records_mut(&mut cmd).is_some_and(|r| *r == sluice_jobs::scenarios::UNBOUNDED);
    if unbounded {
        let target = sluice_jobs::proof::PROOF_RUN;
        let n = calibrate(&cmd, target)?;
        println!(
            "\nThe proof runs on {n} records, about {} s of the original job as measured on \
             this machine (--records sets the count).",
            target.as_secs()
        );
        if let Some(r) = records_mut(&mut cmd) {
            *r = n;
        }
    }
    let records = records_mut(&mut cmd).map_or(0, |r| *r);
    let proof = prove_fix(&cmd, &report.diagnosis, records)?;
    if let Some(f) = &report.diagnosis.fix {
        println!("\n== the fix: {}\n", f.change);
    }
    print!("plan diff:\n{}", proof.diff);
    println!("\n== original vs fixed, same bounded input\n");
    print!("{}", proof.text(cores()));
    println!("\n{}", proof.payoff(cores()));
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
        let mut vertices = sluice_doctor::flink_rest::read_graph(&fixture("job.json")).unwrap();
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
                    sluice_doctor::flink_rest::subtask_sample(&answer, &v.operators)
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
    fn the_directory_source_reads_the_capture() {
        let src = DirSource::open(std::path::Path::new(FIXTURES)).unwrap();
        let r = sample_and_diagnose(&src, None, 10.0).unwrap();
        assert_eq!(r.samples, 1, "a directory is one snapshot");
        assert_eq!(r.job_name, "RestScenario-skew");
        assert_eq!(r.diagnosis.cause.name(), "key-skew");
        assert!(report_text(&r).contains("(1 sample)"));
    }
}
