//! Live plan changes on real servers (tansu Kafka in, PostgreSQL out), through the REST API of
//! a `sluice::live::LiveJob`: two-phase aggregation applied mid-run with `POST
//! /jobs/:jid/doctor/apply`, and a map rescaled 1 → 2 behind REBALANCE with `PUT
//! /jobs/:jid/resource-requirements`, then rolled back. The expected table is PostgreSQL's own
//! `SUM(value) GROUP BY key` over the raw input (what an uninterrupted run writes, as
//! `exactly_once.rs` checks); keys whose sum is short (lost records), over (duplicated) or
//! missing are counted and must be 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice::live::BuildFn;
use sluice_jobs::skew::{self, SkewConfig};
use sluice_testkit::{KafkaBroker, PostgresCluster};

use crate::common;
use crate::live;
use live::{
    input, kafka_lines, request, settled, start, upsert_sums, vertex_parallelism, wait_emitted,
};

const RECORDS: u64 = 60_000;
const KEYS: u64 = 10_000;

/// Kafka `key,value` lines (unbounded, see [`settled`]) → a throttle (1 ms per `per_ms` records per subtask, so the job
/// runs for seconds and a change lands mid-run) → the skew job's `map` → `sum-per-key` →
/// PostgreSQL upsert.
fn build(kafka: String, conn: String, topic: String, cfg: SkewConfig, per_ms: u64) -> BuildFn {
    build_with(kafka, conn, topic, cfg, per_ms, &[])
}

/// [`build`] with options on the PostgreSQL sink (`sink.buffer-flush.max-rows`, …).
fn build_with(
    kafka: String,
    conn: String,
    topic: String,
    cfg: SkewConfig,
    per_ms: u64,
    sink_options: &'static [(&'static str, &'static str)],
) -> BuildFn {
    Arc::new(move |env| {
        let source = kafka_lines(env, &kafka, &topic, "live-heal")?;
        let seen = Arc::new(AtomicU64::new(0));
        let throttled = source
            .map(move |r: (i64, i64)| {
                if seen.fetch_add(1, Ordering::Relaxed).is_multiple_of(per_ms) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                r
            })
            .name("throttle");
        env.set_parallelism(cfg.parallelism);
        let summed = skew::sums(&cfg, throttled).map_err(|e| e.to_string())?;
        upsert_sums(summed, &conn, &topic, sink_options)?;
        Ok(())
    })
}

#[test]
fn two_phase_applied_mid_run_loses_and_duplicates_nothing() {
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    input(&kafka, &pg, "skew2p", RECORDS, KEYS);
    let cfg = SkewConfig {
        map_work: 0,
        ..SkewConfig::default()
    };
    let live = start(
        build(kafka.bootstrap(), pg.url(), "skew2p".into(), cfg, 20),
        &[],
    );
    wait_emitted(&live.job, RECORDS / 4);
    let change =
        json!({"plan-change": {"kind": "two-phase", "operator": "sum-per-key", "buckets": 4}});
    let (status, r) = request("POST", &format!("{}/doctor/apply", live.base), Some(change));
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["state"], "COMPLETED", "{r}");
    let pause = r["pauseMillis"].as_f64().expect("a pause figure");
    eprintln!(
        "two-phase applied: pause {pause:.1} ms, changes {}",
        r["changes"]
    );
    assert!(
        r["plan"]["after"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["name"] == "sum-per-key (combine)"),
        "{r}"
    );
    let (_, job) = request("GET", &live.base, None);
    assert!(
        job["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"].as_str().unwrap().contains("combine")),
        "{job}"
    );
    settled(&pg, "skew2p", &live.job);
    live.job.cancel();
    let _ = live.job.wait();
    let rows: u64 = pg
        .psql("SELECT count(*) FROM out_skew2p")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let keys: u64 = pg
        .psql("SELECT count(DISTINCT key) FROM raw_skew2p")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(rows, keys);
}

