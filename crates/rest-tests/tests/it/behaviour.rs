//! What the endpoints say about real jobs: backpressure levels, metric value types, the skew
//! aggregate, errors, cancellation, Prometheus text and the OpenAPI document.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{env, eventually, get, get_json, request, send_json, Served};
use sluice_datastream::StreamEnv;
use sluice_rest::{serve, JobRegistry};

/// `Source: fast-source` → `slow` (sleeps per record, its own vertex) → discard, parallelism 1.
fn slow_operator_env() -> StreamEnv {
    let env = env(1);
    env.set_buffer_size(64 * 8);
    // Checkpoints too, so the checkpoint endpoints have something to report.
    env.enable_checkpointing(Duration::from_millis(100));
    env.generate(u64::MAX, |i| i)
        .name("fast-source")
        .map(|i: u64| {
            std::thread::sleep(Duration::from_micros(200));
            i
        })
        .name("slow")
        .disable_chaining()
        .discard();
    env
}

/// A bounded hot-key job, parallelism 2: 90% of records carry key 0.
fn hot_key_env() -> StreamEnv {
    let env = env(2);
    env.generate(200_000, |i| {
        if i % 10 == 0 {
            (i % 97) as i64 + 1
        } else {
            0i64
        }
    })
    .name("keys")
    .key_by(|k: &i64| *k)
    .reduce(|a, _b| a)
    .name("per-key")
    .discard();
    env
}

fn assert_error(r: &common::Reply, status: u16, mentions: &str) {
    assert_eq!(
        r.status, status,
        "expected {status}, got {}: {}",
        r.status, r.body
    );
    let j = r.json();
    let errors = j["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors array: {}", r.body));
    assert_eq!(errors.len(), 1, "{}", r.body);
    let msg = errors[0].as_str().expect("error message is a string");
    assert!(
        msg.contains(mentions),
        "error '{msg}' should mention '{mentions}'"
    );
}

#[test]
fn upstream_of_a_slow_operator_is_high_and_metric_values_are_strings() {
    let env = slow_operator_env();
    let s = Served::start(&env);
    let (src, slow) = (s.vertex("Source: fast-source"), s.vertex("slow"));
    let jid = s.jid.clone();

    let bp = eventually("source backpressure high", || {
        let b = get_json(s.addr, &format!("/jobs/{jid}/vertices/{src}/backpressure"));
        (b["backpressure-level"] == "high").then_some(b)
    });
    assert_eq!(bp["status"], "ok");
    assert_eq!(bp["backpressureLevel"], bp["backpressure-level"]);
    assert!(bp["end-timestamp"].as_i64().unwrap() > 1_600_000_000_000);
    let st = &bp["subtasks"][0];
    assert_eq!(st["subtask"], 0);
    assert_eq!(st["backpressure-level"], "high");
    assert_eq!(st["backpressureLevel"], "high");
    let ratio = st["ratio"].as_f64().unwrap();
    assert!(ratio > 0.5, "{bp}");
    let total = ratio + st["idleRatio"].as_f64().unwrap() + st["busyRatio"].as_f64().unwrap();
    assert!((total - 1.0).abs() < 0.01, "ratios sum to {total}: {bp}");

    // The slow operator itself is busy, not backpressured.
    let b = get_json(s.addr, &format!("/jobs/{jid}/vertices/{slow}/backpressure"));
    assert_eq!(b["backpressure-level"], "ok", "{b}");

    // `?get=` values are strings, printed as Flink's Java types.
    let vals = get_json(
        s.addr,
        &format!("/jobs/{jid}/vertices/{slow}/metrics?get=0.busyTimeMsPerSecond,0.idleTimeMsPerSecond,0.numRecordsIn,0.isBackPressured,0.slow.numRecordsIn"),
    );
    let by: BTreeMap<String, String> = vals
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_string(),
                e["value"].as_str().expect("values are strings").to_string(),
            )
        })
        .collect();
    assert_eq!(by.len(), 5, "{vals}");
    let busy: f64 = by["0.busyTimeMsPerSecond"].parse().unwrap();
    assert!(
        by["0.busyTimeMsPerSecond"].contains('.'),
        "a double: {by:?}"
    );
    assert!(busy > 500.0, "{by:?}");
    by["0.idleTimeMsPerSecond"].parse::<i64>().expect("a long");
    by["0.numRecordsIn"].parse::<u64>().expect("a long");
    by["0.slow.numRecordsIn"].parse::<u64>().expect("a long");
    assert!(["true", "false"].contains(&by["0.isBackPressured"].as_str()));

    // Per-subtask endpoint: same names without the index; the source is backpressured.
    let vals = get_json(
        s.addr,
        &format!("/jobs/{jid}/vertices/{src}/subtasks/0/metrics?get=backPressuredTimeMsPerSecond,Source__fast-source.numRecordsIn"),
    );
    let bp_ms: i64 = vals[0]["value"].as_str().unwrap().parse().unwrap();
    assert!(bp_ms > 500, "{vals}");
    assert_eq!(vals[1]["id"], "Source__fast-source.numRecordsIn");
}

