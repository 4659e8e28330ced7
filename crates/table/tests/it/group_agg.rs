//! Updating queries (Flink's changelogs) run end to end: unbounded `GROUP BY` with `COUNT`,
//! `SUM`, `MIN`, `MAX`, `AVG`, `COUNT(DISTINCT …)` and `FILTER`, an aggregate over an aggregate
//! (retractions), `HAVING` over updates, `SELECT DISTINCT` and an aggregate over the whole
//! stream, at parallelism 1 and 2. Each changelog, applied (`+I`/`+U` add a row, `-U`/`-D`
//! take one out), equals DuckDB's answer over the same CSV file. The print format of the
//! changes is Flink's (`-U[a, 1]`), and sinks that cannot take updates refuse the query with
//! Flink's words.

use std::collections::BTreeMap;
use std::process::Command;

use sluice_datastream::StreamEnv;
use sluice_sql::plan::plan_query;
use sluice_sql::{PlannedStatement, Session};
use sluice_table::{QueryOutput, SqlJob, SqlScript};

use crate::support::{duckdb, temp_dir};

/// `rows` rows: `k` in 0..37, `v` in 0..1000, `name` one of five words.
fn input_csv(dir: &std::path::Path, rows: u64) -> std::path::PathBuf {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let words = ["ash", "birch", "cedar", "elm", "fir"];
    let mut text = String::new();
    for i in 0..rows {
        let k = (i * 7) % 37;
        let v = (i * 7919) % 1000;
        text.push_str(&format!("{k},{v},{}\n", words[(i % 5) as usize]));
    }
    std::fs::write(input.join("part-0.csv"), text).unwrap();
    input
}

fn ddl(input: &std::path::Path) -> String {
    format!(
        "CREATE TABLE t (k BIGINT, v BIGINT, name STRING) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
        input.display()
    )
}

/// The printed changelog of `query` at parallelism `p`.
pub fn changelog(ddl: &str, query: &str, p: usize) -> Vec<String> {
    let mut s = Session::new();
    let planned = s
        .execute_script(&format!("{ddl}\n{query};"), &BTreeMap::new())
        .unwrap();
    let PlannedStatement::Query(q) = &planned[0] else {
        panic!("{planned:?}")
    };
    let plan = plan_query(&s, q).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(p);
    let lines = std::sync::Arc::default();
    let job = SqlJob::build_query(
        &env,
        &s,
        &plan,
        QueryOutput::Lines(std::sync::Arc::clone(&lines)),
    )
    .unwrap();
    env.execute().unwrap();
    assert_eq!(job.errors.count(), 0);
    let got = lines.lock().unwrap().clone();
    got
}

/// The table a changelog leaves: `+I`/`+U` add a row, `-U`/`-D` take one out (which must be
/// there), sorted.
pub fn applied(changes: &[String]) -> Vec<String> {
    let mut table: BTreeMap<String, i64> = BTreeMap::new();
    for c in changes {
        // At parallelism above 1 each subtask's lines start `N> `.
        let c = c.split_once("> ").map_or(c.as_str(), |(_, rest)| rest);
        let (kind, row) = c.split_at(2);
        let n = table.entry(row.to_string()).or_default();
        match kind {
            "+I" | "+U" => *n += 1,
            "-U" | "-D" => {
                assert!(*n > 0, "{c} retracts a row that is not there");
                *n -= 1;
            }
            other => panic!("kind {other} in {c}"),
        }
    }
    let mut rows = Vec::new();
    for (row, n) in table {
        for _ in 0..n {
            rows.push(row.clone());
        }
    }
    rows
}

