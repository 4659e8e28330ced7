//! `sluice doctor --url SLUICE --apply` against a live `sluice run scenario under-provisioned`:
//! the autopilot diagnoses, applies through `POST /jobs/:jid/doctor/apply` and reports its
//! decision to the job's `GET /jobs/:jid/autopilot` log with the figures before the change.
//! A server without live healing (no `doctor/apply` route) makes the decision `failed`, naming
//! the route, and the change is not retried; with it, the decision is kept or rolled back with
//! the figures after.

mod common;
use common::start_live;

use std::process::Command;

fn get(url: &str) -> serde_json::Value {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "5", url])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

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
    match d["outcome"].as_str().unwrap() {
        "failed" => assert!(
            d["reason"].as_str().unwrap().contains("doctor/apply"),
            "{log}"
        ),
        "kept" | "rolled-back" => assert!(d["after"]["parallelism"].as_u64().is_some(), "{log}"),
        other => panic!("unexpected outcome {other}: {log}"),
    }
}
