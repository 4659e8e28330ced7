//! `sluice doctor --url FLINK` on live Apache Flink 2.3 jobs whose bottleneck Flink reports per
//! chain, not per operator (the harness's MiniCluster scenarios, `scripts/flink/run-scenario.sh`):
//! - `chained`: generator -> heavy-map in one chain, busy and not backpressured: the flame
//!   graph's frames put the time in `heavy-map` (under Flink's `StreamMap`), which is named with
//!   a fix (split it from the chain, raise its parallelism) instead of "source ceiling";
//! - `blocking-sink`: generator -> map -> db-sink in one chain, the sink sleeping a round trip
//!   per record: a sink limit at `db-sink: Writer` with the sink's fixes (batch the writes, or
//!   scale it), never async I/O;
//! - `kryo`: a keyed job over a type that is no POJO: serialization, named as Kryo with Flink's
//!   fixes (a POJO or a registered serializer, `pipeline.generic-types: false`).
//!
//! Each test asks the doctor again (a fresh window) until it names a bottleneck or a deadline
//! passes: a young job on a loaded machine may show none at first. The answers of the last
//! diagnosis are saved (`--save`) under the test's temporary directory; the fixtures under
//! tests/fixtures/flink/flink-rest/{chained,blocking-sink,kryo}/ were captured so.
//!
//! Needs a JDK 17 and the Flink jars (see `autopilot_flink`); fails without them under `CI=true`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::autopilot_flink::{flink_available, warm_up, Flink, SERIAL};

/// `sluice doctor --url … --json --save DIR` once: the diagnosis as JSON.
fn doctor_json(url: &str, save: &std::path::Path) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["doctor", "--url", url, "--window", "5", "--json", "--save"])
        .arg(save)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `scenario`, then the doctor until its cause is `cause` (or two and a half minutes
/// pass); returns the last diagnosis. `None`: Flink is not available here (outside CI).
fn diagnose(scenario: &str, extra: &[&str], cause: &str) -> Option<Value> {
    let script = sluice_testkit::require("Apache Flink 2.3 (harness)", flink_available())?;
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let flink = Flink::start_scenario(&script, scenario, extra);
    let jid = flink.running_job();
    warm_up(&flink, &jid);
    let save = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("doctor-flink-{scenario}"));
    let _ = std::fs::remove_dir_all(&save);
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        let d = doctor_json(&flink.url, &save);
        if d["cause"] == cause || Instant::now() > deadline {
            eprintln!("{d:#}");
            return Some(d);
        }
        eprintln!("not yet {cause}: {}", d["verdict"]);
    }
}

