//! End to end, exactly once, on real servers: `sluice run skew --from kafka://… --to
//! postgres://…` under 20 injected subtask failures, and the whole process SIGKILLed 5 times
//! and restarted from its latest on-disk checkpoint (`--from-checkpoint`). The expected table
//! is computed by PostgreSQL itself, in SQL, from the raw input `\copy`'d into a table (with
//! `--map-work 0` the job's final sum per key is `SUM(value) GROUP BY key`); lost and
//! duplicated updates are counted per key and must be 0.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sluice_testkit::{KafkaBroker, PostgresCluster};

use crate::pg_oracle;
use crate::restarts;
use pg_oracle::compare;
use restarts::{job_dirs, kill_after_first_checkpoint, tempdir};

/// Enough that the 5 killed incarnations end before the input does (150 000 ran out after 2
/// kills once chains stopped copying their batches, which made the job several times faster).
const RECORDS: u64 = 450_000;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn job_args<'a>(kafka: &'a str, to: &'a str, chk: &'a str) -> Vec<String> {
    [
        "run",
        "skew",
        "--from",
        kafka,
        "--bounded",
        "--map-work",
        "0",
        "--to",
        to,
        "--checkpoint-interval",
        "100",
        "--checkpoint-dir",
        chk,
        "--no-rest",
        "--no-progress",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn kafka_to_postgres_under_20_injected_failures_equals_postgres_own_sums() {
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    pg_oracle::input(&kafka, &pg, "eo-in", RECORDS, 3);
    let chk = tempdir("eo-inject");
    let mut args = job_args(
        &format!("kafka://{}/eo-in", kafka.bootstrap()),
        &format!("{}?table=sums", pg.url()),
        chk.to_str().unwrap(),
    );
    args.extend(["--restart".into(), "fixed-delay:30:0".into()]);
    // One failure per attempt, alternating between the keyed sum's subtasks (the vertex that
    // holds the sums and the PostgreSQL sink; the source chain receives no records to count).
    for k in 0..20 {
        args.push("--inject-failure".into());
        args.push(format!("sum-per-key:{}:{}", k % 2, 1500 + 300 * k));
    }
    let o = sluice().args(&args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("the job restarted 20 times"), "{err}");
    assert!(!err.contains("did not fire"), "{err}");
    assert_eq!(
        compare(&pg, "sums"),
        (0, 0, 0),
        "lost, duplicated, missing keys"
    );
    let _ = std::fs::remove_dir_all(&chk);
}

#[test]
fn kafka_to_postgres_with_the_process_sigkilled_5_times_equals_postgres_own_sums() {
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    pg_oracle::input(&kafka, &pg, "eo-kill", RECORDS, 3);
    let chk = tempdir("eo-kill");
    let args = job_args(
        &format!("kafka://{}/eo-kill", kafka.bootstrap()),
        &format!("{}?table=sums", pg.url()),
        chk.to_str().unwrap(),
    );
    let mut restore: Option<PathBuf> = None;
    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(240);
    while kills < 5 {
        assert!(Instant::now() < deadline, "5 kills did not happen in time");
        let before = job_dirs(&chk);
        let mut cmd = sluice();
        cmd.args(&args).stdout(Stdio::null()).stderr(Stdio::null());
        if let Some(r) = &restore {
            cmd.arg("--from-checkpoint").arg(r);
        }
        let child = cmd.spawn().unwrap();
        restore = Some(kill_after_first_checkpoint(
            &chk, &before, child, kills, deadline,
        ));
        kills += 1;
    }
    let o = sluice()
        .args(&args)
        .arg("--from-checkpoint")
        .arg(restore.as_ref().unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("restoring from"), "{err}");
    assert_eq!(
        compare(&pg, "sums"),
        (0, 0, 0),
        "lost, duplicated, missing keys"
    );
    let _ = std::fs::remove_dir_all(&chk);
}
