//! `sluice run … --processes N`: the job over N real OS processes of the binary, connected
//! over loopback TCP; the skew job's merged output equals real Flink 2.3's (100k fixture).

use std::process::Command;

mod common;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-skew-final-100k.csv"
);

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

#[test]
fn the_skew_job_over_two_processes_sums_as_flink() {
    let dir = tempfile_dir("two");
    let out = dir.join("sums.csv");
    let o = sluice()
        .args([
            "run",
            "skew",
            "--records",
            "100000",
            "-p",
            "2",
            "--processes",
            "2",
        ])
        .args(["--no-rest", "--no-progress", "--output"])
        .arg(&out)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("2 processes started"), "{stderr}");
    // Each process ran its own subtasks and wrote its part, merged and removed by the launcher.
    assert!(
        stderr.contains("process 0 of 2: its final sums"),
        "{stderr}"
    );
    assert!(
        stderr.contains("process 1 of 2: its final sums"),
        "{stderr}"
    );
    let got = std::fs::read_to_string(&out).expect("merged output");
    let want = std::fs::read_to_string(FIXTURE).expect("fixture");
    assert_eq!(got.trim_end(), want.trim_end());
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 1, "only the merged file is left: {left:?}");
}

#[test]
fn a_process_that_fails_fails_the_run_naming_it_and_the_others_are_stopped() {
    // Checkpoints of a split job are not supported: every process refuses before it starts.
    let o = sluice()
        .args(["run", "skew", "--records", "100000", "--processes", "2"])
        .args(["--no-rest", "--no-progress", "--checkpoint-interval", "100"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(stderr.contains("not supported yet"), "{stderr}");
    assert!(stderr.contains("of 2 failed"), "{stderr}");
}

#[test]
fn bad_process_flags_are_refused_before_anything_starts() {
    let o = sluice()
        .args(["run", "skew", "--processes", "0"])
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--processes"));
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sluice-processes-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The PIDs of `pid`'s children (Linux `/proc`).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_split_job_refuses_plan_changes_and_its_processes_die_with_the_launcher() {
    let (launcher, url) = common::start_live(&[
        "skew",
        "--records",
        "100000000000",
        "-p",
        "2",
        "--processes",
        "2",
    ]);
    let jobs = common::get(&format!("{url}/jobs"));
    let jid = jobs["jobs"][0]["id"]
        .as_str()
        .expect("a job id")
        .to_string();
    let mut req = common::get(&format!("{url}/jobs/{jid}/resource-requirements"));
    for (_, v) in req.as_object_mut().expect("by vertex").iter_mut() {
        v["parallelism"]["upperBound"] = 3.into();
    }
    let put = Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "30",
            "-X",
            "PUT",
            "-w",
            "\n%{http_code}",
        ])
        .args([
            "-H",
            "Content-Type: application/json",
            "-d",
            &req.to_string(),
        ])
        .arg(format!("{url}/jobs/{jid}/resource-requirements"))
        .output()
        .expect("curl");
    let answer = String::from_utf8_lossy(&put.stdout).to_string();
    assert!(answer.trim_end().ends_with("400"), "{answer}");
    assert!(answer.contains("split over processes"), "{answer}");
    // SIGKILL the launcher (dropping the guard): it cannot stop its processes, which must
    // notice and exit.
    let processes = children_of(launcher.pid());
    assert_eq!(processes.len(), 2, "two processes: {processes:?}");
    drop(launcher);
    wait_until("the processes exit with their launcher", 30, || {
        processes.iter().all(|&p| !alive(p))
    });
}
