//! `sluice doctor --url SLUICE --apply` against a live `sluice run scenario under-provisioned`:
//! the autopilot diagnoses, applies through `POST /jobs/:jid/doctor/apply` and reports its
//! decision to the job's `GET /jobs/:jid/autopilot` log with the figures before the change.
//! `sluice run` starts its jobs live, so the change is applied (never `failed`) and the decision
//! is kept or rolled back with the figures after; `/jobs/:jid` shows the parallelism it left.
//! The same with the autopilot in process (`sluice run … --autopilot`).

use crate::common;
use common::{get, start_live};

use std::process::Command;

#[test]
fn doctor_apply_on_sluice_logs_its_decision_with_figures() {
    let (_job, url) = start_live(&["scenario", "under-provisioned", "-p", "1"]);
    // The doctor needs a filled metrics window: try --apply until a decision was taken (the
    // first runs may find no bottleneck yet on a loaded machine).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let (jid, out) = loop {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args([
                "doctor",
                "--url",
                &url,
                "--apply",
                "--window",
                "2",
                "--no-flame-graphs",
            ])
            .output()
            .unwrap();
        let out =
            String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{out}");
        let jid = get(&format!("{url}/jobs/overview"))["jobs"][0]["jid"]
            .as_str()
            .unwrap()
            .to_string();
        if out.contains("applying ") {
            break (jid, out);
        }
        assert!(std::time::Instant::now() < deadline, "no decision: {out}");
    };
    assert!(out.contains("autopilot on Sluice job"), "{out}");
    let log = get(&format!("{url}/jobs/{jid}/autopilot"));
    let d = &log["decisions"][0];
    assert_eq!(d["id"], 1, "{log}");
    assert_eq!(d["cause"], "under-provisioned", "{log}");
    assert_eq!(d["change"]["kind"], "parallelism", "{log}");
    assert_eq!(d["before"]["parallelism"], 1, "{log}");
    assert!(
        d["before"]["bottleneck-rate"].as_f64().unwrap() > 0.0,
        "{log}"
    );
    assert!(d["before"]["throughput"].as_f64().unwrap() > 0.0, "{log}");
    // `sluice run` starts its job live: the change is applied, never `failed`.
    let d = judged(&url, &jid);
    assert_kept_or_rolled_back(&url, &jid, &d);
}

/// Polls the decision log until decision 1 is judged (kept or rolled back).
fn judged(url: &str, jid: &str) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let log = get(&format!("{url}/jobs/{jid}/autopilot"));
        let d = log["decisions"][0].clone();
        match d["outcome"].as_str() {
            Some("kept" | "rolled-back") => return d,
            Some("failed" | "skipped" | "advised") => panic!("not applied: {log}"),
            _ => {}
        }
        assert!(std::time::Instant::now() < deadline, "not judged: {log}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A kept change left `map` at the new parallelism in `/jobs/:jid` (a rolled-back one at 1),
/// and the decision has the figures before and after.
fn assert_kept_or_rolled_back(url: &str, jid: &str, d: &serde_json::Value) {
    eprintln!("decision: {d}");
    assert_eq!(d["before"]["parallelism"], 1, "{d}");
    assert!(d["before"]["throughput"].as_f64().unwrap() > 0.0, "{d}");
    assert!(d["after"]["throughput"].as_f64().unwrap() > 0.0, "{d}");
    assert!(
        d["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("pause")),
        "{d}"
    );
    let want = match d["outcome"].as_str().unwrap() {
        "kept" => {
            assert_eq!(d["after"]["parallelism"], 2, "{d}");
            2
        }
        _ => {
            assert!(d["reason"].as_str().is_some(), "{d}");
            1
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let job = get(&format!("{url}/jobs/{jid}"));
        let map = job["vertices"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"].as_str().is_some_and(|n| n.contains("map")))
            .cloned();
        if map.as_ref().is_some_and(|m| m["parallelism"] == want) && job["state"] == "RUNNING" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "map not at parallelism {want}: {job}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn sluice_run_autopilot_raises_the_under_provisioned_map() {
    let (_job, url) = start_live(&["scenario", "under-provisioned", "-p", "1", "--autopilot"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let jid = loop {
        if let Some(j) = get(&format!("{url}/jobs/overview"))["jobs"][0]["jid"].as_str() {
            break j.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "no job");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let d = judged(&url, &jid);
    assert_eq!(d["cause"], "under-provisioned", "{d}");
    assert_eq!(d["change"]["kind"], "parallelism", "{d}");
    assert_kept_or_rolled_back(&url, &jid, &d);
}

/// The skew job with a hot key under `--autopilot`, on unbounded input with checkpoints (the
/// pre-aggregation flushes cold keys' partials at barriers): the autopilot switches the keyed
/// sum to two-phase aggregation through the live job and judges it (on two busy cores the
/// pre-aggregation may add no capacity, so a roll-back is a fair verdict). Prints the seconds
/// from the job's start to the decision and the change's pause.
#[test]
fn sluice_run_autopilot_switches_the_hot_key_sum_to_two_phase() {
    let (_job, url) = start_live(&[
        "skew",
        "--records",
        "1000000000000",
        "-p",
        "2",
        "--checkpoint-interval",
        "1000",
        "--autopilot",
    ]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (jid, started_ms) = loop {
        let o = get(&format!("{url}/jobs/overview"));
        if let (Some(j), Some(t)) = (
            o["jobs"][0]["jid"].as_str(),
            o["jobs"][0]["start-time"].as_i64(),
        ) {
            break (j.to_string(), t);
        }
        assert!(std::time::Instant::now() < deadline, "no job");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let d = judged(&url, &jid);
    eprintln!("decision: {d}");
    assert_eq!(d["cause"], "key-skew", "{d}");
    assert_eq!(d["change"]["kind"], "two-phase", "{d}");
    assert!(d["after"]["bottleneck-rate"].as_f64().unwrap() > 0.0, "{d}");
    let pause_ms: f64 = d["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str()?.split("pause ").nth(1)?.strip_suffix(" ms"))
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pause in {d}"));
    let decided_s = (d["time"].as_i64().unwrap() - started_ms) as f64 / 1e3;
    eprintln!(
        "skew --autopilot: two-phase decided {decided_s:.1} s after the job started, pause \
         {pause_ms:.0} ms, outcome {}",
        d["outcome"]
    );
}
