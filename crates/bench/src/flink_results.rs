//! The official Flink suite's figures, read from the `RESULT` lines its harness prints and
//! appends to `out/results.txt` (its `run.sh QUERY EVENTS P`, Flink 2.3 in a local MiniCluster;
//! see `docs/src/benchmarks/reproduce.md`). The repository never runs nor depends on the harness: `sluice bench
//! --nexmark --sql --flink-results FILE` takes its output as input, so the Sluice/Flink ratio
//! is read beside Sluice's figures of the same query, events and parallelism.
//!
//! A line is `RESULT key=value key="a quoted value" …`; the keys read are `query`, `events`,
//! `parallelism`, `events_per_s` (events over the job's net runtime), `job_cpu_s` (process CPU
//! from submission to the job's end) and `peak_rss_mb`. Only runs with the harness's defaults
//! compare with Sluice's (no checkpoints, blackhole sink, rate 10 M events/s): a line whose
//! `extra_args` holds anything (`--checkpoint-ms`, `--csv-out`, `--tps`, …) is skipped.

use std::collections::BTreeMap;
use std::path::Path;

use crate::reference::median;
use crate::BenchError;

/// One run of the Flink harness.
#[derive(Clone, Debug, PartialEq)]
pub struct FlinkRun {
    /// `q5`.
    pub query: String,
    /// Events generated.
    pub events: u64,
    /// `parallelism.default`.
    pub parallelism: usize,
    /// Events over the job's net runtime.
    pub events_per_s: f64,
    /// Process CPU seconds from the job's submission to its end.
    pub job_cpu_s: f64,
    /// The JVM's peak resident set size, MB (`/usr/bin/time -v`).
    pub peak_rss_mb: f64,
}

/// Medians over the comparable runs of one query, events and parallelism.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlinkFigures {
    /// Runs the medians are over.
    pub runs: usize,
    /// Events per second.
    pub events_per_s: f64,
    /// Process CPU-ns per event.
    pub cpu_ns_per_event: f64,
    /// Peak RSS, MiB (the harness's MB are `/usr/bin/time`'s KiB / 1024).
    pub peak_rss_mib: f64,
}

/// The `key=value` fields of a `RESULT` line (`None` for any other line); a value may be
/// double-quoted to hold spaces.
pub fn fields(line: &str) -> Option<BTreeMap<String, String>> {
    let mut rest = line.trim().strip_prefix("RESULT ")?;
    let mut out = BTreeMap::new();
    loop {
        rest = rest.trim_start();
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].to_string();
        rest = &rest[eq + 1..];
        let value = if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').unwrap_or(q.len());
            rest = q.get(end + 1..).unwrap_or("");
            &q[..end]
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            let v = &rest[..end];
            rest = &rest[end..];
            v
        };
        out.insert(key, value.to_string());
    }
    Some(out)
}

/// The comparable runs in the harness's output (`RESULT` lines without extra arguments; other
/// lines, `FAILED` ones included, are skipped).
pub fn parse(text: &str) -> Vec<FlinkRun> {
    text.lines()
        .filter_map(fields)
        .filter(|f| f.get("extra_args").is_none_or(|a| a.trim().is_empty()))
        .filter_map(|f| {
            let num = |k: &str| f.get(k).and_then(|v| v.parse::<f64>().ok());
            Some(FlinkRun {
                query: f.get("query")?.clone(),
                events: f.get("events")?.parse().ok()?,
                parallelism: f.get("parallelism")?.parse().ok()?,
                events_per_s: num("events_per_s")?,
                job_cpu_s: num("job_cpu_s").unwrap_or(f64::NAN),
                peak_rss_mb: num("peak_rss_mb").unwrap_or(f64::NAN),
            })
        })
        .collect()
}

/// Reads `path`: the harness's results file, or the harness's folder (its `out/results.txt`).
pub fn read(path: &Path) -> Result<Vec<FlinkRun>, BenchError> {
    let file = if path.is_dir() {
        path.join("out").join("results.txt")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| {
        BenchError::Failed(format!(
            "--flink-results: reading {}: {e} (the RESULT lines of the Flink harness's run.sh)",
            file.display()
        ))
    })?;
    Ok(parse(&text))
}

