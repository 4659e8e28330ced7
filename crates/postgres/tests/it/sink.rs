//! The PostgreSQL sink against a real cluster (`sluice_testkit::PostgresCluster`). The expected
//! tables are computed by PostgreSQL itself, in SQL, from the raw input loaded with `psql
//! \copy` — an oracle that shares no code with Sluice.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use sluice_datastream::{
    Collector, FaultSpec, KeyedProcessFunction, OperatorError, ProcessContext, RestartStrategy,
    StreamEnv,
};
use sluice_postgres::{PostgresSink, PostgresSinkExt, RowMapping, SinkOptions, UpsertStatement};
use sluice_testkit::PostgresCluster;

const KEYS: u64 = 40;

/// Per key, the running sum of the values in input order: `(key, seq, sum)` per record.
#[derive(Clone)]
struct RunningSum;

impl KeyedProcessFunction<i64, (i64, i64, i64), (i64, i64, i64)> for RunningSum {
    fn process_element(
        &mut self,
        (key, seq, v): (i64, i64, i64),
        ctx: &mut ProcessContext<'_, i64>,
        out: &mut dyn Collector<(i64, i64, i64)>,
    ) -> Result<(), OperatorError> {
        let mut st = ctx.value_state::<i64>("sum");
        let sum = st.value()?.unwrap_or(0) + v;
        st.update(sum)?;
        out.collect((key, seq, sum))
    }
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-pg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `records` lines `key,seq,value` (pseudo-random keys and values, a fixed seed), loaded into
/// table `input` with psql's `\copy`.
fn input(pg: &PostgresCluster, dir: &Path, records: u64) -> PathBuf {
    let path = dir.join("input.csv");
    let mut text = String::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..records {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("{},{i},{}\n", x % KEYS, (x >> 32) % 1000));
    }
    std::fs::write(&path, text).unwrap();
    pg.psql("CREATE TABLE input (k bigint, seq bigint, v bigint)")
        .unwrap();
    pg.psql(&format!("\\copy input FROM '{}' CSV", path.display()))
        .unwrap();
    path
}

/// The file → parse → (slowed) → keyed running sum (`p` subtasks) part of the jobs.
fn running_sums(
    env: &StreamEnv,
    path: &Path,
    p: usize,
) -> sluice_datastream::DataStream<(i64, i64, i64)> {
    env.set_parallelism(p);
    env.read_text_file(path)
        .set_parallelism(1)
        .map(|line: String| {
            let mut f = line.split(',').map(|s| s.parse::<i64>().unwrap());
            let r = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            if r.1 % 2_000 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        })
        .set_parallelism(1)
        .key_by(|r: &(i64, i64, i64)| r.0)
        .process(RunningSum)
}

fn triple_mapping() -> RowMapping<(i64, i64, i64)> {
    RowMapping::new()
        .column("k", |r: &(i64, i64, i64)| r.0)
        .column("seq", |r: &(i64, i64, i64)| r.1)
        .column("s", |r: &(i64, i64, i64)| r.2)
}

/// Rows of `a` not in `b` plus rows of `b` not in `a`, as multisets (`EXCEPT ALL`).
fn difference(pg: &PostgresCluster, a: &str, b: &str) -> (u64, u64) {
    let q = |x: &str, y: &str| -> u64 {
        pg.psql(&format!("SELECT count(*) FROM ({x} EXCEPT ALL {y}) d"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    (q(a, b), q(b, a))
}

fn count(pg: &PostgresCluster, sql: &str) -> u64 {
    pg.psql(sql).unwrap().trim().parse().unwrap()
}

/// 20 failures at pseudo-random points of random subtasks of the sink's vertex.
fn faults(vertex: &str, n: usize, p: u64) -> Vec<FaultSpec> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            FaultSpec {
                vertex: vertex.into(),
                subtask: (x % p) as usize,
                after_records: 500 + (x >> 8) % 2_500,
            }
        })
        .collect()
}

fn checkpointing(env: &StreamEnv, dir: &Path, faults: Vec<FaultSpec>) {
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_dir(dir.join("chk"))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 30,
            delay: Duration::ZERO,
        })
        .inject_faults(faults);
}

const EXPECTED_RUNNING: &str =
    "SELECT k, seq, sum(v) OVER (PARTITION BY k ORDER BY seq) FROM input";

