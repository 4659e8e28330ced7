//! Shared by the tests of live plan changes on real servers (tansu Kafka in, PostgreSQL out):
//! the skew workload produced to Kafka and loaded raw into PostgreSQL, PostgreSQL's own
//! `SUM(value) GROUP BY key` as the expected table, a `sluice::live::LiveJob` with its REST API,
//! and small REST helpers.

#![allow(dead_code)]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice::live::{BuildFn, LiveJob};
use sluice_datastream::{DataStream, StreamEnv};
use sluice_jobs::skew::{self, record, SkewConfig};
use sluice_kafka::source::{KafkaDeserializer, KafkaRecord, KafkaSource, Lines};
use sluice_postgres::{PostgresSink, PostgresSinkExt, RowMapping};
use sluice_testkit::{KafkaBroker, PostgresCluster};

/// `topic`'s `key,value` lines as records, read without end (a bounded source would end a
/// subtask whose partition runs dry, and a savepoint needs every task running).
pub fn kafka_lines(
    env: &StreamEnv,
    kafka: &str,
    topic: &str,
    group: &str,
) -> Result<DataStream<(i64, i64)>, String> {
    let decode = |r: &KafkaRecord<'_>| -> Result<(i64, i64), String> {
        skew::parse_line(&Lines.deserialize(r)?)
    };
    Ok(KafkaSource::builder()
        .bootstrap_servers(kafka)
        .topics([topic.to_string()])
        .group_id(group)
        .set_bounded(false)
        .build(decode)
        .map_err(|e| e.to_string())?
        .add_to(env, &format!("Kafka: {topic}")))
}

/// Upserts `(key, sum)` records into `out_<topic>` by key through a sink named `final-sums`,
/// with `options` (`sink.buffer-flush.max-rows`, …).
pub fn upsert_sums(
    sums: DataStream<(i64, i64)>,
    conn: &str,
    topic: &str,
    options: &[(&str, &str)],
) -> Result<(), String> {
    let mut sink = PostgresSink::builder(
        conn,
        &format!("out_{topic}"),
        RowMapping::new()
            .column("key", |r: &(i64, i64)| r.0)
            .column("sum", |r: &(i64, i64)| r.1),
    )
    .upsert(&["key"])
    .name("final-sums");
    for (k, v) in options {
        sink = sink.option(k, v).map_err(|e| e.to_string())?;
    }
    sums.sink_to_postgres(sink).map_err(|e| e.to_string())?;
    Ok(())
}

/// Produces the workload (`records` records, the hot key and `keys` others) to `topic` and loads
/// the same records into `raw_<topic>`.
pub fn input(kafka: &KafkaBroker, pg: &PostgresCluster, topic: &str, records: u64, keys: u64) {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "produce",
            "skew",
            "--records",
            &records.to_string(),
            "--keys",
            &keys.to_string(),
            "--to",
            &format!("kafka://{}/{topic}?partitions=2", kafka.bootstrap()),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cfg = SkewConfig {
        keys,
        ..SkewConfig::default()
    };
    let mut csv = String::new();
    for i in 0..records {
        let (k, v) = record(i, cfg.hot_limit(), cfg.keys);
        csv.push_str(&format!("{k},{v}\n"));
    }
    let path = std::env::temp_dir().join(format!("live-raw-{}-{topic}.csv", std::process::id()));
    std::fs::write(&path, csv).unwrap();
    pg.psql(&format!(
        "CREATE TABLE raw_{topic} (key BIGINT, value BIGINT); \
         CREATE TABLE out_{topic} (key BIGINT PRIMARY KEY, sum BIGINT NOT NULL)"
    ))
    .unwrap();
    pg.psql(&format!("\\copy raw_{topic} FROM '{}' CSV", path.display()))
        .unwrap();
    let _ = std::fs::remove_file(&path);
}

/// (lost, duplicated, missing) keys of `out_<topic>` against PostgreSQL's own sums.
pub fn compare(pg: &PostgresCluster, topic: &str) -> (u64, u64, u64) {
    let n = |sql: String| -> u64 { pg.psql(&sql).unwrap().trim().parse().unwrap() };
    let e = format!("SELECT key, sum(value) AS s FROM raw_{topic} GROUP BY key");
    let t = format!("out_{topic}");
    (
        n(format!(
            "SELECT count(*) FROM ({e}) e JOIN {t} t USING (key) WHERE t.sum < e.s"
        )),
        n(format!(
            "SELECT count(*) FROM ({e}) e JOIN {t} t USING (key) WHERE t.sum > e.s"
        )),
        n(format!(
            "SELECT count(*) FROM ({e}) e LEFT JOIN {t} t USING (key) WHERE t.key IS NULL"
        )),
    )
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

pub fn request(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let a = agent();
    let r = match (method, body) {
        ("GET", _) => a.get(url).call(),
        ("PUT", Some(b)) => a
            .put(url)
            .header("Content-Type", "application/json")
            .send(b.to_string()),
        (_, b) => a
            .post(url)
            .header("Content-Type", "application/json")
            .send(b.unwrap_or(json!({})).to_string()),
    }
    .unwrap();
    let status = r.status().as_u16();
    let text = r.into_body().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub struct Live {
    pub job: Arc<LiveJob>,
    pub base: String,
    pub rest: sluice::RestApi,
}

/// Starts `build` live at parallelism 2 with checkpoints every 200 ms and `extra` options.
pub fn start(build: BuildFn, extra: &[&str]) -> Live {
    // Checkpoints every 200 ms: the two-phase pre-aggregation sends its pending partials ahead
    // of each barrier (on an unbounded source that is when cold keys' partials go out).
    let mut args = vec![
        "job",
        "--rest-port",
        "0",
        "-p",
        "2",
        "--checkpoint-interval",
        "200",
    ];
    args.extend_from_slice(extra);
    let o = sluice::RunOptions::try_from_args(args).unwrap();
    let rest = sluice::start_rest(&o.rest, false).unwrap().unwrap();
    let cfg = o.env.to_config().unwrap();
    let job = LiveJob::start(
        build,
        cfg,
        rest.server.savepoint_dir().to_path_buf(),
        Some(rest.registry.clone()),
    )
    .unwrap();
    let base = format!("http://{}/jobs/{}", rest.server.local_addr(), job.job_id());
    Live { job, base, rest }
}

/// Waits until the sources emitted `n` records (of the plan running now).
pub fn wait_emitted(job: &LiveJob, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while job.monitor().records_emitted_by_sources() < n {
        assert!(
            Instant::now() < deadline,
            "the sources did not reach {n} records"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the table holds PostgreSQL's own sums (the source is unbounded: a bounded one
/// would end a subtask whose partition runs dry, and a savepoint needs every task running);
/// fails with the last (lost, duplicated, missing) counts.
pub fn settled(pg: &PostgresCluster, topic: &str, job: &LiveJob) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let c = compare(pg, topic);
        if c == (0, 0, 0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "(lost, duplicated, missing) keys stayed at {c:?}; job {:?}",
            job.monitor().outcome()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn vertex_parallelism(job: &Value, name: &str) -> u64 {
    job["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no vertex '{name}' in {job}"))["parallelism"]
        .as_u64()
        .unwrap()
}