#[test]
fn aggregated_subtask_metrics_are_numbers_and_skew_follows_the_formula() {
    let env = hot_key_env();
    let mut s = Served::start(&env);
    s.wait_for_end(); // the final sample freezes every value
    let jid = s.jid.clone();
    let v = s.vertex("per-key");
    let overview = get_json(s.addr, "/jobs/overview");
    assert_eq!(overview["jobs"][0]["state"], "FINISHED");
    assert_eq!(overview["jobs"][0]["tasks"]["finished"], 4);
    assert_eq!(get_json(s.addr, "/overview")["jobs-finished"], 1);

    let base = format!("/jobs/{jid}/vertices/{v}");
    let agg = get_json(
        s.addr,
        &format!("{base}/subtasks/metrics?get=numRecordsIn,numRecordsInPerSecond,busyTimeMsPerSecond,isBackPressured"),
    );
    // isBackPressured is not a number: no aggregate, as in Flink.
    let agg = agg.as_array().unwrap();
    assert_eq!(agg.len(), 3, "{agg:?}");
    for e in agg {
        let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["id", "min", "max", "avg", "sum", "skew"]);
        for k in ["min", "max", "avg", "sum", "skew"] {
            assert!(e[k].is_f64(), "{k} must be a (floating) number: {e}");
        }
    }
    let per_subtask: Vec<f64> = get_json(
        s.addr,
        &format!("{base}/metrics?get=0.numRecordsIn,1.numRecordsIn"),
    )
    .as_array()
    .unwrap()
    .iter()
    .map(|e| e["value"].as_str().unwrap().parse().unwrap())
    .collect();
    assert_eq!(per_subtask.len(), 2);
    assert_eq!(per_subtask.iter().sum::<f64>(), 200_000.0);
    let mean = per_subtask.iter().sum::<f64>() / 2.0;
    let mad = per_subtask.iter().map(|x| (x - mean).abs()).sum::<f64>() / 2.0;
    let expected = (mad / mean * 100.0).min(100.0);
    let records = &agg[0];
    assert_eq!(records["id"], "numRecordsIn");
    assert!(
        (records["skew"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{records} vs {expected}"
    );
    assert!(
        expected > 50.0,
        "90% of the records go to one subtask: skew {expected}"
    );
    assert_eq!(records["sum"].as_f64().unwrap(), 200_000.0);
    assert_eq!(
        records["max"].as_f64().unwrap(),
        per_subtask.iter().copied().fold(0.0, f64::max)
    );

    // Chosen aggregations only, in Flink's order; a subtask filter.
    let one = get_json(
        s.addr,
        &format!("{base}/subtasks/metrics?get=numRecordsIn&agg=skew,max&subtasks=1"),
    );
    let keys: Vec<&String> = one[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "max", "skew"]);
    assert_eq!(one[0]["max"].as_f64().unwrap(), per_subtask[1]);
    assert_eq!(one[0]["skew"].as_f64().unwrap(), 0.0);
    let both = get_json(
        s.addr,
        &format!("{base}/subtasks/metrics?get=numRecordsIn&agg=SUM&subtasks=0-1"),
    );
    assert_eq!(both[0]["sum"].as_f64().unwrap(), 200_000.0);

    // 400s for bad aggregations and ranges.
    for q in [
        "get=numRecordsIn&agg=median",
        "get=numRecordsIn&subtasks=1-0",
        "get=numRecordsIn&subtasks=a",
        "get=numRecordsIn&subtasks=0-",
    ] {
        let r = get(s.addr, &format!("{base}/subtasks/metrics?{q}"));
        assert_error(&r, 400, "Bad request");
    }

    // A subtask the vertex does not have is not found.
    let r = get(
        s.addr,
        &format!("{base}/subtasks/metrics?get=numRecordsIn&subtasks=0,2"),
    );
    assert_error(&r, 404, "subtasks 0 to 1");

    // Cancelling a finished job is a conflict.
    let r = send_json(s.addr, "PATCH", &format!("/jobs/{jid}"), "");
    assert_error(&r, 409, "FINISHED");
}

