//! Absurd or mistaken input is refused with a clear error before a job starts: no panic, no
//! allocation the size of the number, no job that runs for minutes and then fails (each case
//! was a panic, an abort or a silent failure before). The real binary, checked by its output.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `sluice args…`, killing it if it has not ended within `deadline` (a refusal must not
/// wait for a job); returns (exit code, stderr).
fn sluice(args: &[&str]) -> (Option<i32>, String) {
    let deadline = Duration::from_secs(120);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after {deadline:?}: it was not refused up front");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

/// Asserts `args` fail with an ordinary error (exit 1, or clap's usage error 2; not a panic's
/// 101 or a signal) whose text contains every one of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let (code, err) = sluice(args);
    assert!(
        matches!(code, Some(1) | Some(2)),
        "{args:?}: exit {code:?}\n{err}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected '{n}' in:\n{err}");
    }
}

const BIG: &str = "1000000000000";

#[test]
fn top_refuses_an_interval_out_of_range() {
    refused(
        &["top", "--interval", "1e20"],
        &["'--interval <SECS>'", "between 0.05 and 3600 seconds"],
    );
    refused(&["top", "--interval", "NaN"], &["between 0.05 and 3600"]);
}

#[test]
fn run_refuses_metrics_settings_out_of_range() {
    let base = ["run", "passthrough", "--records", BIG, "--no-rest"];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };
    refused(
        &with(&["--metrics-interval", "1e20"]),
        &["--metrics-interval", "between 0.001 and 3600 seconds"],
    );
    refused(
        &with(&["--metrics-interval", "1e-9", "--metrics-window", "100"]),
        &["--metrics-interval", "between 0.001 and 3600 seconds"],
    );
    refused(
        &with(&["--metrics-interval", "0.001", "--metrics-window", "100"]),
        &["--metrics-window (100) may be at most 1000 times --metrics-interval"],
    );
    refused(
        &with(&["--metrics-interval", "2", "--metrics-window", "1"]),
        &["--metrics-window (1) must be at least --metrics-interval (2)"],
    );
}

#[test]
fn run_refuses_sizes_and_durations_out_of_range() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--exclusive-credits", "18446744073709551615"],
            "--exclusive-credits",
        ),
        (&["--buffer-size", "18446744073709551615"], "--buffer-size"),
        (
            &["--checkpoint-timeout", "18446744073709551615"],
            "--checkpoint-timeout",
        ),
        (
            &["--checkpoint-interval", "1"],
            "between 10 and 86400000 ms",
        ),
        (&["-p", "0"], "between 1 and 32768"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["run", "skew", "--records", BIG, "--no-rest"];
        args.extend_from_slice(extra);
        refused(&args, &[needle]);
    }
}

#[test]
fn a_parallelism_beyond_the_thread_and_buffer_ceilings_is_refused_before_launch() {
    // An all-to-all edge at parallelism 2000 has 4 million channels: it used to grow memory
    // until the process was killed.
    refused(
        &["run", "skew", "-p", "2000", "--records", BIG, "--no-rest"],
        &[
            "4000000 channels",
            "more than the 1.0 GiB limit",
            "lower the parallelism",
        ],
    );
    refused(
        &[
            "run",
            "passthrough",
            "-p",
            "5000",
            "--records",
            BIG,
            "--no-rest",
        ],
        &["5000 subtasks", "more than the 4096"],
    );
}

#[test]
fn doctor_refuses_an_absurd_parallelism_in_saved_answers() {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/flink/flink-rest/skew");
    let dir = temp_dir("doctor-parallelism");
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let job = std::fs::read_to_string(dir.join("job.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&job).unwrap();
    v["vertices"][0]["parallelism"] = serde_json::json!(1e18);
    std::fs::write(dir.join("job.json"), v.to_string()).unwrap();
    refused(
        &["doctor", "--from-dir", dir.to_str().unwrap()],
        &["`parallelism` of 1e+18", "Source: generator", "0 to 32768"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_into_a_missing_directory_is_refused_before_the_job_runs() {
    // A trillion records: if the job started first, the deadline would catch it.
    refused(
        &[
            "run",
            "skew",
            "--records",
            BIG,
            "--no-rest",
            "--output",
            "/nonexistent-dir/sums.csv",
        ],
        &[
            "--output /nonexistent-dir/sums.csv",
            "the directory /nonexistent-dir does not exist",
        ],
    );
    let dir = temp_dir("output-is-dir");
    refused(
        &[
            "run",
            "skew",
            "--records",
            BIG,
            "--no-rest",
            "--output",
            dir.to_str().unwrap(),
        ],
        &["is a directory, not a file"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_injected_failure_that_names_no_receiving_subtask_is_refused() {
    let run = |spec: &'static str| -> Vec<&'static str> {
        vec![
            "run",
            "skew",
            "--records",
            BIG,
            "--no-rest",
            "--inject-failure",
            spec,
        ]
    };
    refused(
        &run("Sum:0:10"),
        &[
            "--inject-failure Sum:0:10: no vertex name contains 'Sum'",
            "'sum-per-key -> Sink: final-sums' (p=2)",
        ],
    );
    refused(
        &run("Source:0:10"),
        &["only matches source vertices, which receive no records"],
    );
    refused(
        &run("sum-per-key:2:10"),
        &["vertex 'sum-per-key -> Sink: final-sums' has subtasks 0..1 (parallelism 2), not 2"],
    );
}

#[test]
fn connector_benchmarks_without_a_url_say_how_to_get_a_server() {
    refused(
        &["bench", "kafka-source"],
        &[
            "needs --url kafka://HOST:PORT/TOPIC",
            "scripts/kafka.sh start",
        ],
    );
    refused(
        &["bench", "postgres"],
        &[
            "needs --url postgres://USER@HOST:PORT/DB",
            "scripts/postgres.sh start",
        ],
    );
    refused(
        &["bench", "postgres", "--url", "postgres://u@h:1/db?table=t"],
        &["takes no parameters"],
    );
}

fn temp_dir(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-input-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn async_capacity_on_an_operator_that_does_not_wait_is_refused_before_the_start() {
    // `sum-per-key` in the skew scenario is a keyed reduce, neither a lookup join nor async.
    refused(
        &[
            "run",
            "scenario",
            "skew",
            "--no-rest",
            "--async-capacity",
            "sum-per-key=8",
        ],
        &[
            "--async-capacity sum-per-key=8",
            "neither a lookup join nor an async operator",
        ],
    );
    refused(
        &[
            "run",
            "scenario",
            "blocking",
            "--no-rest",
            "--async-capacity",
            "blocking-call=0",
        ],
        &["capacity must be at least 1"],
    );
}

#[test]
fn work_options_outside_the_generated_slow_sink_are_refused() {
    refused(
        &["run", "scenario", "skew", "--no-rest", "--sink-work", "10"],
        &["--sink-work is an option of the slow-sink scenario only"],
    );
    refused(
        &[
            "run",
            "scenario",
            "slow-sink",
            "--no-rest",
            "--source-work",
            "10",
        ],
        &["--source-work needs --sink-work"],
    );
    refused(
        &[
            "run",
            "scenario",
            "slow-sink",
            "--no-rest",
            "--sink-work",
            "10",
            "--to",
            "kafka://127.0.0.1:9/sums",
        ],
        &["--sink-work and --source-work shape the generated slow-sink job"],
    );
}
