//! The planner's refusals, one test per class: each names the construct and its place (and,
//! for an unknown name, the nearest known names).

use std::collections::BTreeMap;

use sluice_sql::plan::{explain, plan_insert, plan_query};
use sluice_sql::{PlannedStatement, Position, Session, SqlError};

const DDL: &str = "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, \
    `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) \
    WITH ('connector' = 'datagen');\n\
    CREATE TABLE person (id BIGINT, name STRING, `dateTime` TIMESTAMP(3)) WITH ('connector' = 'datagen');\n\
    CREATE TABLE out2 (a BIGINT, b BIGINT) WITH ('connector' = 'blackhole');\n";

/// Plans the last statement of `DDL` + `sql` and returns the error.
fn refusal(sql: &str) -> SqlError {
    let mut s = Session::new();
    let mut out = s
        .execute_script(&format!("{DDL}{sql}"), &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let res = match out.pop() {
        Some(PlannedStatement::Insert(i)) => plan_insert(&s, &i).map(|_| ()),
        Some(PlannedStatement::Query(q)) => plan_query(&s, &q).map(|_| ()),
        other => panic!("{other:?}"),
    };
    res.expect_err(sql)
}

fn plans(sql: &str) -> String {
    let mut s = Session::new();
    let mut out = s
        .execute_script(&format!("{DDL}EXPLAIN {sql}"), &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    match out.pop() {
        Some(PlannedStatement::Explain(e)) => {
            sluice_sql::plan::explain(&s, &e).unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
        other => panic!("{other:?}"),
    }
}

/// The line the statement after the 3 DDL lines starts on.
const LINE: u64 = 4;

#[test]
fn an_unknown_table_is_named_with_the_nearest_tables() {
    match refusal("SELECT auction FROM bids") {
        SqlError::UnknownName {
            pos,
            kind,
            name,
            nearest_names,
        } => {
            assert_eq!(kind, "Table");
            assert_eq!(name, "bids");
            assert_eq!(nearest_names, vec!["bid".to_string()]);
            assert_eq!(
                pos,
                Some(Position {
                    line: LINE,
                    column: 21
                })
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn an_unknown_column_is_named_with_the_nearest_columns() {
    match refusal("SELECT pirce FROM bid") {
        SqlError::UnknownName {
            pos,
            kind,
            name,
            nearest_names,
        } => {
            assert_eq!((kind, name.as_str()), ("Column", "pirce"));
            assert_eq!(nearest_names.first().map(String::as_str), Some("price"));
            assert_eq!(
                pos,
                Some(Position {
                    line: LINE,
                    column: 8
                })
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn an_ambiguous_column_is_refused() {
    let e = refusal("SELECT `dateTime` FROM bid JOIN person ON bid.bidder = person.id");
    let text = e.to_string();
    assert!(
        text.contains("dateTime") && text.to_lowercase().contains("ambiguous"),
        "{text}"
    );
    assert!(text.contains(&format!("line {LINE}, column 8")), "{text}");
}

#[test]
fn updating_queries_are_refused_with_the_construct_and_its_place() {
    let cases = [
        (
            "SELECT b.auction FROM bid b LEFT JOIN person p ON b.bidder = p.id",
            "LEFT JOIN",
            39,
        ),
        (
            "SELECT auction FROM bid UNION SELECT id FROM person",
            "UNION without ALL",
            1,
        ),
    ];
    for (sql, what, column) in cases {
        match refusal(sql) {
            SqlError::Unsupported { pos, what: msg } => {
                assert!(msg.contains(what), "{sql}: {msg}");
                assert!(msg.contains("updating queries"), "{sql}: {msg}");
                assert_eq!(pos, Some(Position { line: LINE, column }), "{sql}: {msg}");
            }
            other => panic!("{sql}: {other}"),
        }
    }
}

#[test]
fn unbounded_aggregates_plan_as_flinks_group_aggregate() {
    for (sql, node) in [
        (
            "SELECT auction, COUNT(*) FROM bid GROUP BY auction",
            "GroupAggregate(groupBy=[auction], select=[auction, COUNT(*) AS EXPR$1])",
        ),
        (
            "SELECT DISTINCT auction FROM bid",
            "GroupAggregate(groupBy=[auction], select=[auction])",
        ),
        (
            "SELECT COUNT(*) FROM bid",
            "GroupAggregate(select=[COUNT(*) AS EXPR$0])",
        ),
    ] {
        let text = plans(sql);
        assert!(text.contains(node), "{sql}: {text}");
    }
    // A window aggregate takes insertions only; a lost time attribute is refused first.
    let e = refusal(
        "SELECT COUNT(*) FROM (SELECT auction, MAX(`dateTime`) AS t FROM bid GROUP BY auction) \
         GROUP BY TUMBLE(t, INTERVAL '1' SECOND)",
    );
    assert!(e.to_string().contains("time attribute"), "{e}");
}

#[test]
fn order_by_and_limit_are_refused() {
    for (sql, what) in [
        ("SELECT auction FROM bid ORDER BY `dateTime`", "ORDER BY"),
        ("SELECT auction FROM bid LIMIT 3", "LIMIT"),
    ] {
        match refusal(sql) {
            SqlError::Unsupported { pos, what: msg } => {
                assert!(msg.starts_with(what), "{sql}: {msg}");
                assert_eq!(pos.map(|p| p.line), Some(LINE), "{sql}");
            }
            other => panic!("{sql}: {other}"),
        }
    }
}

#[test]
fn a_window_over_a_plain_timestamp_is_refused() {
    let e = refusal(
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND)) GROUP BY window_start, window_end",
    );
    assert!(
        e.to_string()
            .contains("requires the timecol to be a time attribute"),
        "{e}"
    );
}

/// A legacy group window's time properties that Flink does not give as a time: `*_ROWTIME` of a
/// processing-time window (Flink's own refusal), `*_PROCTIME` of an event-time one (Flink gives
/// NULL) — each refused naming the call's place, before any job runs.
#[test]
fn a_time_property_the_window_cannot_give_is_refused_at_its_place() {
    let clicks =
        "CREATE TABLE clicks (id BIGINT, pt AS PROCTIME()) WITH ('connector' = 'datagen');\n";
    let e = refusal(&format!(
        "{clicks}SELECT id, TUMBLE_ROWTIME(pt, INTERVAL '1' SECOND) FROM clicks GROUP BY id, TUMBLE(pt, INTERVAL '1' SECOND)"
    ));
    match e {
        SqlError::Validation { pos, message } => {
            assert_eq!(
                message,
                "A proctime window cannot provide a rowtime attribute."
            );
            assert_eq!(
                pos,
                Some(Position {
                    line: LINE + 1,
                    column: 12
                })
            );
        }
        other => panic!("{other:?}"),
    }
    let e = refusal(
        "SELECT auction,\n  HOP_PROCTIME(`dateTime`, INTERVAL '1' SECOND, INTERVAL '2' SECOND) AS p FROM bid GROUP BY auction, HOP(`dateTime`, INTERVAL '1' SECOND, INTERVAL '2' SECOND)",
    );
    match e {
        SqlError::Unsupported { pos, what } => {
            assert!(
                what.starts_with("HOP_PROCTIME of an event-time window"),
                "{what}"
            );
            assert!(what.contains("HOP_ROWTIME"), "{what}");
            assert_eq!(
                pos,
                Some(Position {
                    line: LINE + 1,
                    column: 3
                })
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_view_that_refers_to_itself_is_refused() {
    let mut s = Session::new();
    s.execute_script(DDL, &BTreeMap::new()).unwrap();
    // Build the cycle by hand: a view is created once its query's names resolve, so a
    // cycle needs a view dropped and re-created under an older view's name.
    let out = s
        .execute_script(
            "CREATE VIEW v1 AS SELECT auction FROM bid;\nCREATE VIEW v2 AS SELECT auction FROM v1;\nDROP VIEW v1;\nCREATE VIEW v1 AS SELECT auction FROM v2;\nSELECT auction FROM v1",
            &BTreeMap::new(),
        );
    let mut out = out.expect("views");
    let Some(PlannedStatement::Query(q)) = out.pop() else {
        panic!()
    };
    let e = plan_query(&s, &q).expect_err("a cycle");
    assert!(e.to_string().contains("refers to itself"), "{e}");
}

#[test]
fn the_sink_gets_flinks_implicit_casts_and_a_mismatch_is_refused() {
    let text = plans("INSERT INTO out2 SELECT auction, price FROM bid WHERE price > 10");
    assert!(
        text.contains(
            "Sink(table=[default_catalog.default_database.out2], fields=[auction, price])"
        ),
        "{text}"
    );
    let e = refusal("INSERT INTO out2 SELECT auction FROM bid");
    assert!(e.to_string().contains("do not match"), "{e}");
}

#[test]
fn explain_through_the_session_prints_flinks_three_sections() {
    let text = plans(
        "SELECT auction, COUNT(*) AS n, window_start FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end",
    );
    for section in [
        "== Abstract Syntax Tree ==",
        "== Optimized Physical Plan ==",
        "== Optimized Execution Plan ==",
    ] {
        assert!(text.contains(section), "{text}");
    }
    assert!(text.contains("LocalWindowAggregate(groupBy=[auction], window=[TUMBLE(time_col=[dateTime], size=[10 s])], select=[auction, COUNT(*) AS count1$0, slice_end('w$) AS $slice_end])"), "{text}");
    assert!(
        text.contains("Exchange(distribution=[hash[auction]])"),
        "{text}"
    );
    let _ = explain;
}
