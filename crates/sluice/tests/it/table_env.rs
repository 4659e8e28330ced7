//! `sluice::table::TableEnv` as a program uses it: a typed stream made a table (its event time
//! and watermarks kept by `SOURCE_WATERMARK()`), SQL with a window aggregation and Rust
//! functions over it, the rows back as a stream or into a table's connector, all one job run as
//! `sluice::run` runs jobs (checkpoints, an injected failure, a restore; the REST API and the
//! doctor). Every answer is checked against a plain loop over the same events; every refusal
//! names what and where.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use sluice::table::{DataType, Row, ScalarUdf, Schema, SqlError, TableEnv, Value};
use sluice::{row, DataStream, RunOptions, Running, Say, StreamEnv, WatermarkStrategy};

/// A bid of the test's stream.
#[derive(Clone, Debug)]
struct Bid {
    auction: i64,
    price: i64,
    /// Event time, ms: out of order by up to 400 ms.
    ts: i64,
}

/// Event `i` (a pure function of `i`).
fn bid(i: u64) -> Bid {
    let i = i as i64;
    Bid {
        auction: i % 7,
        price: (i * 7919) % 1000 + 1,
        ts: 10_000 + i * 37 - ((i * 13) % 5) * 100,
    }
}

/// The bids with event time: a second of out-of-orderness allowed (the stream's disorder is
/// less), so no bid is late.
fn bids(env: &StreamEnv, n: u64) -> DataStream<Bid> {
    bids_from(env.generate(n, bid))
}

fn bids_from(stream: DataStream<Bid>) -> DataStream<Bid> {
    stream.assign_timestamps_and_watermarks(WatermarkStrategy::for_bounded_out_of_orderness(
        1_000,
        |b: &Bid| b.ts,
    ))
}

fn bid_schema() -> Schema {
    Schema::new()
        .column("auction", "BIGINT")
        .column("price", "BIGINT")
        .column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
        .watermark("rowtime", "SOURCE_WATERMARK()")
}

/// `bucket(price)`: which quarter of 1..=1000 a price is in.
fn bucket_udf() -> ScalarUdf {
    ScalarUdf::new(
        "bucket",
        vec![DataType::bigint()],
        DataType::bigint().not_null(),
        |a| Ok(Value::Int((a[0].as_i64().unwrap_or(0) - 1) / 250)),
    )
}

/// `ratio(a, b)`: a / b, an error for b = 0.
fn ratio_udf() -> ScalarUdf {
    ScalarUdf::new(
        "ratio",
        vec![DataType::bigint(), DataType::bigint()],
        DataType::bigint(),
        |a| match (a[0].as_i64(), a[1].as_i64()) {
            (Some(_), Some(0)) => Err("division by zero".into()),
            (Some(x), Some(y)) => Ok(Value::Int(x / y)),
            _ => Ok(Value::Null),
        },
    )
}

fn millis(v: &Value) -> i64 {
    match v {
        Value::Timestamp(t) => t.millis,
        other => panic!("not a timestamp: {other:?}"),
    }
}

fn tenv_with_bids(env: &StreamEnv, n: u64) -> TableEnv {
    tenv_over(env, bids(env, n))
}

fn tenv_over(env: &StreamEnv, bids: DataStream<Bid>) -> TableEnv {
    let tenv = TableEnv::create(env);
    let table = tenv
        .from_data_stream(&bids, bid_schema(), |b: Bid| row![b.auction, b.price])
        .unwrap();
    tenv.create_temporary_view("bids", &table).unwrap();
    tenv.create_temporary_function("bucket", bucket_udf())
        .unwrap();
    tenv
}

const PER_SECOND_AND_BUCKET: &str = "SELECT window_start, window_end, bucket(price) AS b, \
       COUNT(*) AS n, SUM(price) AS total, MAX(price) AS top \
     FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(rowtime), INTERVAL '1' SECOND)) \
     GROUP BY window_start, window_end, bucket(price)";

