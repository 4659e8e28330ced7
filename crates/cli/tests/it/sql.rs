//! `sluice sql` run as a user would: a script with a filesystem csv source (a computed column
//! and a watermark), a Calc and a filesystem csv sink gives the rows computed here by hand; a
//! bare query prints Flink's `+I[…]` rows; `EXPLAIN` prints the plan; each class of refusal
//! (syntax, unknown name, bad option, unsupported) names its place and exits 2 before any job
//! runs; the official Nexmark queries run from their files and `--verify` against DuckDB (our
//! own translations, crates/jobs/oracle/duckdb) and, where one exists, the hand-written twin;
//! without DuckDB `--verify` fails before running anything, saying how to install it.

use std::path::PathBuf;
use std::process::{Command, Output};

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("sluice runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-sql-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The official queries folder, as crates/table/tests/it finds it (missing under CI=true fails).
fn queries_dir() -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("SLUICE_NEXMARK_QUERIES")
        .map(PathBuf::from)
        .or_else(|| {
            manifest
                .ancestors()
                .map(|a| a.join("shared/nexmark-flink/queries"))
                .find(|d| d.join("ddl_gen.sql").is_file())
        })?;
    if dir.join("ddl_gen.sql").is_file() {
        return Some(dir);
    }
    None
}

fn queries_or_skip() -> Option<PathBuf> {
    let d = queries_dir();
    if d.is_none() {
        let msg = "the official Nexmark queries are missing (set SLUICE_NEXMARK_QUERIES)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("SKIPPED: {msg}");
    }
    d
}

