//! `sluice doctor fix <job>`: diagnose a built-in job live, apply the fix, prove identical output.

use std::process::Command;
use std::time::{Duration, Instant};

// The runs measure busy time on a small machine: one at a time, so they do not skew each other.
use crate::common::ONE_AT_A_TIME;

/// `sluice doctor fix <job_flags>`, again until its output has `verdict` or three minutes
/// passed; returns the last output. On a loaded machine the live sample can be ambiguous for a
/// while (threads waiting for a CPU make a source look like the ceiling): the test waits until
/// the evidence is clear, then asserts all of the output.
fn doctor_fix(job_flags: &[&str], verdict: &str) -> String {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut args = vec!["doctor", "fix"];
    args.extend_from_slice(job_flags);
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(&args)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        // A sample blurred by the load can name another cause, whose fix may not apply: the
        // command then fails; try again while there is time.
        if !o.status.success() && !out.contains(verdict) && Instant::now() < deadline {
            continue;
        }
        assert!(
            o.status.success(),
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        if out.contains(verdict) || Instant::now() > deadline {
            return out;
        }
    }
}

#[test]
fn skew_gets_the_two_phase_fix_with_identical_sums() {
    let out = doctor_fix(&["skew", "--records", "2000000"], "Verdict: key skew");
    assert!(out.contains("Verdict: key skew at `sum-per-key"), "{out}");
    assert!(
        out.contains("== the fix: two-phase aggregation on `sum-per-key`"),
        "{out}"
    );
    assert!(out.contains("+ [9] pre-aggregate (salted)"), "{out}");
    assert!(
        out.contains("output: identical (10001 keys' final sums equal in both runs)"),
        "{out}"
    );
    assert!(out.contains("busiest `sum-per-key` subtask"), "{out}");
}

#[test]
fn expensive_map_gets_more_parallelism_behind_rebalance() {
    let out = doctor_fix(
        &[
            "skew",
            "--records",
            "100000",
            "--hot-key-share",
            "0",
            "--map-work",
            "2000",
        ],
        "Verdict: under-provisioned",
    );
    assert!(out.contains("Verdict: under-provisioned"), "{out}");
    assert!(
        out.contains("== the fix: raise `map` to parallelism"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("~ [2] map  parallelism 2 -> ")
                && l.ends_with("input: FORWARD from 1 -> REBALANCE from 1")),
        "{out}"
    );
    assert!(
        out.contains("output: identical (10000 keys' final sums equal in both runs)"),
        "{out}"
    );
}

