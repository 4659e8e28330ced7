//! Exactly once across processes, on real servers: `sluice run skew --processes 2 --from
//! kafka://… --to postgres://…` with checkpoints, and process 1 (not the job master)
//! SIGKILLed 10 times, each time right after a checkpoint of the running incarnation completed.
//! The launcher restarts every process from the latest completed checkpoint (Flink's full
//! restart). The expected table is PostgreSQL's own `SUM(value) GROUP BY key` over the raw
//! input `\copy`'d into a table; lost and duplicated updates are counted per key and must be 0.
//! Once with aligned checkpoints, once with unaligned ones (in-flight records in the checkpoint).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sluice_testkit::{KafkaBroker, PostgresCluster};

use crate::pg_oracle;
use crate::restarts;
use pg_oracle::compare;
use restarts::tempdir;

const RECORDS: u64 = 1_500_000;
const KILLS: usize = 10;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// The highest complete checkpoint id under `chk`/<job id>/ (0: none yet).
fn latest_checkpoint(chk: &Path) -> u64 {
    let mut best = 0;
    for job in std::fs::read_dir(chk).into_iter().flatten().flatten() {
        for c in std::fs::read_dir(job.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = c.file_name().to_string_lossy().to_string();
            if let Some(id) = name.strip_prefix("chk-").and_then(|n| n.parse().ok()) {
                if c.path().join("_metadata").exists() {
                    best = best.max(id);
                }
            }
        }
    }
    best
}

/// The PID of the launcher's child started with `--process-index index`, if it runs.
fn process_pid(launcher: u32, index: usize) -> Option<u32> {
    let want = format!("\0--process-index\0{index}\0");
    let tasks = std::fs::read_dir(format!("/proc/{launcher}/task")).ok()?;
    for t in tasks.flatten() {
        let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        for pid in children
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmd).contains(&want) {
                return Some(pid);
            }
        }
    }
    None
}

fn sigkill(pid: u32) {
    let st = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -9 {pid}");
}

// One at a time: each test runs its own broker, cluster and two-process job on 2 cores.
use crate::common::ONE_AT_A_TIME as SERIAL;

#[test]
fn process_1_sigkilled_10_times_leaves_postgres_equal_to_its_own_sums() {
    sigkilled_10_times(&[]);
}

#[test]
fn process_1_sigkilled_10_times_with_unaligned_checkpoints_loses_nothing() {
    // The records in flight between the processes at each checkpoint are in the checkpoint
    // (its channel state), so the new processes replay them: none lost, none twice.
    sigkilled_10_times(&["--unaligned-checkpoints"]);
}

fn sigkilled_10_times(extra: &[&str]) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    pg_oracle::input(&kafka, &pg, "peo-in", RECORDS, 4);
    let chk = tempdir("peo-kill");
    let stderr_path: PathBuf = chk.with_extension("stderr");
    let mut launcher = sluice()
        .args([
            "run",
            "skew",
            "--from",
            &format!("kafka://{}/peo-in", kafka.bootstrap()),
            "--bounded",
            "--map-work",
            "0",
            "-p",
            "2",
            "--to",
            &format!("{}?table=sums", pg.url()),
            "--checkpoint-interval",
            "100",
            "--checkpoint-dir",
            chk.to_str().unwrap(),
            "--restart",
            "fixed-delay:30:0",
            "--processes",
            "2",
            "--no-rest",
            "--no-progress",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut seen = 0u64;
    for kill in 0..KILLS {
        // A checkpoint of this incarnation completed (ids go on counting after a restore),
        // then process 1 dies mid-interval.
        loop {
            let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            assert!(
                launcher.try_wait().unwrap().is_none(),
                "the job ended after {kill} kills (make the input larger): {stderr}"
            );
            assert!(
                Instant::now() < deadline,
                "kill {kill} did not happen in time: {stderr}"
            );
            if latest_checkpoint(&chk) > seen {
                if let Some(pid) = process_pid(launcher.id(), 1) {
                    std::thread::sleep(Duration::from_millis(20 * (kill as u64 % 4)));
                    sigkill(pid);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        seen = latest_checkpoint(&chk);
        // The launcher sees the death, stops process 0, and starts both again.
        while !std::fs::read_to_string(&stderr_path)
            .unwrap_or_default()
            .contains(&format!("(restart {})", kill + 1))
        {
            assert!(Instant::now() < deadline, "no restart after kill {kill}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let status = loop {
        if let Some(s) = launcher.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the job did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(status.success(), "{err}");
    assert!(
        err.contains(&format!("the job restarted {KILLS} times")),
        "{err}"
    );
    assert!(err.contains("SIGKILL"), "{err}");
    assert_eq!(
        compare(&pg, "sums"),
        (0, 0, 0),
        "lost, duplicated, missing keys"
    );
    let _ = std::fs::remove_dir_all(&chk);
    let _ = std::fs::remove_file(&stderr_path);
}