#[test]
fn appends_are_exactly_once_under_twenty_injected_failures() {
    let pg = PostgresCluster::start().unwrap();
    let dir = tempdir("append-eo");
    let records = 200_000;
    let path = input(&pg, &dir, records);
    pg.psql("CREATE TABLE out (k bigint NOT NULL, seq bigint NOT NULL, s bigint NOT NULL)")
        .unwrap();
    let env = StreamEnv::new();
    checkpointing(&env, &dir, faults("PostgreSQL", 20, 2));
    let sink = PostgresSink::builder(&pg.url(), "out", triple_mapping())
        .option("sink.buffer-flush.max-rows", "500")
        .unwrap()
        .add_to(&running_sums(&env, &path, 2))
        .unwrap();
    let metrics = sink.handle.metrics.clone();
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    let hub = monitor.control.checkpoints().unwrap();
    assert_eq!(hub.attempt(), 20, "one restart per injected failure");
    let stats = hub.stats();
    assert!(stats.restored >= 10, "restores: {}", stats.restored);
    let m = metrics.snapshot();
    // Strays (prepared at a barrier whose checkpoint a failure cut short) are rolled back on
    // restore when they occur; how many occur depends on timing, so the stray test below makes
    // them on purpose.
    assert!(m.prepared >= 10 && m.committed >= 10, "{m:?}");
    eprintln!("append under failures: {m:?}");
    assert_eq!(count(&pg, "SELECT count(*) FROM out"), records);
    assert_eq!(
        difference(&pg, "SELECT k, seq, s FROM out", EXPECTED_RUNNING),
        (0, 0),
        "the sink's table differs from PostgreSQL's own running sums (unexpected, missing)"
    );
    assert_eq!(count(&pg, "SELECT count(*) FROM pg_prepared_xacts"), 0);
}

#[test]
fn upserts_are_exactly_once_under_twenty_injected_failures() {
    let pg = PostgresCluster::start().unwrap();
    let dir = tempdir("upsert-eo");
    let records = 200_000;
    let path = input(&pg, &dir, records);
    pg.psql("CREATE TABLE totals (k bigint PRIMARY KEY, s bigint NOT NULL, seq bigint)")
        .unwrap();
    let env = StreamEnv::new();
    checkpointing(&env, &dir, faults("PostgreSQL", 20, 2));
    let mapping = RowMapping::new()
        .column("k", |r: &(i64, i64, i64)| r.0)
        .column("s", |r: &(i64, i64, i64)| r.2)
        .column("seq", |r: &(i64, i64, i64)| Some(r.1));
    // The one-URL form (`sluice run --to postgres://…`).
    let url = format!("{}?table=totals&key=k&connect_timeout=5", pg.url());
    PostgresSink::from_url(&url, mapping)
        .unwrap()
        .add_to(&running_sums(&env, &path, 2))
        .unwrap();
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    assert_eq!(monitor.control.checkpoints().unwrap().attempt(), 20);
    assert_eq!(
        difference(
            &pg,
            "SELECT k, s, seq FROM totals",
            "SELECT k, sum(v), max(seq) FROM input GROUP BY k"
        ),
        (0, 0),
        "final sums differ from PostgreSQL's GROUP BY (unexpected, missing)"
    );
}

#[test]
fn stray_prepared_transactions_of_the_sink_are_rolled_back_and_others_kept() {
    let pg = PostgresCluster::start().unwrap();
    pg.psql("CREATE TABLE out (k bigint, seq bigint, s bigint)")
        .unwrap();
    // A crashed earlier run of this sink (subtask 0 and 1) and an unrelated transaction.
    for gid in ["strays:0:7:1", "strays:1:7:1", "other:0:7:1"] {
        pg.psql(&format!(
            "BEGIN; INSERT INTO out VALUES (-1, -1, -1); PREPARE TRANSACTION '{gid}';"
        ))
        .unwrap();
    }
    let env = StreamEnv::new();
    env.set_parallelism(2);
    env.enable_checkpointing(Duration::from_millis(20));
    let sink = PostgresSink::builder(&pg.url(), "out", triple_mapping())
        .gid_prefix("strays")
        .add_to(&env.generate(10_000, |i| (i as i64 % 7, i as i64, 1)))
        .unwrap();
    env.execute().unwrap();
    assert_eq!(sink.handle.metrics.snapshot().rolled_back, 2);
    assert_eq!(
        pg.psql("SELECT gid FROM pg_prepared_xacts").unwrap().trim(),
        "other:0:7:1"
    );
    pg.psql("ROLLBACK PREPARED 'other:0:7:1'").unwrap();
    assert_eq!(count(&pg, "SELECT count(*) FROM out"), 10_000);
    assert_eq!(count(&pg, "SELECT count(*) FROM out WHERE k < 0"), 0);
}

