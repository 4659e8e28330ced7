//! Top-N (`ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)` filtered on its number) and
//! deduplication (the same by a time attribute, `= 1`) run end to end at parallelism 1 and 2:
//! each changelog, applied, equals DuckDB's answer (`QUALIFY`) over the same CSV file. The
//! order keys are unique within a partition, so the answer has no ties to break.

use std::collections::BTreeMap;
use std::process::Command;

use sluice_sql::plan::explain;
use sluice_sql::{PlannedStatement, Session};

use crate::group_agg::{applied, changelog};
use crate::support::{duckdb, temp_dir};

/// `rows` rows: `k` in 0..13, `v` unique, `ts` unique per row (seconds from an epoch).
fn input(dir: &std::path::Path, rows: u64) -> (std::path::PathBuf, String) {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut text = String::new();
    for i in 0..rows {
        let k = i % 13;
        let v = (i * 7919) % 100_003;
        // Out of order within a key, but unique: the permutation of i by 7919.
        let s = (i * 7919) % 100_003;
        text.push_str(&format!(
            "{k},{v},2024-01-01 {:02}:{:02}:{:02}\n",
            s / 3600 % 24,
            s / 60 % 60,
            s % 60
        ));
    }
    std::fs::write(input.join("part-0.csv"), text).unwrap();
    let ddl = format!(
        "CREATE TABLE t (k BIGINT, v BIGINT, ts TIMESTAMP(3), \
           WATERMARK FOR ts AS ts - INTERVAL '1' DAY) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
        input.display()
    );
    (input, ddl)
}

/// DuckDB's rows printed as Flink prints them (a `TIMESTAMP` as Java's `LocalDateTime`: no
/// seconds when they are zero).
fn duckdb_rows(py: &std::path::Path, input: &std::path::Path, sql: &str) -> Vec<String> {
    let script = format!(
        "import duckdb\n\
         con = duckdb.connect()\n\
         con.execute(\"CREATE TABLE t AS SELECT * FROM read_csv('{}/part-0.csv', header=false, \
           columns={{'k': 'BIGINT', 'v': 'BIGINT', 'ts': 'TIMESTAMP'}})\")\n\
         for r in con.execute(\"\"\"{sql}\"\"\").fetchall():\n\
         \x20   print('[' + ', '.join('null' if x is None else (x.strftime('%Y-%m-%dT%H:%M' if x.second == 0 else '%Y-%m-%dT%H:%M:%S') if hasattr(x, 'strftime') else str(x)) for x in r) + ']')\n",
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
fn top_n_and_deduplication_leave_duckdbs_table() {
    let Some(py) = duckdb() else { return };
    let dir = temp_dir("rank");
    let (input, ddl) = input(&dir, 2000);
    let cases = [
        (
            "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) WHERE rn <= 3",
            "SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t QUALIFY rn <= 3",
        ),
        (
            "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn FROM t) WHERE rn <= 2",
            "SELECT k, v FROM t QUALIFY row_number() OVER (PARTITION BY k ORDER BY v) <= 2",
        ),
        (
            "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) WHERE rn >= 2 AND rn <= 4",
            "SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t QUALIFY rn BETWEEN 2 AND 4",
        ),
        (
            // A Top-N over an aggregate: its input retracts.
            "SELECT p, k, s, rn FROM (SELECT p, k, s, ROW_NUMBER() OVER (PARTITION BY p ORDER BY s DESC) AS rn \
               FROM (SELECT k % 3 AS p, k, SUM(v) AS s FROM t GROUP BY k % 3, k)) WHERE rn <= 2",
            "SELECT p, k, s, row_number() OVER (PARTITION BY p ORDER BY s DESC) AS rn \
               FROM (SELECT k % 3 AS p, k, SUM(v) AS s FROM t GROUP BY k % 3, k) QUALIFY rn <= 2",
        ),
        (
            // Deduplication, last row by event time.
            "SELECT k, v, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM t) WHERE rn = 1",
            "SELECT k, v, ts FROM t QUALIFY row_number() OVER (PARTITION BY k ORDER BY ts DESC) = 1",
        ),
        (
            // Deduplication, first row by event time.
            "SELECT k, v, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts ASC) AS rn FROM t) WHERE rn <= 1",
            "SELECT k, v, ts FROM t QUALIFY row_number() OVER (PARTITION BY k ORDER BY ts) = 1",
        ),
    ];
    for (sluice, oracle) in cases {
        let want = duckdb_rows(&py, &input, oracle);
        assert!(!want.is_empty(), "{oracle}");
        for p in [1, 2] {
            let got = applied(&changelog(&ddl, sluice, p));
            assert_eq!(got, want, "{sluice} at p={p}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn explained(ddl: &str, query: &str) -> String {
    let mut s = Session::new();
    let planned = s
        .execute_script(&format!("{ddl}\nEXPLAIN {query};"), &BTreeMap::new())
        .unwrap();
    let PlannedStatement::Explain(e) = &planned[0] else {
        panic!("{planned:?}")
    };
    explain(&s, e).unwrap()
}

#[test]
fn ranks_plan_as_flinks_rank_and_deduplicate() {
    let dir = temp_dir("rank-plan");
    let (_, ddl) = input(&dir, 1);
    let text = explained(
        &ddl,
        "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) WHERE rn <= 3",
    );
    assert!(
        text.contains("Rank(strategy=[AppendFastStrategy], rankType=[ROW_NUMBER], rankRange=[rankStart=1, rankEnd=3], partitionBy=[k], orderBy=[v DESC], select=[k, v, w0$o0])"),
        "{text}"
    );
    let text = explained(
        &ddl,
        "SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM t) WHERE rn = 1",
    );
    assert!(
        text.contains(
            "Deduplicate(keep=[LastRow], key=[k], order=[ROWTIME], outputInsertOnly=[false])"
        ),
        "{text}"
    );
    // No filter on the number: an unbounded rank, refused.
    let mut s = Session::new();
    let planned = s
        .execute_script(
            &format!(
                "{ddl}\nSELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn FROM t;"
            ),
            &BTreeMap::new(),
        )
        .unwrap();
    let PlannedStatement::Query(q) = &planned[0] else {
        panic!()
    };
    let e = sluice_sql::plan::plan_query(&s, q).unwrap_err().to_string();
    assert!(e.contains("unbounded rank") && e.contains("line 2"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