/// The medians of the runs of `query` over `events` events at `parallelism`; `None` without one.
pub fn figures(
    runs: &[FlinkRun],
    query: &str,
    events: u64,
    parallelism: usize,
) -> Option<FlinkFigures> {
    let same: Vec<&FlinkRun> = runs
        .iter()
        .filter(|r| r.query == query && r.events == events && r.parallelism == parallelism)
        .collect();
    if same.is_empty() {
        return None;
    }
    let of = |f: &dyn Fn(&FlinkRun) -> f64| median(same.iter().map(|r| f(r)).collect());
    Some(FlinkFigures {
        runs: same.len(),
        events_per_s: of(&|r| r.events_per_s),
        cpu_ns_per_event: of(&|r| r.job_cpu_s * 1e9 / r.events.max(1) as f64),
        peak_rss_mib: of(&|r| r.peak_rss_mb),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = r#"RESULT engine=flink-2.3.0 query=q2 events=1000000 parallelism=2 job_s=7.076 events_per_s=141323 job_cpu_s=12.650 sink=blackhole proc_cpu_s=16.65 peak_rss_mb=1611 loadavg_before="4.30 2.52 1.24" extra_args=""
FAILED query=q0 events=1000000 parallelism=2 rc=1 load_before="2.09 1.76 0.91"
RESULT engine=flink-2.3.0 query=q2 events=1000000 parallelism=2 job_s=5.0 events_per_s=200000 job_cpu_s=10.0 peak_rss_mb=1700 loadavg_before="1.0 1.0 1.0" extra_args=""
RESULT engine=flink-2.3.0 query=q2 events=1000000 parallelism=2 job_s=6.0 events_per_s=180000 job_cpu_s=11.0 peak_rss_mb=1500
RESULT engine=flink-2.3.0 query=q2 events=1000000 parallelism=2 job_s=9.2 events_per_s=108378 job_cpu_s=21.4 sink=csv peak_rss_mb=1701 extra_args="--csv-out out/csv/q2 --seed 42"
RESULT engine=flink-2.3.0 query=q2 events=1000000 parallelism=1 job_s=9.0 events_per_s=111111 job_cpu_s=9.0 peak_rss_mb=1400 extra_args=""
"#;

    #[test]
    fn fields_are_read_quoted_or_not() {
        let f = fields(OUT.lines().next().unwrap()).unwrap();
        assert_eq!(f["query"], "q2");
        assert_eq!(f["loadavg_before"], "4.30 2.52 1.24");
        assert_eq!(f["extra_args"], "");
        assert_eq!(f["peak_rss_mb"], "1611");
        assert!(fields(OUT.lines().nth(1).unwrap()).is_none());
    }

    #[test]
    fn only_runs_with_the_harness_defaults_are_kept() {
        let runs = parse(OUT);
        assert_eq!(runs.len(), 4, "{runs:?}");
        assert!(runs.iter().all(|r| r.events_per_s != 108378.0));
    }

    #[test]
    fn figures_are_medians_over_the_same_query_events_and_parallelism() {
        let runs = parse(OUT);
        let f = figures(&runs, "q2", 1_000_000, 2).unwrap();
        assert_eq!(f.runs, 3);
        assert_eq!(f.events_per_s, 180000.0);
        // CPU-ns per event: 12.65 s, 10 s, 11 s over 1 M events.
        assert_eq!(f.cpu_ns_per_event, 11_000.0);
        assert_eq!(f.peak_rss_mib, 1611.0);
        assert_eq!(figures(&runs, "q2", 1_000_000, 1).unwrap().runs, 1);
        assert!(figures(&runs, "q2", 10_000_000, 2).is_none());
        assert!(figures(&runs, "q5", 1_000_000, 2).is_none());
    }
}