#[test]
fn resource_requirements_rescale_a_map_behind_rebalance_and_rollback_restores_it() {
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    input(&kafka, &pg, "underprov", RECORDS, KEYS);
    let cfg = SkewConfig {
        map_work: 0,
        map_parallelism: Some(1),
        rebalance_before_map: true,
        ..SkewConfig::default()
    };
    let live = start(
        build(kafka.bootstrap(), pg.url(), "underprov".into(), cfg, 10),
        &[],
    );
    let (status, job) = request("GET", &live.base, None);
    assert_eq!(status, 200);
    assert_eq!(vertex_parallelism(&job, "map"), 1);
    let map_id = job["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "map")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, mut req) = request("GET", &format!("{}/resource-requirements", live.base), None);
    assert_eq!(status, 200);
    assert_eq!(
        req[&map_id],
        json!({"parallelism": {"lowerBound": 1, "upperBound": 1}})
    );
    wait_emitted(&live.job, RECORDS / 5);

    // Bad bodies are refused with the reason, the job untouched.
    let url = format!("{}/resource-requirements", live.base);
    let (status, e) = request(
        "PUT",
        &url,
        Some(json!({&map_id: {"parallelism": {"lowerBound": 2, "upperBound": 1}}})),
    );
    assert_eq!(status, 400, "{e}");
    let (status, e) = request(
        "PUT",
        &url,
        Some(
            json!({"00000000000000000000000000000000": {"parallelism": {"lowerBound": 1, "upperBound": 1}}}),
        ),
    );
    assert_eq!(status, 400, "{e}");

    let apply = format!("{}/doctor/apply", live.base);
    let keyed = json!({"plan-change": {"kind": "parallelism", "operator": "sum-per-key", "parallelism": 3, "ship-strategy": "REBALANCE"}});
    let (status, e) = request("POST", &apply, Some(keyed));
    assert_eq!(status, 400, "{e}");
    assert!(e.to_string().contains("keyed"), "{e}");
    let (status, e) = request(
        "POST",
        &apply,
        Some(json!({"plan-change": {"kind": "two-phase"}})),
    );
    assert_eq!(status, 400, "{e}");
    let (status, e) = request("POST", &apply, Some(json!({"rollback": "yes"})));
    assert_eq!(status, 400, "{e}");
    let (_, history) = request("GET", &format!("{}/rescales/history", live.base), None);
    assert_eq!(history, json!([]), "refused changes touch nothing");

    req[&map_id]["parallelism"]["upperBound"] = json!(2);
    let (status, r) = request("PUT", &url, Some(req));
    assert_eq!((status, r.clone()), (200, json!({})), "{r}");
    let (_, job) = request("GET", &live.base, None);
    assert_eq!(vertex_parallelism(&job, "map"), 2, "{job}");
    let (_, history) = request("GET", &format!("{}/rescales/history", live.base), None);
    let h = history.as_array().unwrap();
    assert_eq!(h.len(), 1, "{history}");
    assert_eq!(h[0]["terminalState"], "COMPLETED");
    assert_eq!(h[0]["sluice"]["trigger"], "resource-requirements");
    let pause = h[0]["sluice"]["pauseMillis"]
        .as_f64()
        .expect("a pause figure");
    let uuid = h[0]["rescaleUuid"].as_str().unwrap();
    let (status, d) = request(
        "GET",
        &format!("{}/rescales/details/{uuid}", live.base),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(d["vertices"][&map_id]["preRescaleParallelism"], 1, "{d}");
    assert_eq!(d["vertices"][&map_id]["postRescaleParallelism"], 2, "{d}");

    let (status, r) = request(
        "POST",
        &format!("{}/doctor/apply", live.base),
        Some(json!({"rollback": true})),
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["trigger"], "rollback");
    assert_eq!(r["rollbackOf"], uuid);
    let (_, job) = request("GET", &live.base, None);
    assert_eq!(vertex_parallelism(&job, "map"), 1, "{job}");
    let before = &h[0]["sluice"]["plan"]["before"];
    assert_eq!(
        &r["plan"]["after"], before,
        "the rollback restores the original plan"
    );
    let (status, e) = request(
        "POST",
        &format!("{}/doctor/apply", live.base),
        Some(json!({"rollback": true})),
    );
    assert_eq!(status, 409, "nothing left to roll back: {e}");
    eprintln!(
        "rescale 1 -> 2: pause {pause:.1} ms; rollback: pause {:.1} ms",
        r["pauseMillis"].as_f64().unwrap_or(-1.0)
    );

    settled(&pg, "underprov", &live.job);
    live.job.cancel();
    let _ = live.job.wait();
}

/// The option a plan node of an apply answer's `plan.after` carries.
fn node_option(answer: &Value, node: &str, key: &str) -> Option<String> {
    answer["plan"]["after"]
        .as_array()?
        .iter()
        .find(|n| n["name"].as_str().is_some_and(|x| x.contains(node)))?["options"][key]
        .as_str()
        .map(str::to_string)
}

/// The doctor's slow-sink fix, live: a sink writing one row per round trip
/// (`sink.buffer-flush.max-rows` = 1) is switched to batches of 500 and back; every change goes
/// through the savepoint (the sink flushes what it holds at the barrier), so the table still
/// equals PostgreSQL's own sums.
#[test]
fn sink_batching_applied_and_rolled_back_live_loses_nothing() {
    let kafka = KafkaBroker::start().unwrap();
    let pg = PostgresCluster::start().unwrap();
    input(&kafka, &pg, "batching", RECORDS, KEYS);
    let cfg = SkewConfig {
        map_work: 0,
        ..SkewConfig::default()
    };
    let live = start(
        build_with(
            kafka.bootstrap(),
            pg.url(),
            "batching".into(),
            cfg,
            20,
            &[("sink.buffer-flush.max-rows", "1")],
        ),
        &[],
    );
    wait_emitted(&live.job, RECORDS / 5);
    let apply = format!("{}/doctor/apply", live.base);
    let change = json!({"plan-change": {"kind": "sink-option", "operator": "Sink: final-sums",
        "key": "sink.buffer-flush.max-rows", "value": "500"}});
    let (status, r) = request("POST", &apply, Some(change));
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        node_option(&r, "final-sums", "sink.buffer-flush.max-rows").as_deref(),
        Some("500"),
        "{r}"
    );
    wait_emitted(&live.job, RECORDS / 10);
    let (status, back) = request("POST", &apply, Some(json!({"rollback": true})));
    assert_eq!(status, 200, "{back}");
    assert_eq!(
        node_option(&back, "final-sums", "sink.buffer-flush.max-rows").as_deref(),
        Some("1"),
        "{back}"
    );
    eprintln!(
        "sink batching 1 -> 500: pause {} ms; rollback: pause {} ms",
        r["pauseMillis"], back["pauseMillis"]
    );
    settled(&pg, "batching", &live.job);
    live.job.cancel();
    let _ = live.job.wait();
}

/// The doctor's blocking-calls fix, live: `sluice run scenario blocking --buffer-debloat` (a
/// sync lookup join) gets async lookups with capacity 8 through `POST doctor/apply` and loses them again by
/// rollback; the plan answers show the options, and records flow after each change.
#[test]
fn async_lookup_capacity_applied_and_rolled_back_live() {
    // Buffer debloating keeps the in-flight data near 1 s of throughput: a lookup taking 2 ms a
    // record behind full 32 KiB buffers would hold the savepoint's barrier for minutes.
    let (_job, url) = common::start_live(&["scenario", "blocking", "-p", "2", "--buffer-debloat"]);
    // The REST API answers before the job is registered: wait for it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let jid = loop {
        let (_, overview) = request("GET", &format!("{url}/jobs/overview"), None);
        if let Some(j) = overview["jobs"][0]["jid"].as_str() {
            break j.to_string();
        }
        assert!(Instant::now() < deadline, "no job: {overview}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let base = format!("{url}/jobs/{jid}");
    let sunk = |base: &str| -> u64 {
        let (_, job) = request("GET", base, None);
        job["vertices"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["metrics"]["read-records"].as_u64())
            .sum()
    };
    let flowing = |base: &str| {
        let first = sunk(base);
        let deadline = Instant::now() + Duration::from_secs(60);
        while sunk(base) <= first {
            assert!(
                Instant::now() < deadline,
                "no records flow after the change"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    flowing(&base);
    let apply = format!("{base}/doctor/apply");
    let change =
        json!({"plan-change": {"kind": "async-io", "operator": "blocking-call", "capacity": 8}});
    let (status, r) = request("POST", &apply, Some(change));
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        node_option(&r, "blocking-call", "lookup.async").as_deref(),
        Some("true"),
        "{r}"
    );
    assert_eq!(
        node_option(&r, "blocking-call", "lookup.async.capacity").as_deref(),
        Some("8"),
        "{r}"
    );
    flowing(&base);
    let (status, back) = request("POST", &apply, Some(json!({"rollback": true})));
    assert_eq!(status, 200, "{back}");
    assert_eq!(
        node_option(&back, "blocking-call", "lookup.async").as_deref(),
        Some("false"),
        "the rollback makes the lookups synchronous again: {back}"
    );
    flowing(&base);
    eprintln!(
        "async lookup capacity 8: pause {} ms; rollback: pause {} ms",
        r["pauseMillis"], back["pauseMillis"]
    );
}
