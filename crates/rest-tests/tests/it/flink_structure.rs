//! Every Flink 2.3 REST capture in `tests/fixtures/flink/flink-rest/skew/` whose endpoint Sluice
//! serves is compared with Sluice's answer for a running skew job: same keys in the same order,
//! same JSON value types (strings vs numbers, integers vs floats, objects, arrays, booleans).
//! Metric id lists and `?get=` values are compared by name and by value format too.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use common::{env, eventually, get, get_json, Served};
use serde_json::Value;
use sluice_jobs::skew::{build, SkewConfig};

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/flink/flink-rest/skew")
}

fn fixture(name: &str) -> Value {
    let p = fixture_dir().join(name);
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Fixture files that are not answers of endpoints Sluice serves, and why.
const NOT_SERVED: &[(&str, &str)] = &[
    ("flamegraph", "no flame graphs yet"),
    (
        "stream-graph-execution-plan",
        "client-side getExecutionPlan(), not REST (tested in sluice-jobs)",
    ),
];

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    Arr,
    Obj,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.is_f64() => Kind::Float,
        Value::Number(_) => Kind::Int,
        Value::String(_) => Kind::Str,
        Value::Array(_) => Kind::Arr,
        Value::Object(_) => Kind::Obj,
    }
}

/// Objects whose keys are data (not schema): extra keys are allowed, values still typed.
fn is_open_map(path: &str) -> bool {
    path.ends_with(".user-config")
}

/// Compares shapes recursively; returns every difference.
fn compare(flink: &Value, ours: &Value, path: &str, out: &mut Vec<String>) {
    let (kf, ko) = (kind(flink), kind(ours));
    if kf != ko {
        out.push(format!(
            "{path}: Flink has {kf:?} ({flink}), Sluice {ko:?} ({ours})"
        ));
        return;
    }
    match (flink, ours) {
        (Value::Object(f), Value::Object(o)) => {
            for (k, fv) in f {
                match o.get(k) {
                    Some(ov) => compare(fv, ov, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}: missing key '{k}'")),
                }
            }
            if is_open_map(path) {
                for (k, v) in o {
                    if !v.is_string() {
                        out.push(format!("{path}.{k}: user-config values must be strings"));
                    }
                }
                return;
            }
            for k in o.keys() {
                if !f.contains_key(k) {
                    out.push(format!("{path}: extra key '{k}'"));
                }
            }
            let fk: Vec<&String> = f.keys().filter(|k| o.contains_key(*k)).collect();
            let ok: Vec<&String> = o.keys().filter(|k| f.contains_key(*k)).collect();
            if fk != ok {
                out.push(format!(
                    "{path}: key order differs: Flink {fk:?}, Sluice {ok:?}"
                ));
            }
        }
        (Value::Array(f), Value::Array(o)) => {
            if f.len() == o.len() {
                for (i, (fv, ov)) in f.iter().zip(o).enumerate() {
                    compare(fv, ov, &format!("{path}[{i}]"), out);
                }
            } else if let Some(first) = f.first() {
                if o.is_empty() {
                    out.push(format!(
                        "{path}: Flink has {} elements, Sluice none",
                        f.len()
                    ));
                }
                for (i, ov) in o.iter().enumerate() {
                    compare(first, ov, &format!("{path}[{i}]"), out);
                }
            } else {
                out.push(format!(
                    "{path}: Flink's array is empty, Sluice has {} elements",
                    o.len()
                ));
            }
        }
        _ => {}
    }
}

pub(crate) fn assert_same_shape(file: &str, flink: &Value, ours: &Value) {
    let mut diffs = Vec::new();
    compare(flink, ours, "$", &mut diffs);
    assert!(
        diffs.is_empty(),
        "{file}: Sluice's answer differs from Flink's:\n  {}\nSluice: {ours}",
        diffs.join("\n  ")
    );
}

