//! `sluice demo`: the doctor end to end on the skew job, in about 15 seconds. Runs the job live with
//! its REST API up, shows the live subtask table (`sluice top`'s rendering), prints the doctor's
//! verdict naming the hot key, applies the fix (two-phase aggregation), shows the plan change, then
//! runs the original and the fixed job on the same bounded input and compares their output and
//! their throughputs, saying plainly when the fix does not pay on this machine.
//!
//! The sum does [`SUM_WORK`] rounds of CPU work per record (an aggregate whose update costs):
//! with a plain sum the hot subtask's work is so cheap that spreading it over more threads
//! costs more (one more exchange) than it saves, and on 2 cores the fixed job is slower.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use sluice_doctor::Cause;

use crate::args::{Cli, Command, JobCmd};
use crate::doctor_cmd::{prove_fix, render_diagnosis, sample_and_diagnose, start_live, LiveSource};

/// Rounds of CPU work per record in the skew job's sum (`--sum-work`): about 1 µs in a release
/// build, several times the rest of a record's path, so the hot subtask's share is what limits
/// the original job and the two-phase fix can spread it over the cores.
pub const SUM_WORK: u32 = 600;

/// How long the demo's original run should take (its record count is calibrated).
const PROOF_RUN: Duration = Duration::from_secs(3);

/// Arguments of `sluice demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Records of the bounded runs that compare the original and the fixed job (default: what
    /// the original runs in about 3 s on this machine, calibrated).
    #[arg(long)]
    pub records: Option<u64>,
    /// Seconds to show the live subtask table.
    #[arg(long, default_value_t = 4.0, value_name = "SECS")]
    pub watch: f64,
}

/// The skew job as `sluice run skew <flags>` describes it.
fn skew_cmd(records: u64) -> anyhow::Result<JobCmd> {
    let (records, work) = (records.to_string(), SUM_WORK.to_string());
    let args = [
        "sluice",
        "run",
        "skew",
        "--records",
        &records,
        "--sum-work",
        &work,
    ];
    match Cli::try_parse_from(args)?.command {
        Command::Run(r) => Ok(r.job),
        _ => unreachable!("parsed a run command"),
    }
}

fn heading(step: u32, title: &str) {
    println!("\n━━ {step}. {title}\n");
}

/// Prints a frame; on a terminal, over the previous one (`lines` tall).
fn show(frame: &str, lines: &mut usize, tty: bool) -> std::io::Result<()> {
    let mut out = String::new();
    if tty && *lines > 0 {
        out.push_str(&format!("\x1b[{}A", *lines));
    }
    for l in frame.lines() {
        out.push_str(l);
        if tty {
            out.push_str("\x1b[K");
        }
        out.push('\n');
    }
    if tty {
        out.push_str("\x1b[J");
    }
    *lines = frame.lines().count();
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()
}

pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    if !(args.watch.is_finite() && (1.5..=60.0).contains(&args.watch)) {
        anyhow::bail!("--watch must be between 1.5 and 60 seconds");
    }
    let t0 = Instant::now();
    let tty = std::io::stdout().is_terminal();
    // The live run is unbounded whatever the count (`start_live`); the proof sets its own.
    let cmd = skew_cmd(1)?;

    println!("Sluice demo: find a bottleneck, name its cause, fix the plan, prove the fix.");
    heading(1, "A job with a hot key, running live");
    println!("  generator -> map -> key_by(key) -> running sum per key -> sink, parallelism 2;");
    println!("  80% of the records carry key 0, so one subtask of the sum gets ~90% of the work");
    println!("  (and the sum's update costs: {SUM_WORK} rounds of CPU work per record).\n");
    let live = start_live(&cmd)?;
    println!(
        "  REST API (Flink-compatible): {}/   try: sluice top --url {}",
        live.url, live.url
    );
    println!();
    let source = LiveSource::new(&live.url)?;
    let watch = Duration::from_secs_f64(args.watch);
    let mut lines = 0;
    // Let the first metric window fill before the first frame.
    std::thread::sleep(crate::doctor_cmd::WARM_UP);
    let last = loop {
        let started = Instant::now();
        let frame = crate::top::render(&sluice_client::top_model::fetch(&source, None)?, 96);
        if tty {
            show(&frame, &mut lines, true)?;
        }
        if t0.elapsed() + Duration::from_secs(1) > watch {
            break frame;
        }
        std::thread::sleep(Duration::from_secs(1).saturating_sub(started.elapsed()));
    };
    if !tty {
        // Not a terminal: the last frame only, no escape codes.
        show(&last, &mut lines, false)?;
    }

    heading(2, "The doctor's diagnosis (sampled over 2 s)");
    let report = sample_and_diagnose(&LiveSource::new(&live.url)?, None, 2.0)?;
    live.stop();
    let records = match args.records {
        Some(n) => n,
        None => crate::doctor_cmd::calibrate(&cmd, PROOF_RUN)?,
    };
    let cmd = skew_cmd(records)?;
    let d = &report.diagnosis;
    if let Cause::KeySkew { hot_keys } = &d.cause {
        if let (Some(k), Some(b)) = (hot_keys.first(), &d.bottleneck) {
            println!(
                "Hot key: {} carries {:.0}% of `{}`'s records, all on its subtask {}/{}",
                k.key,
                100.0 * k.share,
                b.operator.as_deref().unwrap_or(&b.vertex_name),
                b.subtasks.first().map_or(0, |s| s + 1),
                b.parallelism
            );
        }
    }
    print!("{}", render_diagnosis(d));

    heading(3, "The fix, applied to the plan");
    let proof = prove_fix(&cmd, d, records)?;
    if let Some(f) = &d.fix {
        println!("{}\n", f.change);
    }
    print!("plan diff:\n{}", proof.diff);

    heading(
        4,
        &format!(
            "Proof: the original and the fixed job on the same {records} records \
             (about {} s of the original)",
            PROOF_RUN.as_secs()
        ),
    );
    let cores = crate::doctor_cmd::cores();
    print!("{}", proof.text(cores));
    println!("\n{}", proof.payoff(cores));
    if proof.identical() {
        println!(
            "The fixed job's output is identical to the original's. ({:.1} s in all)",
            t0.elapsed().as_secs_f64()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!("The outputs differ: the fix is NOT safe.");
        Ok(ExitCode::FAILURE)
    }
}
