//! `sluice run … --processes N`: the job over N real OS processes of the binary, connected
//! over loopback TCP; the skew job's merged output equals real Flink 2.3's (100k fixture).

use std::process::Command;

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