#[test]
fn a_terminated_connection_is_retried_without_loss() {
    terminated_connections(false);
}

/// Upserts are pipelined (statements left in flight): the unacknowledged ones are sent again,
/// in order, on the new connection — the last write of each key still wins.
#[test]
fn a_terminated_connection_is_retried_without_loss_upserting() {
    terminated_connections(true);
}

fn terminated_connections(upsert: bool) {
    let pg = PostgresCluster::start().unwrap();
    let dir = tempdir(if upsert { "terminate-up" } else { "terminate" });
    let records = 100_000;
    let path = input(&pg, &dir, records);
    pg.psql(if upsert {
        "CREATE TABLE out (k bigint PRIMARY KEY, seq bigint, s bigint)"
    } else {
        "CREATE TABLE out (k bigint, seq bigint, s bigint)"
    })
    .unwrap();
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(50))
        .set_checkpoint_dir(dir.join("chk"))
        .set_restart_strategy(RestartStrategy::NoRestart);
    let options = SinkOptions {
        max_retries: 5,
        retry_backoff: Duration::from_millis(20),
        ..SinkOptions::default()
    };
    let mut builder = PostgresSink::builder(&pg.url(), "out", triple_mapping()).options(options);
    if upsert {
        builder = builder.upsert(&["k"]);
    }
    let sink = builder
        .add_to(&running_sums(&env, &path, 2).map(|r| {
            // Slow enough that the connections can be killed several times mid-run.
            if r.1 % 100 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        }))
        .unwrap();
    let metrics = sink.handle.metrics.clone();
    let handle = env.launch().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut kills = 0;
    while kills < 4 && Instant::now() < deadline {
        // Progress in input records: an upsert batch writes its distinct keys only.
        let m = metrics.snapshot();
        let written = if upsert {
            m.batches * 100
        } else {
            m.rows_written
        };
        if written > (kills + 1) * records / 8 {
            let killed = count(
                &pg,
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name LIKE 'sluice sink%'",
            );
            kills += u64::from(killed > 0);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let monitor = handle.monitor();
    handle.wait().unwrap();
    assert_eq!(kills, 4, "the sink's connections were terminated 4 times");
    let m = metrics.snapshot();
    assert!(m.retries >= 1, "{m:?}");
    // The same figures on the sink tasks' metrics (connector gauges, listed by REST).
    let task_sum = |name: &str| -> u64 {
        monitor
            .subtasks
            .iter()
            .flatten()
            .flat_map(|t| t.connector_gauge_values())
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v as u64)
            .sum()
    };
    assert_eq!(task_sum("numRecordsSend"), m.rows_written);
    assert_eq!(task_sum("numRetries"), m.retries);
    assert_eq!(task_sum("numBatchesSend"), m.batches);
    if upsert {
        assert_eq!(
            difference(
                &pg,
                "SELECT k, seq, s FROM out",
                "SELECT k, max(seq), sum(v) FROM input GROUP BY k"
            ),
            (0, 0),
            "final sums differ from PostgreSQL's GROUP BY (unexpected, missing)"
        );
        return;
    }
    assert_eq!(count(&pg, "SELECT count(*) FROM out"), records);
    assert_eq!(
        difference(&pg, "SELECT k, seq, s FROM out", EXPECTED_RUNNING),
        (0, 0)
    );
}