/// (window start, bucket) → (count, sum, max), by a plain loop.
fn per_second_and_bucket(n: u64) -> BTreeMap<(i64, i64), (i64, i64, i64)> {
    let mut model: BTreeMap<(i64, i64), (i64, i64, i64)> = BTreeMap::new();
    for b in (0..n).map(bid) {
        let e = model
            .entry((b.ts - b.ts.rem_euclid(1_000), (b.price - 1) / 250))
            .or_insert((0, 0, i64::MIN));
        e.0 += 1;
        e.1 += b.price;
        e.2 = e.2.max(b.price);
    }
    model
}

#[test]
fn a_window_aggregation_with_a_rust_function_over_a_stream_equals_a_plain_loop() {
    let n = 5_000;
    for p in [1, 2] {
        let env = StreamEnv::new();
        env.set_parallelism(p);
        let tenv = tenv_with_bids(&env, n);
        let table = tenv.sql_query(PER_SECOND_AND_BUCKET).unwrap();
        let names: Vec<String> = table.columns().unwrap().into_iter().map(|c| c.0).collect();
        assert_eq!(
            names,
            ["window_start", "window_end", "b", "n", "total", "top"]
        );
        let rows = tenv.to_data_stream(&table).unwrap().collect();
        env.execute().unwrap();
        let got: BTreeMap<(i64, i64), (i64, i64, i64)> = rows
            .handle
            .take()
            .iter()
            .map(|r: &Row| {
                assert_eq!(millis(r.get(1)) - millis(r.get(0)), 1_000);
                let int = |i: usize| r.get(i).as_i64().unwrap();
                ((millis(r.get(0)), int(2)), (int(3), int(4), int(5)))
            })
            .collect();
        assert_eq!(got, per_second_and_bucket(n), "p={p}");
        assert_eq!(tenv.row_errors().count(), 0);
        assert_eq!(tenv.late_records().count(), 0);
    }
}

#[test]
fn the_plan_reads_as_flinks_and_two_sql_jobs_in_one_env_keep_distinct_uids() {
    let env = StreamEnv::new();
    let tenv = tenv_with_bids(&env, 10);
    let table = tenv.sql_query(PER_SECOND_AND_BUCKET).unwrap();
    let explain = table.explain().unwrap();
    for part in [
        "== Abstract Syntax Tree ==",
        "== Optimized Physical Plan ==",
        "TableSourceScan(table=[[default_catalog, default_database, *anonymous_datastream_source$1*]], fields=[auction, price, rowtime])",
        "WatermarkAssigner(rowtime=[rowtime], watermark=[SOURCE_WATERMARK()])",
        "LocalWindowAggregate(",
        "GlobalWindowAggregate(",
        "bucket(price)",
    ] {
        assert!(explain.contains(part), "{part} not in\n{explain}");
    }
    let _ = tenv.to_data_stream(&table).unwrap();
    let again = tenv
        .sql_query(&format!("SELECT * FROM {table} WHERE n > 1"))
        .unwrap();
    let _ = tenv.to_data_stream(&again).unwrap();
    let nodes = env.stream_nodes();
    let uids: Vec<&String> = nodes.iter().filter_map(|n| n.uid.as_ref()).collect();
    let mut distinct = uids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(uids.len(), distinct.len(), "{uids:?}");
    assert!(
        nodes
            .iter()
            .any(|n| n.name.starts_with("GlobalWindowAggregate(")),
        "{:?}",
        nodes.iter().map(|n| &n.name).collect::<Vec<_>>()
    );
}

fn temp_dir(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-table-env-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every committed line of the part files under `dir`, sorted.
fn committed_lines(dir: &std::path::Path) -> Vec<String> {
    let mut lines = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_file() && name.starts_with("part-") && !name.starts_with('.') {
            let text = std::fs::read_to_string(&path).unwrap();
            lines.extend(text.lines().map(str::to_string));
        }
    }
    lines.sort();
    lines
}

