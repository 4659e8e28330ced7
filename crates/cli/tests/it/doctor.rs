//! `sluice doctor --json` against a live `sluice run` (the embedded REST API): a hot key, and an
//! expensive map without skew.

use crate::common;
use common::{doctor, start_live, Job};

fn start_job(extra: &[&str]) -> (Job, String) {
    let mut args = vec!["skew", "--records", "100000000000"];
    args.extend_from_slice(extra);
    start_live(&args)
}

#[test]
fn doctor_finds_the_hot_key_live() {
    let (job, url) = start_job(&[]);
    let d = doctor(&url, "key-skew");
    drop(job);
    assert_eq!(d["cause"], "key-skew", "{d:#}");
    let b = &d["bottleneck"];
    assert!(
        b["vertex-name"]
            .as_str()
            .unwrap()
            .starts_with("sum-per-key"),
        "{d:#}"
    );
    assert_eq!(b["operator"], "sum-per-key", "{d:#}");
    assert_eq!(b["subtasks"].as_array().unwrap().len(), 1, "{d:#}");
    assert_eq!(d["hot-keys"][0]["key"], "0", "{d:#}");
    assert!(d["hot-keys"][0]["share"].as_f64().unwrap() > 0.7, "{d:#}");
    assert_eq!(d["fix"]["plan-change"]["kind"], "two-phase", "{d:#}");
    assert_eq!(d["fix"]["plan-change"]["operator"], "sum-per-key", "{d:#}");
    assert!(
        d["undetermined"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| !u.as_str().unwrap().starts_with("CPU")),
        "Sluice reports CPU time: {d:#}"
    );
}

#[test]
fn doctor_names_the_expensive_map_live() {
    let (job, url) = start_job(&["--hot-key-share", "0", "--map-work", "2000"]);
    let d = doctor(&url, "under-provisioned");
    drop(job);
    assert_eq!(d["cause"], "under-provisioned", "{d:#}");
    assert_eq!(d["bottleneck"]["vertex-name"], "Source: generator -> map");
    assert_eq!(d["bottleneck"]["operator"], "map", "{d:#}");
    let change = &d["fix"]["plan-change"];
    assert_eq!(change["kind"], "parallelism", "{d:#}");
    assert_eq!(change["operator"], "map");
    assert_eq!(change["ship"], "REBALANCE");
    assert!(change["parallelism"].as_u64().unwrap() > 2, "{d:#}");
}
