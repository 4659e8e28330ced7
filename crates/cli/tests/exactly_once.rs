//! End to end, exactly once, on real servers: `sluice run skew --from kafka://… --to
//! postgres://…` under 20 injected subtask failures, and the whole process SIGKILLed 5 times
//! and restarted from its latest on-disk checkpoint (`--from-checkpoint`). The expected table
//! is computed by PostgreSQL itself, in SQL, from the raw input `\copy`'d into a table (with
//! `--map-work 0` the job's final sum per key is `SUM(value) GROUP BY key`); lost and
//! duplicated updates are counted per key and must be 0.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sluice_jobs::skew::{record, SkewConfig};
use sluice_testkit::{KafkaBroker, PostgresCluster};

mod restarts;
use restarts::{job_dirs, kill_after_first_checkpoint, tempdir};

/// Enough that the 5 killed incarnations end before the input does (150 000 ran out after 2
/// kills once chains stopped copying their batches, which made the job several times faster).
const RECORDS: u64 = 450_000;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// Produces the workload to `topic` and loads the same records into `raw` for the oracle.
fn input(kafka: &KafkaBroker, pg: &PostgresCluster, topic: &str) {
    let o = sluice()
        .args([
            "produce",
            "skew",
            "--records",
            &RECORDS.to_string(),
            "--to",
            &format!("kafka://{}/{topic}?partitions=3", kafka.bootstrap()),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cfg = SkewConfig::default();
    let mut csv = String::new();
    for i in 0..RECORDS {
        let (k, v) = record(i, cfg.hot_limit(), cfg.keys);
        csv.push_str(&format!("{k},{v}\n"));
    }
    let path = std::env::temp_dir().join(format!("eo-raw-{}-{topic}.csv", std::process::id()));
    std::fs::write(&path, csv).unwrap();
    pg.psql("CREATE TABLE raw (key BIGINT, value BIGINT)")
        .unwrap();
    pg.psql(&format!("\\copy raw FROM '{}' CSV", path.display()))
        .unwrap();
    let _ = std::fs::remove_file(&path);
}

/// Keys whose final sum is too small (updates lost), too large (duplicated), or missing, as
/// PostgreSQL compares the sink's table with its own `GROUP BY` over the raw input.
fn compare(pg: &PostgresCluster, table: &str) -> (u64, u64, u64) {
    let n = |sql: String| -> u64 { pg.psql(&sql).unwrap().trim().parse().unwrap() };
    let expected = "SELECT key, sum(value) AS s FROM raw GROUP BY key";
    let lost = n(format!(
        "SELECT count(*) FROM ({expected}) e JOIN {table} t USING (key) WHERE t.sum < e.s"
    ));
    let duplicated = n(format!(
        "SELECT count(*) FROM ({expected}) e JOIN {table} t USING (key) WHERE t.sum > e.s"
    ));
    let missing = n(format!(
        "SELECT count(*) FROM ({expected}) e LEFT JOIN {table} t USING (key) WHERE t.key IS NULL"
    ));
    (lost, duplicated, missing)
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
    input(&kafka, &pg, "eo-in");
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
    input(&kafka, &pg, "eo-kill");
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