#[test]
fn inserts_through_a_failure_and_a_restore_from_a_checkpoint_commit_the_plain_loops_answer() {
    let n = 20_000;
    let dir = temp_dir("insert");
    let options = RunOptions::try_from_args([
        "sql-program",
        "-p",
        "2",
        "--checkpoint-interval",
        "30",
        "--restart",
        "fixed-delay:3:0",
        "--checkpoint-dir",
        dir.join("chk").to_str().unwrap(),
        "--inject-failure",
        "GlobalWindowAggregate:1:400",
        "--no-rest",
        "--quiet",
    ])
    .unwrap();
    let env = options.stream_env().unwrap();
    // The source pauses 1 ms every 200 bids so that checkpoints (every 30 ms) complete before
    // the fault: the restart then restores one.
    let slow = env.generate(n, |i| {
        if i % 200 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        bid(i)
    });
    let tenv = tenv_over(&env, bids_from(slow));
    tenv.execute_sql(&format!(
        "CREATE TABLE per_second (window_start TIMESTAMP(3), b BIGINT, n BIGINT, total BIGINT) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv')",
        dir.join("per_second").display()
    ))
    .unwrap();
    tenv.execute_sql(&format!(
        "CREATE TABLE expensive (auction BIGINT, price BIGINT) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv')",
        dir.join("expensive").display()
    ))
    .unwrap();
    let mut set = tenv.create_statement_set();
    set.add_insert_sql(&format!(
        "INSERT INTO per_second SELECT window_start, b, n, total FROM ({PER_SECOND_AND_BUCKET})"
    ))
    .unwrap();
    set.add_insert_sql("INSERT INTO expensive SELECT auction, price FROM bids WHERE price > 990")
        .unwrap();
    assert!(set
        .explain()
        .unwrap()
        .contains("Sink(table=[default_catalog.default_database.expensive]"));
    set.attach_as_data_stream().unwrap();
    let say = Say {
        rest: false,
        checkpoints: false,
    };
    let running = Running::start(&env, &options.rest, say).unwrap();
    let monitor = running.monitor().clone();
    let (outcome, finished) = running.wait();
    outcome.unwrap();
    assert_eq!(
        finished.restarts, 1,
        "the injected failure restarted the job"
    );
    let stats = monitor.control.checkpoints().unwrap().stats();
    assert!(
        stats.restored >= 1,
        "the restart restored a checkpoint: {stats:?}"
    );

    // Flink's csv text of a whole second: no fraction, quoted (it holds a space).
    let fmt = |ms: i64| {
        let s = ms / 1000;
        format!("\"1970-01-01 00:{:02}:{:02}\"", s / 60, s % 60)
    };
    let model: Vec<String> = {
        let mut v: Vec<String> = per_second_and_bucket(n)
            .into_iter()
            .map(|((start, b), (c, total, _))| format!("{},{b},{c},{total}", fmt(start)))
            .collect();
        v.sort();
        v
    };
    assert_eq!(committed_lines(&dir.join("per_second")), model);
    let mut expensive: Vec<String> = (0..n)
        .map(bid)
        .filter(|b| b.price > 990)
        .map(|b| format!("{},{}", b.auction, b.price))
        .collect();
    expensive.sort();
    assert_eq!(committed_lines(&dir.join("expensive")), expensive);
    assert_eq!(tenv.row_errors().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rust_functions_runtime_error_drops_its_row_as_a_dead_letter_and_create_function_names_it() {
    let n = 700;
    let env = StreamEnv::new();
    let tenv = tenv_with_bids(&env, n);
    tenv.register_function("com.example.Ratio", ratio_udf());
    tenv.execute_sql("CREATE TEMPORARY FUNCTION ratio AS 'com.example.Ratio'")
        .unwrap();
    let table = tenv
        .sql_query("SELECT auction, ratio(price, auction) AS r FROM bids")
        .unwrap();
    let rows = tenv.to_data_stream(&table).unwrap().collect();
    env.execute().unwrap();
    let mut got: Vec<(i64, i64)> = rows
        .handle
        .take()
        .iter()
        .map(|r| (r.get(0).as_i64().unwrap(), r.get(1).as_i64().unwrap()))
        .collect();
    got.sort();
    let mut model: Vec<(i64, i64)> = (0..n)
        .map(bid)
        .filter(|b| b.auction != 0)
        .map(|b| (b.auction, b.price / b.auction))
        .collect();
    model.sort();
    assert_eq!(got, model);
    let zeros = (0..n).map(bid).filter(|b| b.auction == 0).count() as u64;
    assert_eq!(tenv.row_errors().count(), zeros);
    let first = tenv.row_errors().first().unwrap();
    assert!(first.contains("ratio: division by zero"), "{first}");
}

#[test]
fn calls_of_a_rust_function_are_checked_when_planned_with_line_and_column() {
    let env = StreamEnv::new();
    let tenv = tenv_with_bids(&env, 1);
    tenv.create_temporary_function("ratio", ratio_udf())
        .unwrap();
    let e = tenv
        .sql_query("SELECT auction,\n  ratio(price) AS r\nFROM bids")
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SqlError::Validation { .. }), "{text}");
    assert!(text.contains("at line 2, column 3"), "{text}");
    assert!(
        text.contains("Cannot apply 'ratio' to arguments of type 'ratio(<BIGINT>)'"),
        "{text}"
    );
    assert!(
        text.contains("Supported form(s): 'ratio(<BIGINT>, <BIGINT>)'"),
        "{text}"
    );
    let e = tenv
        .sql_query("SELECT ratio(price, 'x') FROM bids")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("at line 1, column 8") && e.contains("<CHAR(1) NOT NULL>"),
        "{e}"
    );
    // INT widens to the BIGINT parameter; DOUBLE would narrow and is refused.
    tenv.sql_query("SELECT ratio(CAST(price AS INT), 2) FROM bids")
        .unwrap();
    let e = tenv
        .sql_query("SELECT ratio(CAST(price AS DOUBLE), 2) FROM bids")
        .unwrap_err()
        .to_string();
    assert!(e.contains("ratio(<DOUBLE>, <INTEGER NOT NULL>)"), "{e}");
    let e = tenv
        .create_temporary_function("RATIO", ratio_udf())
        .unwrap_err()
        .to_string();
    assert!(e.contains("is already defined"), "{e}");
    let e = tenv
        .sql_query("SELECT ratoi(price, 2) FROM bids")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Function 'ratoi' not found") && e.contains("'RATIO'"),
        "{e}"
    );
}

