//! The example job against real servers: JSON clicks on tansu, including malformed ones, read
//! to the end (`--bounded`) with checkpoints and an injected failure; the table it upserts must
//! equal what PostgreSQL itself computes with SQL over the same clicks loaded into a table.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use sluice_testkit::{KafkaBroker, PostgresCluster};

const USERS: [&str; 5] = ["ada", "bob", "cy", "dee", "eve"];

#[test]
fn clicks_per_minute_equals_postgres_own_group_by() {
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", kafka.bootstrap())
        .set("linger.ms", "5")
        .create()
        .unwrap();
    // 5 users, 20 minutes of event time, a little out of order; 3 lines that are not clicks.
    let n = 6000u64;
    let mut raw = String::new();
    for i in 0..n {
        let user = USERS[(i * 7 % 5) as usize];
        let amount = (i % 13) as i64 + 1;
        let ts = 1_700_000_000_000 + (i as i64) * 200 - (i % 4) as i64 * 700;
        let json = format!(r#"{{"user":"{user}","amount":{amount},"ts":{ts}}}"#);
        raw.push_str(&format!("{user},{amount},{ts}\n"));
        loop {
            match producer.send(
                BaseRecord::<str, str>::to("clicks")
                    .key(user)
                    .payload(&json),
            ) {
                Ok(()) => break,
                Err((_, _)) => producer.poll(Duration::from_millis(10)),
            };
        }
        if i % 2000 == 1000 {
            producer
                .send(
                    BaseRecord::<str, str>::to("clicks")
                        .key("x")
                        .payload("not json"),
                )
                .unwrap();
        }
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    // The oracle's input: the same clicks loaded by PostgreSQL's own client.
    let csv = std::env::temp_dir().join(format!("clicks-{}.csv", std::process::id()));
    std::fs::write(&csv, &raw).unwrap();
    pg.psql("CREATE TABLE raw_clicks (user_id TEXT, amount BIGINT, ts BIGINT)")
        .unwrap();
    pg.psql(&format!("\\copy raw_clicks FROM '{}' CSV", csv.display()))
        .unwrap();
    let _ = std::fs::remove_file(&csv);

    let chk = std::env::temp_dir().join(format!("clicks-chk-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_clicks-per-minute"))
        .args([
            "--brokers",
            &kafka.bootstrap(),
            "--topic",
            "clicks",
            "--bounded",
            "--postgres",
            &pg.url(),
            "--rest-port",
            "0",
            "--checkpoint-interval",
            "100",
            "--checkpoint-dir",
            chk.to_str().unwrap(),
            "--restart",
            "fixed-delay:3:0",
            "--inject-failure",
            "Window:0:300",
        ])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&chk);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("1 restarts"), "{stderr}");
    // Each malformed line is a dead letter in every attempt that reads it (the restart replays
    // from the last checkpoint, or from the start before the first one).
    let dead: u64 = stderr
        .split(" malformed (dead letters)")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!((3..=6).contains(&dead), "{stderr}");
    let ours = pg
        .psql("SELECT user_id, window_start, total FROM clicks_per_minute ORDER BY 1, 2")
        .unwrap();
    let oracle = pg
        .psql(
            "SELECT user_id, (ts / 60000) * 60000 AS window_start, sum(amount) AS total
             FROM raw_clicks GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .unwrap();
    assert!(ours.lines().count() > 50, "{ours}");
    assert_eq!(ours, oracle);
}
