//! The `jdbc` connector against a real PostgreSQL (sluice-testkit's throwaway cluster), with
//! PostgreSQL's own SQL as the oracle:
//!
//! * a SQL job's event-time window aggregate upserted by the sink table's `PRIMARY KEY … NOT
//!   ENFORCED` equals PostgreSQL's `GROUP BY` over the same input (generated in PostgreSQL by
//!   the same formula), through checkpoints and a sink failure restored from one, with a stale
//!   row overwritten and a second run changing nothing;
//! * without a key the sink appends exactly once (two-phase commit per checkpoint) through the
//!   same failure;
//! * bad options, a missing table and a table whose columns do not fit are refused before the
//!   job starts, naming the option;
//! * a lookup join (`JOIN … FOR SYSTEM_TIME AS OF`, inner and `LEFT`, with a condition on the
//!   looked-up row) equals PostgreSQL's own `JOIN` / `LEFT JOIN`, and its operator carries
//!   Flink's `LookupJoin(…)` name.

use std::collections::BTreeMap;
use std::path::Path;

use std::time::Duration;

use sluice_datastream::{FaultSpec, RestartStrategy, StreamEnv};
use sluice_table::{QueryOutput, SqlScript};
use sluice_testkit::PostgresCluster;

use crate::support::temp_dir;

/// Rows of the input: row `i` is `(i, k = i % 37, v = (i * 7) % 101, ts = base + i * 10 ms)`.
const ROWS: i64 = 3_000;

/// Rows of the input of the jobs that fail and restore a checkpoint (enough for several
/// checkpoints before the fault).
const MANY: i64 = 100_000;

/// The first `rows` rows of the input as a csv file (the formula PostgreSQL's oracle repeats in
/// SQL).
fn write_input(dir: &Path, rows: i64) -> std::path::PathBuf {
    let path = dir.join("input");
    std::fs::create_dir_all(&path).unwrap();
    let mut text = String::new();
    for i in 0..rows {
        let ms = i * 10;
        text.push_str(&format!(
            "{i},{},{},2024-01-01 00:{:02}:{:02}.{:03}\n",
            i % 37,
            (i * 7) % 101,
            ms / 60_000,
            (ms / 1000) % 60,
            ms % 1000
        ));
    }
    std::fs::write(path.join("part-0.csv"), text).unwrap();
    path
}

fn jdbc_url(pg: &PostgresCluster) -> String {
    format!("jdbc:postgresql://127.0.0.1:{}/sluice", pg.port())
}