#[test]
fn what_a_program_cannot_do_is_refused_before_anything_is_added() {
    let env = StreamEnv::new();
    let tenv = tenv_with_bids(&env, 1);
    let before = env.stream_nodes().len();

    // An updating table: Flink's message when it is turned into an append-only stream.
    let counts = tenv
        .sql_query("SELECT auction, COUNT(*) FROM bids GROUP BY auction")
        .unwrap();
    let e = tenv.to_data_stream(&counts).err().unwrap().to_string();
    assert!(
        e.contains(
            "Table sink '*anonymous_datastream_sink$1*' doesn't support consuming update changes"
        ),
        "{e}"
    );
    // The job's settings belong to the StreamEnv.
    let e = tenv
        .execute_sql("SET 'parallelism.default' = '4'")
        .unwrap_err()
        .to_string();
    assert!(e.contains("StreamEnv owns"), "{e}");
    tenv.execute_sql("SET 'table.exec.source.idle-timeout' = '1 s'")
        .unwrap();
    // A query alone has nowhere to go.
    let e = tenv
        .execute_sql("SELECT * FROM bids")
        .unwrap_err()
        .to_string();
    assert!(e.contains("sql_query()"), "{e}");
    // A view is no INSERT target.
    let e = tenv
        .execute_sql("INSERT INTO bids SELECT * FROM bids")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be the target of an INSERT"), "{e}");
    // Unknown names come with the nearest known ones.
    let e = tenv
        .sql_query("SELECT pirce FROM bids")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Column 'pirce' not found at line 1, column 8") && e.contains("'price'"),
        "{e}"
    );
    // SOURCE_WATERMARK() needs a stream with event time, and is a marker only.
    let plain = env.from_vec(vec![(1i64, 2i64)]);
    let e = tenv
        .from_data_stream(
            &plain,
            Schema::new()
                .column("a", "BIGINT")
                .column("ts", "TIMESTAMP(3)")
                .watermark("ts", "SOURCE_WATERMARK()"),
            |(a, _)| row![a, None::<i64>],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the stream has no event time") && e.contains("line 3"),
        "{e}"
    );
    let e = tenv
        .sql_query("SELECT SOURCE_WATERMARK() FROM bids")
        .and_then(|t| tenv.to_data_stream(&t))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("SOURCE_WATERMARK() is a declarative marker function"),
        "{e}"
    );
    // A schema's errors name the element.
    let e = tenv
        .from_data_stream(
            &plain,
            Schema::new().column("a", "BIGINT").column("b", "BIGNIT"),
            |(a, b)| row![a, b],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2"), "{e}");
    let e = tenv
        .from_data_stream(
            &plain,
            Schema::new()
                .column("a", "BIGINT")
                .column_by_metadata("offset", "BIGINT"),
            |(a, _)| row![a],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("Invalid metadata key 'offset'"), "{e}");
    assert_eq!(
        env.stream_nodes().len(),
        before + 1,
        "only the plain stream was added"
    );
}