#[test]
fn every_column_type_and_nulls_are_written() {
    let pg = PostgresCluster::start().unwrap();
    pg.psql(
        "CREATE TABLE typed (i int, l bigint, f double precision, t text, v varchar(10), \
         b boolean, ts timestamp, tz timestamptz, n bigint)",
    )
    .unwrap();
    let epoch = SystemTime::UNIX_EPOCH;
    let mapping = RowMapping::<u64>::new()
        .column("i", |r: &u64| *r as i32)
        .column("l", |r: &u64| -(*r as i64))
        .column("f", |r: &u64| *r as f64 / 4.0)
        .column("t", |r: &u64| format!("row \"{r}\", tab\t"))
        .column("v", |r: &u64| format!("v{r}"))
        .column("b", |r: &u64| r.is_multiple_of(2))
        .column("ts", move |r: &u64| epoch + Duration::from_secs(86_400 * r))
        .column("tz", move |r: &u64| {
            epoch + Duration::from_micros(1_500_000 * r)
        })
        .column("n", |r: &u64| (!r.is_multiple_of(2)).then_some(*r as i64));
    for (mode, table) in [
        (None, "typed"),
        (Some(UpsertStatement::Unnest), "typed_unnest"),
        (Some(UpsertStatement::MultiRow), "typed_multi_row"),
    ] {
        let mut b = PostgresSink::builder(&pg.url(), table, mapping.clone());
        if let Some(how) = mode {
            pg.psql(&format!(
                "CREATE TABLE {table} (LIKE typed); ALTER TABLE {table} ADD PRIMARY KEY (i)"
            ))
            .unwrap();
            b = b
                .upsert(&["i"])
                .option(
                    "sink.upsert-statement",
                    match how {
                        UpsertStatement::Unnest => "unnest",
                        UpsertStatement::MultiRow => "multi-row",
                    },
                )
                .unwrap();
        }
        let env = StreamEnv::new();
        env.set_parallelism(1);
        // Upserts see every row twice (in one batch): one row per key remains.
        let input = if mode.is_some() {
            vec![1u64, 2, 3, 1, 2, 3]
        } else {
            vec![1u64, 2, 3]
        };
        env.from_vec(input).sink_to_postgres(b).unwrap();
        env.execute().unwrap();
        let got = pg
            .psql(&format!(
                "SET TIME ZONE 'UTC'; SELECT i, l, f, t, v, b, ts, tz, coalesce(n::text, 'NULL') FROM {table} ORDER BY i"
            ))
            .unwrap();
        assert_eq!(
            got,
            "1|-1|0.25|row \"1\", tab\t|v1|f|1970-01-02 00:00:00|1970-01-01 00:00:01.5+00|1\n\
             2|-2|0.5|row \"2\", tab\t|v2|t|1970-01-03 00:00:00|1970-01-01 00:00:03+00|NULL\n\
             3|-3|0.75|row \"3\", tab\t|v3|f|1970-01-04 00:00:00|1970-01-01 00:00:04.5+00|3\n",
            "{table}"
        );
    }
}

fn launch_error(pg_url: &str, table: &str, upsert: bool) -> String {
    let env = StreamEnv::new();
    let mut b = PostgresSink::builder(pg_url, table, triple_mapping());
    if upsert {
        b = b.upsert(&["k"]);
    }
    b.add_to(&env.from_vec(vec![(1i64, 2i64, 3i64)])).unwrap();
    match env.launch() {
        Ok(_) => panic!("the job started"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_table_that_does_not_fit_the_mapping_is_refused_before_the_job_starts() {
    let pg = PostgresCluster::start().unwrap();
    pg.psql(
        "CREATE TABLE wrong_type (k bigint, seq integer, s bigint); \
         CREATE TABLE missing (k bigint, s bigint); \
         CREATE TABLE no_pk (k bigint, seq bigint, s bigint); \
         CREATE TABLE required (k bigint, seq bigint, s bigint, note text NOT NULL)",
    )
    .unwrap();
    let e = launch_error(&pg.url(), "wrong_type", false);
    assert!(
        e.contains("table wrong_type")
            && e.contains("column seq has type integer")
            && e.contains("int8"),
        "{e}"
    );
    let e = launch_error(&pg.url(), "missing", false);
    assert!(
        e.contains("table missing") && e.contains("column seq of the row mapping does not exist"),
        "{e}"
    );
    let e = launch_error(&pg.url(), "no_pk", true);
    assert!(
        e.contains("table no_pk") && e.contains("no primary key or unique index on (k)"),
        "{e}"
    );
    let e = launch_error(&pg.url(), "required", false);
    assert!(e.contains("column note is NOT NULL"), "{e}");
    let e = launch_error(&pg.url(), "nope", false);
    assert!(
        e.contains("table nope") && e.contains("does not exist"),
        "{e}"
    );
}

#[test]
fn an_unreachable_database_is_a_clear_error_naming_the_address() {
    let port = sluice_testkit::free_port().unwrap();
    let url = format!("postgres://sluice@127.0.0.1:{port}/sluice");
    let started = Instant::now();
    let e = launch_error(&url, "out", false);
    assert!(
        e.contains(&format!("cannot connect to PostgreSQL at 127.0.0.1:{port}")),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // A bad connection string is refused when the sink is added.
    let env = StreamEnv::new();
    let r = PostgresSink::builder("postgres://[bad", "out", triple_mapping())
        .add_to(&env.from_vec(vec![(1i64, 2i64, 3i64)]));
    assert!(r.err().unwrap().to_string().contains("connection string"));
}
