//! `sluice sql -f` on the issue's pipeline, as a user runs it: a JSON Kafka topic with a
//! watermark, a TUMBLE window aggregate and a PostgreSQL upsert sink (`'connector' = 'jdbc'`
//! with a `PRIMARY KEY … NOT ENFORCED`), with checkpoints and an injected failure of the
//! window's subtask, against a real broker (tansu) and a real PostgreSQL. The table equals
//! PostgreSQL's own `GROUP BY` over the same records, which the test inserts into PostgreSQL by
//! the same formula (the oracle shares no code with Sluice).

use std::process::Command;
use std::time::{Duration, Instant};

use sluice_kafka::admin::ensure_topic;
use sluice_kafka::produce::produce_lines;
use sluice_kafka::{ClientSettings, KafkaUrl};
use sluice_testkit::{KafkaBroker, PostgresCluster};

/// Input records: enough that the job takes several checkpoints before it ends.
const RECORDS: u64 = 40_000;
const USERS: u64 = 7;

/// `2024-01-01 HH:MM:SS.mmm` for `ms` after midnight.
fn ts_text(ms: u64) -> String {
    format!(
        "2024-01-01 {:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// Record `i`: its user (the Kafka key), amount and event time in ms after midnight (every
/// fifth 2 s late, within the watermark's 5 s).
fn record(i: u64) -> (String, u64, u64) {
    let late = if i % 5 == 4 { 2_000 } else { 0 };
    (
        format!("u{}", i % USERS),
        i % 100,
        (i * 25 + 5_000).saturating_sub(late),
    )
}

/// Produces records `0..n` as JSON to the topic `clicks` (3 partitions, keyed by user).
fn produce_clicks(kafka: &KafkaBroker, n: u64) {
    let settings = ClientSettings::new(kafka.bootstrap());
    ensure_topic(&settings, "clicks", 3).unwrap();
    let url = KafkaUrl::parse(&format!("kafka://{}/clicks", kafka.bootstrap())).unwrap();
    produce_lines(
        &settings,
        &url,
        n,
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
  'properties.group.id' = 'sql-cli-pg',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);
CREATE TABLE totals (
  user_name STRING, window_start TIMESTAMP(3), clicks BIGINT, total BIGINT,
  PRIMARY KEY (user_name, window_start) NOT ENFORCED
) WITH (
  'connector' = 'jdbc',
  'url' = '${JDBC_URL}',
  'table-name' = 'totals',
  'username' = 'sluice',
  'password' = '',
  'sink.buffer-flush.max-rows' = '50',
  'sink.buffer-flush.interval' = '100 ms'
);
INSERT INTO totals
SELECT user_name, window_start, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_name, window_start, window_end;
";

fn sorted_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn a_kafka_window_script_upserts_postgresqls_own_group_by_through_a_failure() {
    let Some(kafka) = sluice_testkit::require("the tansu Kafka broker", KafkaBroker::start())
    else {
        return;
    };
    let pg = PostgresCluster::start().unwrap();
    // The sink's table, and the same records for PostgreSQL's own GROUP BY.
    pg.psql(&format!(
        "CREATE TABLE totals (user_name text, window_start timestamp(3), clicks bigint NOT NULL,
           total bigint, PRIMARY KEY (user_name, window_start));
         CREATE TABLE clicks_in AS
           SELECT 'u' || (i % {USERS}) AS user_name, i % 100 AS amount,
             timestamp '2024-01-01' + (i * 25 + 5000 - CASE WHEN i % 5 = 4 THEN 2000 ELSE 0 END)
               * interval '1 millisecond' AS ts
           FROM generate_series(0, {}) i;",
        RECORDS - 1
    ))
    .unwrap();
    produce_clicks(&kafka, RECORDS);
    let dir = std::env::temp_dir().join(format!("sluice-sql-kafka-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("job.sql");
    std::fs::write(&script, SCRIPT).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "sql",
            "-f",
            script.to_str().unwrap(),
            "--var",
            &format!("BOOTSTRAP={}", kafka.bootstrap()),
            "--var",
            &format!("JDBC_URL=jdbc:postgresql://127.0.0.1:{}/sluice", pg.port()),
            "--checkpoint-interval",
            "50",
            "--checkpoint-dir",
            dir.join("chk").to_str().unwrap(),
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
    assert!(stderr.contains("restarted 1 time"), "{stderr}");
    assert!(!stderr.contains("did not fire"), "{stderr}");
    let failed_at = stderr.find("injected failure").unwrap_or(stderr.len());
    eprintln!(
        "sql kafka → postgres: {} checkpoint(s) completed before the injected failure",
        stderr[..failed_at].matches("checkpoint completed").count()
    );
    let want = sorted_lines(
        &pg.psql(
            "SELECT user_name, date_bin('10 seconds', ts, timestamp '2024-01-01'), count(*), \
               sum(amount) FROM clicks_in GROUP BY 1, 2",
        )
        .unwrap(),
    );
    assert_eq!(want.len() as u64, USERS * (RECORDS * 25 / 10_000 + 1));
    let got = sorted_lines(
        &pg.psql("SELECT user_name, window_start, clicks, total FROM totals")
            .unwrap(),
    );
    assert_eq!(got.len(), want.len(), "windows upserted");
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same script served live over REST, its source unbounded over a backlog the job works
/// through for a while: the job graph carries Flink's SQL operator names and the doctor's
/// verdict names the vertex it judged by them.
#[test]
fn the_doctor_names_the_sql_operators_of_the_kafka_to_postgres_script() {
    let _one = crate::common::one_at_a_time();
    let Some(kafka) = sluice_testkit::require("the tansu Kafka broker", KafkaBroker::start())
    else {
        return;
    };
    let pg = PostgresCluster::start().unwrap();
    pg.psql(
        "CREATE TABLE totals (user_name text, window_start timestamp(3), clicks bigint NOT NULL,
           total bigint, PRIMARY KEY (user_name, window_start))",
    )
    .unwrap();
    const BACKLOG: u64 = 400_000;
    produce_clicks(&kafka, BACKLOG);
    let dir = std::env::temp_dir().join(format!("sluice-sql-kpg-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("job.sql");
    let unbounded = SCRIPT.replace("  'scan.bounded.mode' = 'latest-offset',\n", "");
    assert_ne!(unbounded, SCRIPT);
    std::fs::write(&script, unbounded).unwrap();
    let bootstrap = format!("BOOTSTRAP={}", kafka.bootstrap());
    let jdbc = format!("JDBC_URL=jdbc:postgresql://127.0.0.1:{}/sluice", pg.port());
    let (job, rest) = crate::common::start_live(&[
        "sql",
        "-f",
        script.to_str().unwrap(),
        "--var",
        &bootstrap,
        "--var",
        &jdbc,
    ]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let jid = loop {
        let jobs = crate::common::get(&format!("{rest}/jobs/overview"));
        if let Some(j) = jobs["jobs"][0]["jid"].as_str() {
            break j.to_string();
        }
        assert!(Instant::now() < deadline, "the job is listed: {jobs}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let plan = crate::common::get(&format!("{rest}/jobs/{jid}/plan")).to_string();
    for name in [
        "TableSourceScan(table=[[default_catalog, default_database, clicks]]",
        "GlobalWindowAggregate(groupBy=[user_name]",
        "Sink(table=[default_catalog.default_database.totals]",
    ] {
        assert!(plan.contains(name), "{name} in {plan}");
    }
    // Until the metrics window has filled the doctor has no vertex to name: ask again.
    let names_sql = |v: &str| {
        ["TableSourceScan(", "WindowAggregate(", "Sink(table="]
            .iter()
            .any(|n| v.contains(n))
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let verdict = loop {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["doctor", "--url", &rest, "--window", "2", "--json"])
            .arg("--no-flame-graphs")
            .output()
            .unwrap();
        let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        let v = d["verdict"].as_str().unwrap_or_default().to_string();
        if names_sql(&v) || Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    drop(job);
    eprintln!("the doctor on the SQL job: {verdict}");
    assert!(
        names_sql(&verdict),
        "the verdict names SQL operators: {verdict}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
