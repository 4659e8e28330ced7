//! `sluice bench`: each case runs in a fresh `sluice run --stats-json` process, so peak RSS and
//! CPU time belong to that case alone; the median of the runs is reported.

use std::process::{Command, ExitCode};

use crate::args::BenchArgs;
use crate::progress::human;

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

fn field(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &json[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// One `sluice run <args> --stats-json --no-rest`: its stats line.
fn run_once(exe: &std::path::Path, name: &str, args: &[String]) -> anyhow::Result<String> {
    let out = Command::new(exe)
        .arg("run")
        .args(args)
        .arg("--stats-json")
        .arg("--no-rest")
        .output()?;
    if !out.status.success() {
        anyhow::bail!("{name} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Median and extremes of `v`, as `median [min, max]`.
fn spread(v: &[f64], digits: usize) -> String {
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

/// `sluice bench --profiler`: each job with and without `--profile-all`, runs interleaved (off,
/// on, off, on, …) so drifting machine load hits both alike. Each on run is compared with the
/// off run just before it; the ratios' median and extremes are reported, and what the
/// profiler counted it did (native samples, looks, its own thread's CPU time).
fn bench_profiler(a: &BenchArgs, exe: &std::path::Path) -> anyhow::Result<ExitCode> {
    let p = a.parallelism.to_string();
    let jobs: [(&str, Vec<String>); 2] = [
        (
            "passthrough (chained)",
            vec![
                "passthrough".into(),
                "--records".into(),
                a.passthrough_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        ),
        (
            "skew",
            vec![
                "skew".into(),
                "--records".into(),
                a.skew_records.to_string(),
                "-p".into(),
                p.clone(),
            ],
        ),
    ];
    println!(
        "{:<22} {:>10} {:>10} {:>26} {:>9} {:>9} {:>26} {:>9} {:>13} {:>11}",
        "case",
        "off rec/s",
        "on rec/s",
        "on/off rec/s med [min,max]",
        "off ns/r",
        "on ns/r",
        "on/off ns/r med [min,max]",
        "runs",
        "samples/s",
        "sampler %"
    );
    for (name, args) in jobs {
        let mut on_args = args.clone();
        on_args.push("--profile-all".into());
        if let Some(hz) = a.profile_hz {
            on_args.push("--profile-hz".into());
            on_args.push(hz.to_string());
        }
        let (mut off, mut on, mut off_cpu, mut on_cpu) = (vec![], vec![], vec![], vec![]);
        let (mut rate_ratio, mut cpu_ratio, mut sampled) = (vec![], vec![], vec![]);
        let (mut samples_per_s, mut sampler_share) = (vec![], vec![]);
        for _ in 0..a.runs.max(1) {
            let s = run_once(exe, name, &args)?;
            let (r0, c0) = (
                field(&s, "records_per_sec").unwrap_or(0.0),
                field(&s, "cpu_ns_per_record").unwrap_or(f64::NAN),
            );
            let s = run_once(exe, name, &on_args)?;
            let g = |k: &str| field(&s, k).unwrap_or(f64::NAN);
            let (r1, c1) = (g("records_per_sec"), g("cpu_ns_per_record"));
            off.push(r0);
            on.push(r1);
            off_cpu.push(c0);
            on_cpu.push(c1);
            rate_ratio.push(r1 / r0.max(1e-9));
            cpu_ratio.push(c1 / c0);
            sampled.push(g("profile_runs"));
            let wall_s = g("wall_ms") / 1000.0;
            samples_per_s.push(g("native_samples") / wall_s);
            // The sampling thread's CPU (looks, symbolisation) as a share of the process's.
            let process_cpu_ms = c1 * g("records") / 1e6;
            sampler_share.push(100.0 * (g("window_cpu_ms") + g("after_cpu_ms")) / process_cpu_ms);
        }
        println!(
            "{:<22} {:>10} {:>10} {:>26} {:>9.1} {:>9.1} {:>26} {:>9} {:>13.0} {:>11}",
            name,
            human(median(off)),
            human(median(on)),
            spread(&rate_ratio, 3),
            median(off_cpu),
            median(on_cpu),
            spread(&cpu_ratio, 3),
            median(sampled),
            median(samples_per_s),
            spread(&sampler_share, 2)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The buffer-debloating comparison: a slow sink (its CPU burn per record ~1000× the source's
/// cost) behind a full exchange, aligned checkpoints every 500 ms, without and with debloating;
/// median of the runs by throughput.
fn bench_debloat(exe: &std::path::Path, a: &BenchArgs) -> anyhow::Result<ExitCode> {
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
    Ok(ExitCode::SUCCESS)
}

pub fn bench(a: BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(t) = &a.target {
        return crate::bench_connectors::bench(t);
    }
    let exe = std::env::current_exe()?;
    if a.profiler {
        return bench_profiler(&a, &exe);
    }
    if a.debloat {
        return bench_debloat(&exe, &a);
    }
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
    for c in cases {
        let mut runs = Vec::new();
        for _ in 0..a.runs.max(1) {
            let s = run_once(&exe, c.name, &c.args)?;
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
    }
    Ok(ExitCode::SUCCESS)
}