/// Task-scope metric names Sluice serves with Flink's name.
const TASK_METRICS: &[&str] = &[
    "busyTimeMsPerSecond",
    "backPressuredTimeMsPerSecond",
    "idleTimeMsPerSecond",
    "softBackPressuredTimeMsPerSecond",
    "hardBackPressuredTimeMsPerSecond",
    "maxSoftBackPressureTimeMs",
    "maxHardBackPressureTimeMs",
    "accumulateBusyTimeMs",
    "accumulateIdleTimeMs",
    "accumulateBackPressuredTimeMs",
    "isBackPressured",
    "numRecordsIn",
    "numRecordsInPerSecond",
    "numRecordsOut",
    "numRecordsOutPerSecond",
    "numBytesIn",
    "numBytesInPerSecond",
    "numBytesOut",
    "numBytesOutPerSecond",
    "numBuffersOut",
    "numBuffersOutPerSecond",
    "Shuffle.Netty.Input.Buffers.inPoolUsage",
    "Shuffle.Netty.Output.Buffers.outPoolUsage",
    "Shuffle.Netty.Input.Buffers.inputQueueLength",
    "Shuffle.Netty.Output.Buffers.outputQueueLength",
    "Shuffle.Netty.Input.Buffers.inputExclusiveBuffersUsage",
    "Shuffle.Netty.Input.Buffers.inputFloatingBuffersUsage",
    "Shuffle.Netty.Input.Buffers.inputQueueSize",
    "Shuffle.Netty.Output.Buffers.outputQueueSize",
];
const OPERATOR_METRICS: &[&str] = &["numRecordsIn", "numRecordsInPerSecond"];
/// Sluice additions (documented in the crate docs).
const TASK_EXTRAS: &[&str] = &[
    "cpuTimeMsPerSecond",
    "accumulateCpuTimeMs",
    "cpuWaitTimeMsPerSecond",
    "stateAccessTimeMsPerSecond",
    "serializationTimeMsPerSecond",
    "deserializationTimeMsPerSecond",
    "currentOutputWatermark",
    "numLateRecordsDropped",
    // Flink registers these two only when buffer debloating is enabled (the captures ran
    // without it); Sluice always serves them on tasks with an input gate.
    "Shuffle.Netty.Input.0.debloatedBufferSize",
    "Shuffle.Netty.Input.0.estimatedTimeToConsumeBuffersMs",
    "Shuffle.Netty.Input.0.inFlightBytes",
];
const OPERATOR_EXTRAS: &[&str] = &["busyTimeMsPerSecond", "accumulateBusyTimeMs"];

/// Whether a subtask-scope metric name (no index) is one Sluice claims to serve as Flink does.
fn served_flink_name(name: &str) -> bool {
    if TASK_METRICS.contains(&name) {
        return true;
    }
    match name.split_once('.') {
        Some((op, m)) => op != "Shuffle" && OPERATOR_METRICS.contains(&m),
        None => false,
    }
}

fn is_extra(name: &str) -> bool {
    TASK_EXTRAS.contains(&name)
        || name
            .split_once('.')
            .is_some_and(|(_, m)| OPERATOR_EXTRAS.contains(&m))
}

/// Strips a `<subtask>.` prefix.
fn without_index(id: &str) -> &str {
    match id.split_once('.') {
        Some((i, rest)) if i.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => id,
    }
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("metric list")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_string())
        .collect()
}

/// Our operator scope names differ where our skew job names operators differently.
fn rename(id: &str, renames: &[(&str, &str)]) -> String {
    let mut s = id.to_string();
    for (f, o) in renames {
        s = s.replace(f, o);
    }
    s
}

