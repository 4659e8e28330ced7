//! The autopilot's way back on a source ceiling: `sluice run scenario source-ceiling --splits 1
//! -p 1 --autopilot` reads one part that cannot be cut further, and the doctor cannot see the
//! source's splits, so it proposes more source subtasks; the re-measurement finds the second
//! subtask reading nothing (no gain), the change is rolled back and remembered as ineffective.
//! Under the crate's `ONE_AT_A_TIME` lock (it was a file of its own): the two windows compare
//! rates, which another test beside it would move.

use crate::common;
use common::{get, start_live};

use std::time::{Duration, Instant};

#[test]
fn a_raised_source_that_reads_one_split_is_rolled_back() {
    let _one = common::one_at_a_time();
    let (_job, url) = start_live(&[
        "scenario",
        "source-ceiling",
        "--splits",
        "1",
        "-p",
        "1",
        "--autopilot",
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let jid = loop {
        if let Some(j) = get(&format!("{url}/jobs/overview"))["jobs"][0]["jid"].as_str() {
            break j.to_string();
        }
        assert!(Instant::now() < deadline, "no job");
        std::thread::sleep(Duration::from_millis(100));
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let d = loop {
        let log = get(&format!("{url}/jobs/{jid}/autopilot"));
        let d = log["decisions"][0].clone();
        if matches!(
            d["outcome"].as_str(),
            Some("kept" | "rolled-back" | "failed")
        ) {
            break d;
        }
        assert!(Instant::now() < deadline, "not judged: {log}");
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!("decision: {d}");
    assert_eq!(d["cause"], "source-ceiling", "{d}");
    assert_eq!(d["change"]["kind"], "parallelism", "{d}");
    assert_eq!(d["before"]["parallelism"], 1, "{d}");
    assert_eq!(d["outcome"], "rolled-back", "{d}");
    assert!(
        d["reason"]
            .as_str()
            .is_some_and(|r| r.contains("ineffective")),
        "{d}"
    );
    // Back at parallelism 1, and never tried again.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = get(&format!("{url}/jobs/{jid}"));
        let source = job["vertices"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"].as_str().is_some_and(|n| n.starts_with("Source")))
            .cloned();
        if source.is_some_and(|s| s["parallelism"] == 1) && job["state"] == "RUNNING" {
            break;
        }
        assert!(Instant::now() < deadline, "source not back at 1: {job}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
