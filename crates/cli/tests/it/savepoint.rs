//! `sluice savepoint DIR --stop` on a live job, then `sluice run … --from-savepoint` at another
//! parallelism with the two-phase fix applied, the same final sums as an uninterrupted run; state
//! a job cannot take is refused (the exactness of restores is proven in sluice-datastream's checkpoint
//! tests and sluice-jobs' state migration tests).

use crate::common;

use std::process::Command;

#[test]
fn savepoint_stop_and_resume_at_another_parallelism() {
    let dir = std::env::temp_dir().join(format!("sluice-cli-sp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Expensive records (map work 2000) keep the job alive long enough to be stopped.
    let total = 300_000u64;
    let n = total.to_string();
    // The savepoint directory is the job's `--savepoint-dir` (REST clients may write nowhere else).
    let sp_root = dir.display().to_string();
    let (job, url) = common::start_live(&[
        "skew",
        "--records",
        &n,
        "--map-work",
        "2000",
        "-p",
        "2",
        "--savepoint-dir",
        &sp_root,
    ]);
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["savepoint", dir.to_str().unwrap(), "--stop", "--url", &url])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    drop(job);
    let loc = out
        .lines()
        .find_map(|l| l.split("file:").nth(1))
        .unwrap_or_else(|| panic!("{out}"))
        .trim()
        .to_string();
    let sp = std::path::PathBuf::from(&loc);
    assert!(
        sp.starts_with(&dir) && sp.join("_metadata").is_file(),
        "{out}"
    );
    let meta = std::fs::read_to_string(sp.join("_metadata")).unwrap();
    assert!(meta.contains("\"kind\":\"SAVEPOINT\""), "{meta}");

    // Resume with the doctor's fix for the hot key (two-phase aggregation) at parallelism 3:
    // only the rest of the input is read, and every final sum equals an uninterrupted run of
    // the original job's.
    let resumed_csv = dir.join("resumed.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            "skew",
            "--records",
            &n,
            "--map-work",
            "2000",
            "-p",
            "3",
            "--two-phase",
        ])
        .args([
            "--from-savepoint",
            &loc,
            "--no-rest",
            "--no-progress",
            "--stats-json",
            "--output",
            resumed_csv.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stats = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{stats}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stats.lines().last().unwrap()).unwrap();
    let resumed = v["records"].as_u64().unwrap();
    assert!(resumed > 0 && resumed < total, "read {resumed} of {total}");
    let whole_csv = dir.join("whole.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            "skew",
            "--records",
            &n,
            "--map-work",
            "2000",
            "-p",
            "2",
        ])
        .args(["--no-rest", "--no-progress", "--output"])
        .arg(&whole_csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let whole = std::fs::read_to_string(&whole_csv).unwrap();
    assert!(
        whole.lines().count() > 9_000,
        "a sum per key: {}",
        whole.lines().count()
    );
    assert_eq!(
        std::fs::read_to_string(&resumed_csv).unwrap(),
        whole,
        "the resumed two-phase job's sums"
    );

    // The same savepoint into a job whose aggregation has another identity (no such job among
    // the built-in ones: the scenario job's operators differ) is refused, naming the state.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            "passthrough",
            "--records",
            "1000",
            "--from-savepoint",
            &loc,
        ])
        .args(["--no-rest", "--no-progress"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        !o.status.success()
            && err.contains("does not have")
            && err.contains("--allow-non-restored-state"),
        "{err}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            "passthrough",
            "--records",
            "1000",
            "--from-savepoint",
            &loc,
        ])
        .args(["--no-rest", "--no-progress", "--allow-non-restored-state"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("dropping the state of operator"), "{err}");

    // A directory that is not a savepoint is refused before the job starts.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            "skew",
            "--from-savepoint",
            dir.to_str().unwrap(),
            "--no-rest",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success() && err.contains("no _metadata"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_says_where_its_checkpoints_go_and_from_checkpoint_takes_the_newest_complete_one() {
    let dir = std::env::temp_dir().join(format!("sluice-cli-chk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["run", "skew", "--records", "200000", "--map-work", "2000"])
            .args(["--no-rest", "--no-progress", "--stats-json"])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        let v: serde_json::Value =
            serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap())
                .unwrap();
        (err, v["records"].as_u64().unwrap())
    };
    let d = dir.to_str().unwrap();
    let (err, records) = run(&[
        "--checkpoint-interval",
        "20",
        "--checkpoint-dir",
        d,
        "--tolerable-failed-checkpoints",
        "3",
    ]);
    assert_eq!(records, 200_000);
    let line = err
        .lines()
        .find(|l| l.starts_with("checkpoints: every 20 ms into "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.ends_with("(tolerating 3 failed in a row)"), "{line}");
    let job_dir = line
        .trim_start_matches("checkpoints: every 20 ms into ")
        .trim_end_matches(" (tolerating 3 failed in a row)")
        .to_string();
    assert!(job_dir.starts_with(d), "{line}");
    let chk: Vec<String> = std::fs::read_dir(&job_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("chk-"))
        .collect();
    assert_eq!(chk.len(), 1, "one retained: {chk:?}");

    // The job's directory resolves to its newest complete checkpoint; only the rest is read.
    let (err, resumed) = run(&["--from-checkpoint", &job_dir]);
    let want = format!("restoring from {job_dir}/{}", chk[0]);
    assert!(err.lines().any(|l| l == want), "{want}\n{err}");
    assert!(resumed < 200_000, "read {resumed}");
    let _ = std::fs::remove_dir_all(&dir);
}
