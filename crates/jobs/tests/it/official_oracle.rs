//! The DuckDB oracle of `--verify` is right before it judges Sluice: each of our DuckDB
//! translations (crates/jobs/oracle/duckdb/qN.sql), run over the events Flink's generator
//! produced (tests/fixtures/flink/nexmark-sql/events.csv.gz), gives Flink 2.3's answer to the
//! official query over them (qN.csv[.gz]), compared by value; and q13's translation joins every
//! bid with its side-input row.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_jobs::nexmark_sql::{compare, duckdb, OfficialQuery};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn fixtures() -> PathBuf {
    Path::new(ROOT).join("tests/fixtures/flink/nexmark-sql")
}

/// The Python with DuckDB: `SLUICE_PYTHON` (set by scripts/test.sh) or the venv it creates;
/// missing under CI=true fails the test.
fn python() -> Option<PathBuf> {
    let py = std::env::var_os("SLUICE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("{ROOT}/target/venv-oracle/bin/python")));
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

fn work_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-oracle-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn flink_lines(query: &str) -> Vec<String> {
    let plain = fixtures().join(format!("{query}.csv"));
    let text = if plain.is_file() {
        std::fs::read_to_string(&plain).unwrap()
    } else {
        let gz = std::fs::File::open(fixtures().join(format!("{query}.csv.gz"))).unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_string(&mut text)
            .unwrap();
        text
    };
    text.lines().map(str::to_string).collect()
}

#[test]
fn duckdb_translations_give_flinks_answers_over_flinks_events() {
    let Some(queries) = sluice_testkit::nexmark_queries(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let Some(py) = python() else { return };
    let work = work_dir("flink");
    let events = fixtures().join("events.csv.gz");
    for q in [
        "q0", "q1", "q2", "q3", "q5", "q7", "q8", "q11", "q14", "q20", "q21", "q22",
    ] {
        // The sink's column types, from the official query's plan.
        let types = OfficialQuery::prepare(&queries, q, 10_000, 200, false)
            .unwrap()
            .sink_types();
        let mut flink: Vec<Vec<String>> = flink_lines(q)
            .iter()
            .map(|l| compare::sluice_row(l, &types).unwrap())
            .collect();
        let mut ours: Vec<Vec<String>> = duckdb::answer(&py, q, &events, None, &work)
            .unwrap()
            .iter()
            .map(|l| compare::duckdb_row(l, &types).unwrap())
            .collect();
        flink.sort();
        ours.sort();
        assert!(!flink.is_empty(), "{q}");
        assert_eq!(compare::first_difference(&ours, &flink), None, "{q}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn q13s_translation_joins_each_bid_with_its_side_input_row() {
    let Some(py) = python() else { return };
    let work = work_dir("q13");
    let side = work.join("side_input.csv");
    let text: String = (0..10_000).map(|k| format!("{k},v{k}\n")).collect();
    std::fs::write(&side, text).unwrap();
    let events = fixtures().join("events.csv.gz");
    let rows = duckdb::answer(&py, "q13", &events, Some(&side), &work).unwrap();
    assert_eq!(rows.len(), 9_200, "every bid has its row");
    for r in &rows {
        let v: serde_json::Value = serde_json::from_str(r).unwrap();
        let auction = v[0].as_i64().unwrap();
        assert_eq!(v[4].as_str().unwrap(), format!("v{}", auction % 10_000));
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// q11's sessions do not depend on the order of bids with equal timestamps: a bidder's bids
/// within 10 s of each other are one session however DuckDB orders ties (numbering sessions
/// with a ROWS frame split a session where the tie holding the session's start sorted late).
#[test]
fn q11s_translation_keeps_tied_bids_in_one_session() {
    let Some(py) = python() else { return };
    let work = work_dir("q11-ties");
    let events = work.join("events.csv");
    // 100 bidders, 3 000 bids each within 3 ms: every timestamp tied ~1 000 times. Long rows,
    // as the generator's, so that DuckDB reads the file in parallel and ties come in any order.
    let extra = "x".repeat(200);
    let mut text = String::new();
    for i in 0..300_000u64 {
        let (bidder, ms) = (i % 100, i % 3);
        text.push_str(&format!(
            "2,,,,,,,,,,,,,,,,,,,{i},{bidder},1,c,u,\"2023-11-14 22:13:20.00{ms}\",{extra}\n"
        ));
    }
    std::fs::write(&events, text).unwrap();
    for _ in 0..3 {
        let rows = duckdb::answer(&py, "q11", &events, None, &work).unwrap();
        let sessions: Vec<i64> = rows
            .iter()
            .map(|r| {
                serde_json::from_str::<serde_json::Value>(r).unwrap()[1]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            sessions,
            vec![3_000; 100],
            "one session of 3 000 bids per bidder"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}
