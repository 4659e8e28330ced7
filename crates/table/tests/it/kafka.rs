//! The `kafka` connector against a real broker (tansu): a SQL script reading a JSON topic with a
//! watermark into a TUMBLE window aggregate equals the aggregates computed here from the produced
//! records; a SQL sink writes exactly-once JSON that readers sharing no code with the connector
//! read back (`sluice_testkit::kafka_read`, its own Kafka wire client applying the transaction
//! markers, and tansu's own `tansu cat consume`); csv keys and values are Flink's text under
//! the format's prefixed options; malformed records are counted dead letters;
//! startup and bounded modes read the offsets Flink's would; bad options are refused naming
//! them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use sluice_datastream::StreamEnv;
use sluice_kafka::admin::ensure_topic;
use sluice_kafka::ClientSettings;
use sluice_sql::{BindContext, FunctionRegistry, Row, SqlError, Value};
use sluice_table::{QueryOutput, RowErrors, ScanSettings, SqlScript, TableScan};
use sluice_testkit::kafka_read::{read_committed, ReadUntil};
use sluice_testkit::KafkaBroker;

use crate::support::{create, temp_dir};

fn broker() -> Option<KafkaBroker> {
    sluice_testkit::require("the tansu Kafka broker", KafkaBroker::start())
}

fn topic(b: &KafkaBroker, name: &str, partitions: i32) {
    ensure_topic(&ClientSettings::new(b.bootstrap()), name, partitions).unwrap();
}

/// One record to produce: partition, key, value (`None`: a tombstone).
type Rec = (i32, Option<String>, Option<String>);

/// Writes `records` in order, each to its partition, then waits for every acknowledgement.
fn produce(b: &KafkaBroker, topic: &str, records: &[Rec]) {
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", b.bootstrap())
        .set("linger.ms", "5")
        .create()
        .unwrap();
    for (partition, key, value) in records {
        let mut r = BaseRecord::<str, str>::to(topic).partition(*partition);
        if let Some(k) = key {
            r = r.key(k.as_str());
        }
        if let Some(v) = value {
            r = r.payload(v.as_str());
        }
        p.send(r).map_err(|(e, _)| e).unwrap();
    }
    p.flush(Duration::from_secs(30)).unwrap();
}

