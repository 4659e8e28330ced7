//! Planned SQL run end to end through [`SqlJob`]: a filesystem csv source with a computed
//! column and a watermark, a Calc and a filesystem csv sink; the official q2 through the
//! planner equals the hand-assembled job's answer (q2_oracle checks that one against DuckDB);
//! operators carry Flink's names and uids; the official q5 (two-phase and cascaded window
//! aggregates, a window join) and q20 (a regular join) run through the planner and equal plain
//! loops over the generator's events; nodes that do not run yet are refused by name.

use std::collections::BTreeMap;

use sluice_datastream::StreamEnv;
use sluice_nexmark::{Event, GeneratorConfig, NexmarkGenerator};
use sluice_sql::plan::{plan_insert, plan_query};
use sluice_sql::{PlannedStatement, Session};
use sluice_table::official::{capture_sinks, runner_script, runner_vars};
use sluice_table::{QueryOutput, SqlJob, SqlScript};

use crate::q5_windows::hot_auctions;
use crate::support::{nexmark_session, queries_dir, temp_dir};

/// Runs `script`'s statements against a fresh session; returns it and what is left to plan.
fn session(script: &str) -> (Session, Vec<PlannedStatement>) {
    let mut s = Session::new();
    let planned = s.execute_script(script, &BTreeMap::new()).unwrap();
    (s, planned)
}

fn run_insert(s: &Session, stmt: &PlannedStatement, p: usize) -> (StreamEnv, SqlJob) {
    let PlannedStatement::Insert(i) = stmt else {
        panic!("{stmt:?}")
    };
    let plan = plan_insert(s, i).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(p);
    let job = SqlJob::build(&env, s, &plan).unwrap();
    (env, job)
}

#[test]
fn csv_scan_calc_and_sink_run_with_flinks_names() {
    let dir = temp_dir("translate");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("part-0.csv"),
        "1,apple,2024-01-01 00:00:01\n2,pear,2024-01-01 00:00:02\n3,fig,2024-01-01 00:00:03\n4,kiwi,2024-01-01 00:00:04\n",
    )
    .unwrap();
    let out = dir.join("out");
    let script = format!(
        "CREATE TABLE fruit (id BIGINT, name STRING, ts TIMESTAMP(3), twice AS id * 2, \
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         CREATE TABLE out (id BIGINT, label STRING, twice BIGINT) \
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         INSERT INTO out SELECT id, UPPER(name), twice FROM fruit WHERE MOD(id, 2) = 0;",
        input.display(),
        out.display()
    );
    let (s, planned) = session(&script);
    for p in [1, 2] {
        let _ = std::fs::remove_dir_all(&out);
        let (env, job) = run_insert(&s, &planned[0], p);
        let plan = env.execution_plan().unwrap();
        assert!(
            plan.contains("TableSourceScan(table=[[default_catalog, default_database, fruit]]"),
            "{plan}"
        );
        assert!(plan.contains("WatermarkAssigner(rowtime=[ts]"), "{plan}");
        assert!(plan.contains("Calc(select=["), "{plan}");
        env.execute().unwrap();
        let mut got = sluice_runtime::sinks::committed_lines(&out).unwrap();
        got.sort();
        assert_eq!(got, vec!["2,PEAR,4", "4,KIWI,8"], "p={p}");
        assert_eq!(job.errors.count(), 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_query_prints_flinks_rows_and_union_all_runs() {
    let (s, planned) = session(
        "CREATE TABLE g (n BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3', \
           'fields.n.kind' = 'sequence', 'fields.n.start' = '1', 'fields.n.end' = '3');
         SELECT n, n * 10 AS t FROM g WHERE n > 1 UNION ALL SELECT n, 0 FROM g WHERE n = 1;",
    );
    let PlannedStatement::Query(q) = &planned[0] else {
        panic!("{planned:?}")
    };
    let plan = plan_query(&s, q).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let lines = std::sync::Arc::default();
    SqlJob::build_query(
        &env,
        &s,
        &plan,
        QueryOutput::Lines(std::sync::Arc::clone(&lines)),
    )
    .unwrap();
    env.execute().unwrap();
    let mut got = lines.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, vec!["+I[1, 0]", "+I[2, 20]", "+I[3, 30]"]);
}

#[test]
fn a_window_table_function_without_aggregate_is_refused_by_flinks_name() {
    let (s, planned) = session(
        "CREATE TABLE g (n BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) \
           WITH ('connector' = 'datagen', 'number-of-rows' = '3');
         CREATE TABLE o (n BIGINT, w TIMESTAMP(3)) WITH ('connector' = 'blackhole');
         INSERT INTO o SELECT n, window_start FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '1' SECOND));",
    );
    let PlannedStatement::Insert(i) = &planned[0] else {
        panic!()
    };
    let plan = plan_insert(&s, i).unwrap();
    let e = SqlJob::build(&StreamEnv::new(), &s, &plan)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("WindowTableFunction"), "{e}");
}

#[test]
fn source_watermark_on_a_connector_table_is_refused_with_flinks_words_before_the_script_runs() {
    let e = SqlScript::prepare(
        "CREATE TABLE g (n BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS SOURCE_WATERMARK()) \
           WITH ('connector' = 'datagen', 'number-of-rows' = '3');
         CREATE TABLE o (n BIGINT) WITH ('connector' = 'blackhole');
         INSERT INTO o SELECT n FROM g;",
        &BTreeMap::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("SOURCE_WATERMARK() is a declarative marker function") && e.contains("line 3"),
        "{e}"
    );
}