/// DuckDB's answer to `sql` over the CSV (columns k, v, name), each row printed as
/// `[a, b, …]`, sorted.
fn duckdb_rows(py: &std::path::Path, input: &std::path::Path, sql: &str) -> Vec<String> {
    let script = format!(
        "import duckdb\n\
         con = duckdb.connect()\n\
         con.execute(\"CREATE TABLE t AS SELECT * FROM read_csv('{}/part-0.csv', header=false, \
           columns={{'k': 'BIGINT', 'v': 'BIGINT', 'name': 'VARCHAR'}})\")\n\
         for r in con.execute(\"\"\"{sql}\"\"\").fetchall():\n\
         \x20   print('[' + ', '.join('null' if x is None else str(x) for x in r) + ']')\n",
        input.display()
    );
    let out = Command::new(py).arg("-c").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

#[test]
fn updating_queries_leave_duckdbs_table_at_p1_and_p2() {
    let Some(py) = duckdb() else { return };
    let dir = temp_dir("group-agg");
    let input = input_csv(&dir, 3000);
    let ddl = ddl(&input);
    // (Sluice's query, DuckDB's: AVG of a BIGINT is a BIGINT in Flink, truncated.)
    let cases = [
        (
            "SELECT k, COUNT(*) AS c, SUM(v) AS s, MIN(v) AS mn, MAX(v) AS mx, AVG(v) AS a, \
               COUNT(DISTINCT v % 10) AS d, COUNT(*) FILTER (WHERE v > 500) AS f, \
               COUNT(DISTINCT name) FILTER (WHERE v < 100) AS fd, COUNT(DISTINCT name) AS dn, \
               COUNT(DISTINCT name) FILTER (WHERE v >= 900) AS fd2 \
             FROM t GROUP BY k",
            "SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v), CAST(TRUNC(AVG(v)) AS BIGINT), \
               COUNT(DISTINCT v % 10), COUNT(*) FILTER (WHERE v > 500), \
               COUNT(DISTINCT name) FILTER (WHERE v < 100), COUNT(DISTINCT name), \
               COUNT(DISTINCT name) FILTER (WHERE v >= 900) FROM t GROUP BY k",
        ),
        (
            // An aggregate over an aggregate: the inner counts are retracted as they grow.
            "SELECT c, COUNT(*) AS n, SUM(k) AS sk, MIN(k) AS mn, MAX(k) AS mk, AVG(k) AS ak, \
               COUNT(DISTINCT k % 5) AS dk, COUNT(DISTINCT k % 5) FILTER (WHERE k > 10) AS fk \
             FROM (SELECT k, COUNT(*) AS c FROM t WHERE v < 300 GROUP BY k) GROUP BY c",
            "SELECT c, COUNT(*), SUM(k), MIN(k), MAX(k), CAST(TRUNC(AVG(k)) AS BIGINT), \
               COUNT(DISTINCT k % 5), COUNT(DISTINCT k % 5) FILTER (WHERE k > 10) \
             FROM (SELECT k, COUNT(*) AS c FROM t WHERE v < 300 GROUP BY k) GROUP BY c",
        ),
        (
            "SELECT k, COUNT(*) AS c FROM t GROUP BY k HAVING COUNT(*) > 81",
            "SELECT k, COUNT(*) FROM t GROUP BY k HAVING COUNT(*) > 81",
        ),
        (
            "SELECT DISTINCT name, v % 3 AS m FROM t",
            "SELECT DISTINCT name, v % 3 FROM t",
        ),
        (
            "SELECT COUNT(*) AS c, SUM(v) AS s, MAX(name) AS mx FROM t",
            "SELECT COUNT(*), SUM(v), MAX(name) FROM t",
        ),
        (
            // A regular join of a changelog (each count retracted as it grows) and a table.
            "SELECT a.k, a.c, t.v FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k) a \
               JOIN t ON a.k = t.k WHERE t.v < 40",
            "SELECT a.k, a.c, t.v FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k) a \
               JOIN t ON a.k = t.k WHERE t.v < 40",
        ),
        (
            // A join of two changelogs.
            "SELECT a.k, a.c, b.s FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k) a \
               JOIN (SELECT k, SUM(v) AS s FROM t WHERE v > 900 GROUP BY k) b ON a.k = b.k",
            "SELECT a.k, a.c, b.s FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k) a \
               JOIN (SELECT k, SUM(v) AS s FROM t WHERE v > 900 GROUP BY k) b ON a.k = b.k",
        ),
    ];
    for (sluice, oracle) in cases {
        let want = duckdb_rows(&py, &input, oracle);
        assert!(!want.is_empty(), "{oracle}");
        for p in [1, 2] {
            let changes = changelog(&ddl, sluice, p);
            assert_eq!(applied(&changes), want, "{sluice} at p={p}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn changes_print_with_flinks_row_kinds() {
    let dir = temp_dir("group-agg-print");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("part-0.csv"), "1,5,a\n1,5,a\n2,7,b\n1,9,a\n").unwrap();
    let ddl = ddl(&input);
    let got = changelog(
        &ddl,
        "SELECT name, COUNT(*) AS c, MAX(v) AS m FROM t GROUP BY name",
        1,
    );
    assert_eq!(
        got,
        [
            "+I[a, 1, 5]",
            "-U[a, 1, 5]",
            "+U[a, 2, 5]",
            "+I[b, 1, 7]",
            "-U[a, 2, 5]",
            "+U[a, 3, 9]",
        ]
    );
    // A row whose aggregates do not change emits nothing (Flink's GroupAggFunction).
    let got = changelog(&ddl, "SELECT name, MAX(v) AS m FROM t GROUP BY name", 1);
    assert_eq!(got, ["+I[a, 5]", "+I[b, 7]", "-U[a, 5]", "+U[a, 9]"]);
    // An aggregate over an aggregate retracts: a key whose rows all left is deleted.
    let got = changelog(
        &ddl,
        "SELECT c, COUNT(*) AS n FROM (SELECT name, COUNT(*) AS c FROM t GROUP BY name) GROUP BY c",
        1,
    );
    assert_eq!(
        got,
        ["+I[1, 1]", "-D[1, 1]", "+I[2, 1]", "+I[1, 1]", "-D[2, 1]", "+I[3, 1]"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sinks_that_cannot_take_updates_refuse_with_flinks_words() {
    let dir = temp_dir("group-agg-refusals");
    let input = input_csv(&dir, 10);
    let out = dir.join("out");
    let e = SqlScript::prepare(
        &format!(
            "{}\nCREATE TABLE o (k BIGINT, c BIGINT) \
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             INSERT INTO o SELECT k, COUNT(*) AS c FROM t GROUP BY k;",
            ddl(&input),
            out.display()
        ),
        &BTreeMap::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "Table sink 'default_catalog.default_database.o' doesn't support consuming update \
             changes which is produced by node GroupAggregate(groupBy=[k], select=[k, COUNT(*) AS c])"
        ) && e.contains("line 3"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mini_batch_splits_aggregates_in_two_phases_with_the_same_answer() {
    let Some(py) = duckdb() else { return };
    let dir = temp_dir("group-agg-mini-batch");
    let input = input_csv(&dir, 3000);
    let mini = format!(
        "SET 'table.exec.mini-batch.enabled' = 'true';\n\
         SET 'table.exec.mini-batch.allow-latency' = '1 s';\n\
         SET 'table.exec.mini-batch.size' = '100';\n{}",
        ddl(&input)
    );
    let query = "SELECT k % 4 AS m, COUNT(*) AS c, SUM(v) AS s, MIN(v) AS mn, MAX(name) AS mx, \
                   AVG(v) AS a, COUNT(*) FILTER (WHERE v > 500) AS f FROM t GROUP BY k % 4";
    let want = duckdb_rows(
        &py,
        &input,
        "SELECT k % 4, COUNT(*), SUM(v), MIN(v), MAX(name), CAST(TRUNC(AVG(v)) AS BIGINT), \
           COUNT(*) FILTER (WHERE v > 500) FROM t GROUP BY k % 4",
    );
    for p in [1, 2] {
        let changes = changelog(&mini, query, p);
        assert_eq!(applied(&changes), want, "p={p}");
        // Bundles of 100 rows: far fewer changes than rows.
        assert!(changes.len() < 3000 / 10, "{} changes", changes.len());
    }
    // The plan is Flink's two phases under a MiniBatchAssigner.
    let mut s = Session::new();
    let planned = s
        .execute_script(&format!("{mini}\nEXPLAIN {query};"), &BTreeMap::new())
        .unwrap();
    let PlannedStatement::Explain(e) = planned.last().unwrap() else {
        panic!()
    };
    let text = sluice_sql::plan::explain(&s, e).unwrap();
    for node in [
        "GlobalGroupAggregate(groupBy=[m], select=[m, COUNT(count1$0) AS c, SUM(sum$1) AS s, MIN(min$2) AS mn, MAX(max$3) AS mx, AVG((sum$4, count$5)) AS a, COUNT(count1$6) AS f])",
        "LocalGroupAggregate(groupBy=[m], select=[m, COUNT(*) AS count1$0, SUM(v) AS sum$1, MIN(v) AS min$2, MAX(name) AS max$3, AVG(v) AS (sum$4, count$5), COUNT(*) FILTER $f3 AS count1$6])",
        "MiniBatchAssigner(interval=[1000ms], mode=[ProcTime])",
    ] {
        assert!(text.contains(node), "{node}\n{text}");
    }
    // Mini-batch without its size is refused, naming the key.
    let e = SqlScript::prepare(
        &format!(
            "SET 'table.exec.mini-batch.enabled' = 'true';\n\
             SET 'table.exec.mini-batch.allow-latency' = '1 s';\n{}\n\
             CREATE TABLE o (k BIGINT, c BIGINT) WITH ('connector' = 'blackhole');\n\
             INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k;",
            ddl(&input)
        ),
        &BTreeMap::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("'table.exec.mini-batch.size' must be greater than 0"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn state_ttl_forgets_a_key_and_hints_set_it_per_aggregation() {
    use sluice_sql::{Change, Row, Value};
    use sluice_table::group_agg::{group_aggregate, GroupAggCall, GroupAggSpec};
    // Rows of key 1; the second arrives after the first one's state expired (processing
    // time passes 300 ms, the TTL is 100 ms), the third right after the second.
    let env = StreamEnv::new();
    env.set_parallelism(1);
    // Each row shipped at once, so that the first reaches the aggregate before the pause.
    env.set_buffer_timeout(std::time::Duration::ZERO);
    let rows = env.from_iter((0..3).map(|i| {
        if i == 1 {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        Row(vec![Value::Int(1), Value::Int(i)])
    }));
    let spec = GroupAggSpec {
        keys: vec![0],
        aggs: vec![GroupAggCall {
            call: crate::rows::agg("COUNT", &[]),
            args: vec![],
            filter: None,
        }],
        update_before: true,
        state_ttl: Some(std::time::Duration::from_millis(100)),
    };
    let out = group_aggregate(&rows, &spec, &sluice_table::OperatorIds::new("g", "g"))
        .unwrap()
        .collect();
    env.execute().unwrap();
    let got: Vec<String> = out
        .handle
        .take()
        .iter()
        .map(|c: &Change| format!("{}{:?}", c.kind, c.row.0))
        .collect();
    assert_eq!(
        got,
        [
            "+I[Int(1), Int(1)]",
            "+I[Int(1), Int(1)]",
            "-U[Int(1), Int(1)]",
            "+U[Int(1), Int(2)]"
        ]
    );

    // The hint: its key names the FROM's table or alias; other hints are refused by name.
    let dir = temp_dir("group-agg-hints");
    let input = input_csv(&dir, 10);
    let plan = |q: &str| {
        let mut s = Session::new();
        let planned = s
            .execute_script(&format!("{}\n{q};", ddl(&input)), &BTreeMap::new())
            .unwrap();
        let PlannedStatement::Query(q) = &planned[0] else {
            panic!()
        };
        plan_query(&s, q).map(|_| ())
    };
    plan("SELECT /*+ STATE_TTL('t' = '1d') */ k, COUNT(*) FROM t GROUP BY k").unwrap();
    plan("SELECT /*+ STATE_TTL('x' = '1d') */ k, COUNT(*) FROM t AS x GROUP BY k").unwrap();
    let e = plan("SELECT /*+ STATE_TTL('u' = '1d') */ k, COUNT(*) FROM t GROUP BY k")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot match the name of input tables") && e.contains("`u`"),
        "{e}"
    );
    let e = plan("SELECT /*+ BROADCAST('t' = 'x') */ k FROM t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("the query hint BROADCAST"), "{e}");
    // A table hint (dynamic options) is refused where it is written, not skipped.
    let mut s = Session::new();
    let e = s
        .execute_script(
            &format!(
                "{}
SELECT k FROM t /*+ OPTIONS('path' = '/x') */;",
                ddl(&input)
            ),
            &BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a hint after a table name") && e.contains("line 2"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_distinct_split_option_is_refused_where_it_would_change_the_plan() {
    let dir = temp_dir("group-agg-split");
    let input = input_csv(&dir, 10);
    let script = |q: &str| {
        format!(
            "SET 'table.optimizer.distinct-agg.split.enabled' = 'true';\n{}\n\
             CREATE TABLE o (k BIGINT, c BIGINT) WITH ('connector' = 'blackhole');\n{q};",
            ddl(&input)
        )
    };
    let e = SqlScript::prepare(
        &script("INSERT INTO o SELECT k, COUNT(DISTINCT v) FROM t GROUP BY k"),
        &BTreeMap::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("distinct-agg.split.enabled") && e.contains("line 4"),
        "{e}"
    );
    // Without a DISTINCT aggregate the option changes nothing in Flink either.
    SqlScript::prepare(
        &script("INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k"),
        &BTreeMap::new(),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
