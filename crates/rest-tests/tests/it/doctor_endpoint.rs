//! `GET /jobs/:jobid/doctor`: the doctor run in-process on a live job's metrics.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{env, eventually, get, get_json, Served};
use serde_json::{json, Value};
use sluice_datastream::StreamEnv;
use sluice_jobs::skew::{build, SkewConfig};
use sluice_rest::{serve, JobRegistry};

#[test]
fn a_hot_key_job_is_diagnosed_as_key_skew_with_a_two_phase_plan_change() {
    let env = env(2);
    let _job = build(
        &env,
        &SkewConfig {
            records: 1 << 40,
            ..SkewConfig::default()
        },
    )
    .unwrap();
    let s = Served::start(&env);
    s.wait_for_metrics();
    let path = format!("/jobs/{}/doctor", s.jid);
    let d: Value = eventually("the doctor finds key skew", || {
        let d = get_json(s.addr, &path);
        (d["cause"] == "key-skew").then_some(d)
    });
    let keyed = s.vertex("sum-per-key");
    let keyed_index = s.vertices.iter().position(|v| *v == keyed).unwrap();
    let b = &d["bottleneck"];
    assert_eq!(b["vertex"], keyed_index, "{d}");
    assert!(
        b["vertex-name"]
            .as_str()
            .unwrap()
            .starts_with("sum-per-key"),
        "{d}"
    );
    assert_eq!(d["hot-keys"][0]["key"], "0", "{d}");
    let share = d["hot-keys"][0]["share"].as_f64().unwrap();
    assert!(share > 0.5, "{d}");
    assert!(
        d["verdict"].as_str().unwrap().contains("sum-per-key"),
        "{d}"
    );
    assert!(!d["evidence"].as_array().unwrap().is_empty(), "{d}");
    // The CLI's shape: the fix carries the machine form of the change …
    assert_eq!(d["fix"]["plan-change"]["kind"], "two-phase", "{d}");
    // … and `plan-change` shows it against the live graph.
    let c = &d["plan-change"];
    assert_eq!(c["kind"], "two-phase", "{d}");
    assert_eq!(c["operator"], "sum-per-key", "{d}");
    assert_eq!(c["vertex"], keyed.as_str(), "{d}");
    assert!(c["buckets"].as_u64().unwrap() >= 2, "{d}");
    assert_eq!(
        c["adds"],
        json!(["salt", "pre-aggregate (salted)", "combine"]),
        "{d}"
    );
    assert_eq!(c["removes"], json!(["sum-per-key"]), "{d}");
    // The key order of `sluice doctor --json`, plus `plan-change`.
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "verdict",
            "bottleneck",
            "cause",
            "hot-keys",
            "confidence",
            "evidence",
            "fix",
            "expected-effect",
            "undetermined",
            "source-splits",
            "lag",
            "plan-change"
        ]
    );
    // Neither a partitioned source nor source lag in this job.
    assert_eq!(d["source-splits"], Value::Null, "{d}");
    assert_eq!(d["lag"], Value::Null, "{d}");
}

#[test]
fn unknown_and_malformed_jobs_are_flink_errors_and_no_sample_is_said_so() {
    let env = StreamEnv::with_config(sluice_datastream::EnvConfig {
        parallelism: 1,
        metrics: sluice_runtime::telemetry::MetricsConfig {
            update_interval: Duration::from_secs(3600),
            window_slots: 1,
        },
        ..Default::default()
    });
    env.generate(u64::MAX, |i| i).map(|i: u64| i + 1).discard();
    let handle = env.launch().unwrap();
    let m = handle.monitor();
    let registry = Arc::new(JobRegistry::new());
    registry.register(m.clone());
    let server = serve("127.0.0.1:0".parse().unwrap(), registry).unwrap();
    let addr = server.local_addr();

    let d = get_json(addr, &format!("/jobs/{}/doctor", m.job_id));
    assert_eq!(d, json!({"status": "no-metrics-yet"}));

    let r = get(addr, "/jobs/0123456789abcdef0123456789abcdef/doctor");
    assert_eq!(r.status, 404, "{}", r.body);
    let errors = r.json()["errors"].as_array().unwrap().clone();
    assert_eq!(errors.len(), 1, "{}", r.body);
    assert!(
        errors[0].as_str().unwrap().contains("not found"),
        "{}",
        r.body
    );
    assert_eq!(get(addr, "/jobs/not-a-job/doctor").status, 400);
    assert_eq!(
        common::request(addr, "POST", &format!("/jobs/{}/doctor", m.job_id)).status,
        405
    );

    handle.cancel();
    let _ = handle.wait();
    server.shutdown();
}
