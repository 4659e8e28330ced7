//! `sluice nexmark --bench` (and `sluice bench --nexmark`): every implemented Nexmark query,
//! each in a fresh process.

use std::io::Write;
use std::process::Command;

use sluice_jobs::nexmark::Query;

use crate::{human, BenchError};

/// The runs' settings (`sluice nexmark`'s flags).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Events to generate.
    pub events: u64,
    /// Event-time rate, events per second.
    pub rate: u64,
    /// Parallelism of every operator.
    pub parallelism: usize,
    /// Checkpoint interval, ms.
    pub checkpoint_interval: Option<u64>,
}

impl From<&crate::BenchCases> for Settings {
    /// `sluice bench --nexmark`: its events, rate and parallelism; no checkpoints.
    fn from(c: &crate::BenchCases) -> Settings {
        Settings {
            events: c.events,
            rate: c.rate,
            parallelism: c.parallelism,
            checkpoint_interval: None,
        }
    }
}

/// Runs every implemented query in a fresh `nexmark --stats-json` process of the program at
/// `exe` and prints one table row per query on stdout.
pub fn bench_queries(exe: &std::path::Path, a: &Settings) -> Result<(), BenchError> {
    println!(
        "{:<6} {:>12} {:>14} {:>14} {:>8} {:>14}",
        "query", "events", "events/s", "per core", "cores", "peak RSS MiB"
    );
    for q in Query::ALL {
        let out = Command::new(exe)
            .args(["nexmark", "--stats-json", "--query", q.name()])
            .args(["--events", &a.events.to_string()])
            .args(["--rate", &a.rate.to_string()])
            .args(["-p", &a.parallelism.to_string()])
            .args(
                a.checkpoint_interval
                    .map(|ms| vec!["--checkpoint-interval".to_string(), ms.to_string()])
                    .unwrap_or_default(),
            )
            .output()
            .map_err(|e| BenchError::Start(format!("nexmark {}", q.name()), e))?;
        if !out.status.success() {
            return Err(BenchError::Failed(format!(
                "{} failed: {}",
                q.name(),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let line = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value = serde_json::from_str(line.trim()).map_err(|e| {
            BenchError::Failed(format!("parsing the stats of {}: {line}: {e}", q.name()))
        })?;
        let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<6} {:>12} {:>14} {:>14} {:>8.2} {:>14.1}",
            q.name(),
            human(f("events")),
            human(f("events_per_sec")),
            human(f("events_per_core_sec")),
            f("cores"),
            f("peak_rss_kib") / 1024.0
        );
        let _ = std::io::stdout().flush();
    }
    Ok(())
}
