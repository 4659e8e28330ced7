//! Flat scans (`sluice_table::layout`): the official `datagen` table's scan emits the `ROW`
//! fields its queries read as columns of their own where every operator above can be rebound,
//! keeps its `ROW`s where one is read whole (the rows of a query, a view passing one on), and
//! the answers are the same both ways.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use sluice_datastream::StreamEnv;
use sluice_sql::plan::{plan_query, PhysicalPlan};
use sluice_sql::{PlannedStatement, Session};
use sluice_table::demand::scan_demands;
use sluice_table::layout::{choose, Col, ScanLayouts};
use sluice_table::official::runner_script;
use sluice_table::{QueryOutput, SqlJob, SqlScript};

use crate::support::{nexmark_session, nexmark_vars, queries_dir};

fn layouts(plan: &PhysicalPlan) -> ScanLayouts {
    choose(&plan.roots, &scan_demands(&plan.roots), &|_| true)
}

/// Whether the plan's one scan emits `bid` (column 3) flat (`false`: as a ROW).
fn bid_flat(plan: &PhysicalPlan) -> bool {
    let l = layouts(plan);
    assert!(l.layouts.len() <= 1);
    l.layouts
        .values()
        .any(|l| matches!(l.cols[3], Col::Flat(_)))
}

/// `sql`'s plan over the official tables (after `views`, more `CREATE VIEW`s).
fn plan(s: &mut Session, views: &str, sql: &str) -> PhysicalPlan {
    if !views.is_empty() {
        s.execute_script(views, &BTreeMap::new()).unwrap();
    }
    let planned = s.execute_script(sql, &BTreeMap::new()).unwrap();
    let PlannedStatement::Query(q) = &planned[0] else {
        panic!("{planned:?}")
    };
    plan_query(s, q).unwrap()
}

/// The printed rows of `plan`, sorted.
fn rows(s: &Session, plan: &PhysicalPlan) -> Vec<String> {
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let lines = Arc::new(Mutex::new(Vec::new()));
    let job = SqlJob::build_query(&env, s, plan, QueryOutput::Lines(lines.clone())).unwrap();
    env.execute().unwrap();
    assert_eq!(job.errors.count(), 0);
    // Without the printing subtask's `N> ` prefix.
    let mut got: Vec<String> = lines
        .lock()
        .unwrap()
        .iter()
        .map(|l| {
            l.split_once("> ")
                .map_or(l.as_str(), |(_, r)| r)
                .to_string()
        })
        .collect();
    got.sort();
    got
}

#[test]
fn the_official_queries_scan_flat_rows() {
    let Some(dir) = queries_dir() else { return };
    let text = runner_script(&dir, "q0").unwrap();
    let script = SqlScript::prepare(&text, &nexmark_vars(1000, 10_000)).unwrap();
    let l = layouts(&script.jobs()[0].plan);
    assert_eq!(l.layouts.len(), 1, "the datagen scan is flat");
    let (key, layout) = l.layouts.iter().next().unwrap();
    // [event_type, person.dateTime, auction.dateTime, bid.auction, bidder, price, dateTime,
    // extra] (channel and url unread).
    let none = None;
    assert_eq!(
        layout.cols,
        [
            Col::At(0),
            Col::Flat(vec![none, none, none, none, none, none, Some(1), none]),
            Col::Flat(vec![
                none,
                none,
                none,
                none,
                none,
                Some(2),
                none,
                none,
                none,
                none
            ]),
            Col::Flat(vec![
                Some(3),
                Some(4),
                Some(5),
                none,
                none,
                Some(6),
                Some(7)
            ]),
        ]
    );
    assert_eq!(layout.slots[5].0, "bid.price");
    assert_eq!(l.widths[key], 8);
    // The official queries reading the events once are flat; those that reuse the scan
    // (joins of two views, q7's bids joined with their own maximum) keep their ROWs.
    for (q, flat) in [
        ("q1", true),
        ("q2", true),
        ("q7", false),
        ("q22", true),
        ("q3", false),
        ("q5", false),
        ("q8", false),
    ] {
        let text = runner_script(&dir, q).unwrap();
        let script = SqlScript::prepare(&text, &nexmark_vars(1000, 10_000)).unwrap();
        assert_eq!(bid_flat(&script.jobs()[0].plan), flat, "{q}");
    }
}

#[test]
fn a_row_read_whole_keeps_its_row_and_the_answers_are_the_same_both_ways() {
    let Some(dir) = queries_dir() else { return };
    let mut s = nexmark_session(&dir, 3_000, 10_000);
    let views = "CREATE VIEW bids_whole AS SELECT event_type, bid, `dateTime` FROM datagen;";

    // The query's rows hold the ROW: built as it is.
    let whole = plan(
        &mut s,
        views,
        "SELECT bid FROM datagen WHERE event_type = 2",
    );
    assert!(!bid_flat(&whole));
    // Through a view that passes the ROW on, read whole above it.
    let through = plan(
        &mut s,
        "",
        "SELECT bid FROM bids_whole WHERE event_type = 2",
    );
    assert!(!bid_flat(&through));
    // Read whole in a condition (`IS NOT NULL`) besides its fields: a ROW.
    let cond = plan(
        &mut s,
        "",
        "SELECT bid.auction, bid.price, bid.extra, `dateTime` FROM datagen \
         WHERE event_type = 2 AND bid IS NOT NULL",
    );
    assert!(!bid_flat(&cond));
    // The same fields read by field only: flat, directly and through the view.
    let flat = plan(
        &mut s,
        "",
        "SELECT bid.auction, bid.price, bid.extra, `dateTime` FROM datagen WHERE event_type = 2",
    );
    assert!(bid_flat(&flat));
    let flat_view = plan(
        &mut s,
        "",
        "SELECT bid.auction, bid.price, bid.extra, `dateTime` FROM bids_whole \
         WHERE event_type = 2",
    );
    assert!(bid_flat(&flat_view));

    let expected = rows(&s, &cond);
    assert_eq!(expected.len(), 3_000 * 46 / 50, "{:?}", &expected[..3]);
    assert_eq!(rows(&s, &flat), expected);
    assert_eq!(rows(&s, &flat_view), expected);
    // The whole ROW's fields are the flat columns' values.
    let mut from_rows: Vec<String> = rows(&s, &whole)
        .iter()
        .map(|l| {
            // +I[+I[auction, bidder, price, channel, url, dateTime, extra]]
            let inner = l.trim_start_matches("+I[+I[").trim_end_matches("]]");
            let f: Vec<&str> = inner.splitn(7, ", ").collect();
            format!("+I[{}, {}, {}, {}]", f[0], f[2], f[6], f[5])
        })
        .collect();
    from_rows.sort();
    assert_eq!(from_rows, expected);
}
