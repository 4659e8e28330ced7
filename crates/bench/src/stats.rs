//! The one JSON line `sluice run --stats-json` prints: what the harness reads of a case.

use std::time::Duration;

use crate::in_flight::InFlight;
use crate::profile_all::{cost_json, ratios_json, Profiled};

/// A run's figures, as `--stats-json` prints them.
pub struct RunStats<'a> {
    /// The job's name.
    pub job: &'a str,
    /// Records the sources emitted.
    pub records: u64,
    /// From building the job to its end.
    pub wall: Duration,
    /// Process CPU time over the run, ns.
    pub cpu_ns: Option<u64>,
    /// Peak resident set size, KiB.
    pub peak_rss_kib: Option<u64>,
    /// From building the job to the sources' first published batch.
    pub startup: Option<Duration>,
    /// Restarts after failures.
    pub restarts: u64,
    /// Bytes in flight on the input gates.
    pub in_flight: InFlight,
    /// Completed checkpoints' durations, ms.
    pub checkpoint_durations: Vec<i64>,
    /// What `--profile-all` measured.
    pub profiled: Option<Profiled>,
}

impl RunStats<'_> {
    /// The line (no newline).
    pub fn json_line(&self) -> String {
        let null = || "null".to_string();
        let records = self.records;
        let rate = records as f64 / self.wall.as_secs_f64().max(1e-9);
        let durations = &self.checkpoint_durations;
        let ckpt_avg = durations.iter().sum::<i64>() as f64 / durations.len().max(1) as f64;
        let ckpt_max = durations.iter().copied().max().unwrap_or(0);
        let f = self.in_flight;
        let p = self.profiled.as_ref();
        format!(
            "{{\"job\":\"{}\",\"records\":{},\"wall_ms\":{:.3},\"records_per_sec\":{:.0},\"cpu_ns_per_record\":{},\"peak_rss_kib\":{},\"startup_ms\":{},\"restarts\":{},\"in_flight_bytes_avg\":{:.0},\"in_flight_bytes_max\":{},\"in_flight_bytes_avg_second_half\":{:.0},\"checkpoints_completed\":{},\"checkpoint_ms_avg\":{:.1},\"checkpoint_ms_max\":{},\"profile_runs\":{},\"profile_cost\":{},\"profile_ratios\":{}}}",
            self.job,
            records,
            self.wall.as_secs_f64() * 1000.0,
            rate,
            self.cpu_ns.map(|c| format!("{:.1}", c as f64 / records.max(1) as f64)).unwrap_or_else(null),
            self.peak_rss_kib.map(|p| p.to_string()).unwrap_or_else(null),
            self.startup.map(|s| format!("{:.3}", s.as_secs_f64() * 1000.0)).unwrap_or_else(null),
            self.restarts,
            f.avg,
            f.max,
            f.avg_second_half,
            durations.len(),
            ckpt_avg,
            ckpt_max,
            p.map(|p| p.runs.to_string()).unwrap_or_else(null),
            p.map(|p| cost_json(&p.cost)).unwrap_or_else(null),
            p.map(|p| ratios_json(&p.ratios)).unwrap_or_else(null),
        )
    }
}