fn evidence(d: &Value) -> String {
    d["evidence"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The share (%) the evidence gives an operator of the chain: "`name` 12%" or, for the one the
/// time is in, "the time is in `name` (62% of the working samples".
fn share_of(ev: &str, name: &str) -> Option<f64> {
    let line = ev.lines().find(|l| l.contains("the time is in"))?;
    let key = format!("the time is in `{name}` (");
    if let Some(i) = line.find(&key) {
        let rest = &line[i + key.len()..];
        return rest.split('%').next()?.trim().parse().ok();
    }
    let key = format!("`{name}` ");
    let i = line.rfind(&key)?;
    line[i + key.len()..].split('%').next()?.trim().parse().ok()
}

#[test]
fn a_heavy_map_chained_to_its_source_is_named_with_a_fix() {
    let Some(d) = diagnose("chained", &[], "under-provisioned") else {
        return;
    };
    let ev = evidence(&d);
    assert_eq!(d["cause"], "under-provisioned", "{d:#}");
    assert_eq!(
        d["bottleneck"]["vertex-name"], "Source: generator -> heavy-map",
        "{d:#}"
    );
    assert_eq!(d["bottleneck"]["operator"], "heavy-map", "{d:#}");
    let verdict = d["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("operator `heavy-map` (")
            && verdict.contains("% of the chain's flame-graph samples)"),
        "{verdict}"
    );
    // Named from Flink's frames: most samples under StreamMap, more than under the source.
    assert!(ev.contains("the time is in `heavy-map`"), "{ev}");
    assert!(ev.contains("`StreamMap`"), "{ev}");
    let map = share_of(&ev, "heavy-map").unwrap_or_else(|| panic!("{ev}"));
    let source = share_of(&ev, "Source: generator").unwrap_or_else(|| panic!("{ev}"));
    assert!(
        map > 50.0 && map > 2.0 * source,
        "{map}% vs {source}%: {ev}"
    );
    let fix = &d["fix"];
    assert_eq!(fix["plan-change"]["operator"], "heavy-map", "{d:#}");
    assert_eq!(fix["plan-change"]["ship"], "REBALANCE", "{d:#}");
    let text = fix["description"].as_str().unwrap();
    assert!(text.contains("split `heavy-map` from its chain"), "{text}");
    assert!(!d["verdict"].as_str().unwrap().contains("source ceiling"));
}

#[test]
fn a_chained_sink_waiting_on_its_database_gets_the_sinks_fixes() {
    let Some(d) = diagnose("blocking-sink", &[], "sink-limit") else {
        return;
    };
    let ev = evidence(&d);
    assert_eq!(d["cause"], "sink-limit", "{d:#}");
    assert_eq!(
        d["bottleneck"]["vertex-name"], "Source: generator -> map -> db-sink: Writer",
        "{d:#}"
    );
    assert_eq!(d["bottleneck"]["operator"], "db-sink: Writer", "{d:#}");
    assert!(ev.contains("off CPU") && ev.contains("a sleep"), "{ev}");
    assert!(ev.contains("records/s per subtask"), "{ev}");
    let fix = d["fix"].to_string();
    assert!(fix.contains("batch the writes"), "{fix}");
    assert!(
        !fix.to_lowercase().contains("async"),
        "no async I/O for a sink: {fix}"
    );
}

#[test]
fn kryo_is_named_with_flinks_fixes() {
    let Some(d) = diagnose("kryo", &[], "serialization") else {
        return;
    };
    let ev = evidence(&d);
    assert_eq!(d["cause"], "serialization", "{d:#}");
    assert_eq!(
        d["bottleneck"]["vertex-name"], "latest-per-key -> sink: Writer",
        "{d:#}"
    );
    assert!(
        ev.contains("Flink fell back to generic serialization (Kryo)"),
        "{ev}"
    );
    assert!(ev.contains("`latest-per-key` reads from its input"), "{ev}");
    let fix = d["fix"].to_string();
    assert!(
        fix.contains("POJO") && fix.contains("public no-arg constructor"),
        "{fix}"
    );
    assert!(fix.contains("pipeline.generic-types: false"), "{fix}");
    assert!(fix.contains("into `latest-per-key`"), "{fix}");
}

/// The captured answers of the three scenarios give the same verdicts offline, in the text report.
#[test]
fn the_captures_give_the_same_verdicts_from_dir() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/flink/flink-rest"
    );
    for (scenario, verdict, fix) in [
        (
            "chained",
            "Verdict: under-provisioned or expensive work at `Source: generator -> heavy-map`, \
             operator `heavy-map` (95% of the chain's flame-graph samples)",
            "Fix: raise `heavy-map` to parallelism 2 behind REBALANCE",
        ),
        (
            "blocking-sink",
            "Verdict: sink limit at `Source: generator -> map -> db-sink: Writer`, operator \
             `db-sink: Writer` (99% of the chain's flame-graph samples)",
            "Fix: batch the writes of `db-sink: Writer`",
        ),
        (
            "kryo",
            "Verdict: serialization cost at `latest-per-key -> sink: Writer`",
            "Fix: a POJO or a registered serializer for the type `to-event` emits",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["doctor", "--from-dir"])
            .arg(format!("{dir}/{scenario}"))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{out}");
        assert!(out.contains(verdict), "{scenario}: {out}");
        assert!(out.contains(fix), "{scenario}: {out}");
    }
}