fn source_ddl(input: &Path) -> String {
    format!(
        "CREATE TABLE src (i BIGINT, k BIGINT, v BIGINT, ts TIMESTAMP(3), p AS PROCTIME(), \
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    )
}

/// Prepares and runs every job of `text` at parallelism `p`; the dead letters of the last.
/// With `fault`, checkpoints every 20 ms and the sink's subtask 0 fails once after that many
/// rows: the job restarts from its latest checkpoint (asserted to have happened).
fn run(text: &str, p: usize, fault: Option<u64>) -> u64 {
    let script = SqlScript::prepare(text, &BTreeMap::new()).unwrap();
    let mut errors = 0;
    for job in script.jobs() {
        let env = StreamEnv::new();
        env.set_parallelism(p);
        if let Some(after_records) = fault {
            env.enable_checkpointing(Duration::from_millis(20))
                .set_restart_strategy(RestartStrategy::FixedDelay {
                    attempts: 3,
                    delay: Duration::ZERO,
                })
                .inject_faults(vec![FaultSpec {
                    vertex: "Sink(table=".into(),
                    subtask: 0,
                    after_records,
                }]);
        }
        let built = job.build(&env, QueryOutput::Stdout).unwrap();
        let handle = env.launch().unwrap();
        let monitor = handle.monitor();
        handle.wait().unwrap();
        if fault.is_some() {
            let checkpoints = monitor.control.checkpoints().unwrap();
            assert_eq!(checkpoints.attempt(), 1, "the fault fired once");
            assert!(
                checkpoints.stats().restored >= 1,
                "the restart restored a checkpoint: {:?}",
                checkpoints.stats()
            );
        }
        errors = built.errors.count();
    }
    errors
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn a_window_aggregate_upserted_by_primary_key_equals_postgresqls_group_by() {
    let pg = PostgresCluster::start().unwrap();
    pg.psql(
        "CREATE TABLE totals (k bigint, window_start timestamp(3), cnt bigint NOT NULL, \
           total bigint, PRIMARY KEY (k, window_start));
         INSERT INTO totals VALUES (0, '2024-01-01 00:00:00', -1, -1);",
    )
    .unwrap();
    let dir = temp_dir("jdbc-upsert");
    let input = write_input(&dir, MANY);
    let text = format!(
        "{}CREATE TABLE totals (k BIGINT, window_start TIMESTAMP(3), cnt BIGINT, total BIGINT, \
           PRIMARY KEY (k, window_start) NOT ENFORCED) \
         WITH ('connector' = 'jdbc', 'url' = '{}', 'table-name' = 'totals', \
           'username' = 'sluice', 'password' = '', 'sink.buffer-flush.max-rows' = '25', \
           'sink.buffer-flush.interval' = '100ms', 'sink.max-retries' = '2');
         INSERT INTO totals SELECT k, window_start, COUNT(*), SUM(v) \
           FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '2' SECOND)) \
           GROUP BY k, window_start, window_end;",
        source_ddl(&input),
        jdbc_url(&pg)
    );
    let oracle = sorted_lines(
        &pg.psql(&format!(
            "SELECT i % 37, date_bin('2 seconds', timestamp '2024-01-01' + i * interval '10 ms', \
               timestamp '2024-01-01'), count(*), sum((i * 7) % 101) \
             FROM generate_series(0, {}) i GROUP BY 1, 2",
            MANY - 1
        ))
        .unwrap(),
    );
    assert_eq!(oracle.len(), 37 * 500);
    let table = "SELECT k, window_start, cnt, total FROM totals";
    // Checkpoints, and a sink subtask failing once: the replay from the checkpoint upserts
    // the same keys again.
    assert_eq!(run(&text, 2, Some(3_000)), 0);
    assert_eq!(
        sorted_lines(&pg.psql(table).unwrap()),
        oracle,
        "the stale row is overwritten"
    );
    // Upserts are idempotent: the same job again leaves the table as it is.
    assert_eq!(run(&text, 1, None), 0);
    assert_eq!(sorted_lines(&pg.psql(table).unwrap()), oracle);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_key_the_sink_appends_exactly_once() {
    let pg = PostgresCluster::start_with(&[("max_prepared_transactions", "20")]).unwrap();
    pg.psql("CREATE TABLE rows_out (i bigint, k integer, label varchar(20), at timestamptz);")
        .unwrap();
    let dir = temp_dir("jdbc-append");
    let input = write_input(&dir, MANY);
    let text = format!(
        "{}CREATE TABLE rows_out (i BIGINT, k INT, label STRING, at TIMESTAMP_LTZ(3)) \
         WITH ('connector' = 'jdbc', 'url' = '{}?user=sluice', 'table-name' = 'ROWS_OUT', \
           'driver' = 'org.postgresql.Driver', 'sink.parallelism' = '2');
         INSERT INTO rows_out SELECT i, CAST(k AS INT), CONCAT('k-', CAST(k AS STRING)), \
           CAST(ts AS TIMESTAMP_LTZ(3)) FROM src WHERE MOD(i, 3) = 0;",
        source_ddl(&input),
        jdbc_url(&pg)
    );
    // Two-phase commit per checkpoint: a sink subtask failing once leaves no row twice.
    assert_eq!(run(&text, 1, Some(5_000)), 0);
    let got = pg
        .psql("SELECT count(*), count(DISTINCT i), sum(i), sum(k), count(*) FILTER (WHERE label = 'k-' || k) FROM rows_out")
        .unwrap();
    let want = pg
        .psql(&format!(
            "SELECT count(*), count(DISTINCT i), sum(i), sum(i % 37), count(*) \
             FROM generate_series(0, {}) i WHERE i % 3 = 0",
            MANY - 1
        ))
        .unwrap();
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The error of preparing `text`.
fn refusal(text: &str) -> String {
    SqlScript::prepare(text, &BTreeMap::new())
        .expect_err("refused")
        .to_string()
}

#[test]
fn bad_jdbc_options_are_refused_before_the_job_starts() {
    let pg = PostgresCluster::start().unwrap();
    pg.psql("CREATE TABLE sums (k bigint PRIMARY KEY, n bigint); CREATE TABLE skinny (k bigint);")
        .unwrap();
    let url = jdbc_url(&pg);
    let script = |columns: &str, with: &str| {
        format!(
            "CREATE TABLE g (k BIGINT, n BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
             CREATE TABLE out ({columns}) WITH ('connector' = 'jdbc'{with});
             INSERT INTO out SELECT k, n FROM g;"
        )
    };
    let key = "k BIGINT, n BIGINT, PRIMARY KEY (k) NOT ENFORCED";
    let ok =
        format!(", 'url' = '{url}', 'table-name' = 'sums', 'username' = 'sluice', 'password' = ''");
    let cases: Vec<(String, &str)> = vec![
        (
            script(key, &format!("{ok}, 'sink.buffer-flush.max-row' = '10'")),
            "Invalid option 'sink.buffer-flush.max-row' of table 'out': Unsupported option for connector 'jdbc'. Did you mean 'sink.buffer-flush.max-rows'",
        ),
        (
            script(key, ", 'table-name' = 'sums'"),
            "Invalid option 'url' of table 'out': Missing required option 'url'",
        ),
        (
            script(key, &format!(", 'url' = '{url}', 'tablename' = 'sums'")),
            "Invalid option 'tablename' of table 'out': Unsupported option for connector 'jdbc'. Did you mean 'table-name'",
        ),
        (
            script(key, &format!(", 'url' = '{url}'")),
            "Invalid option 'table-name' of table 'out': Missing required option 'table-name'",
        ),
        (
            script(key, &format!(", 'url' = '{url}', 'table-name' = 'nowhere', 'username' = 'sluice', 'password' = ''")),
            "Invalid option 'table-name' of table 'out': table nowhere: does not exist",
        ),
        (
            script("k BIGINT, n BIGINT", &format!(", 'url' = '{url}', 'table-name' = 'skinny', 'username' = 'sluice', 'password' = ''")),
            "column n of the row mapping does not exist (the table has: k)",
        ),
        (
            script("k BIGINT, n BIGINT, PRIMARY KEY (n) NOT ENFORCED", &ok),
            "has no primary key or unique index on (n)",
        ),
        (
            script(key, &format!("{ok}, 'driver' = 'com.mysql.cj.jdbc.Driver'")),
            "Invalid option 'driver' of table 'out': 'com.mysql.cj.jdbc.Driver': Sluice's jdbc connector speaks PostgreSQL only",
        ),
        (
            script(key, &format!(", 'url' = '{url}', 'table-name' = 'sums', 'username' = 'sluice'")),
            "Either all or none of the following options should be provided:\nusername\npassword",
        ),
        (
            script(key, ", 'url' = 'jdbc:postgresql://127.0.0.1:1/sluice', 'table-name' = 'sums', 'username' = 'sluice', 'password' = ''"),
            "Invalid option 'url' of table 'out': cannot connect to PostgreSQL at 127.0.0.1:1",
        ),
        (
            script(key, ", 'url' = 'jdbc:mysql://h/db', 'table-name' = 'sums'"),
            "Invalid option 'url' of table 'out': 'jdbc:mysql://h/db': Sluice's jdbc connector speaks PostgreSQL only",
        ),
        (
            script(key, &format!("{ok}, 'sink.max-retries' = '-1'")),
            "The value of 'sink.max-retries' option shouldn't be negative, but is -1.",
        ),
        (
            script(key, &format!("{ok}, 'sink.buffer-flush.interval' = '3 parsecs'")),
            "Invalid option 'sink.buffer-flush.interval' of table 'out'",
        ),
        (
            script("k BIGINT, n DECIMAL(10, 2), PRIMARY KEY (k) NOT ENFORCED", &ok),
            "column 'n' DECIMAL(10, 2) of jdbc table 'out': the jdbc sink writes BOOLEAN",
        ),
    ];
    for (text, want) in cases {
        let e = refusal(&text);
        assert!(e.contains(want), "expected «{want}» in: {e}");
    }
    // A jdbc table is not scanned.
    let e = refusal(&format!(
        "CREATE TABLE d (k BIGINT) WITH ('connector' = 'jdbc'{ok});
         CREATE TABLE o (k BIGINT) WITH ('connector' = 'blackhole');
         INSERT INTO o SELECT k FROM d;"
    ));
    assert!(
        e.contains("a scan of jdbc table 'd' is not supported yet"),
        "{e}"
    );
}

/// The dimension table: keys 0..299 (two rows for multiples of 7), weights `key / 4`.
fn dim(pg: &PostgresCluster) {
    pg.psql(
        "CREATE TABLE dim (id bigint, name text, weight float8);
         INSERT INTO dim SELECT i, 'name-' || i, i / 4.0 FROM generate_series(0, 299) i;
         INSERT INTO dim SELECT i, 'extra-' || i, NULL FROM generate_series(0, 299, 7) i;",
    )
    .unwrap();
}

/// `i|name|weight` lines, weights as numbers (`|` splits; NULL is empty).
fn parse_joined(lines: &[String]) -> Vec<(i64, String, Option<f64>)> {
    let mut v: Vec<(i64, String, Option<f64>)> = lines
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.splitn(3, [',', '|']).collect();
            (
                f[0].parse().unwrap(),
                f[1].trim_matches('"').to_string(),
                (!f[2].is_empty()).then(|| f[2].parse().unwrap()),
            )
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

#[test]
fn lookup_joins_equal_postgresqls_own_join() {
    let pg = PostgresCluster::start().unwrap();
    dim(&pg);
    let dir = temp_dir("jdbc-lookup");
    let input = write_input(&dir, ROWS);
    let dim_ddl = format!(
        "CREATE TABLE dim (id BIGINT, name STRING, weight DOUBLE) \
         WITH ('connector' = 'jdbc', 'url' = '{}', 'table-name' = 'dim', \
           'username' = 'sluice', 'password' = '', 'lookup.cache' = 'PARTIAL', \
           'lookup.partial-cache.max-rows' = '100', 'lookup.partial-cache.expire-after-write' = '1min', \
           'lookup.max-retries' = '1');\n",
        jdbc_url(&pg)
    );
    // Key `i % 400`: keys 300..399 have no row.
    let cases = [
        (
            "JOIN dim FOR SYSTEM_TIME AS OF s.p AS d ON MOD(s.i, 400) = d.id",
            "JOIN dim d ON d.id = i % 400",
            "joinType=[InnerJoin], lookup=[id=$f",
        ),
        (
            "LEFT JOIN dim FOR SYSTEM_TIME AS OF s.p AS d ON MOD(s.i, 400) = d.id AND d.weight > 20",
            "LEFT JOIN dim d ON d.id = i % 400 AND d.weight > 20",
            "joinType=[LeftOuterJoin], lookup=[id=$f",
        ),
    ];
    for (join, pg_join, name) in cases {
        let out = dir.join(format!("out-{}", name.len()));
        let text = format!(
            "{}{dim_ddl}CREATE TABLE out (i BIGINT, name STRING, weight DOUBLE) \
               WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO out SELECT s.i, d.name, d.weight FROM src AS s {join};",
            source_ddl(&input),
            out.display()
        );
        let script = SqlScript::prepare(&text, &BTreeMap::new()).unwrap();
        let env = StreamEnv::new();
        env.set_parallelism(2);
        let job = script.jobs()[0].build(&env, QueryOutput::Stdout).unwrap();
        let plan = env.execution_plan().unwrap();
        assert!(
            plan.contains(&format!(
                "LookupJoin(table=[default_catalog.default_database.dim], {name}"
            )),
            "{plan}"
        );
        env.execute().unwrap();
        assert_eq!(job.errors.count(), 0);
        let got = parse_joined(&sluice_runtime::sinks::committed_lines(&out).unwrap());
        let oracle: Vec<String> = pg
            .psql(&format!(
                "SELECT i || '|' || coalesce(d.name, '') || '|' || coalesce(d.weight::text, '') \
                 FROM generate_series(0, {}) i {pg_join}",
                ROWS - 1
            ))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        let want = parse_joined(&oracle);
        assert!(want.len() >= 2_000, "{}", want.len());
        assert_eq!(got, want, "{join}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_lookup_table_is_checked_before_the_job_starts() {
    let pg = PostgresCluster::start().unwrap();
    dim(&pg);
    let url = jdbc_url(&pg);
    let script = |columns: &str, with: &str| {
        format!(
            "CREATE TABLE g (k BIGINT, p AS PROCTIME()) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
             CREATE TABLE dim ({columns}) WITH ('connector' = 'jdbc', 'url' = '{url}', \
               'username' = 'sluice', 'password' = ''{with});
             CREATE TABLE o (k BIGINT, name STRING) WITH ('connector' = 'blackhole');
             INSERT INTO o SELECT g.k, d.name FROM g JOIN dim FOR SYSTEM_TIME AS OF g.p AS d ON g.k = d.id;"
        )
    };
    let cols = "id BIGINT, name STRING";
    let cases = [
        (
            script(cols, ", 'table-name' = 'nodim'"),
            "relation \"nodim\" does not exist",
        ),
        (
            script(
                "id BIGINT, name STRING, colour STRING",
                ", 'table-name' = 'dim'",
            ),
            "no column colour (it has: id, name, weight",
        ),
        (
            script("id BIGINT, name BIGINT", ", 'table-name' = 'dim'"),
            "column name is text, which the table's BIGINT column does not read",
        ),
        (
            script(cols, ", 'table-name' = 'dim', 'lookup.cache' = 'FULL'"),
            "Invalid option 'lookup.cache' of table 'dim': 'FULL': expected NONE or PARTIAL",
        ),
        (
            script(
                cols,
                ", 'table-name' = 'dim', 'lookup.partial-cache.max-row' = '5'",
            ),
            "Did you mean 'lookup.partial-cache.max-rows'",
        ),
    ];
    for (text, want) in cases {
        let e = refusal(&text);
        assert!(e.contains(want), "expected «{want}» in: {e}");
    }
    // Two key columns: sluice-lookup looks up by one.
    let text = script(cols, ", 'table-name' = 'dim'").replace(
        "ON g.k = d.id;",
        "ON g.k = d.id AND CAST(g.k AS STRING) = d.name;",
    );
    let e = refusal(&text);
    assert!(
        e.contains("a lookup join on 2 key columns of table 'dim': one key column is supported"),
        "{e}"
    );
}

/// An updating query into PostgreSQL by its primary key: a count of counts, whose input
/// retracts (each key's count moves) and whose rows are deleted when no key has that count any
/// more. Through checkpoints and a sink failure, the table equals PostgreSQL's own nested
/// `GROUP BY` over the same input.
#[test]
fn a_changelog_with_deletes_upserted_and_deleted_by_key_equals_postgresqls_group_by() {
    let pg = PostgresCluster::start().unwrap();
    pg.psql(
        "CREATE TABLE counts (cnt bigint PRIMARY KEY, keys bigint NOT NULL);
         INSERT INTO counts VALUES (-1, -1);",
    )
    .unwrap();
    let dir = temp_dir("jdbc-changelog");
    let input = write_input(&dir, MANY);
    let text = format!(
        "{}CREATE TABLE counts (cnt BIGINT, keys BIGINT, PRIMARY KEY (cnt) NOT ENFORCED) \
         WITH ('connector' = 'jdbc', 'url' = '{}', 'table-name' = 'counts', \
           'username' = 'sluice', 'password' = '', 'sink.buffer-flush.max-rows' = '50', \
           'sink.buffer-flush.interval' = '100ms');
         INSERT INTO counts SELECT c, COUNT(*) FROM \
           (SELECT v, COUNT(*) AS c FROM src WHERE k < 30 GROUP BY v) GROUP BY c;",
        source_ddl(&input),
        jdbc_url(&pg)
    );
    let oracle = sorted_lines(
        &pg.psql(&format!(
            "SELECT c, count(*) FROM (SELECT (i * 7) % 101 AS v, count(*) AS c \
               FROM generate_series(0, {}) i WHERE i % 37 < 30 GROUP BY 1) s GROUP BY c",
            MANY - 1
        ))
        .unwrap(),
    );
    assert!(!oracle.is_empty());
    // The stale row (-1) is no count the query has: it stays, as Flink's upsert sink leaves
    // rows it never wrote; the query's rows are compared.
    let table = "SELECT cnt, keys FROM counts WHERE cnt >= 0";
    assert_eq!(run(&text, 2, Some(2_000)), 0);
    assert_eq!(sorted_lines(&pg.psql(table).unwrap()), oracle);
    let _ = std::fs::remove_dir_all(&dir);
}