fn check_metric_ids(file: &str, flink: &Value, ours: &Value, renames: &[(&str, &str)]) {
    let f: BTreeSet<String> = ids(flink).iter().map(|i| rename(i, renames)).collect();
    let o: BTreeSet<String> = ids(ours).into_iter().collect();
    for id in &o {
        assert!(
            f.contains(id) || is_extra(without_index(id)),
            "{file}: Sluice serves '{id}', which Flink does not have and is not a documented extra"
        );
    }
    for id in &f {
        if served_flink_name(without_index(id)) {
            assert!(o.contains(id), "{file}: Flink has '{id}', Sluice does not");
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Format {
    Integer,
    Decimal,
    Boolean,
}

fn format_of(s: &str) -> Format {
    if s == "true" || s == "false" {
        Format::Boolean
    } else if s.parse::<i64>().is_ok() {
        Format::Integer
    } else {
        Format::Decimal
    }
}

/// `?get=` answers: same ids where Sluice has the metric, and the same printed Java type.
fn check_metric_values(file: &str, flink: &Value, ours: &Value) {
    let f: HashMap<String, String> = flink
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_string(),
                e["value"]
                    .as_str()
                    .expect("Flink values are strings")
                    .to_string(),
            )
        })
        .collect();
    let mut seen = BTreeSet::new();
    for e in ours.as_array().unwrap() {
        let id = e["id"].as_str().unwrap();
        let v = e["value"]
            .as_str()
            .unwrap_or_else(|| panic!("{file}: value of {id} is not a string: {e}"));
        let fv = f
            .get(id)
            .unwrap_or_else(|| panic!("{file}: Sluice answered '{id}', which was not asked"));
        assert_eq!(
            format_of(v),
            format_of(fv),
            "{file}: {id} prints as '{v}', Flink as '{fv}'"
        );
        seen.insert(id.to_string());
    }
    for id in f.keys() {
        if served_flink_name(without_index(id)) {
            assert!(
                seen.contains(id),
                "{file}: Flink answered '{id}', Sluice did not"
            );
        }
    }
}

