//! Shared by the PostgreSQL exactly-once tests (`exactly_once.rs`, `processes_exactly_once.rs`):
//! the skew workload produced to Kafka and loaded into PostgreSQL's `raw` table, and
//! PostgreSQL's own comparison of a sink's table with `SUM(value) GROUP BY key` over it (with
//! `--map-work 0` that is the job's final sum per key).

#![allow(dead_code)]

use std::process::Command;

use sluice_jobs::skew::{record, SkewConfig};
use sluice_testkit::{KafkaBroker, PostgresCluster};

/// Produces `records` skew records to `topic` (`partitions` partitions) and loads the same
/// records into `raw` for the oracle.
pub fn input(
    kafka: &KafkaBroker,
    pg: &PostgresCluster,
    topic: &str,
    records: u64,
    partitions: u32,
) {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "produce",
            "skew",
            "--records",
            &records.to_string(),
            "--to",
            &format!(
                "kafka://{}/{topic}?partitions={partitions}",
                kafka.bootstrap()
            ),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cfg = SkewConfig::default();
    let mut csv = String::with_capacity(records as usize * 12);
    for i in 0..records {
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
pub fn compare(pg: &PostgresCluster, table: &str) -> (u64, u64, u64) {
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
