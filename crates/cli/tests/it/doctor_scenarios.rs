//! The doctor's scenario suite live: `sluice run scenario <name>` with the REST API up, then
//! `sluice doctor --json` must name the cause and the bottleneck. One scenario at a time (a shared
//! lock), so two CPU-heavy jobs never compete for the cores.

use crate::common;
use common::{start_live, Job};

use serde_json::Value;

use crate::common::ONE_AT_A_TIME;

fn start(name: &str) -> (Job, String) {
    start_live(&["scenario", name])
}

/// Runs the scenario and `sluice doctor --window <window> --json` against it, again and again
/// until the doctor names `cause` or two minutes passed; returns the last diagnosis. A fresh
/// job's metric window is still filling, and on a loaded machine threads that wait for a CPU
/// look busy for a while: the test waits until the evidence is clear instead of diagnosing once
/// after a fixed sleep, and then asserts all of it.
fn diagnose(name: &str, window: &str, cause: &str) -> Value {
    diagnose_with(name, window, cause, &["--no-flame-graphs"])
}

/// [`diagnose`] with extra `sluice doctor` flags.
fn diagnose_with(name: &str, window: &str, cause: &str, extra: &[&str]) -> Value {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (job, url) = start(name);
    let d = common::doctor_with(&url, window, cause, extra);
    drop(job);
    d
}

fn vertex_name(d: &Value) -> &str {
    d["bottleneck"]["vertex-name"].as_str().unwrap_or("")
}

fn subtasks(d: &Value) -> usize {
    d["bottleneck"]["subtasks"].as_array().map_or(0, Vec::len)
}

#[test]
fn skew_is_key_skew() {
    let d = diagnose("skew", "2", "key-skew");
    assert_eq!(d["cause"], "key-skew", "{d:#}");
    assert!(vertex_name(&d).starts_with("sum-per-key"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "sum-per-key", "{d:#}");
    assert_eq!(subtasks(&d), 1, "{d:#}");
    assert_eq!(d["hot-keys"][0]["key"], "0", "{d:#}");
}

#[test]
fn under_provisioned_names_the_map() {
    let d = diagnose("under-provisioned", "2", "under-provisioned");
    assert_eq!(d["cause"], "under-provisioned", "{d:#}");
    assert_eq!(vertex_name(&d), "Source: generator -> map", "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "map", "{d:#}");
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

#[test]
fn blocking_is_blocking_calls() {
    // The lookup takes ~2 ms per record and one record in 256 is timed per operator, so a
    // short window may have no per-operator time yet: look again (the fix names the lookup
    // either way, see below).
    let mut d = diagnose("blocking", "2", "blocking-calls");
    for _ in 0..3 {
        if d["bottleneck"]["operator"] == "blocking-call" {
            break;
        }
        d = diagnose("blocking", "3", "blocking-calls");
    }
    assert_eq!(d["cause"], "blocking-calls", "{d:#}");
    assert!(vertex_name(&d).starts_with("blocking-call"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "blocking-call", "{d:#}");
    assert_eq!(
        d["fix"]["plan-change"]["operator"], "blocking-call",
        "{d:#}"
    );
    assert!(
        d["fix"]["change"]
            .as_str()
            .unwrap()
            .starts_with("async lookup in `blocking-call` with capacity "),
        "{d:#}"
    );
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

/// By default the doctor also reads the bottleneck's flame graphs: its evidence names where
/// the busy subtasks spend their time (off CPU waiting for the lookup's socket, the top on-CPU
/// frames).
#[test]
fn blocking_evidence_comes_from_the_flame_graphs_too() {
    let d = diagnose_with("blocking", "2", "blocking-calls", &[]);
    assert_eq!(d["cause"], "blocking-calls", "{d:#}");
    let evidence: Vec<&str> = d["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        evidence.iter().any(|e| e.starts_with("flame graph: ")
            && e.contains("off CPU")
            && e.contains("socket or file I/O")),
        "{d:#}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with("flame graph: ") && e.contains("on-CPU samples")),
        "{d:#}"
    );
}

#[test]
fn state_heavy_is_state_access() {
    let d = diagnose("state-heavy", "2", "state-access");
    assert_eq!(d["cause"], "state-access", "{d:#}");
    assert!(vertex_name(&d).starts_with("state-heavy"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "state-heavy", "{d:#}");
}

#[test]
fn slow_sink_is_sink_limit() {
    let d = diagnose("slow-sink", "2", "sink-limit");
    assert_eq!(d["cause"], "sink-limit", "{d:#}");
    assert_eq!(vertex_name(&d), "Sink: slow-sink", "{d:#}");
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

/// The doctor needs ≥ 4 samples to see stalls (one per second); 12 s covers two or three 2.2 s
/// stalls, each of which fully covers at least one sample however the samples fall (it passed
/// with three CPU hogs running beside the whole scenario suite).
#[test]
fn stalls_are_stalls() {
    let d = diagnose("stalls", "12", "stalls");
    assert_eq!(d["cause"], "stalls", "{d:#}");
    assert!(vertex_name(&d).contains("stalling-map"), "{d:#}");
    assert_eq!(d["bottleneck"]["operator"], "stalling-map", "{d:#}");
}

#[test]
fn source_ceiling_is_the_source() {
    let d = diagnose("source-ceiling", "2", "source-ceiling");
    assert_eq!(d["cause"], "source-ceiling", "{d:#}");
    assert_eq!(vertex_name(&d), "Source: expensive-generator", "{d:#}");
    assert_eq!(subtasks(&d), 2, "{d:#}");
}

#[test]
fn input_limited_has_no_bottleneck() {
    let d = diagnose("input-limited", "2", "no-bottleneck");
    assert_eq!(d["cause"], "no-bottleneck", "{d:#}");
    assert!(d["bottleneck"].is_null(), "{d:#}");
}
