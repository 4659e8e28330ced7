//! `GET /jobs/:jid/explain-analyze` on real SQL jobs served by `ServedJob`: the plan of a
//! running Nexmark window aggregation (the official generator's DDL) with nonzero figures,
//! every plan node's operator in a vertex of the job's `/plan`, the figures of a finished job
//! equal to what `/jobs/:jid/vertices/:vid` reports, and 404 for an unknown job and for a job
//! not planned from SQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice::served::ServedJob;
use sluice::StreamEnv;
use sluice_table::{QueryOutput, SqlScript};

use crate::run::get;

/// The official Nexmark generator table (Flink's `ddl_gen.sql`), a blackhole sink and a
/// one-second tumbling count per auction: scan → computed column → watermark → Calc (fused in
/// the source) → local window aggregate → exchange → global window aggregate → sink.
fn script(events: u64) -> String {
    format!(
        "CREATE TABLE datagen (
    event_type int,
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
        state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT,
        reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT,
        category BIGINT, extra VARCHAR>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
        `dateTime` TIMESTAMP(3), extra VARCHAR>,
    `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime`
        WHEN event_type = 1 THEN auction.`dateTime` ELSE bid.`dateTime` END,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'first-event.rate' = '100000',
    'next-event.rate' = '100000',
    'events.num' = '{events}'
);
CREATE TABLE counts (auction BIGINT, num BIGINT, window_end TIMESTAMP(3))
    WITH ('connector' = 'blackhole');
INSERT INTO counts
SELECT bid.auction, COUNT(*), window_end
FROM TABLE(TUMBLE(TABLE datagen, DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND))
WHERE event_type = 2
GROUP BY bid.auction, window_start, window_end;"
    )
}

/// The SQL job of [`script`] at parallelism 2, served.
fn served_sql(events: u64) -> ServedJob {
    let script = SqlScript::prepare(&script(events), &BTreeMap::new()).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(2);
    script.jobs()[0].build(&env, QueryOutput::Stdout).unwrap();
    assert!(
        env.query_plan().is_some(),
        "the SQL job hands over its plan"
    );
    ServedJob::start(&env).unwrap()
}

fn addr(job: &ServedJob) -> SocketAddr {
    job.url.trim_start_matches("http://").parse().unwrap()
}

