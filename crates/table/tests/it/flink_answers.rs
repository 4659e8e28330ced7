//! The official Nexmark SQL, unmodified, gives Flink 2.3's answers byte for byte when both
//! engines read the same events: `tests/fixtures/flink/nexmark-sql/` holds the events Flink's
//! generator produced (`events.csv.gz`) and Flink's csv output of each query over them
//! (`qN.csv[.gz]`, sorted). Sluice runs `ddl_gen.sql` + `ddl_views.sql` + `qN.sql` with one
//! documented textual substitution (`sluice_table::official::runner_script_over`): the
//! `CREATE TABLE datagen` statement of `ddl_gen.sql` becomes a `filesystem` table over
//! `events.csv.gz` (the fixture README's table, event time and watermark included) and a view
//! `datagen` of the generator table's shape; the views and the query are read unchanged, the
//! query's blackhole sink captured as a csv file sink. Its sorted lines must equal Flink's file.

use std::io::Read;
use std::path::Path;

use sluice_datastream::StreamEnv;
use sluice_table::official::{capture_sinks, events_file_ddl, runner_script_over, runner_vars};
use sluice_table::{QueryOutput, SqlScript};

use crate::support::{queries_dir, temp_dir, ROOT};

/// The queries Flink answered (q12 uses processing time). q13's lookup join reads the suite's
/// side-input file, which `runner_script` writes under `${FLINK_HOME}` as Flink's run had it.
const QUERIES: [&str; 13] = [
    "q0", "q1", "q2", "q3", "q5", "q7", "q8", "q11", "q13", "q14", "q20", "q21", "q22",
];

fn fixtures() -> std::path::PathBuf {
    Path::new(ROOT).join("tests/fixtures/flink/nexmark-sql")
}

/// Flink's sorted lines for `query`, from `qN.csv` or `qN.csv.gz`.
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

/// Sluice's sorted csv lines for the official `query` over the fixture's events.
fn sluice_lines(queries: &Path, query: &str, parallelism: usize) -> Vec<String> {
    let dir = temp_dir(&format!("flink-{query}-p{parallelism}"));
    let ddl = events_file_ddl(&fixtures().join("events.csv.gz"));
    let text = runner_script_over(queries, query, &ddl).unwrap();
    let text = capture_sinks(&text, &dir.join("out")).unwrap();
    // The fixture's generator settings; only NEXMARK_TABLE is read (the views' table).
    let script = SqlScript::prepare(&text, &runner_vars(10_000, 200)).unwrap();
    let jobs = script.jobs();
    assert_eq!(jobs.len(), 1, "{query}");
    let env = StreamEnv::new();
    env.set_parallelism(parallelism);
    let job = jobs[0].build(&env, QueryOutput::Stdout).unwrap();
    env.execute().unwrap();
    assert_eq!(job.errors.count(), 0, "{query}: {:?}", job.errors.first());
    // The events are in event-time order: nothing is late, in Flink or here.
    assert_eq!(job.late.count(), 0, "{query}");
    let mut got = sluice_runtime::sinks::committed_lines(&dir.join("out")).unwrap();
    // Flink's files are `LC_ALL=C sort`ed: byte order, as `str`'s.
    got.sort();
    let _ = std::fs::remove_dir_all(&dir);
    got
}

#[test]
fn the_official_queries_answer_as_flink_did_byte_for_byte() {
    let Some(queries) = queries_dir() else { return };
    let mut verdicts = Vec::new();
    for query in QUERIES {
        let want = flink_lines(query);
        assert!(!want.is_empty(), "{query}");
        for p in [1, 2] {
            let got = sluice_lines(&queries, query, p);
            let verdict = if got == want {
                format!("{query} p={p}: equal, {} rows", got.len())
            } else {
                let first = got
                    .iter()
                    .zip(&want)
                    .find(|(g, w)| g != w)
                    .map(|(g, w)| format!("\n    Sluice: {g}\n    Flink:  {w}"))
                    .unwrap_or_default();
                format!(
                    "{query} p={p}: DIFFERENT, Sluice {} rows, Flink {}{first}",
                    got.len(),
                    want.len()
                )
            };
            eprintln!("{verdict}");
            verdicts.push(verdict);
        }
    }
    let bad: Vec<&String> = verdicts
        .iter()
        .filter(|v| v.contains("DIFFERENT"))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_substitution_replaces_only_the_generator_table() {
    let Some(queries) = queries_dir() else { return };
    let ddl = events_file_ddl(Path::new("/x/events.csv.gz"));
    let text = runner_script_over(&queries, "q5", &ddl).unwrap();
    assert!(!text.contains("'connector' = 'nexmark'"), "{text}");
    assert!(text.contains(&ddl));
    for file in ["ddl_views.sql", "q5.sql"] {
        let original = std::fs::read_to_string(queries.join(file)).unwrap();
        assert!(text.contains(&original), "{file} is read unchanged");
    }
}