#[test]
fn every_served_endpoint_has_flinks_json_structure() {
    let env = env(2);
    env.enable_checkpointing(std::time::Duration::from_millis(200));
    let job = build(
        &env,
        &SkewConfig {
            records: 1 << 40,
            ..SkewConfig::default()
        },
    )
    .unwrap();
    let s = Served::start(&env);
    let _ = &job;
    s.wait_for_metrics();
    let (jid, v0, v1) = (&s.jid, &s.vertices[0], &s.vertices[1]);
    assert!(s.vertex_names[0].starts_with("Source: generator -> map"));
    // Both vertices' subtasks must be running (and sampled) before shapes are compared.
    eventually("all subtasks running", || {
        let j = get_json(s.addr, &format!("/jobs/{jid}"));
        (j["status-counts"]["RUNNING"] == 4).then_some(())
    });
    eventually("a checkpoint completed", || {
        let c = get_json(s.addr, &format!("/jobs/{jid}/checkpoints"));
        (c["counts"]["completed"].as_u64() > Some(0)).then_some(())
    });
    eventually("backpressure measured", || {
        let b = get_json(s.addr, &format!("/jobs/{jid}/vertices/{v1}/backpressure"));
        (b["status"] == "ok").then_some(())
    });

    // Flink's v1 chain ends in a sink named "counting-sink: Writer", ours in "Sink: final-sums".
    let renames: &[(&str, &str)] = &[("counting-sink__Writer", "Sink__final-sums")];
    let vertex_of = |prefix: &str| if prefix == "v0" { v0 } else { v1 };

    let mut files: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let mut compared = 0;
    for file in &files {
        let stem = file.trim_end_matches(".json");
        if NOT_SERVED.iter().any(|(p, _)| stem.contains(p)) {
            continue;
        }
        let flink = fixture(file);
        let (path, check): (String, &str) = match stem {
            "config" => ("/config".into(), "shape"),
            "overview" => ("/overview".into(), "shape"),
            "jobs-overview" | "jobs-overview-later" => ("/jobs/overview".into(), "shape"),
            "taskmanagers" => ("/taskmanagers".into(), "shape"),
            "job" | "job-later" => (format!("/jobs/{jid}"), "shape"),
            "job-plan" => (format!("/jobs/{jid}/plan"), "shape"),
            "job-config" => (format!("/jobs/{jid}/config"), "shape"),
            "job-checkpoints" | "job-checkpoints-later" => {
                (format!("/jobs/{jid}/checkpoints"), "checkpoints")
            }
            "job-checkpoints-config" => (format!("/jobs/{jid}/checkpoints/config"), "shape"),
            _ => {
                let (vn, rest) = stem.split_once('-').expect("vN-... file");
                let vid = vertex_of(vn);
                let base = format!("/jobs/{jid}/vertices/{vid}");
                let suffix = if vn == "v0" {
                    rest.strip_prefix("source-generator-map")
                } else {
                    rest.strip_prefix("sum-per-key-counting-sink-writer")
                }
                .unwrap_or_else(|| panic!("unexpected fixture {file}"));
                match suffix {
                    "" => (base, "shape"),
                    "-backpressure-call1" | "-backpressure-call2" | "-backpressure-call3" => {
                        (format!("{base}/backpressure"), "shape")
                    }
                    "-subtasks-metrics-aggregated" => (
                        format!("{base}/subtasks/metrics?get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond,idleTimeMsPerSecond"),
                        "shape",
                    ),
                    "-metrics-list" => (format!("{base}/metrics"), "ids"),
                    "-subtasks-metrics-list" => (format!("{base}/subtasks/metrics"), "ids"),
                    "-subtasktimes" => (format!("{base}/subtasktimes"), "shape"),
                    "-taskmanagers" => (format!("{base}/taskmanagers"), "shape"),
                    "-watermarks" => (format!("{base}/watermarks"), "shape"),
                    "-accumulators" => (format!("{base}/accumulators"), "shape"),
                    s if s.starts_with("-subtask") => {
                        let rest = &s["-subtask".len()..];
                        let (k, what) = rest.split_at(1);
                        match what {
                            "" => (format!("{base}/subtasks/{k}"), "shape"),
                            "-metrics" | "-metrics-all-values" => {
                                let get = ids(&flink)
                                    .iter()
                                    .map(|i| rename(i, renames))
                                    .collect::<Vec<_>>()
                                    .join(",");
                                (format!("{base}/subtasks/{k}/metrics?get={get}"), "values")
                            }
                            _ => panic!("unmapped fixture {file}"),
                        }
                    }
                    _ => panic!("unmapped fixture {file}: add it to the mapping or NOT_SERVED"),
                }
            }
        };
        let r = get(s.addr, &path);
        assert_eq!(r.status, 200, "{file} → GET {path}: {}", r.body);
        let ours = r.json();
        match check {
            "shape" => assert_same_shape(file, &flink, &ours),
            "checkpoints" => {
                // The capture's history holds completed checkpoints only; ours may start with
                // one in progress (a different entry type, without a path), so compare those.
                let mut ours = ours;
                if let Some(h) = ours["history"].as_array_mut() {
                    h.retain(|e| e["className"] == "completed");
                }
                assert_same_shape(file, &flink, &ours)
            }
            "ids" => {
                assert_same_shape(file, &flink, &ours);
                check_metric_ids(file, &flink, &ours, renames);
            }
            "values" => {
                assert_same_shape(file, &flink, &ours);
                let flink_renamed: Value = Value::Array(
                    flink
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|e| {
                            serde_json::json!({
                                "id": rename(e["id"].as_str().unwrap(), renames),
                                "value": e["value"].clone()
                            })
                        })
                        .collect(),
                );
                check_metric_values(file, &flink_renamed, &ours);
            }
            _ => unreachable!(),
        }
        compared += 1;
    }
    assert!(compared >= 30, "only {compared} fixture files compared");

    // Flink's plan endpoint output is also embedded in the job details.
    let job = get_json(s.addr, &format!("/jobs/{jid}"));
    let plan = get_json(s.addr, &format!("/jobs/{jid}/plan"));
    assert_eq!(job["plan"], plan["plan"]);
}