#[test]
fn unknown_things_are_404_malformed_ones_400_wrong_methods_405() {
    let env = slow_operator_env();
    let s = Served::start(&env);
    let jid = s.jid.clone();
    let v = s.vertex("slow");
    let missing = "0123456789abcdef0123456789abcdef";

    for (path, mentions) in [
        ("/nope".to_string(), "/nope".to_string()),
        ("/jobs/x/y/z".to_string(), "/jobs/x/y/z".to_string()),
        (format!("/jobs/{missing}"), missing.to_string()),
        (format!("/jobs/{missing}/plan"), missing.to_string()),
        (
            format!("/jobs/{jid}/vertices/{missing}"),
            missing.to_string(),
        ),
        (
            format!("/jobs/{jid}/vertices/{missing}/backpressure"),
            missing.to_string(),
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/7"),
            "7".to_string(),
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/7/metrics"),
            "7".to_string(),
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/metrics?get=0.nope"),
            "0.nope".to_string(),
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/metrics?get=9.numRecordsIn"),
            "9.numRecordsIn".to_string(),
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/metrics?get=nope"),
            "nope".to_string(),
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/0/metrics?get=nope,alsonope"),
            "alsonope".to_string(),
        ),
    ] {
        assert_error(&get(s.addr, &path), 404, &mentions);
    }

    for (path, mentions) in [
        ("/jobs/xyz".to_string(), "xyz"),
        (
            "/jobs/0123456789ABCDEF0123456789abcdeg".to_string(),
            "job id",
        ),
        (format!("/jobs/{jid}/vertices/short"), "vertex id"),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/abc"),
            "subtask index",
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/-1/metrics"),
            "subtask index",
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/metrics?get=numRecordsIn&agg=p99"),
            "p99",
        ),
        (
            format!("/jobs/{jid}/vertices/{v}/subtasks/metrics?subtasks=x-y"),
            "x-y",
        ),
        ("/jobs/%ff".to_string(), "UTF-8"),
    ] {
        assert_error(&get(s.addr, &path), 400, mentions);
    }

    for (method, path) in [
        ("DELETE", "/jobs/overview".to_string()),
        ("POST", format!("/jobs/{jid}")),
        ("PUT", "/metrics".to_string()),
        ("PATCH", "/overview".to_string()),
        ("OPTIONS", format!("/jobs/{jid}/vertices/{v}")),
    ] {
        let r = request(s.addr, method, &path);
        assert_error(&r, 405, method);
        assert!(
            r.header("Allow").is_some_and(|a| a.contains("GET")),
            "{r:?}"
        );
    }

    // HEAD: the headers of GET, no body.
    let r = request(s.addr, "HEAD", "/overview");
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert!(
        r.header("Content-Length")
            .unwrap()
            .parse::<usize>()
            .unwrap()
            > 10
    );
}

#[test]
fn patch_cancels_the_job_and_the_overview_shows_it() {
    let env = slow_operator_env();
    let s = Served::start(&env);
    s.wait_for_metrics();
    let jid = s.jid.clone();
    assert_eq!(
        get_json(s.addr, "/jobs/overview")["jobs"][0]["state"],
        "RUNNING"
    );
    let r = send_json(s.addr, "PATCH", &format!("/jobs/{jid}"), "");
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body, "{}");
    let job = eventually("job canceled", || {
        let o = get_json(s.addr, "/jobs/overview");
        (o["jobs"][0]["state"] == "CANCELED").then_some(o)
    });
    let j = &job["jobs"][0];
    assert!(j["end-time"].as_i64().unwrap() >= j["start-time"].as_i64().unwrap());
    assert_eq!(j["tasks"]["running"], 0);
    let details = get_json(s.addr, &format!("/jobs/{jid}"));
    assert_eq!(details["state"], "CANCELED");
    assert!(details["timestamps"]["CANCELED"].as_i64().unwrap() > 0);
    assert_eq!(get_json(s.addr, "/overview")["jobs-cancelled"], 1);
    let again = send_json(s.addr, "PATCH", &format!("/jobs/{jid}?mode=cancel"), "");
    assert_error(&again, 409, "CANCELED");
}

