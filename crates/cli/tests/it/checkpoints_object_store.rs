//! Checkpoints on an S3-compatible object store (a real server: moto's, started by
//! `sluice-testkit`): a job split over two processes restarts both from the checkpoint they
//! share in the bucket after one fails, and the checkpoint restores in one process at another
//! parallelism; the results equal a failure-free run's. Bad locations are refused before the
//! job starts, naming them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sluice_testkit::S3Server;

const RECORDS: &str = "2000000";
const JOB_ID: &str = "5d1ce0b7ec7a0f5e5a11ce0b7ec7a0f5";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-s3-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn run(s3: Option<&S3Server>, args: &[&str], output: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["run", "skew", "--records", RECORDS])
        .args(args)
        .args(["--no-rest", "--no-progress", "--output"])
        .arg(output);
    for (k, v) in s3.map(S3Server::env).unwrap_or_default() {
        cmd.env(k, v);
    }
    cmd.output().expect("sluice runs")
}

fn ok(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    stderr
}

#[test]
fn a_split_job_restarts_from_its_checkpoints_on_s3_and_they_restore_at_another_parallelism() {
    let s3 = S3Server::start("checkpoints").expect("S3-compatible server");
    let d = dir("restart");
    let plain = d.join("plain.csv");
    ok(&run(None, &["-p", "2"], &plain));
    let want = std::fs::read_to_string(&plain).expect("plain output");

    // Process 1's sum subtask fails after 400 000 records; the launcher restarts both
    // processes from the latest checkpoint, which they wrote to the bucket.
    let split = d.join("split.csv");
    let stderr = ok(&run(
        Some(&s3),
        &[
            "-p",
            "2",
            "--processes",
            "2",
            "--job-id",
            JOB_ID,
            "--checkpoint-interval",
            "100",
            "--checkpoint-dir",
            "s3://checkpoints/jobs",
            "--inject-failure",
            "sum-per-key:1:400000",
        ],
        &split,
    ));
    assert!(
        stderr.contains(&format!(
            "restarting all 2 processes from s3://checkpoints/jobs/{JOB_ID}/chk-"
        )),
        "the restart is from a checkpoint in the bucket: {stderr}"
    );
    assert!(stderr.contains("the job restarted 1 times"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&split).expect("merged output"),
        want
    );

    // In the bucket: the retained checkpoint, whole (state files and _metadata), and no
    // leftover of the writability probe.
    let keys = s3.keys().expect("bucket listing");
    let prefix = format!("jobs/{JOB_ID}/chk-");
    let metadata: Vec<&String> = keys
        .iter()
        .filter(|k| k.starts_with(&prefix) && k.ends_with("/_metadata"))
        .collect();
    assert_eq!(metadata.len(), 1, "one retained checkpoint: {keys:?}");
    assert!(
        keys.iter()
            .any(|k| k.starts_with(&prefix) && k.ends_with(".state")),
        "{keys:?}"
    );
    assert!(!keys.iter().any(|k| k.contains("probe")), "{keys:?}");

    // The job's checkpoint directory in the bucket restores in one process at parallelism 3.
    let restored = d.join("restored.csv");
    ok(&run(
        Some(&s3),
        &[
            "-p",
            "3",
            "--from-checkpoint",
            &format!("s3://checkpoints/jobs/{JOB_ID}"),
        ],
        &restored,
    ));
    assert_eq!(std::fs::read_to_string(&restored).expect("output"), want);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn unusable_s3_locations_are_refused_before_the_job_starts() {
    let s3 = S3Server::start("present").expect("S3-compatible server");
    let d = dir("refused");
    let out = d.join("out.csv");
    for (location, says) in [
        ("s3://absent/jobs", "not usable"),
        ("s3:///jobs", "no bucket"),
    ] {
        let o = run(
            Some(&s3),
            &[
                "-p",
                "2",
                "--checkpoint-interval",
                "100",
                "--checkpoint-dir",
                location,
            ],
            &out,
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{location}: {stderr}");
        assert!(
            stderr.contains(location.trim_end_matches("/jobs")) && stderr.contains(says),
            "{location}: {stderr}"
        );
        assert!(
            !stderr.contains("job started"),
            "refused before the start: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let from = run(
        Some(&s3),
        &["-p", "2", "--from-checkpoint", "s3://present/nothing-here"],
        &out,
    );
    let stderr = String::from_utf8_lossy(&from.stderr);
    assert!(!from.status.success(), "{stderr}");
    assert!(
        stderr.contains("s3://present/nothing-here") && stderr.contains("no complete chk-<n>"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
