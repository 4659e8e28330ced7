//! The binder on the query forms the official queries do not all use: WITH, views over views,
//! `t.*`, derived names, UNION ALL, subqueries, PROCTIME(), lookup joins, statement sets.

use std::collections::BTreeMap;

use sluice_sql::plan::{plan_query, plan_statement_set, PhysicalOp};
use sluice_sql::{PlannedStatement, Session, TimestampKind};

const DDL: &str = "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, \
    `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) \
    WITH ('connector' = 'datagen');\n\
    CREATE TABLE dim (k BIGINT, v STRING) WITH ('connector' = 'jdbc');\n\
    CREATE TABLE out1 (a BIGINT) WITH ('connector' = 'blackhole');\n\
    CREATE TABLE out2 (a BIGINT) WITH ('connector' = 'blackhole');\n";

fn session(extra: &str) -> (Session, Vec<PlannedStatement>) {
    let mut s = Session::new();
    let out = s
        .execute_script(&format!("{DDL}{extra}"), &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{e}"));
    (s, out)
}

/// The output (names, time kinds) of the last SELECT of the script.
fn columns(extra: &str) -> Vec<(String, TimestampKind)> {
    let (s, mut out) = session(extra);
    let Some(PlannedStatement::Query(q)) = out.pop() else {
        panic!("no query")
    };
    let plan = plan_query(&s, &q).unwrap_or_else(|e| panic!("{extra}: {e}"));
    plan.logical[0]
        .schema
        .iter()
        .map(|f| (f.name.clone(), f.ty.time_attribute()))
        .collect()
}

fn names(cols: &[(String, TimestampKind)]) -> Vec<&str> {
    cols.iter().map(|c| c.0.as_str()).collect()
}

#[test]
fn with_queries_views_and_subqueries_resolve() {
    let cols = columns(
        "CREATE VIEW v1 AS SELECT auction, price, `dateTime` FROM bid WHERE price > 1;\n\
         CREATE VIEW v2 AS SELECT * FROM v1;\n\
         WITH w AS (SELECT auction AS a, `dateTime` FROM v2) SELECT s.a, s.`dateTime` FROM (SELECT * FROM w) AS s",
    );
    assert_eq!(names(&cols), ["a", "dateTime"]);
    assert_eq!(
        cols[1].1,
        TimestampKind::Rowtime,
        "a rowtime stays one through projections"
    );
}

#[test]
fn stars_derived_names_and_computed_time() {
    let cols = columns(
        "SELECT b.*, price * 2, `dateTime` + INTERVAL '1' SECOND, PROCTIME() AS pt FROM bid AS b",
    );
    assert_eq!(
        names(&cols),
        ["auction", "bidder", "price", "channel", "dateTime", "EXPR$1", "EXPR$2", "pt"]
    );
    assert_eq!(cols[4].1, TimestampKind::Rowtime);
    assert_eq!(
        cols[6].1,
        TimestampKind::Regular,
        "computing with a rowtime makes it regular"
    );
    assert_eq!(
        cols[7].1,
        TimestampKind::Proctime,
        "PROCTIME() is a proctime attribute"
    );
}

#[test]
fn union_all_keeps_the_left_names() {
    let cols = columns("SELECT auction AS x FROM bid UNION ALL SELECT bidder FROM bid");
    assert_eq!(names(&cols), ["x"]);
}

#[test]
fn a_lookup_join_reads_the_table_by_its_keys() {
    let (s, mut out) = session(
        "SELECT b.auction, d.v FROM (SELECT *, PROCTIME() AS pt FROM bid) AS b \
         JOIN dim FOR SYSTEM_TIME AS OF b.pt AS d ON MOD(b.auction, 10) = d.k",
    );
    let Some(PlannedStatement::Query(q)) = out.pop() else {
        panic!()
    };
    let plan = plan_query(&s, &q).expect("plans");
    let text = sluice_sql::plan::explain_plan(&plan);
    assert!(
        text.contains("LookupJoin(table=[default_catalog.default_database.dim], joinType=[InnerJoin], lookup=[k=$f"),
        "{text}"
    );
    assert!(
        text.contains("CAST(MOD(auction, 10) AS BIGINT) AS $f"),
        "{text}"
    );
}

#[test]
fn a_statement_set_plans_one_sink_per_insert() {
    let (s, mut out) = session(
        "BEGIN STATEMENT SET;\nINSERT INTO out1 SELECT auction FROM bid;\nINSERT INTO out2 SELECT bidder FROM bid;\nEND",
    );
    let Some(PlannedStatement::StatementSet(set)) = out.pop() else {
        panic!()
    };
    let plan = plan_statement_set(&s, &set).expect("plans");
    assert_eq!(plan.roots.len(), 2);
    assert!(plan
        .roots
        .iter()
        .all(|r| matches!(r.op, PhysicalOp::Sink(_))));
    let ids = sluice_sql::plan::operator_uids(&plan.roots);
    assert_eq!(ids.len(), 8, "{ids:?}");
    assert_eq!(ids[0], "4_sink");
    assert_eq!(ids[4], "8_sink", "ids continue across the set's sinks");
    let ops = plan.operators();
    assert_eq!(ops[0].0, "4_sink");
    assert_eq!(ops[1].1, "Calc(select=[auction])");
    assert!(
        ops[3]
            .1
            .starts_with("TableSourceScan(table=[[default_catalog, default_database, bid]]"),
        "{ops:?}"
    );
}