/// `2024-01-01 00:MM:SS.mmm` for `ms` milliseconds after midnight (the test's own formatting).
fn ts_text(ms: i64) -> String {
    format!(
        "2024-01-01 {:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// Click records: per partition in event-time order but for a few records up to 1.5 s late,
/// every partition covering the same two minutes at its own rate (partition `p` one record
/// every `(p + 1) · 30` ms). A subtask reading two partitions reads the sparser one's minutes
/// sooner, so a watermark taken over its partitions together (rather than per partition) would
/// drop many of the denser one's rows as late.
fn clicks() -> Vec<(i32, String, i64, i64)> {
    let mut out = Vec::new();
    for p in 0..3 {
        let step = 30 * (i64::from(p) + 1);
        for i in 0..4000 / (i64::from(p) + 1) {
            let late = if i % 4 == 3 { 1500 } else { 0 };
            let ts = (i * step + i64::from(p) * 37 - late).max(0);
            let user = format!("u{}", (i * 7 + i64::from(p)) % 5);
            out.push((p, user, i + 1000 * i64::from(p), ts));
        }
    }
    out
}

/// A whole-second `2024-01-01 00:MM:SS` as Flink's csv writes it: no fraction (`java.time`'s
/// ISO local time) and quoted (Jackson quotes text holding a space).
fn csv_second(ms: i64) -> String {
    assert_eq!(ms % 1000, 0, "a window bound is a whole second");
    let text = ts_text(ms);
    format!("\"{}\"", &text[..text.len() - 4])
}

/// The TUMBLE(10 s) aggregates of `clicks`, computed here: `user,start,end,count,sum` lines.
fn oracle(clicks: &[(i32, String, i64, i64)]) -> Vec<String> {
    let mut groups: BTreeMap<(String, i64), (i64, i64)> = BTreeMap::new();
    for (_, user, amount, ts) in clicks {
        let g = groups.entry((user.clone(), ts / 10_000)).or_default();
        g.0 += 1;
        g.1 += amount;
    }
    let mut lines: Vec<String> = groups
        .into_iter()
        .map(|((user, w), (n, sum))| {
            format!(
                "{user},{},{},{n},{sum}",
                csv_second(w * 10_000),
                csv_second((w + 1) * 10_000)
            )
        })
        .collect();
    lines.sort();
    lines
}

fn produce_clicks(b: &KafkaBroker, name: &str) -> Vec<(i32, String, i64, i64)> {
    topic(b, name, 3);
    let clicks = clicks();
    let records: Vec<Rec> = clicks
        .iter()
        .map(|(p, user, amount, ts)| {
            let v = format!(
                r#"{{"user_name": "{user}", "amount": {amount}, "ts": "{}"}}"#,
                ts_text(*ts)
            );
            (*p, None, Some(v))
        })
        .collect();
    produce(b, name, &records);
    clicks
}

/// The watermark is emitted every millisecond, so that it moves while the partitions are read
/// (at the default 200 ms a run this small reads everything before the first one).
const WINDOWS: &str = "
SET 'pipeline.auto-watermark-interval' = '1 ms';
CREATE TABLE clicks (
  user_name STRING,
  amount BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '${TOPIC}',
  'properties.bootstrap.servers' = '${BOOTSTRAP}',
  'properties.group.id' = 'windows',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);
CREATE TABLE totals (user_name STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
  clicks BIGINT, total BIGINT)
WITH ('connector' = 'filesystem', 'path' = '${OUT}', 'format' = 'csv');
INSERT INTO totals
SELECT user_name, window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_name, window_start, window_end;
";

fn vars(kv: &[(&str, String)]) -> BTreeMap<String, String> {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// Runs `script` (the windows over `topic`) at parallelism 2 — three partitions for two
/// subtasks: one reads two of them — and checks it against the oracle.
fn windows_equal_the_oracle(b: &KafkaBroker, topic: &str, script: &str) {
    let clicks = produce_clicks(b, topic);
    let out = temp_dir(topic);
    let script = SqlScript::prepare(
        script,
        &vars(&[
            ("TOPIC", topic.into()),
            ("BOOTSTRAP", b.bootstrap()),
            ("OUT", out.display().to_string()),
        ]),
    )
    .unwrap();
    let jobs = script.jobs();
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let job = jobs[0].build(&env, QueryOutput::Stdout).unwrap();
    let exec = env.execute().unwrap();
    let mut got = sluice_runtime::sinks::committed_lines(&out).unwrap();
    got.sort();
    let want = oracle(&clicks);
    assert_eq!(job.late.count(), 0, "no row is late per partition");
    assert_eq!(exec.result.dead_letters, 0);
    assert_eq!(job.errors.count(), 0);
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_json_topic_with_a_watermark_into_tumbling_windows_equals_the_oracle() {
    let Some(b) = broker() else { return };
    windows_equal_the_oracle(&b, "clicks", WINDOWS);
}

#[test]
fn a_computed_rowtime_column_takes_the_same_watermark_path() {
    let Some(b) = broker() else { return };
    // The JSON field read as text, the rowtime computed from it: the watermark pushed into the
    // source evaluates the computed column first.
    let script = WINDOWS
        .replace(
            "  ts TIMESTAMP(3),\n  WATERMARK FOR ts AS ts",
            "  ts STRING,\n  event_time AS CAST(ts AS TIMESTAMP(3)),\n  WATERMARK FOR event_time AS event_time",
        )
        .replace("DESCRIPTOR(ts)", "DESCRIPTOR(event_time)");
    assert!(script.contains("event_time AS CAST"), "{script}");
    windows_equal_the_oracle(&b, "clicks-computed", &script);
}

#[test]
fn a_sql_sink_writes_exactly_once_json_with_keys() {
    let Some(b) = broker() else { return };
    topic(&b, "sql-out", 3);
    let input = temp_dir("kafka-sink-in");
    let rows: Vec<(i64, String)> = (1..=300).map(|i| (i, format!("n{i}"))).collect();
    let csv: String = rows.iter().map(|(i, n)| format!("{i},{n}\n")).collect();
    std::fs::write(input.join("part-0.csv"), csv).unwrap();
    let text = "
CREATE TABLE src (id BIGINT, name STRING)
WITH ('connector' = 'filesystem', 'path' = '${IN}', 'format' = 'csv');
CREATE TABLE out (id BIGINT, name STRING, twice BIGINT) WITH (
  'connector' = 'kafka',
  'topic' = 'sql-out',
  'properties.bootstrap.servers' = '${BOOTSTRAP}',
  'key.format' = 'json',
  'key.fields' = 'id',
  'value.format' = 'json',
  'value.fields-include' = 'EXCEPT_KEY',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'sql-eo'
);
INSERT INTO out SELECT id, UPPER(name), id * 2 FROM src;
";
    let script = SqlScript::prepare(
        text,
        &vars(&[
            ("IN", input.display().to_string()),
            ("BOOTSTRAP", b.bootstrap()),
        ]),
    )
    .unwrap();
    let chk = temp_dir("kafka-sink-chk");
    let env = StreamEnv::new();
    env.set_parallelism(2);
    env.enable_checkpointing(Duration::from_millis(50))
        .set_checkpoint_dir(&chk);
    script.jobs()[0].build(&env, QueryOutput::Stdout).unwrap();
    env.execute().unwrap();
    let r = read_committed(
        &b.bootstrap(),
        "sql-out",
        ReadUntil {
            expect: rows.len(),
            ..ReadUntil::default()
        },
    )
    .unwrap();
    assert_eq!((r.pending, r.behind_open, r.aborted), (0, 0, 0));
    assert!(r.commit_markers >= 1, "written in transactions");
    let mut got: Vec<(i64, String, i64)> = r
        .records
        .iter()
        .map(|rec| {
            let key: serde_json::Value =
                serde_json::from_slice(rec.key.as_deref().unwrap()).unwrap();
            let value: serde_json::Value =
                serde_json::from_slice(rec.value.as_deref().unwrap()).unwrap();
            assert_eq!(key.as_object().unwrap().len(), 1, "{key}");
            assert_eq!(value.as_object().unwrap().len(), 2, "EXCEPT_KEY: {value}");
            (
                key["id"].as_i64().unwrap(),
                value["name"].as_str().unwrap().to_string(),
                value["twice"].as_i64().unwrap(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(i64, String, i64)> = rows
        .iter()
        .map(|(i, n)| (*i, n.to_uppercase(), i * 2))
        .collect();
    assert_eq!(got, want);
    // And as a third party's client reads them: tansu's own `cat consume` (it does not apply
    // transaction markers, which it shows as records without key or value, but no transaction
    // was aborted).
    let mut third: Vec<(i64, String, i64)> = (0..3)
        .flat_map(|p| tansu_cat(&b, "sql-out", p))
        .map(|(key, value)| {
            (
                key["id"].as_i64().unwrap(),
                value["name"].as_str().unwrap().to_string(),
                value["twice"].as_i64().unwrap(),
            )
        })
        .collect();
    third.sort();
    assert_eq!(third, want, "read by tansu cat consume");
    let _ = std::fs::remove_dir_all(&input);
    let _ = std::fs::remove_dir_all(&chk);
}

/// The csv format's options apply under Kafka's format prefixes as under `filesystem`'s, and a
/// record's text is Flink's (Jackson's quoting, stripped decimals, ISO timestamps, the null
/// literal) without a line end; the records read back as the rows written.
#[test]
fn csv_keys_and_values_are_flinks_text_and_read_back() {
    let Some(b) = broker() else { return };
    topic(&b, "csv-out", 1);
    let input = temp_dir("kafka-csv-in");
    std::fs::write(
        input.join("part-0.csv"),
        "1,Kent,1589.000,2023-11-14 22:13:20.010\n\
         2,Deiter Abrams,,2023-11-14 22:13:20\n\
         3,,2923760.000,\n",
    )
    .unwrap();
    let columns = "id BIGINT, name STRING, price DECIMAL(10, 3), ts TIMESTAMP(3)";
    let kafka = |extra: &str| {
        format!(
            "'connector' = 'kafka', 'topic' = 'csv-out', 'properties.bootstrap.servers' = '{}', \
             'key.format' = 'csv', 'key.fields' = 'price', \
             'key.csv.write-bigdecimal-in-scientific-notation' = 'false', \
             'key.csv.null-literal' = '-', 'value.format' = 'csv', \
             'value.csv.null-literal' = 'NULL'{extra}",
            b.bootstrap()
        )
    };
    let text = format!(
        "CREATE TABLE src ({columns}) WITH ('connector' = 'filesystem', 'path' = '${{IN}}', \
           'format' = 'csv', 'csv.null-literal' = '');
         CREATE TABLE out ({columns}) WITH ({});
         INSERT INTO out SELECT * FROM src;",
        kafka("")
    );
    let script = SqlScript::prepare(&text, &vars(&[("IN", input.display().to_string())])).unwrap();
    let env = StreamEnv::new();
    script.jobs()[0].build(&env, QueryOutput::Stdout).unwrap();
    env.execute().unwrap();
    let r = read_committed(
        &b.bootstrap(),
        "csv-out",
        ReadUntil {
            expect: 3,
            ..ReadUntil::default()
        },
    )
    .unwrap();
    let text = |bytes: &Option<Vec<u8>>| String::from_utf8(bytes.clone().unwrap()).unwrap();
    let got: Vec<(String, String)> = r
        .records
        .iter()
        .map(|rec| (text(&rec.key), text(&rec.value)))
        .collect();
    let want = [
        ("1589.000", r#"1,Kent,1589,"2023-11-14 22:13:20.01""#),
        ("-", r#"2,"Deiter Abrams",NULL,"2023-11-14 22:13:20""#),
        ("2923760.000", "3,NULL,2.92376E+6,NULL"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want, "Flink's text, no line end");
    let (rows, dead) = scan(&format!(
        "CREATE TABLE t ({columns}) WITH ({})",
        kafka(", 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'")
    ));
    assert_eq!(dead, 0);
    let dec = |unscaled| Value::Decimal(sluice_sql::Decimal { unscaled, scale: 3 });
    let ts = |ms| Value::Timestamp(sluice_sql::Timestamp::from_millis(ms));
    assert_eq!(
        rows,
        vec![
            Row(vec![
                Value::Int(1),
                Value::str("Kent"),
                dec(1_589_000),
                ts(1_700_000_000_010)
            ]),
            Row(vec![
                Value::Int(2),
                Value::str("Deiter Abrams"),
                Value::Null,
                ts(1_700_000_000_000)
            ]),
            Row(vec![
                Value::Int(3),
                Value::Null,
                dec(2_923_760_000),
                Value::Null
            ]),
        ]
    );
    let _ = std::fs::remove_dir_all(&input);
}

/// The (key, value) JSON of every record of `partition` with a value, as `tansu cat consume`
/// prints them (one JSON array per fetched batch; it ends once a fetch brings nothing).
fn tansu_cat(
    b: &KafkaBroker,
    topic: &str,
    partition: i32,
) -> Vec<(serde_json::Value, serde_json::Value)> {
    let o = std::process::Command::new(KafkaBroker::binary())
        .args([
            "cat",
            "consume",
            "--broker",
            &format!("tcp://{}", b.bootstrap()),
            "--partition",
            &partition.to_string(),
            "--max-wait-time-ms",
            "500",
            topic,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .flat_map(|line| {
            let batch: Vec<serde_json::Value> = serde_json::from_str(line).unwrap();
            batch
        })
        .filter(|r| !r["value"].is_null())
        .map(|r| (r["key"].clone(), r["value"].clone()))
        .collect()
}

#[test]
fn fixed_and_round_robin_partitioners_place_records_as_flinks() {
    let Some(b) = broker() else { return };
    topic(&b, "fixed-out", 3);
    topic(&b, "rr-out", 3);
    let text = "
SET 'parallelism.default' = '2';
CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '120',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '120');
CREATE TABLE fixed_out (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'fixed-out',
  'properties.bootstrap.servers' = '${BOOTSTRAP}', 'format' = 'csv', 'sink.partitioner' = 'fixed');
CREATE TABLE rr_out (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'rr-out',
  'properties.bootstrap.servers' = '${BOOTSTRAP}', 'format' = 'csv',
  'sink.partitioner' = 'round-robin', 'sink.delivery-guarantee' = 'none');
EXECUTE STATEMENT SET BEGIN
INSERT INTO fixed_out SELECT id FROM g;
INSERT INTO rr_out SELECT id FROM g;
END;
";
    let script = SqlScript::prepare(text, &vars(&[("BOOTSTRAP", b.bootstrap())])).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(2);
    script.jobs()[0].build(&env, QueryOutput::Stdout).unwrap();
    env.execute().unwrap();
    let read = |t: &str| {
        read_committed(
            &b.bootstrap(),
            t,
            ReadUntil {
                expect: 120,
                ..ReadUntil::default()
            },
        )
        .unwrap()
    };
    let fixed = read("fixed-out");
    let partitions: BTreeSet<i32> = fixed.records.iter().map(|r| r.partition).collect();
    assert_eq!(
        partitions,
        BTreeSet::from([0, 1]),
        "subtask k writes to partition k % 3"
    );
    let rr = read("rr-out");
    let mut per: BTreeMap<i32, usize> = BTreeMap::new();
    for r in &rr.records {
        *per.entry(r.partition).or_default() += 1;
    }
    assert_eq!(per.len(), 3, "{per:?}");
    assert!(per.values().all(|&n| (30..=50).contains(&n)), "{per:?}");
    let ids = |c: &sluice_testkit::kafka_read::TopicContents| {
        let mut v: Vec<i64> = c
            .records
            .iter()
            .map(|r| {
                std::str::from_utf8(r.value.as_deref().unwrap())
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&fixed), (1..=120).collect::<Vec<_>>());
    assert_eq!(ids(&rr), (1..=120).collect::<Vec<_>>());
}

/// Scans a `kafka` table (bounded); its rows, sorted, and the job's dead letters.
fn scan(ddl: &str) -> (Vec<Row>, u64) {
    let def = create(ddl);
    let functions = FunctionRegistry::builtins();
    let scan =
        TableScan::new(&def, &BindContext::new(&functions), ScanSettings::default()).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let out = scan.stream(&env, &RowErrors::new()).collect();
    let exec = env.execute().unwrap();
    let mut got = out.handle.take();
    got.sort();
    (got, exec.result.dead_letters)
}

/// A json `kafka` table over `topic` with options `extra` (each preceded by a comma).
fn bare_table(b: &KafkaBroker, topic: &str, extra: &str) -> String {
    format!(
        "CREATE TABLE t (id BIGINT, name STRING) WITH ('connector' = 'kafka', 'topic' = '{topic}', \
         'properties.bootstrap.servers' = '{}', 'format' = 'json'{extra})",
        b.bootstrap()
    )
}

/// [`bare_table`] read from the earliest offset to the latest.
fn json_table(b: &KafkaBroker, topic: &str, extra: &str) -> String {
    bare_table(
        b,
        topic,
        &format!(
            ", 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'{extra}"
        ),
    )
}

#[test]
fn malformed_records_are_counted_dead_letters() {
    let Some(b) = broker() else { return };
    topic(&b, "dirty", 2);
    let v = |s: &str| Some(s.to_string());
    produce(
        &b,
        "dirty",
        &[
            (0, None, v(r#"{"id": 1, "name": "ok"}"#)),
            (0, None, v("{not json")),
            (1, None, v(r#"{"id": "x", "name": "bad id"}"#)),
            (1, None, None),
            (1, None, v(r#"{"id": 2}"#)),
            (0, None, v(r#"[1, 2]"#)),
        ],
    );
    let (rows, dead) = scan(&json_table(&b, "dirty", ""));
    assert_eq!(
        rows,
        vec![
            Row(vec![Value::Int(1), Value::str("ok")]),
            Row(vec![Value::Int(2), Value::Null]),
        ],
        "a missing field is NULL"
    );
    assert_eq!(dead, 4, "not JSON, a bad field, a tombstone, not an object");
    // Flink's ignore-parse-errors: a bad field reads as NULL, a record that is no JSON object
    // is skipped (counted here).
    let (rows, dead) = scan(&json_table(
        &b,
        "dirty",
        ", 'json.ignore-parse-errors' = 'true'",
    ));
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.contains(&Row(vec![Value::Null, Value::str("bad id")])));
    assert_eq!(dead, 3, "not JSON, a tombstone, not an object");
    // fail-on-missing-field: {"id": 2} is malformed too.
    let (rows, dead) = scan(&json_table(
        &b,
        "dirty",
        ", 'json.fail-on-missing-field' = 'true'",
    ));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(dead, 5);
}

#[test]
fn startup_and_bounded_modes_read_the_offsets_flinks_would() {
    let Some(b) = broker() else { return };
    topic(&b, "modes", 2);
    let records = |ids: std::ops::Range<i32>| -> Vec<Rec> {
        ids.map(|i| {
            (
                i % 2,
                None,
                Some(format!(r#"{{"id": {i}, "name": "r{i}"}}"#)),
            )
        })
        .collect()
    };
    // Three groups, and between them a millisecond no record carries: ids 0..5 are older than
    // `cut1`, ids 5..10 between the cuts, the rest newer. (Kafka timestamps from the producer's
    // clock: tansu looks a timestamp's offset up by batch and append time, which a timestamp
    // set by hand would not follow.)
    produce(&b, "modes", &records(0..5));
    let cut1 = next_millisecond();
    produce(&b, "modes", &records(5..10));
    let cut2 = next_millisecond();
    produce(&b, "modes", &records(10..20));
    let ids = |extra: &str| -> Vec<i64> {
        let (rows, dead) = scan(&bare_table(&b, "modes", extra));
        assert_eq!(dead, 0);
        let mut v: Vec<i64> = rows.iter().map(|r| r.get(0).as_i64().unwrap()).collect();
        v.sort();
        v
    };
    let both = ", 'scan.startup.mode' = 'specific-offsets', \
                'scan.startup.specific-offsets' = 'partition:0,offset:3;partition:1,offset:8', \
                'scan.bounded.mode' = 'specific-offsets', \
                'scan.bounded.specific-offsets' = 'partition:0,offset:5'";
    // Partition 0 holds ids 0, 2, 4, … at offsets 0, 1, 2, …: offsets 3 and 4 are ids 6, 8;
    // partition 1 has no bounded offset, so it is not read.
    assert_eq!(ids(both), vec![6, 8]);
    let latest = ", 'scan.startup.mode' = 'latest-offset', 'scan.bounded.mode' = 'latest-offset'";
    assert_eq!(ids(latest), Vec::<i64>::new());
    let earliest =
        ", 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'";
    assert_eq!(ids(earliest), (0..20).collect::<Vec<_>>());
    // From the first record at or after `cut1` to the last before `cut2`.
    let times = format!(
        ", 'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '{cut1}', \
         'scan.bounded.mode' = 'timestamp', 'scan.bounded.timestamp-millis' = '{cut2}'"
    );
    assert_eq!(ids(&times), (5..10).collect::<Vec<_>>());
    // group-offsets (the default) with a group that never committed and no
    // auto.offset.reset: refused, naming the partition.
    let ddl = bare_table(&b, "modes", ", 'properties.group.id' = 'fresh'");
    let e = sluice_table::connectors::SourceConnector::for_table(&create(&ddl))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("modes/0") && e.contains("no committed offset"),
        "{e}"
    );
    let reset = ", 'properties.group.id' = 'fresh', 'properties.auto.offset.reset' = 'earliest', \
                 'scan.bounded.mode' = 'latest-offset'";
    assert_eq!(ids(reset), (0..20).collect::<Vec<_>>());
}

/// A millisecond of the wall clock later than every record acknowledged so far (it waits for
/// the clock to pass the current millisecond).
fn next_millisecond() -> i64 {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    let start = now();
    loop {
        let t = now();
        if t > start {
            return t;
        }
        std::thread::yield_now();
    }
}

fn refused(script: &str) -> SqlError {
    SqlScript::prepare(script, &BTreeMap::new()).unwrap_err()
}

#[test]
fn bad_options_are_refused_naming_them() {
    let sink = |with: &str| {
        format!(
            "CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '1');
             CREATE TABLE k (id BIGINT) WITH ('connector' = 'kafka', {with});
             INSERT INTO k SELECT id FROM g;"
        )
    };
    let base = "'topic' = 't', 'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json'";
    let e = refused(&sink(&format!(
        "{base}, 'sink.delivery-guarant' = 'exactly-once'"
    )));
    assert!(
        e.to_string().contains("'sink.delivery-guarant'")
            && e.to_string()
                .contains("Did you mean 'sink.delivery-guarantee'"),
        "{e}"
    );
    let e = refused(&sink(
        "'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json'",
    ));
    assert!(
        matches!(&e, SqlError::BadOption { key, message, .. }
            if key == "topic" && message.contains("Either 'topic' or 'topic-pattern' must be set")),
        "{e}"
    );
    let e = refused(&sink(&format!(
        "{base}, 'sink.delivery-guarantee' = 'exactly-once'"
    )));
    assert!(
        matches!(&e, SqlError::BadOption { key, message, .. }
            if key == "sink.transactional-id-prefix" && message.contains("must be specified")),
        "{e}"
    );
    let e = refused(&sink(&format!(
        "{base}, 'sink.delivery-guarantee' = 'twice'"
    )));
    assert!(e.to_string().contains("'exactly-once'"), "{e}");
    let e = refused(&sink(&format!(
        "{base}, 'key.fields' = 'id', 'key.format' = 'json', 'sink.partitioner' = 'round-robin'"
    )));
    assert!(
        e.to_string()
            .contains("'round-robin' partitioner only works"),
        "{e}"
    );
    let e = refused(&sink(&format!(
        "{base}, 'properties.enable.auto.commit' = 'true'"
    )));
    assert!(e.to_string().contains("set by the connector"), "{e}");
    let e = refused(&sink(&format!("{base}, 'csv.field-delimiter' = ';'")));
    assert!(e.to_string().contains("option of format 'csv'"), "{e}");
    // Sources: the default startup mode needs a group id; a topic pattern is no sink's.
    let source = |with: &str| {
        format!(
            "CREATE TABLE k (id BIGINT) WITH ('connector' = 'kafka', {with});
             SELECT id FROM k;"
        )
    };
    let e = refused(&source(base));
    assert!(
        matches!(&e, SqlError::BadOption { key, .. } if key == "properties.group.id"),
        "{e}"
    );
    let e = refused(&source(&format!(
        "{base}, 'scan.startup.mode' = 'timestamp'"
    )));
    assert!(
        e.to_string()
            .contains("'scan.startup.timestamp-millis' is required in 'timestamp' startup mode"),
        "{e}"
    );
    let e = refused(&source(&format!(
        "{base}, 'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = 'p0:1'"
    )));
    assert!(e.to_string().contains("partition:0,offset:42"), "{e}");
    let e = refused(&sink(
        "'topic-pattern' = 't.*', 'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json'",
    ));
    assert!(e.to_string().contains("one 'topic'"), "{e}");
    // Flink's kafka (not upsert-kafka) refuses a primary key; metadata columns are refused.
    let e = refused(&format!(
        "CREATE TABLE k (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'kafka', {base});
         SELECT id FROM k;"
    ));
    assert!(e.to_string().contains("PRIMARY KEY"), "{e}");
    let e = refused(&format!(
        "CREATE TABLE k (id BIGINT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') WITH ('connector' = 'kafka', {base});
         SELECT id FROM k;"
    ));
    assert!(e.to_string().contains("metadata column 'ts'"), "{e}");
}