/// The skew job's records as the oracle reads them (`key,value`), for `records` records of
/// the CLI's default skew settings with `hot_key_share` and `map_work` overridden.
fn duckdb_sums(records: u64, hot_key_share: f64, map_work: u32) -> String {
    use std::io::Write;
    let cfg = sluice_jobs::skew::SkewConfig {
        records,
        hot_key_share,
        map_work,
        ..sluice_jobs::skew::SkewConfig::default()
    };
    let dir = std::env::temp_dir().join(format!("sluice-doctor-fix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join(format!("input-{records}-{map_work}.csv"));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
    writeln!(w, "key,value").unwrap();
    for i in 0..cfg.records {
        let (k, v) = sluice_jobs::skew::record(i, cfg.hot_limit(), cfg.keys);
        writeln!(w, "{k},{v}").unwrap();
    }
    drop(w);
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let py = std::env::var_os("SLUICE_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| format!("{root}/target/venv-oracle/bin/python").into());
    let o = Command::new(&py)
        .arg(format!("{root}/tests/oracle/skew_oracle.py"))
        .arg(&input)
        .arg(map_work.to_string())
        .output()
        .expect("the DuckDB oracle's Python (run scripts/test.sh)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fixed_output_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "sluice-doctor-fix-{}-{name}.csv",
        std::process::id()
    ))
}

#[test]
fn the_two_phase_fix_gives_duckdbs_sums() {
    let path = fixed_output_path("two-phase");
    let out = doctor_fix(
        &[
            "skew",
            "--records",
            "300000",
            "--fixed-output",
            path.to_str().unwrap(),
        ],
        "Verdict: key skew",
    );
    assert!(out.contains("== the fix: two-phase aggregation"), "{out}");
    let ours = std::fs::read_to_string(&path).unwrap();
    let defaults = sluice_jobs::skew::SkewConfig::default();
    assert_eq!(
        ours,
        duckdb_sums(300_000, defaults.hot_key_share, defaults.map_work)
    );
}

#[test]
fn the_parallelism_fix_gives_duckdbs_sums() {
    let path = fixed_output_path("parallelism");
    let out = doctor_fix(
        &[
            "skew",
            "--records",
            "2000",
            "--hot-key-share",
            "0",
            "--map-work",
            "2000",
            "--fixed-output",
            path.to_str().unwrap(),
        ],
        "Verdict: under-provisioned",
    );
    assert!(
        out.contains("== the fix: raise `map` to parallelism"),
        "{out}"
    );
    let ours = std::fs::read_to_string(&path).unwrap();
    assert_eq!(ours, duckdb_sums(2_000, 0.0, 2_000));
}

#[test]
fn slow_sink_gets_batched_writes_with_the_same_table() {
    let out = doctor_fix(
        &["scenario", "slow-sink", "--records", "20000"],
        "Verdict: sink limit",
    );
    assert!(
        out.contains("Verdict: sink limit at `Sink: slow-sink`"),
        "{out}"
    );
    assert!(
        out.contains("== the fix: set `Sink: slow-sink` option sink.buffer-flush.max-rows = 1000"),
        "{out}"
    );
    assert!(
        out.contains("option sink.buffer-flush.max-rows: 1 -> 1000"),
        "{out}"
    );
    assert!(
        out.contains("output: identical (the table's 1024 rows equal in both runs)"),
        "{out}"
    );
}

#[test]
fn blocking_lookup_gets_async_with_a_capacity_from_littles_law_and_identical_output() {
    let out = doctor_fix(
        &["scenario", "blocking", "--records", "2000"],
        "Verdict: blocking calls",
    );
    assert!(
        out.contains("Verdict: blocking calls at `blocking-call -> Sink: digest`"),
        "{out}"
    );
    assert!(
        out.contains("== the fix: async lookup in `blocking-call` with capacity "),
        "{out}"
    );
    assert!(out.contains("option lookup.async: false -> true"), "{out}");
    assert!(
        out.contains("option lookup.async.capacity: 100 -> "),
        "{out}"
    );
    assert!(
        out.contains("output: identical (the 2000 looked-up records (in order on each of 2 subtasks) equal in both runs)"),
        "{out}"
    );
    // Faster: the fixed run's wall time is below the original's.
    let wall = out
        .lines()
        .find(|l| l.starts_with("wall time"))
        .expect("wall time line");
    let secs: Vec<f64> = wall
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(secs.len() == 2 && secs[1] < secs[0], "{wall}");
}

#[test]
fn blocking_lookup_whose_keys_repeat_gets_a_cache_and_identical_output() {
    let out = doctor_fix(
        &["scenario", "blocking", "--records", "2000", "--keys", "32"],
        "Verdict: blocking calls",
    );
    assert!(
        out.contains("of `blocking-call`'s recent lookups (its last 1024) repeat a key")
            && out.contains("so the fix is a cache before async"),
        "{out}"
    );
    assert!(
        out.contains(
            "== the fix: cache the lookup in `blocking-call`: LookupCache::partial(10000, 60s)"
        ),
        "{out}"
    );
    assert!(
        out.contains("option lookup.cache: NONE -> PARTIAL"),
        "{out}"
    );
    assert!(
        out.contains("output: identical (the 2000 looked-up records"),
        "{out}"
    );
}

/// `sluice doctor fix scenario blocking` with no other flag: the scenario's input is unbounded,
/// so the proof sizes a bounded one itself (about 4 s of the original on this machine) and
/// ends with it. The deadline is generous (the issue asks for a minute; a loaded machine and a
/// debug build get three) and the only deadline: the command must end on its own.
#[test]
fn blocking_with_no_flag_ends_with_a_proof_on_a_calibrated_input() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!("sluice-doctor-fix-noflag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["doctor", "fix", "scenario", "blocking"])
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = t0 + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`doctor fix scenario blocking` did not end within 180 s:\n{}",
                std::fs::read_to_string(&out_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let took = t0.elapsed();
    let out = std::fs::read_to_string(&out_path).unwrap();
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert!(status.success(), "{out}\n{err}");
    // The record count it chose, said up front and compared in both runs.
    let n: u64 = out
        .split("The proof runs on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no record count announced:\n{out}"));
    assert!(n >= 1000, "{out}");
    assert!(
        out.contains(&format!(
            "output: identical (the {n} looked-up records (in order on each of 2 subtasks) equal in both runs)"
        )),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("records compared")
            && l.contains(&format!("original {n} "))
            && l.ends_with(&format!("fixed {n}"))),
        "{out}"
    );
    assert!(out.contains("throughput (records/s)"), "{out}");
    // Off a terminal, the progress comes as plain lines on stderr, ending with each run's end.
    assert!(
        err.contains(&format!("original run: {n} / {n} records (100%), done"))
            && err.contains(&format!("fixed run: {n} / {n} records (100%), done")),
        "{err}"
    );
    eprintln!("doctor fix scenario blocking (no flag): {n} records, {took:?}");
}
