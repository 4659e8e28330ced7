//! `sluice bench`'s reference cases, the profiler's cost and the debloating comparison: each
//! case runs in a fresh `sluice run --stats-json` process (the program at `exe`), so peak RSS
//! and CPU time belong to that case alone; the median of the runs is printed on stdout.

use std::process::Command;

use crate::{human, BenchCases, BenchError};

type Result<T> = std::result::Result<T, BenchError>;

struct Case {
    name: &'static str,
    args: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
struct Stats {
    records: f64,
    rate: f64,
    cpu_ns: f64,
    rss_kib: f64,
    startup_ms: f64,
}

/// The number at `"key":` in a stats line.
pub fn field(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &json[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// One `sluice run <args> --stats-json --no-rest`: its stats line.
fn run_once(exe: &std::path::Path, name: &str, args: &[String]) -> Result<String> {
    let out = Command::new(exe)
        .arg("run")
        .args(args)
        .arg("--stats-json")
        .arg("--no-rest")
        .output()
        .map_err(|e| BenchError::Start(name.to_string(), e))?;
    if !out.status.success() {
        return Err(BenchError::Failed(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// Floor (c)'s records per second from the floor program's output line
/// `(c) 2 producers -> hash -> 2 consumers (HashMap state): 12.40 ns/record, 80.6 M rec/s`.
fn floor_c_rate(output: &str) -> Option<f64> {
    let line = output.lines().find(|l| l.starts_with("(c)"))?;
    let (_, tail) = line.rsplit_once(", ")?;
    let m: f64 = tail.strip_suffix(" M rec/s")?.trim().parse().ok()?;
    Some(m * 1e6)
}

/// One run of the floor program over `records` records: floor (c) in records per second.
fn run_floor(floor: &std::path::Path, records: u64) -> Result<f64> {
    let out = Command::new(floor)
        .arg(records.to_string())
        .output()
        .map_err(|e| BenchError::Start(floor.display().to_string(), e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BenchError::Failed(format!(
            "the floor program {} failed: {}",
            floor.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    floor_c_rate(&text).ok_or_else(|| {
        BenchError::Failed(format!(
            "the floor program {} printed no (c) line: {text}",
            floor.display()
        ))
    })
}

/// The median of `v` (NaN when empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Median and extremes of `v`, as `median [min, max]`.
pub fn spread(v: &[f64], digits: usize) -> String {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match (v.first(), v.last()) {
        (Some(lo), Some(hi)) => format!(
            "{:.d$} [{:.d$}, {:.d$}]",
            median(v.clone()),
            lo,
            hi,
            d = digits
        ),
        _ => "-".to_string(),
    }
}

/// `--stats-json`'s `profile_ratios`: `[[rate, cpu], …]`.
fn profile_ratios(json: &str) -> Vec<(f64, f64)> {
    let Some(at) = json.find("\"profile_ratios\":[") else {
        return Vec::new();
    };
    let rest = &json[at + "\"profile_ratios\":[".len()..];
    let body = &rest[..rest.find("]]").map_or(0, |e| e + 1)];
    body.split('[')
        .filter_map(|p| {
            let (a, b) = p.trim_end_matches([']', ',']).split_once(',')?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .collect()
}

/// `sluice bench --profiler`: each job runs `--profile-all`, which alternates sampling windows
/// (a flame graph run of every subtask: 100 looks 50 ms apart with native stacks, as a REST
/// request) with windows of the same length without sampling, and compares each sampling
/// window's throughput and process CPU-ns per record with the mean of the off windows on
/// either side, in the same process: Flink's "throughput with sampling on vs off, same run".
/// The ratios of all runs' windows are reported as median [min, max], and apart from them what
/// a run costs after its window (stopping the sampler, symbolising, building the tree: a
/// flame graph answer's one-off cost) and what the profiler counted (native samples).
pub fn bench_profiler(a: &BenchCases, exe: &std::path::Path) -> Result<()> {
    let p = a.parallelism.to_string();
    let jobs: [(&str, Vec<String>); 2] = [
        (
            "passthrough (chained)",
            vec![
                "passthrough".into(),
                "--records".into(),
                a.profiler_passthrough_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        ),
        (
            "skew",
            vec![
                "skew".into(),
                "--records".into(),
                a.profiler_skew_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        ),
    ];
    println!(
        "{:<22} {:>7} {:>26} {:>26} {:>10} {:>11} {:>13} {:>16} {:>13}",
        "case",
        "windows",
        "on/off rec/s med [min,max]",
        "on/off ns/r med [min,max]",
        "job ns/r",
        "samples/s",
        "window ms cpu",
        "after ms cpu/run",
        "setup ms cpu"
    );
    for (name, args) in jobs {
        let mut on_args = args.clone();
        on_args.push("--profile-all".into());
        if let Some(hz) = a.profile_hz {
            on_args.push("--profile-hz".into());
            on_args.push(hz.to_string());
        }
        let (mut ratios, mut job_cpu, mut samples_per_s) = (vec![], vec![], vec![]);
        let (mut window_ms, mut after_ms, mut setup_ms) = (vec![], vec![], vec![]);
        for _ in 0..a.runs.max(1) {
            let s = run_once(exe, name, &on_args)?;
            let g = |k: &str| field(&s, k).unwrap_or(f64::NAN);
            ratios.extend(profile_ratios(&s));
            job_cpu.push(g("cpu_ns_per_record"));
            let runs = g("profile_runs").max(1.0);
            // A run's native samples per second of its window (5 s by default).
            samples_per_s.push(g("native_samples") / (runs * 5.0));
            window_ms.push(g("window_cpu_ms") / runs);
            after_ms.push(g("after_cpu_ms") / runs);
            setup_ms.push(g("setup_cpu_ms"));
        }
        if ratios.is_empty() {
            println!(
                "{name:<22} no sampling window between two off windows: give more records \
                 (the job must run for at least 15 s)"
            );
            continue;
        }
        let rate: Vec<f64> = ratios.iter().map(|r| r.0).collect();
        let cpu: Vec<f64> = ratios.iter().map(|r| r.1).collect();
        println!(
            "{:<22} {:>7} {:>26} {:>26} {:>10.1} {:>11.0} {:>13.1} {:>16} {:>13.0}",
            name,
            ratios.len(),
            spread(&rate, 3),
            spread(&cpu, 3),
            median(job_cpu),
            median(samples_per_s),
            median(window_ms),
            spread(&after_ms, 0),
            median(setup_ms),
        );
    }
    Ok(())
}

/// The buffer-debloating comparison: a slow sink (its CPU burn per record ~1000× the source's
/// cost) behind a full exchange, aligned checkpoints every 500 ms, without and with debloating;
/// median of the runs by throughput.
pub fn bench_debloat(exe: &std::path::Path, a: &BenchCases) -> Result<()> {
    println!(
        "{:<22} {:>12} {:>16} {:>18} {:>16} {:>8} {:>14} {:>14}",
        "slow sink",
        "records/s",
        "in-flight avg B",
        "2nd half avg B",
        "in-flight max B",
        "ckpts",
        "ckpt avg ms",
        "ckpt max ms"
    );
    let mut rows = Vec::new();
    for debloat in [false, true] {
        let mut args: Vec<String> = [
            "scenario",
            "slow-sink",
            "--records",
            &a.debloat_records.to_string(),
            "--sink-work",
            &a.debloat_sink_work.to_string(),
            "--source-work",
            &a.debloat_source_work.to_string(),
            "-p",
            &a.parallelism.to_string(),
            "--checkpoint-interval",
            "500",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if debloat {
            args.push("--buffer-debloat".into());
            args.push("--buffer-debloat-target".into());
            args.push(a.debloat_target_ms.to_string());
        }
        let name = if debloat {
            "with debloating"
        } else {
            "without debloating"
        };
        let mut runs = Vec::new();
        for _ in 0..a.runs.max(1) {
            let s = run_once(exe, name, &args)?;
            let g = |k: &str| field(&s, k).unwrap_or(f64::NAN);
            runs.push([
                g("records_per_sec"),
                g("in_flight_bytes_avg"),
                g("in_flight_bytes_max"),
                g("in_flight_bytes_avg_second_half"),
                g("checkpoints_completed"),
                g("checkpoint_ms_avg"),
                g("checkpoint_ms_max"),
            ]);
        }
        runs.sort_by(|x, y| x[0].total_cmp(&y[0]));
        let m = runs[runs.len() / 2];
        println!(
            "{:<22} {:>12} {:>16.0} {:>18.0} {:>16.0} {:>8.0} {:>14.1} {:>14.0}",
            name,
            human(m[0]),
            m[1],
            m[3],
            m[2],
            m[4],
            m[5],
            m[6]
        );
        rows.push(m);
    }
    let (off, on) = (rows[0], rows[1]);
    println!(
        "with/without: throughput {:.3}, in-flight bytes {:.3} (second half {:.3}), aligned checkpoint duration {:.3}",
        on[0] / off[0],
        on[1] / off[1],
        on[3] / off[3],
        on[5] / off[5]
    );
    Ok(())
}

/// The reference cases (passthrough chained and across REBALANCE, skew and its variants), each
/// `a.runs` times; with `a.floor`, every skew run beside a run of the floor program.
pub fn bench_reference(exe: &std::path::Path, a: &BenchCases) -> Result<()> {
    let p = a.parallelism.to_string();
    let cases = vec![
        Case {
            name: "passthrough (chained)",
            args: vec![
                "passthrough".into(),
                "--records".into(),
                a.passthrough_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        },
        Case {
            name: "passthrough (REBALANCE)",
            args: vec![
                "passthrough".into(),
                "--rebalance".into(),
                "--records".into(),
                a.passthrough_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        },
        Case {
            name: "skew",
            args: vec![
                "skew".into(),
                "--records".into(),
                a.skew_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        },
        Case {
            name: "skew --two-phase",
            args: vec![
                "skew".into(),
                "--two-phase".into(),
                "--records".into(),
                a.skew_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        },
        Case {
            name: "skew, no operator timing",
            args: vec![
                "skew".into(),
                "--no-operator-timing".into(),
                "--records".into(),
                a.skew_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        },
        Case {
            name: "skew, 8 -> HASH -> 8",
            args: vec![
                "skew".into(),
                "--records".into(),
                a.skew_records.to_string(),
                "-p".into(),
                "8".into(),
            ],
        },
        Case {
            name: "chained, no op timing",
            args: vec![
                "passthrough".into(),
                "--no-operator-timing".into(),
                "--records".into(),
                a.passthrough_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        },
    ];
    println!(
        "{:<26} {:>12} {:>14} {:>14} {:>16} {:>14} {:>12}",
        "case", "records", "records/s", "per core", "CPU-ns/record", "peak RSS MiB", "startup ms"
    );
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as f64;
    let mut floor_rows = Vec::new();
    for c in cases {
        let mut runs = Vec::new();
        let mut of_floor = Vec::new();
        for _ in 0..a.runs.max(1) {
            let floor_c = match (&a.floor, c.name.starts_with("skew")) {
                (Some(f), true) => Some(run_floor(f, a.skew_records)?),
                _ => None,
            };
            let s = run_once(exe, c.name, &c.args)?;
            if let (Some(fc), Some(rate)) = (floor_c, field(&s, "records_per_sec")) {
                of_floor.push(rate / fc);
            }
            runs.push(Stats {
                records: field(&s, "records").unwrap_or(0.0),
                rate: field(&s, "records_per_sec").unwrap_or(0.0),
                cpu_ns: field(&s, "cpu_ns_per_record").unwrap_or(f64::NAN),
                rss_kib: field(&s, "peak_rss_kib").unwrap_or(f64::NAN),
                startup_ms: field(&s, "startup_ms").unwrap_or(f64::NAN),
            });
        }
        runs.sort_by(|x, y| x.rate.total_cmp(&y.rate));
        let m = runs[runs.len() / 2];
        let used_cores = (m.rate * m.cpu_ns / 1e9).clamp(1.0, cores);
        println!(
            "{:<26} {:>12} {:>14} {:>14} {:>16.1} {:>14.1} {:>12.2}",
            c.name,
            human(m.records),
            human(m.rate),
            human(m.rate / used_cores),
            m.cpu_ns,
            m.rss_kib / 1024.0,
            m.startup_ms
        );
        if !of_floor.is_empty() {
            floor_rows.push((c.name, spread(&of_floor, 2)));
        }
    }
    if !floor_rows.is_empty() {
        println!("\nthroughput / floor (c), each run beside its own floor run: median [min, max]");
        for (name, s) in floor_rows {
            println!("{name:<26} {s}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn profile_ratios_are_read_from_the_stats_line() {
        let s = r#"{"profile_runs":2,"profile_ratios":[[0.9950,1.0100],[1.0000,0.9900]]}"#;
        assert_eq!(super::profile_ratios(s), vec![(0.995, 1.01), (1.0, 0.99)]);
        assert!(super::profile_ratios(r#"{"profile_ratios":[]}"#).is_empty());
        assert!(super::profile_ratios(r#"{"profile_ratios":null}"#).is_empty());
    }

    #[test]
    fn reads_floor_c_from_the_floor_programs_output() {
        let out = "(a) one thread, no engine: 6.10 ns/record, 163.9 M rec/s (checksum 1, hot sum 2)\n\
                   (b) producer -> bounded channel of 2048-record batches -> consumer: 7.00 ns/record, 142.9 M rec/s\n\
                   (c) 2 producers -> hash -> 2 consumers (HashMap state): 12.40 ns/record, 80.6 M rec/s\n";
        assert_eq!(super::floor_c_rate(out), Some(80.6e6));
        assert_eq!(super::floor_c_rate("nothing"), None);
    }
}