/// Runs the official `query` (its blackhole sink captured as csv) at parallelism `p`; returns
/// the captured lines and the job.
fn run_official(
    queries: &std::path::Path,
    query: &str,
    events: u64,
    tps: u64,
    p: usize,
) -> (Vec<String>, SqlJob) {
    let dir = temp_dir(query);
    let text = runner_script(queries, query).unwrap();
    let text = capture_sinks(&text, &dir).unwrap();
    let script = SqlScript::prepare(&text, &runner_vars(events, tps)).unwrap();
    let jobs = script.jobs();
    let env = StreamEnv::new();
    env.set_parallelism(p);
    let job = jobs[0].build(&env, QueryOutput::Stdout).unwrap();
    env.execute().unwrap();
    let mut got = sluice_runtime::sinks::committed_lines(&dir).unwrap();
    got.sort();
    let _ = std::fs::remove_dir_all(&dir);
    (got, job)
}

#[test]
fn official_q5_through_the_planner_equals_the_hot_auctions() {
    let Some(queries) = queries_dir() else { return };
    let (events, tps) = (100_000, 10_000);
    let generator = NexmarkGenerator::new(GeneratorConfig {
        events,
        rate: tps,
        ..GeneratorConfig::default()
    })
    .unwrap();
    // The plain loop's answer, which q5_windows checks against DuckDB.
    let mut want: Vec<String> = hot_auctions(&generator, 10_000, 2_000)
        .iter()
        .map(|(a, n)| format!("{a},{n}"))
        .collect();
    want.sort();
    for p in [1, 2] {
        let (got, job) = run_official(&queries, "q5", events, tps, p);
        assert_eq!(got, want, "p={p}");
        assert_eq!(job.errors.count(), 0);
        assert_eq!(job.late.count(), 0);
    }
}

#[test]
fn official_q20_through_the_planner_equals_a_plain_join() {
    let Some(queries) = queries_dir() else { return };
    let (events, tps) = (50_000, 10_000);
    let generator = NexmarkGenerator::new(GeneratorConfig {
        events,
        rate: tps,
        ..GeneratorConfig::default()
    })
    .unwrap();
    let mut category = BTreeMap::new();
    let mut bids = Vec::new();
    for (_, e) in generator.iter() {
        match e {
            Event::Auction(a) => {
                category.insert(a.id, a.category);
            }
            Event::Bid(b) => bids.push((b.auction, b.bidder, b.price)),
            _ => {}
        }
    }
    // auction, bidder, price (the first columns, before any string) of each bid on an
    // auction of category 10.
    let mut want: Vec<String> = bids
        .iter()
        .filter(|b| category.get(&b.0) == Some(&10))
        .map(|(a, b, p)| format!("{a},{b},{p}"))
        .collect();
    want.sort();
    assert!(!want.is_empty());
    let (got, job) = run_official(&queries, "q20", events, tps, 2);
    let mut got: Vec<String> = got
        .iter()
        .map(|l| l.splitn(4, ',').take(3).collect::<Vec<_>>().join(","))
        .collect();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(job.errors.count(), 0);
}

#[test]
fn official_q2_through_the_planner_runs() {
    let Some(queries) = queries_dir() else { return };
    let mut s = nexmark_session(&queries, 100_000, 10_000);
    let dir = temp_dir("q2-plan");
    let text = std::fs::read_to_string(queries.join("q2.sql")).unwrap();
    // The capture: the query's blackhole sink becomes a csv file sink.
    let text = text.replace(
        "'connector' = 'blackhole'",
        &format!(
            "'connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'",
            dir.display()
        ),
    );
    let planned = s.execute_script(&text, &BTreeMap::new()).unwrap();
    let (env, job) = run_insert(&s, &planned[0], 2);
    env.execute().unwrap();
    let got = sluice_runtime::sinks::committed_lines(&dir).unwrap();
    assert!(!got.is_empty());
    assert!(got.iter().all(|l| {
        let a: i64 = l.split(',').next().unwrap().parse().unwrap();
        a % 123 == 0
    }));
    assert_eq!(job.errors.count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_statement_set_shares_its_common_subplan() {
    let dir = temp_dir("reuse");
    let (a, b) = (dir.join("a"), dir.join("b"));
    let script = format!(
        "CREATE TABLE g (n BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10', \
           'fields.n.kind' = 'sequence', 'fields.n.start' = '1', 'fields.n.end' = '10');
         CREATE TABLE a (n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         CREATE TABLE b (n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         BEGIN STATEMENT SET;
         INSERT INTO a SELECT n FROM g;
         INSERT INTO b SELECT n FROM g;
         END;",
        a.display(),
        b.display()
    );
    let (s, planned) = session(&script);
    let PlannedStatement::StatementSet(set) = &planned[0] else {
        panic!("{planned:?}")
    };
    let plan = sluice_sql::plan::plan_statement_set(&s, set).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(1);
    SqlJob::build(&env, &s, &plan).unwrap();
    let graph = env.execution_plan().unwrap();
    assert_eq!(
        graph
            .matches("\"type\" : \"Source: TableSourceScan")
            .count(),
        1,
        "one scan for both sinks: {graph}"
    );
    // Flink's uids per plan node (post-order numbers over both trees); the second tree's scan
    // is the first one's.
    let mut uids: Vec<String> = env
        .stream_nodes()
        .into_iter()
        .filter_map(|n| n.uid)
        .collect();
    uids.sort();
    assert_eq!(uids, vec!["1_source", "2_sink", "4_sink"], "{uids:?}");
    env.execute().unwrap();
    for d in [&a, &b] {
        assert_eq!(sluice_runtime::sinks::committed_lines(d).unwrap().len(), 10);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
