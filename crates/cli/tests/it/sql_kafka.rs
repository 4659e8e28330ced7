//! `sluice sql -f` on a Kafka pipeline, as a user runs it: a JSON topic with a watermark, a
//! TUMBLE window aggregate and an exactly-once Kafka sink, with checkpoints and an injected
//! failure of the window's subtask; the sink's committed records (read by
//! `sluice_testkit::kafka_read`, a Kafka client sharing no code with the connector, applying
//! the transaction markers itself) equal the aggregates computed here from the produced records.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use sluice_kafka::admin::ensure_topic;
use sluice_kafka::produce::produce_lines;
use sluice_kafka::{ClientSettings, KafkaUrl};
use sluice_testkit::kafka_read::{read_committed, ReadUntil};
use sluice_testkit::KafkaBroker;

/// Input records: enough that the job takes several checkpoints before it ends.
const RECORDS: u64 = 40_000;
const USERS: u64 = 7;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-sql-kafka-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `2024-01-01 HH:MM:SS.mmm` for `ms` after midnight (the test's own formatting).
fn ts_text(ms: u64) -> String {
    format!(
        "2024-01-01 {:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// A whole second as Flink's json format writes a TIMESTAMP (`java.time`'s ISO local time: no
/// fraction when it is zero).
fn json_second(ms: u64) -> String {
    let text = ts_text(ms);
    text.strip_suffix(".000").unwrap_or(&text).to_string()
}

/// Record `i`: its user (the Kafka key, so each user's records share a partition, in order
/// but for every fifth one 2 s late), amount and event time.
fn record(i: u64) -> (String, u64, u64) {
    let late = if i % 5 == 4 { 2_000 } else { 0 };
    (
        format!("u{}", i % USERS),
        i % 100,
        (i * 25 + 5_000).saturating_sub(late),
    )
}

/// The TUMBLE(10 s) count and sum per user and window, computed here.
fn oracle() -> BTreeMap<(String, String), (u64, u64)> {
    let mut out: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for i in 0..RECORDS {
        let (user, amount, ts) = record(i);
        let g = out
            .entry((user, json_second(ts / 10_000 * 10_000)))
            .or_default();
        g.0 += 1;
        g.1 += amount;
    }
    out
}

const SCRIPT: &str = "
SET 'parallelism.default' = '2';
SET 'pipeline.auto-watermark-interval' = '10 ms';
CREATE TABLE clicks (
  user_name STRING,
  amount BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = '${BOOTSTRAP}',
  'properties.group.id' = 'sql-cli',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);
CREATE TABLE totals (user_name STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
  clicks BIGINT, total BIGINT)
WITH (
  'connector' = 'kafka',
  'topic' = 'totals',
  'properties.bootstrap.servers' = '${BOOTSTRAP}',
  'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'sql-cli-totals'
);
INSERT INTO totals
SELECT user_name, window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_name, window_start, window_end;
";

#[test]
fn a_kafka_window_script_with_an_injected_failure_commits_the_oracles_windows() {
    let Some(kafka) = sluice_testkit::require("the tansu Kafka broker", KafkaBroker::start())
    else {
        return;
    };
    let settings = ClientSettings::new(kafka.bootstrap());
    ensure_topic(&settings, "clicks", 3).unwrap();
    ensure_topic(&settings, "totals", 2).unwrap();
    let url = KafkaUrl::parse(&format!("kafka://{}/clicks", kafka.bootstrap())).unwrap();
    produce_lines(
        &settings,
        &url,
        RECORDS,
        |i, key, line| {
            let (user, amount, ts) = record(i);
            key.push_str(&user);
            line.push_str(&format!(
                r#"{{"user_name":"{user}","amount":{amount},"ts":"{}"}}"#,
                ts_text(ts)
            ));
        },
        |_| {},
    )
    .unwrap();
    let dir = tmp("job");
    let script = dir.join("job.sql");
    std::fs::write(&script, SCRIPT).unwrap();
    let chk = dir.join("chk");
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "sql",
            "-f",
            script.to_str().unwrap(),
            "--var",
            &format!("BOOTSTRAP={}", kafka.bootstrap()),
            "--checkpoint-interval",
            "50",
            "--checkpoint-dir",
            chk.to_str().unwrap(),
            "--restart",
            "fixed-delay:3:0",
            // The keyed window step fails once, after 150 partial aggregates reached it.
            "--inject-failure",
            "GlobalWindowAggregate:0:150",
            "--no-rest",
            "--no-progress",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // How far the first attempt got (a restore from a checkpoint, or from the start, must
    // give the same committed windows either way).
    let failed_at = stderr.find("injected failure").unwrap_or(stderr.len());
    eprintln!(
        "sql kafka windows: {} checkpoint(s) completed before the injected failure",
        stderr[..failed_at].matches("checkpoint completed").count()
    );
    assert!(stderr.contains("restarted 1 time"), "{stderr}");
    assert!(!stderr.contains("did not fire"), "{stderr}");
    let want = oracle();
    let r = read_committed(
        &kafka.bootstrap(),
        "totals",
        ReadUntil {
            expect: want.len(),
            settle: Duration::from_millis(500),
            deadline: Duration::from_secs(60),
        },
    )
    .unwrap();
    assert_eq!(
        (r.pending, r.behind_open),
        (0, 0),
        "no transaction left open"
    );
    eprintln!(
        "sql kafka windows: {} committed, {} aborted records (the failed attempt's), {} windows expected",
        r.records.len(),
        r.aborted,
        want.len()
    );
    let mut got: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for rec in &r.records {
        let v: serde_json::Value = serde_json::from_slice(rec.value.as_deref().unwrap()).unwrap();
        let key = (
            v["user_name"].as_str().unwrap().to_string(),
            v["window_start"].as_str().unwrap().to_string(),
        );
        let value = (v["clicks"].as_u64().unwrap(), v["total"].as_u64().unwrap());
        assert!(
            got.insert(key.clone(), value).is_none(),
            "window {key:?} committed twice"
        );
    }
    assert_eq!(got.len(), want.len(), "windows committed");
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}
