//! `sluice doctor fix <job>`: diagnose a built-in job live, apply the fix, prove identical output.

use std::process::Command;
use std::sync::Mutex;

/// The runs measure busy time on a small machine: one at a time, so they do not skew each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn doctor_fix(job_flags: &[&str]) -> String {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut args = vec!["doctor", "fix"];
    args.extend_from_slice(job_flags);
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(&args)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn skew_gets_the_two_phase_fix_with_identical_sums() {
    let out = doctor_fix(&["skew", "--records", "2000000"]);
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
    let out = doctor_fix(&[
        "skew",
        "--records",
        "100000",
        "--hot-key-share",
        "0",
        "--map-work",
        "2000",
    ]);
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
