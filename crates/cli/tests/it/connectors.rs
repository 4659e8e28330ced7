//! The built-in jobs on real servers (tansu and a throwaway PostgreSQL cluster from
//! `sluice-testkit`): `sluice run skew --from kafka://… --to postgres://… | kafka://…` gives the
//! generated job's final sums; the doctor on a Kafka source with more subtasks than partitions,
//! on an input-limited one, on a throttled one whose lag grows; `doctor fix` batching a slow
//! PostgreSQL sink; bad URLs and unreachable servers refused before the job starts.

use crate::common;
use common::start_live;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Message, Offset, TopicPartitionList};
use serde_json::Value;
use sluice_testkit::{KafkaBroker, PostgresCluster};

// The live runs measure busy time: one at a time.
use crate::common::ONE_AT_A_TIME;

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = sluice(args);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    );
    assert!(o.status.success(), "sluice {args:?}\n{out}\n{err}");
    out + &err
}

fn produce(bootstrap: &str, topic: &str, records: u64, partitions: u32) {
    ok(&[
        "produce",
        "skew",
        "--records",
        &records.to_string(),
        "--to",
        &format!("kafka://{bootstrap}/{topic}?partitions={partitions}"),
    ]);
}

/// The generated job's final sums (CSV `key,sum`).
fn generated_sums(records: u64) -> BTreeMap<i64, i64> {
    let path =
        std::env::temp_dir().join(format!("sluice-gen-{}-{records}.csv", std::process::id()));
    ok(&[
        "run",
        "skew",
        "--records",
        &records.to_string(),
        "--no-rest",
        "--no-progress",
        "--output",
        path.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    text.lines()
        .skip(1)
        .map(|l| {
            let (k, s) = l.split_once(',').unwrap();
            (k.parse().unwrap(), s.parse().unwrap())
        })
        .collect()
}

fn table(pg: &PostgresCluster, table: &str) -> BTreeMap<i64, i64> {
    pg.psql(&format!("SELECT key, sum FROM {table} ORDER BY key"))
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, s) = l.split_once('|').unwrap();
            (k.trim().parse().unwrap(), s.trim().parse().unwrap())
        })
        .collect()
}

/// Ends every partition of `topic` with a one-record batch `END`: tansu 0.6 reports a short
/// high watermark when a partition's last batch holds several records, so a consumer would
/// stop before them; after a single-record batch the watermark is right.
fn seal(bootstrap: &str, topic: &str, partitions: i32) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "0")
        .set("batch.num.messages", "1")
        .create()
        .unwrap();
    for part in 0..partitions {
        p.send(
            BaseRecord::<(), str>::to(topic)
                .payload(END)
                .partition(part),
        )
        .unwrap();
        p.flush(Duration::from_secs(10)).unwrap();
    }
}

const END: &str = "END";

/// The values of `topic` (without the [`seal`]), partition by partition in offset order, until
/// every partition reached its end with at least `expect` values. A failure-free run aborts no
/// transaction, so every record read was committed.
fn read_topic(bootstrap: &str, topic: &str, expect: usize) -> Vec<String> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "connectors-test")
        .set("isolation.level", "read_uncommitted")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    // The topic's own partition count (the broker may have created it with its default).
    let md = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .unwrap();
    let partitions = md.topics()[0].partitions().len() as i32;
    seal(bootstrap, topic, partitions);
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut by_partition: Vec<Vec<String>> = vec![Vec::new(); partitions as usize];
    let mut eofs = std::collections::HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let total = |b: &Vec<Vec<String>>| b.iter().map(Vec::len).sum::<usize>();
    while (eofs.len() < partitions as usize || total(&by_partition) < expect)
        && Instant::now() < deadline
    {
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let v = String::from_utf8(m.payload().unwrap_or_default().to_vec()).unwrap();
                if v != END {
                    by_partition[m.partition() as usize].push(v);
                }
            }
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                eofs.insert(p);
            }
            _ => {}
        }
    }
    by_partition.concat()
}