/// Samples by family name: (labels, value).
type Families = BTreeMap<String, Vec<(BTreeMap<String, String>, f64)>>;

/// Checks the text exposition format line by line; returns samples by family name.
fn parse_prometheus(text: &str) -> Families {
    let mut families: Families = BTreeMap::new();
    let mut help: Vec<String> = Vec::new();
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let valid_name = |n: &str| {
        !n.is_empty()
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, _) = rest.split_once(' ').expect("HELP name text");
            assert!(valid_name(name), "{line}");
            help.push(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, t) = rest.split_once(' ').expect("TYPE name type");
            assert!(["counter", "gauge"].contains(&t), "{line}");
            assert!(
                help.last().is_some_and(|h| h == name),
                "HELP before TYPE: {line}"
            );
            types.insert(name.to_string(), t.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment {line}");
        let (series, value) = line.rsplit_once(' ').expect("sample: series value");
        let value: f64 = match value {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        assert!(valid_name(name), "{line}");
        assert!(types.contains_key(name), "sample before its TYPE: {line}");
        let mut map = BTreeMap::new();
        let mut rest = labels;
        while !rest.is_empty() {
            let (k, after) = rest.split_once("=\"").expect("label=\"value\"");
            assert!(valid_name(k), "label name in {line}");
            let mut val = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                let (i, c) = chars.next().expect("unterminated label value");
                match c {
                    '\\' => {
                        let (_, e) = chars.next().expect("escape");
                        val.push(match e {
                            'n' => '\n',
                            e => e,
                        });
                    }
                    '"' => break i,
                    c => val.push(c),
                }
            };
            map.insert(k.to_string(), val);
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        families
            .entry(name.to_string())
            .or_default()
            .push((map, value));
    }
    families
}

#[test]
fn prometheus_text_parses_and_labels_every_sample() {
    let env = slow_operator_env();
    let s = Served::start(&env);
    s.wait_for_metrics();
    let r = get(s.addr, "/metrics");
    assert_eq!(r.status, 200);
    assert!(r
        .header("Content-Type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let fam = parse_prometheus(&r.body);
    let busy = &fam["sluice_task_busy_time_ms_per_second"];
    assert_eq!(busy.len(), s.vertices.len(), "one subtask per vertex");
    for (labels, v) in busy {
        let keys: Vec<&str> = labels.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["job_id", "job_name", "subtask", "vertex_id", "vertex_name"]
        );
        assert_eq!(labels["job_id"], s.jid);
        assert!((0.0..=1000.0).contains(v));
    }
    assert!(fam.contains_key("sluice_task_back_pressured_time_ms_per_second"));
    assert!(fam.contains_key("sluice_task_num_records_in_total"));
    assert!(fam.contains_key("sluice_task_shuffle_netty_output_buffers_out_pool_usage"));
    assert!(fam.contains_key("sluice_task_cpu_time_ms_per_second"));
    let ops = &fam["sluice_operator_num_records_in_total"];
    assert!(ops
        .iter()
        .any(|(l, _)| l["operator"] == "Source: fast-source"
            && l["vertex_name"] == "Source: fast-source"));
    assert!(ops.iter().any(|(l, _)| l["operator"] == "slow"));
    let skew = &fam["sluice_vertex_data_skew_percent"];
    assert_eq!(skew.len(), s.vertices.len(), "one per vertex");
    assert!(skew
        .iter()
        .all(|(l, v)| l.contains_key("vertex_id") && (0.0..=100.0).contains(v)));
    assert_eq!(fam["sluice_job_info"][0].0["state"], "RUNNING");
}

/// Every path the server answers, in OpenAPI notation.
const SERVED: &[&str] = &[
    "/",
    "/config",
    "/overview",
    "/jobs",
    "/jobs/overview",
    "/jobs/{jobid}",
    "/jobs/{jobid}/config",
    "/jobs/{jobid}/plan",
    "/jobs/{jobid}/doctor",
    "/jobs/{jobid}/autopilot",
    "/jobs/{jobid}/resource-requirements",
    "/jobs/{jobid}/rescales/config",
    "/jobs/{jobid}/rescales/history",
    "/jobs/{jobid}/rescales/overview",
    "/jobs/{jobid}/vertices/{vertexid}",
    "/jobs/{jobid}/vertices/{vertexid}/backpressure",
    "/jobs/{jobid}/vertices/{vertexid}/subtasktimes",
    "/jobs/{jobid}/vertices/{vertexid}/taskmanagers",
    "/jobs/{jobid}/vertices/{vertexid}/metrics",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics",
    "/jobs/{jobid}/vertices/{vertexid}/watermarks",
    "/jobs/{jobid}/vertices/{vertexid}/accumulators",
    "/jobs/{jobid}/vertices/{vertexid}/hot-keys",
    "/jobs/{jobid}/vertices/{vertexid}/flamegraph",
    "/jobs/{jobid}/savepoints/{triggerid}",
    "/jobs/{jobid}/checkpoints",
    "/jobs/{jobid}/checkpoints/config",
    "/jobs/{jobid}/checkpoints/details/{checkpointid}",
    "/jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}",
    "/applications/overview",
    "/applications/{applicationid}",
    "/applications/{applicationid}/exceptions",
    "/taskmanagers",
    "/taskmanagers/{taskmanagerid}/thread-dump",
    "/metrics",
    "/openapi.json",
];

/// Flink's SQL Gateway paths: documented always, served when a gateway is installed (`sluice
/// sql-gateway`; `sluice`'s `tests/it/sql_gateway.rs` drives them). Without one, a session path
/// is 404 with the reason.
const GATEWAY: &[&str] = &[
    "/{version}/info",
    "/{version}/api_versions",
    "/{version}/sessions",
    "/{version}/sessions/{session_handle}",
    "/{version}/sessions/{session_handle}/heartbeat",
    "/{version}/sessions/{session_handle}/statements",
    "/{version}/sessions/{session_handle}/operations/{operation_handle}/status",
    "/{version}/sessions/{session_handle}/operations/{operation_handle}/cancel",
    "/{version}/sessions/{session_handle}/operations/{operation_handle}/close",
    "/{version}/sessions/{session_handle}/operations/{operation_handle}/result/{token}",
];

#[test]
fn openapi_document_describes_every_served_path() {
    let env = slow_operator_env();
    let dir = std::env::temp_dir().join(format!("sluice-openapi-sp-{}", std::process::id()));
    let s = Served::start_with(&env, |c| c.savepoint_dir = dir.clone());
    s.wait_for_metrics();
    let doc = get_json(s.addr, "/openapi.json");
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.0"));
    assert!(doc["info"]["title"].is_string());
    let paths = doc["paths"].as_object().unwrap();
    // The POST-only savepoint, stop, doctor/apply and application cancel paths, a rescale's
    // details (none on a job that never rescaled) and EXPLAIN ANALYZE (a SQL job's only) are
    // checked below.
    assert_eq!(
        paths.len(),
        SERVED.len() + 6 + GATEWAY.len(),
        "{:?}",
        paths.keys().collect::<Vec<_>>()
    );
    for p in GATEWAY {
        assert!(paths.contains_key(*p), "{p} is not in the OpenAPI document");
    }
    assert_eq!(get(s.addr, "/v1/api_versions").status, 200);
    let r = get(s.addr, "/v2/sessions/abc");
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.contains("sql-gateway"), "{}", r.body);
    for p in ["/jobs/{jobid}/savepoints", "/jobs/{jobid}/stop"] {
        let post = &paths[p]["post"];
        assert!(post["responses"]["202"].is_object(), "{p}");
        assert!(
            post["requestBody"]["content"]["application/json"].is_object(),
            "{p}"
        );
    }
    let (jid, v) = (s.jid.clone(), s.vertices[0].clone());
    let r = send_json(
        s.addr,
        "POST",
        &format!("/jobs/{jid}/savepoints"),
        &format!("{{\"target-directory\": \"{}\"}}", dir.display()),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let trigger = r.json()["request-id"].as_str().unwrap().to_string();
    // A checkpoint still in the (10-entry) history.
    let checkpoint = eventually("a checkpoint in the history", || {
        let c = get_json(s.addr, &format!("/jobs/{jid}/checkpoints"));
        c["history"][0]["id"].as_u64().map(|id| id.to_string())
    });
    let tm = get_json(s.addr, "/taskmanagers")["taskmanagers"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for p in SERVED {
        let item = paths
            .get(*p)
            .unwrap_or_else(|| panic!("{p} is not in the OpenAPI document"));
        let get_op = &item["get"];
        assert!(
            get_op["responses"]["200"]["content"].is_object(),
            "{p}: {item}"
        );
        assert!(item["get"]["responses"]["405"].is_object(), "{p}");
        let params: Vec<&str> = p
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|x| x.strip_suffix('}')))
            .collect();
        let declared: Vec<&str> = get_op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["in"] == "path")
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert_eq!(params, declared, "{p}");
        if !params.is_empty() {
            assert!(get_op["responses"]["400"].is_object(), "{p}");
            assert!(get_op["responses"]["404"].is_object(), "{p}");
        }
        // And the path really is served.
        let concrete = p
            .replace("{jobid}", &jid)
            .replace("{applicationid}", &jid)
            .replace("{vertexid}", &v)
            .replace("{subtaskindex}", "0")
            .replace("{checkpointid}", &checkpoint)
            .replace("{triggerid}", &trigger)
            .replace("{taskmanagerid}", &tm);
        let r = get(s.addr, &concrete);
        assert_eq!(r.status, 200, "{concrete}: {}", r.body);
    }
    let patch = &paths["/jobs/{jobid}"]["patch"];
    assert!(patch["responses"]["202"].is_object());
    let cancel = &paths["/applications/{applicationid}/cancel"]["post"];
    assert!(cancel["responses"]["202"].is_object() && cancel["responses"]["401"].is_object());
    assert_eq!(
        cancel["requestBody"]["required"], false,
        "Flink's cancel reads no body"
    );
    let apply = &paths["/jobs/{jobid}/doctor/apply"]["post"];
    assert!(apply["responses"]["200"].is_object() && apply["responses"]["409"].is_object());
    let put = &paths["/jobs/{jobid}/resource-requirements"]["put"];
    assert!(put["responses"]["200"].is_object() && put["responses"]["400"].is_object());
    assert!(put["requestBody"]["content"]["application/json"].is_object());
    assert!(paths["/jobs/{jobid}/rescales/details/{rescaleuuid}"]["get"].is_object());
    // EXPLAIN ANALYZE is described, and a job not planned from SQL answers 404 with the reason.
    let explain = &paths["/jobs/{jobid}/explain-analyze"]["get"];
    assert!(explain["responses"]["200"].is_object() && explain["responses"]["404"].is_object());
    let r = get(s.addr, &format!("/jobs/{jid}/explain-analyze"));
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.contains("not planned from SQL"), "{}", r.body);
    // A job not started live answers the mutations 409 with the reason, and unknown rescales 404.
    let r = send_json(s.addr, "POST", &format!("/jobs/{jid}/doctor/apply"), "{}");
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.body.contains("cannot change its plan while it runs"),
        "{}",
        r.body
    );
    let r = send_json(
        s.addr,
        "PUT",
        &format!("/jobs/{jid}/resource-requirements"),
        "{}",
    );
    assert_eq!(r.status, 409, "{}", r.body);
    let r = get(
        s.addr,
        &format!("/jobs/{jid}/rescales/details/0123456789abcdef0123456789abcdef"),
    );
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(
        get_json(s.addr, &format!("/jobs/{jid}/rescales/history")),
        serde_json::json!([])
    );
    let metrics = &paths["/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics"]["get"];
    let q: Vec<&str> = metrics["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["in"] == "query")
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(q, ["get", "agg", "subtasks"]);
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert!(schemas.contains_key("Error"));
}