#[test]
fn a_script_runs_its_jobs_in_order() {
    let dir = tmp("script");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    // Rows whose answer is computed below, independently of the engine.
    let rows: Vec<(i64, &str)> = (1..=40)
        .map(|i| (i, ["apple", "pear", "fig"][i as usize % 3]))
        .collect();
    let mut csv = String::new();
    for (i, name) in &rows {
        csv.push_str(&format!("{i},{name},2024-01-01 00:00:{:02}\n", i % 60));
    }
    std::fs::write(input.join("part-0.csv"), csv).unwrap();
    let out = dir.join("out");
    let script = dir.join("job.sql");
    std::fs::write(
        &script,
        "SET 'parallelism.default' = '2';
CREATE TABLE fruit (id BIGINT, name STRING, ts TIMESTAMP(3), twice AS id * 2,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '${IN}', 'format' = 'csv');
CREATE TABLE out (id BIGINT, label STRING, twice BIGINT)
WITH ('connector' = 'filesystem', 'path' = '${OUT}', 'format' = 'csv');
EXPLAIN INSERT INTO out SELECT id, UPPER(name), twice FROM fruit WHERE MOD(id, 3) = 1;
INSERT INTO out SELECT id, UPPER(name), twice FROM fruit WHERE MOD(id, 3) = 1;
SELECT id, name FROM fruit WHERE id > 38;
",
    )
    .unwrap();
    let o = sluice(&[
        "sql",
        "-f",
        script.to_str().unwrap(),
        "-D",
        &format!("IN={}", input.display()),
        "--var",
        &format!("OUT={}", out.display()),
        "--no-progress",
        "--no-rest",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stdout.contains("== Optimized Execution Plan =="),
        "{stdout}"
    );
    assert!(
        stdout.contains("+I[39, apple]") && stdout.contains("+I[40, pear]"),
        "{stdout}"
    );
    // Flink's operator names reach the run summary; SET 'parallelism.default' took effect.
    assert!(
        stderr.contains("Calc(select=[id, UPPER(name) AS EXPR$1, twice]"),
        "{stderr}"
    );
    assert!(stderr.contains("p=2"), "{stderr}");
    let mut got = sluice_runtime::sinks::committed_lines(&out).unwrap();
    got.sort();
    let mut want: Vec<String> = rows
        .iter()
        .filter(|(i, _)| i % 3 == 1)
        .map(|(i, n)| format!("{i},{},{}", n.to_uppercase(), i * 2))
        .collect();
    want.sort();
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a SQL job drops it says at its end: rows behind the watermark (Flink's
/// `numLateRecordsDropped`) and rows whose evaluation failed (dead letters, with the first
/// error); every input row is in the output, or in one of the two counts.
#[test]
fn the_summary_counts_the_rows_dropped_as_late_and_as_dead_letters() {
    let dir = tmp("dropped");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    // 50 000 rows 10 ms apart (50 windows of 10 s), every 1000th with a zero divisor; then 300
    // rows of the first window, long closed: the watermark (checked every 1024 rows, due every
    // millisecond) has passed it many times while the 50 000 went through.
    let (rows, zeros, old) = (50_000u64, 50u64, 300u64);
    let mut csv = String::new();
    let at = |ms: u64| {
        let (s, ms) = (ms / 1000, ms % 1000);
        format!(
            "2024-01-01 {:02}:{:02}:{:02}.{ms:03}",
            s / 3600,
            s / 60 % 60,
            s % 60
        )
    };
    for i in 0..rows {
        let d = u64::from(i % 1000 != 0);
        csv.push_str(&format!("{i},{d},{}\n", at(i * 10)));
    }
    for j in 0..old {
        csv.push_str(&format!("{},1,{}\n", rows + j, at(j)));
    }
    std::fs::write(input.join("part-0.csv"), csv).unwrap();
    let out = dir.join("out");
    let o = sluice(&[
        "sql",
        "-e",
        "SET 'parallelism.default' = '1';
SET 'pipeline.auto-watermark-interval' = '1 ms';
CREATE TABLE readings (id BIGINT, d BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
WITH ('connector' = 'filesystem', 'path' = '${IN}', 'format' = 'csv');
CREATE TABLE per_window (window_start TIMESTAMP(3), n BIGINT, total BIGINT)
WITH ('connector' = 'filesystem', 'path' = '${OUT}', 'format' = 'csv');
INSERT INTO per_window SELECT window_start, COUNT(*), SUM(100 / d)
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;",
        "-D",
        &format!("IN={}", input.display()),
        "-D",
        &format!("OUT={}", out.display()),
        "--no-progress",
        "--no-rest",
    ]);
    let (_, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    let late =
        format!("SQL rows dropped as late (behind the watermark, numLateRecordsDropped): {old}\n");
    assert!(stderr.contains(&late), "{stderr}");
    let dead =
        format!("SQL rows dropped as dead letters (evaluation failed): {zeros}; the first: ");
    let first = stderr
        .lines()
        .find_map(|l| l.strip_prefix(&dead))
        .unwrap_or_else(|| panic!("no dead-letter line in {stderr}"));
    assert!(first.contains("zero"), "{first}");
    // Each window: its 1000 rows but the one with a zero divisor, each adding 100 / 1 (the
    // csv format writes Flink's text: a whole second without its `.000`, quoted for its space).
    let mut got = sluice_runtime::sinks::committed_lines(&out).unwrap();
    got.sort();
    let want: Vec<String> = (0..rows / 1000)
        .map(|k| {
            let start = at(k * 10_000);
            format!("\"{}\",999,99900", start.trim_end_matches(".000"))
        })
        .collect();
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plan_sql_prints_the_job_graph() {
    let o = sluice(&[
        "plan",
        "sql",
        "-e",
        "CREATE TABLE t (a BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '5');
         CREATE TABLE o (a BIGINT) WITH ('connector' = 'blackhole');
         INSERT INTO o SELECT a + 1 FROM t;",
        "--format",
        "text",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stdout.contains("Calc(select=[(a + 1) AS EXPR$0])"),
        "{stdout}"
    );
}

/// Runs `sql` and returns its stderr after checking it was refused with status 2.
fn refused(sql: &str) -> String {
    let o = sluice(&["sql", "-e", sql, "--no-progress", "--no-rest"]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("job started"), "nothing runs: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

const TABLE: &str =
    "CREATE TABLE t (amount BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '5');\n";

#[test]
fn a_syntax_error_names_line_and_column() {
    let e = refused(&format!("{TABLE}SELECT amount FROM t WHER amount > 1;"));
    assert!(e.contains("SQL syntax error at line 2, column"), "{e}");
}

#[test]
fn an_unknown_column_names_the_nearest() {
    let e = refused(&format!("{TABLE}SELECT amout FROM t;"));
    assert!(
        e.contains("Column 'amout' not found at line 2, column 8"),
        "{e}"
    );
    assert!(e.contains("Did you mean 'amount'?"), "{e}");
}

#[test]
fn a_bad_connector_option_is_named_with_the_nearest() {
    let e = refused(
        "CREATE TABLE t (a BIGINT) WITH ('connector' = 'datagen', 'rows-per-secnd' = '5');
SELECT a FROM t;",
    );
    assert!(
        e.contains("Invalid option 'rows-per-secnd' of table 't'"),
        "{e}"
    );
    assert!(
        e.contains("'rows-per-second'") && e.contains("line 1, column 1"),
        "{e}"
    );
}

#[test]
fn an_updating_query_into_an_append_only_sink_is_refused_before_any_job_runs() {
    // The first INSERT is fine; the second writes a changelog into files, which take
    // insertions only: refused with Flink's words, so neither runs.
    let e = refused(&format!(
        "{TABLE}CREATE TABLE o (amount BIGINT) WITH ('connector' = 'blackhole');
CREATE TABLE f (amount BIGINT, c BIGINT) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/f', 'format' = 'csv');
INSERT INTO o SELECT amount FROM t;
INSERT INTO f SELECT amount, COUNT(*) FROM t GROUP BY amount;"
    ));
    assert!(e.contains("at line 5"), "{e}");
    assert!(
        e.contains("Table sink 'default_catalog.default_database.f' doesn't support consuming update changes"),
        "{e}"
    );
}

#[test]
fn a_lone_window_table_function_is_refused_by_its_flink_name_for_now() {
    let e = refused(
        "CREATE TABLE t (a BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen');
CREATE TABLE o (a BIGINT, w TIMESTAMP(3)) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT a, window_start FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND));",
    );
    assert!(
        e.contains("WindowTableFunction") && e.contains("line 3, column 1"),
        "{e}"
    );
}

#[test]
fn nexmark_sql_without_queries_says_where_to_get_them() {
    let o = sluice(&["nexmark", "--query", "q2", "--sql"]);
    let (_, e) = text(&o);
    assert!(!o.status.success());
    assert!(
        e.contains("nexmark-flink/src/main/resources/queries"),
        "{e}"
    );
}

/// The Python with DuckDB for `--verify`: `SLUICE_PYTHON` (scripts/test.sh sets it), else the
/// venv scripts/test.sh makes; missing under CI=true fails the test.
fn duckdb_python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let py = std::env::var_os("SLUICE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/venv-oracle/bin/python"));
    let ok = Command::new(&py)
        .args(["-c", "import duckdb"])
        .status()
        .map_err(|e| format!("{}: {e}", py.display()))
        .and_then(|s| match s.success() {
            true => Ok(py.clone()),
            false => Err(format!("{} cannot import duckdb", py.display())),
        });
    sluice_testkit::require("DuckDB (target/venv-oracle, made by scripts/test.sh)", ok)
}

/// Runs the official `q` with `--verify` over `events` at `rate` events per second of event
/// time and checks it equals DuckDB's answer and, where there is one, its hand-written twin.
fn verify_official(
    queries: &std::path::Path,
    py: &std::path::Path,
    q: &str,
    events: &str,
    rate: &str,
) {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "nexmark",
            "--query",
            q,
            "--sql",
            "--queries",
            queries.to_str().unwrap(),
            "--events",
            events,
            "--rate",
            rate,
            "-p",
            "2",
            "--verify",
            "--no-progress",
        ])
        .env("SLUICE_PYTHON", py)
        .output()
        .expect("sluice runs");
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{q}: {stderr}");
    // q12's processing-time windows: its per-bidder counts and the rows left open at the end.
    let duckdb = match q {
        "q12" => format!(
            "verified: q12 (official SQL) agrees with DuckDB's per-bidder bid counts over the same \
             {events} events"
        ),
        _ => format!(
            "verified: {q} (official SQL) equals DuckDB's answer over the same {events} events"
        ),
    };
    assert!(stdout.contains(&duckdb), "{q}: {stdout}");
    assert!(stdout.contains("rows dropped as late: 0"), "{q}: {stdout}");
    if !["q12", "q20"].contains(&q) {
        assert!(
            stdout.contains(&format!(
                "verified: {q} (official SQL) equals the hand-written {q}"
            )),
            "{q}: {stdout}"
        );
    }
    assert!(!stderr.contains("dead letters"), "{q}: {stderr}");
}

/// Windows, window joins, interval and regular joins: the events span 50 s of event time so
/// that q5's and q7's windows are many (q7's 10 s tumbling windows: 5). q20 has no twin: DuckDB
/// alone.
#[test]
fn official_stateful_queries_verify_against_duckdb_and_their_twins() {
    let Some(queries) = queries_or_skip() else {
        return;
    };
    let Some(py) = duckdb_python() else { return };
    for q in ["q3", "q5", "q7", "q8", "q11", "q20"] {
        verify_official(&queries, &py, q, "50000", "1000");
    }
}

/// q12's windows run on processing time: DuckDB checks its per-bidder totals, after each row's
/// window is checked (no twin).
#[test]
fn official_stateless_queries_verify_against_duckdb_and_their_twins() {
    let Some(queries) = queries_or_skip() else {
        return;
    };
    let Some(py) = duckdb_python() else { return };
    for q in ["q0", "q1", "q2", "q12", "q14", "q21", "q22"] {
        verify_official(&queries, &py, q, "20000", "10000");
    }
}

#[test]
fn verify_without_duckdb_says_how_to_install_it_and_runs_nothing() {
    let Some(queries) = queries_or_skip() else {
        return;
    };
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "nexmark",
            "--query",
            "q2",
            "--sql",
            "--queries",
            queries.to_str().unwrap(),
            "--events",
            "1000",
            "--verify",
            "--no-progress",
        ])
        .env("SLUICE_PYTHON", "/nonexistent/python")
        .output()
        .expect("sluice runs");
    let (stdout, stderr) = text(&o);
    assert!(!o.status.success());
    assert!(stderr.contains("pip install duckdb==2.0.1"), "{stderr}");
    assert!(!stdout.contains("events in"), "no job ran: {stdout}");
}