#[test]
fn skew_from_kafka_to_postgres_gives_the_generated_sums() {
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    let n = 100_000;
    produce(&kafka.bootstrap(), "skew", n, 3);
    let out = ok(&[
        "run",
        "skew",
        "--from",
        &format!("kafka://{}/skew", kafka.bootstrap()),
        "--bounded",
        "--to",
        &format!("{}?table=sums", pg.url()),
        "--no-rest",
        "--no-progress",
    ]);
    assert!(out.contains("PostgreSQL table sums:"), "{out}");
    assert_eq!(table(&pg, "sums"), generated_sums(n));
}

#[test]
fn skew_to_kafka_exactly_once_leaves_the_final_sums_as_each_keys_last_record() {
    let kafka = KafkaBroker::start().unwrap();
    let n = 50_000;
    let out = ok(&[
        "run",
        "skew",
        "--records",
        &n.to_string(),
        "--checkpoint-interval",
        "200",
        "--to",
        &format!(
            "kafka://{}/sums?exactly-once&partitions=2",
            kafka.bootstrap()
        ),
        "--no-rest",
        "--no-progress",
    ]);
    assert!(out.contains("transactions committed"), "{out}");
    let lines = read_topic(&kafka.bootstrap(), "sums", n as usize);
    assert_eq!(lines.len(), n as usize, "one update per record, once");
    // Per partition in offset order, the last `key,sum` of a key is its final sum.
    let mut last = BTreeMap::new();
    for line in &lines {
        let (k, s) = line.split_once(',').unwrap();
        last.insert(k.parse::<i64>().unwrap(), s.parse::<i64>().unwrap());
    }
    assert_eq!(last, generated_sums(n));
}

/// `sluice doctor --json` against `url`, again until `cause` or the deadline.
fn diagnose_until(url: &str, window: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let o = sluice(&["doctor", "--url", url, "--window", window, "--json"]);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        if o.status.success() {
            let d: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
            if done(&d) || Instant::now() > deadline {
                return d;
            }
        } else if Instant::now() > deadline {
            panic!("{out}\n{}", String::from_utf8_lossy(&o.stderr));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn four_source_subtasks_on_two_partitions_are_a_source_ceiling_with_two_idle() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let kafka = KafkaBroker::start().unwrap();
    // Enough records that the two busy subtasks decode for well over a minute.
    produce(&kafka.bootstrap(), "ceiling", 600_000, 2);
    let (job, url) = start_live(&[
        "scenario",
        "source-ceiling",
        "--from",
        &format!("kafka://{}/ceiling", kafka.bootstrap()),
        "-p",
        "4",
    ]);
    let d = diagnose_until(&url, "2", |d| d["cause"] == "source-ceiling");
    drop(job);
    assert_eq!(d["cause"], "source-ceiling", "{d:#}");
    assert_eq!(d["source-splits"]["partitions"], 2, "{d:#}");
    let idle = d["source-splits"]["idle-subtasks"].as_array().unwrap();
    assert_eq!(idle.len(), 2, "{d:#}");
    assert!(
        d["fix"]["change"]
            .as_str()
            .unwrap()
            .contains("add partitions"),
        "{d:#}"
    );
    let evidence = d["evidence"].to_string();
    assert!(evidence.contains("own no partition and idle"), "{evidence}");
}

#[test]
fn an_input_limited_kafka_job_has_no_bottleneck_and_no_lag() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let kafka = KafkaBroker::start().unwrap();
    produce(&kafka.bootstrap(), "few", 1000, 2);
    let (job, url) = start_live(&[
        "scenario",
        "input-limited",
        "--from",
        &format!("kafka://{}/few", kafka.bootstrap()),
    ]);
    let d = diagnose_until(&url, "2", |d| {
        d["cause"] == "no-bottleneck" && d["lag"]["near-zero"] == true
    });
    drop(job);
    assert_eq!(d["cause"], "no-bottleneck", "{d:#}");
    assert_eq!(d["lag"]["near-zero"], true, "{d:#}");
    assert!(
        d["evidence"].to_string().contains("lag is about 0"),
        "{d:#}"
    );
}