#[test]
fn backpressure_is_deprecated_before_the_first_sample_and_drop_stops_the_server() {
    // A registry with a job whose metrics interval is long: no sample for a while.
    let env = StreamEnv::with_config(sluice_datastream::EnvConfig {
        parallelism: 1,
        metrics: sluice_runtime::telemetry::MetricsConfig {
            update_interval: Duration::from_secs(3600),
            window_slots: 1,
        },
        ..Default::default()
    });
    env.generate(u64::MAX, |i| i).discard();
    let handle = env.launch().unwrap();
    let m = handle.monitor();
    let registry = Arc::new(JobRegistry::new());
    registry.register(m.clone());
    registry.register(m.clone()); // twice: listed once
    let server = serve("127.0.0.1:0".parse().unwrap(), registry).unwrap();
    let addr = server.local_addr();
    let v = m.graph.vertices[0].id;
    let b = get_json(
        addr,
        &format!("/jobs/{}/vertices/{v}/backpressure", m.job_id),
    );
    assert_eq!(b, serde_json::json!({"status": "deprecated"}));
    assert_eq!(get_json(addr, "/jobs")["jobs"].as_array().unwrap().len(), 1);
    let index = get(addr, "/");
    assert_eq!(index.status, 200);
    assert!(index
        .header("Content-Type")
        .unwrap()
        .starts_with("text/html"));
    drop(server);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the listener must be closed once the server is dropped"
    );
    handle.cancel();
    let _ = handle.wait();
}