fn json(addr: SocketAddr, path: &str) -> Value {
    let (status, body) = get(addr, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn job_id(addr: SocketAddr) -> String {
    json(addr, "/jobs/overview")["jobs"][0]["jid"]
        .as_str()
        .unwrap()
        .to_string()
}

fn figures(node: &Value) -> Option<&Value> {
    node.get("figures")
}

fn count(f: &Value, key: &str) -> u64 {
    f[key].as_u64().unwrap_or_else(|| panic!("{key} in {f}"))
}

#[test]
fn a_running_sql_jobs_plan_carries_live_figures_of_its_vertices() {
    let job = served_sql(1_000_000_000);
    let a = addr(&job);
    let jid = job_id(a);
    let plan = json(a, &format!("/jobs/{jid}/plan"));
    let vertices: Vec<String> = plan["plan"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect();
    // Polled until every operator has records in or out and the rates have been sampled.
    let deadline = Instant::now() + Duration::from_secs(60);
    let e = loop {
        let e = json(a, &format!("/jobs/{jid}/explain-analyze"));
        let nodes = e["nodes"].as_array().unwrap();
        let moving = nodes.iter().filter_map(figures).all(|f| {
            count(f, "records-in") + count(f, "records-out") > 0
                && f.get("busy-ms-per-second").is_some()
        });
        if moving {
            break e;
        }
        assert!(Instant::now() < deadline, "no figures in time: {e}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let nodes = e["nodes"].as_array().unwrap();
    let text = e["text"].as_str().unwrap();
    let lines: Vec<&str> = nodes.iter().map(|n| n["line"].as_str().unwrap()).collect();
    // The plan is EXPLAIN's physical section: the sink on top, the scan at the bottom.
    assert!(lines[0].starts_with("Sink(table=[default_catalog.default_database.counts]"));
    assert!(lines
        .iter()
        .any(|l| l.contains("GlobalWindowAggregate(groupBy=[$f0]")));
    assert!(lines
        .iter()
        .any(|l| l.contains("+- Exchange(distribution=[hash[$f0]])")));
    assert!(lines
        .last()
        .unwrap()
        .contains("TableSourceScan(table=[[default_catalog, default_database, datagen"));
    // Every node with an operator runs in a vertex of /plan; only the exchange and the
    // watermark pushed down run none.
    let mut with_operator = 0;
    for n in nodes {
        match n.get("vertex-id").and_then(Value::as_str) {
            Some(v) => {
                assert!(vertices.iter().any(|x| x == v), "{n} not in {vertices:?}");
                assert!(figures(n).is_some(), "{n}");
                with_operator += 1;
            }
            None => assert!(
                n["note"].as_str().is_some(),
                "{n} says why it has no operator"
            ),
        }
        // The text is the plan, each line with its figures.
        let line = n["line"].as_str().unwrap();
        assert!(
            text.lines()
                .any(|l| l.starts_with(line) && l.len() > line.len()),
            "{line}"
        );
    }
    assert!(with_operator >= 5, "{e}");
    assert!(text.contains("busy ") && text.contains("ms/s"), "{text}");
    // The fused chain is said to be fused.
    assert!(nodes
        .iter()
        .any(|n| n["note"].as_str().is_some_and(|s| s.contains("fused"))));
    job.stop();
}

#[test]
fn a_finished_sql_jobs_figures_are_its_vertices_and_other_jobs_answer_404() {
    let job = served_sql(200_000);
    let a = addr(&job);
    let jid = job_id(a);
    let deadline = Instant::now() + Duration::from_secs(120);
    while json(a, &format!("/jobs/{jid}"))["state"] != "FINISHED" {
        assert!(Instant::now() < deadline, "the job did not finish");
        std::thread::sleep(Duration::from_millis(100));
    }
    let e = json(a, &format!("/jobs/{jid}/explain-analyze"));
    let nodes = e["nodes"].as_array().unwrap();
    let mut checked = 0;
    for n in nodes {
        let (Some(v), Some(f)) = (n.get("vertex-id").and_then(Value::as_str), figures(n)) else {
            continue;
        };
        let vertex = json(a, &format!("/jobs/{jid}/vertices/{v}"));
        let (mut read, mut written) = (0, 0);
        for s in vertex["subtasks"].as_array().unwrap() {
            read += s["metrics"]["read-records"].as_u64().unwrap();
            written += s["metrics"]["write-records"].as_u64().unwrap();
        }
        assert_eq!(count(f, "vertex-records-in"), read, "{n}");
        assert_eq!(count(f, "vertex-records-out"), written, "{n}");
        if f["records-out-scope"] == "vertex" {
            assert_eq!(count(f, "records-out"), written, "{n}");
        }
        checked += 1;
    }
    assert!(checked >= 5);
    // Records flow down the plan: each operator's output is what the operator above it in
    // the same chain received.
    let by_line = |needle: &str| {
        nodes
            .iter()
            .find(|n| n["line"].as_str().unwrap().contains(needle))
            .and_then(figures)
            .unwrap_or_else(|| panic!("{needle} in {e}"))
    };
    let sink = by_line("Sink(table=");
    let global = by_line("GlobalWindowAggregate(");
    assert_eq!(count(global, "records-out"), count(sink, "records-in"));
    assert!(count(sink, "records-in") > 0);
    let local = by_line("LocalWindowAggregate(");
    assert!(count(local, "records-in") > count(local, "records-out"));
    // Not a SQL job, and no job at all: 404 with the reason.
    let (status, body) = get(a, "/jobs/0123456789abcdef0123456789abcdef/explain-analyze");
    assert_eq!(status, 404, "{body}");
    let env = StreamEnv::new();
    env.generate(1_000_000_000, |i| i)
        .map(|i: u64| i + 1)
        .discard();
    let other = ServedJob::start(&env).unwrap();
    let b = addr(&other);
    let jid = job_id(b);
    let (status, body) = get(b, &format!("/jobs/{jid}/explain-analyze"));
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not planned from SQL"), "{body}");
    other.stop();
    job.stop();
}
