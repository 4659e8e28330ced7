//! The doctor's scenario suite live: `sluice run scenario <name>` with the REST API up, then
//! `sluice doctor --json` must name the cause and the bottleneck. One scenario at a time (a shared
//! lock), so two CPU-heavy jobs never compete for the cores.

mod common;
use common::{start_live, Job};

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn start(name: &str) -> (Job, String) {
    start_live(&["scenario", name])
}

/// Runs the scenario and `sluice doctor --window <window> --json` against it.
fn diagnose(name: &str, window: &str) -> Value {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (job, url) = start(name);
    // Let the metric window fill first.
    std::thread::sleep(Duration::from_millis(1500));
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["doctor", "--url", &url, "--window", window, "--json"])
        .output()
        .unwrap();
    drop(job);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn vertex_name(d: &Value) -> &str {
    d["bottleneck"]["vertex-name"].as_str().unwrap_or("")
}

fn subtasks(d: &Value) -> usize {
    d["bottleneck"]["subtasks"].as_array().map_or(0, Vec::len)
}

#[test]
fn skew_is_key_skew() {
    let d = diagnose("skew", "2");
    assert_eq!(d["cause"], "key-skew", "{d:#}");
    assert!(vertex_name(&d).starts_with("sum-per-key"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "sum-per-key", "{d:#}");
    assert_eq!(subtasks(&d), 1, "{d:#}");
    assert_eq!(d["hot-keys"][0]["key"], "0", "{d:#}");
}

#[test]
fn under_provisioned_names_the_map() {
    let d = diagnose("under-provisioned", "2");
    assert_eq!(d["cause"], "under-provisioned", "{d:#}");
    assert_eq!(vertex_name(&d), "Source: generator -> map", "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "map", "{d:#}");
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

#[test]
fn blocking_is_blocking_calls() {
    let d = diagnose("blocking", "2");
    assert_eq!(d["cause"], "blocking-calls", "{d:#}");
    assert!(vertex_name(&d).starts_with("blocking-call"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "blocking-call", "{d:#}");
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

#[test]
fn state_heavy_is_state_access() {
    let d = diagnose("state-heavy", "2");
    assert_eq!(d["cause"], "state-access", "{d:#}");
    assert!(vertex_name(&d).starts_with("state-heavy"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "state-heavy", "{d:#}");
}

#[test]
fn slow_sink_is_sink_limit() {
    let d = diagnose("slow-sink", "2");
    assert_eq!(d["cause"], "sink-limit", "{d:#}");
    assert_eq!(vertex_name(&d), "Sink: slow-sink", "{d:#}");
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

/// The doctor needs ≥ 4 samples to see stalls (one per second); 12 s covers two or three 2.2 s
/// stalls, each of which fully covers at least one sample however the samples fall (it passed
/// with three CPU hogs running beside the whole scenario suite).
#[test]
fn stalls_are_stalls() {
    let d = diagnose("stalls", "12");
    assert_eq!(d["cause"], "stalls", "{d:#}");
    assert!(vertex_name(&d).contains("stalling-map"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "stalling-map", "{d:#}");
}

#[test]
fn source_ceiling_is_the_source() {
    let d = diagnose("source-ceiling", "2");
    assert_eq!(d["cause"], "source-ceiling", "{d:#}");
    assert_eq!(vertex_name(&d), "Source: expensive-generator", "{d:#}");
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

#[test]
fn input_limited_has_no_bottleneck() {
    let d = diagnose("input-limited", "2");
    assert_eq!(d["cause"], "no-bottleneck", "{d:#}");
    assert!(d["bottleneck"].is_null(), "{d:#}");
}