#[test]
fn hot_keys_name_the_hot_key_with_its_share() {
    // 90% of the records carry key 0 (i % 10 != 0).
    let mut s = Served::start(&hot_key_env());
    s.wait_for_end();
    let v = s.vertex("per-key");
    let body = get_json(s.addr, &format!("/jobs/{}/vertices/{v}/hot-keys", s.jid));
    assert_eq!(body["records"], 200_000);
    let top = &body["hot-keys"][0];
    assert_eq!(top["key"], "0", "{body}");
    let share = top["share-of-vertex"].as_f64().unwrap();
    assert!((share - 0.9).abs() < 0.02, "share {share}: {body}");
    let hot = sluice_datastream::partition::assign_key_to_subtask(&0i64, 128, 2) as u64;
    assert_eq!(top["subtask"], hot);
    // A non-keyed vertex has none.
    let src = s.vertex("Source");
    let body = get_json(s.addr, &format!("/jobs/{}/vertices/{src}/hot-keys", s.jid));
    assert_eq!(body["hot-keys"].as_array().unwrap().len(), 0, "{body}");
}

#[test]
fn savepoints_over_rest_trigger_poll_and_stop() {
    let env = slow_operator_env();
    let dir = std::env::temp_dir().join(format!("sluice-rest-sp-{}", std::process::id()));
    let s = Served::start_with(&env, |c| c.savepoint_dir = dir.clone());
    let jid = s.jid.clone();
    let body = format!("{{\"target-directory\": \"{}\"}}", dir.display());
    let r = send_json(s.addr, "POST", &format!("/jobs/{jid}/savepoints"), &body);
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.json()["request-id"].as_str().unwrap().to_string();
    let done = eventually("savepoint completed", || {
        let st = get_json(s.addr, &format!("/jobs/{jid}/savepoints/{id}"));
        (st["status"]["id"] == "COMPLETED").then_some(st)
    });
    let loc = done["operation"]["location"].as_str().unwrap();
    let path = std::path::PathBuf::from(loc.strip_prefix("file:").unwrap());
    assert!(
        path.starts_with(&dir) && path.join("_metadata").is_file(),
        "{done}"
    );

    // Bad requests: not JSON, an empty directory, wrong types, unknown trigger.
    for bad in [
        "{",
        "[]",
        "{\"target-directory\": \" \"}",
        "{\"target-directory\": 3}",
        "{\"target-directory\": \"/x\", \"cancel-job\": 1}",
    ] {
        let r = send_json(s.addr, "POST", &format!("/jobs/{jid}/savepoints"), bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    assert_eq!(
        get(s.addr, &format!("/jobs/{jid}/savepoints/nope")).status,
        404
    );

    // Stop-with-savepoint ends the job.
    let stop = format!("{{\"targetDirectory\": \"{}\"}}", dir.display());
    let r = send_json(s.addr, "POST", &format!("/jobs/{jid}/stop"), &stop);
    assert_eq!(r.status, 202, "{}", r.body);
    eventually("job stopped", || {
        let j = get_json(s.addr, &format!("/jobs/{jid}"));
        (j["state"] != "RUNNING").then_some(())
    });
    let _ = std::fs::remove_dir_all(&dir);
}