#[test]
fn a_record_the_schema_cannot_hold_is_a_dead_letter_not_a_different_value() {
    let env = StreamEnv::new();
    let tenv = TableEnv::create(&env);
    let input = env.from_vec(vec![(1i64, "a"), (2, "toolong"), (3, "c"), (1 << 40, "d")]);
    let table = tenv
        .from_data_stream(
            &input,
            Schema::new()
                .column("id", "INT")
                .column("tag", "VARCHAR(3)"),
            |(id, tag)| row![id, tag],
        )
        .unwrap();
    let rows = tenv.to_data_stream(&table).unwrap().collect();
    env.execute().unwrap();
    let mut got: Vec<i64> = rows
        .handle
        .take()
        .iter()
        .map(|r| r.get(0).as_i64().unwrap())
        .collect();
    got.sort();
    assert_eq!(got, [1, 3]);
    assert_eq!(tenv.row_errors().count(), 2);
    assert!(tenv
        .row_errors()
        .kept()
        .iter()
        .any(|e| e.contains("column tag VARCHAR(3)")));
}

#[test]
fn a_sql_program_is_served_over_rest_with_flinks_operator_names_and_the_doctor_answers() {
    let options = RunOptions::try_from_args([
        "sql-program",
        "--rest-port",
        "0",
        "--metrics-interval",
        "0.2",
        "--metrics-window",
        "1",
    ])
    .unwrap();
    let env = options.stream_env().unwrap();
    env.set_job_name("sql-program");
    let tenv = tenv_with_bids(&env, u64::MAX / 2);
    tenv.execute_sql("CREATE TABLE sink (b BIGINT, n BIGINT) WITH ('connector' = 'blackhole')")
        .unwrap();
    tenv.execute_sql(&format!(
        "INSERT INTO sink SELECT b, n FROM ({PER_SECOND_AND_BUCKET})"
    ))
    .unwrap();
    let say = Say {
        rest: false,
        checkpoints: false,
    };
    let running = Running::start(&env, &options.rest, say).unwrap();
    let addr = running.rest_addr().expect("REST is on");
    let (status, body) = crate::run::get(addr, "/jobs/overview");
    assert_eq!(status, 200, "{body}");
    let overview: serde_json::Value = serde_json::from_str(&body).unwrap();
    let jid = overview["jobs"][0]["jid"].as_str().unwrap().to_string();
    let (_, body) = crate::run::get(addr, &format!("/jobs/{jid}"));
    let job: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = job["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    for op in [
        "LocalWindowAggregate(",
        "GlobalWindowAggregate(",
        "Sink: Sink(table=[default_catalog.default_database.sink]",
    ] {
        assert!(names.iter().any(|n| n.contains(op)), "{op} in {names:?}");
    }
    // The doctor answers once the first metrics sample is in.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let doctor = loop {
        let (status, body) = crate::run::get(addr, &format!("/jobs/{jid}/doctor"));
        assert_eq!(status, 200, "{body}");
        let d: serde_json::Value = serde_json::from_str(&body).unwrap();
        if d.get("cause").is_some() || std::time::Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(doctor["cause"].is_string(), "{doctor}");
    let verdict = doctor["verdict"].as_str().unwrap_or_default();
    assert!(
        verdict.contains("Aggregate(") || verdict.contains("TableSourceScan("),
        "{doctor}"
    );
    running.cancel();
    let (outcome, _) = running.wait();
    assert!(outcome.is_err(), "cancelled");
}
