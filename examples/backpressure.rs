//! A job with a hot key, and the doctor's verdict on it:
//! `cargo run --release -p sluice-examples --example backpressure`.
//!
//! Four records in five carry key 0, so the subtask that owns key 0 does most of the summing:
//! it is busy all the time, its sibling idles, and the sources wait for credit
//! (backpressured). The job's metrics are sampled every 200 ms; the doctor reads them in
//! process — `GET /jobs/:jid/doctor`, the same answer `sluice doctor` prints — and names the
//! cause (key skew), the hot key and a fix (two-phase aggregation).

use std::time::{Duration, Instant};

use serde_json::Value;
use sluice::RunOptions;
use sluice_rest::{dispatch, JobRegistry};

/// Runs the hot-key job until the doctor names a cause (at most `patience`), then cancels it.
/// Returns the doctor's answer (JSON: `verdict`, `cause`, `hot-keys`, `evidence`, `fix`, ...).
pub fn diagnose_hot_key_job(patience: Duration) -> Result<Value, Box<dyn std::error::Error>> {
    // Metrics every 200 ms over a 1 s window (Flink's defaults, 5 s over 60 s, are for dashboards).
    let options = RunOptions::try_from_args([
        "backpressure",
        "-p",
        "2",
        "--metrics-interval",
        "0.2",
        "--metrics-window",
        "1",
    ])?;
    let env = options.stream_env()?;
    env.generate(u64::MAX, |i| {
        (if i % 5 == 0 { i as i64 % 1_000 } else { 0 }, 1i64)
    })
    .name("generator")
    .map(|(k, v): (i64, i64)| (k, v * 2))
    .key_by(|r: &(i64, i64)| r.0)
    .sum(|r: &mut (i64, i64)| &mut r.1)
    .name("sum-per-key")
    .discard();
    let job = env.launch()?; // runs in the background; REST handlers read its monitor
    let registry = JobRegistry::new();
    registry.register(job.monitor());
    let doctor = [
        "jobs".to_string(),
        job.monitor().job_id.to_string(),
        "doctor".to_string(),
    ];
    let started = Instant::now();
    let answer = loop {
        std::thread::sleep(Duration::from_millis(200));
        let reply = dispatch(&registry, &std::env::temp_dir(), "GET", &doctor, &[], b"");
        let answer: Value = serde_json::from_slice(&reply.body)?;
        let named = answer["cause"].as_str().is_some_and(|c| c != "none");
        if named || started.elapsed() > patience {
            break answer;
        }
    };
    job.cancel();
    let _ = job.wait(); // a cancelled job ends with "cancelled": expected here
    Ok(answer)
}

#[allow(dead_code)] // the test compiles this file as a module
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let d = diagnose_hot_key_job(Duration::from_secs(30))?;
    println!("Verdict: {}", d["verdict"].as_str().unwrap_or("none yet"));
    for line in d["evidence"].as_array().into_iter().flatten() {
        println!("  - {}", line.as_str().unwrap_or_default());
    }
    let fix = &d["fix"];
    println!("Fix: {}", fix["change"].as_str().unwrap_or("none"));
    println!("  {}", fix["description"].as_str().unwrap_or_default());
    Ok(())
}