#[test]
fn a_throttled_kafka_source_reports_its_growing_lag() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let kafka = KafkaBroker::start().unwrap();
    let url_of = |q: &str| format!("kafka://{}/thr{q}", kafka.bootstrap());
    produce(&kafka.bootstrap(), "thr", 1000, 2);
    // An expensive map behind REBALANCE: the source is backpressured by it.
    let (job, url) = start_live(&[
        "skew",
        "--from",
        &url_of(""),
        "--rebalance-before-map",
        "--map-work",
        "20000",
    ]);
    // Records keep arriving much faster than the map takes them.
    let mut producer = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "produce",
            "skew",
            "--records",
            "20000000",
            "--to",
            &url_of(""),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let d = diagnose_until(&url, "3", |d| d["lag"]["growing"] == true);
    let _ = producer.kill();
    let _ = producer.wait();
    drop(job);
    assert_eq!(d["lag"]["growing"], true, "{d:#}");
    assert!(
        d["evidence"]
            .to_string()
            .contains("throttled by the bottleneck"),
        "{d:#}"
    );
    assert!(
        d["lag"]["last"].as_f64().unwrap() > d["lag"]["first"].as_f64().unwrap(),
        "{d:#}"
    );
}

#[test]
fn doctor_fix_batches_a_slow_postgres_sink_and_the_table_is_the_same() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let pg = PostgresCluster::start().unwrap();
    let to = format!("{}?table=slow", pg.url());
    let deadline = Instant::now() + Duration::from_secs(180);
    let out = loop {
        let out = ok(&[
            "doctor",
            "fix",
            "scenario",
            "slow-sink",
            "--records",
            "3000",
            "--to",
            &to,
        ]);
        if out.contains("Verdict: sink limit") || Instant::now() > deadline {
            break out;
        }
    };
    assert!(out.contains("Verdict: sink limit"), "{out}");
    assert!(
        out.contains("option sink.buffer-flush.max-rows: 1 -> 1000"),
        "{out}"
    );
    assert!(out.contains("output: identical (the table's"), "{out}");
    // The table holds the fixed run's final sums: one row per key.
    let rows = pg.psql("SELECT count(*) FROM slow").unwrap();
    assert!(rows.trim().parse::<u64>().unwrap() > 900, "{rows}");
}

#[test]
fn bad_urls_and_unreachable_servers_are_refused_before_the_job_starts() {
    let refused = |args: &[&str], needle: &str| {
        let t0 = Instant::now();
        let o = sluice(args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{args:?} took {:?}",
            t0.elapsed()
        );
        err
    };
    refused(
        &["run", "skew", "--from", "kafka://127.0.0.1:9092"],
        "no topic",
    );
    refused(
        &["run", "skew", "--to", "postgres://u@h:5432/db"],
        "no table",
    );
    refused(&["run", "skew", "--to", "mysql://h/db"], "unknown sink");
    // Nothing listens on a fresh free port.
    let port = sluice_testkit::free_port().unwrap();
    refused(
        &[
            "run",
            "skew",
            "--from",
            &format!("kafka://127.0.0.1:{port}/t?connect-timeout-ms=2000"),
            "--no-rest",
        ],
        &format!("127.0.0.1:{port}"),
    );
    refused(
        &[
            "run",
            "skew",
            "--to",
            &format!("postgres://sluice@127.0.0.1:{port}/sluice?table=t"),
            "--no-rest",
        ],
        &format!("127.0.0.1:{port}"),
    );
    let kafka = KafkaBroker::start().unwrap();
    refused(
        &[
            "run",
            "skew",
            "--from",
            &format!("kafka://{}/no-such-topic", kafka.bootstrap()),
            "--no-rest",
        ],
        "no-such-topic",
    );
}
