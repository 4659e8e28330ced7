//! `sluice doctor --from-dir` on the real Flink 2.3 capture, and `--save` → `--from-dir` round trip
//! against a live `sluice run skew`.

use crate::common;
use common::{start_live, Job};

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const FLINK_SKEW: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-rest/skew"
);

fn sluice(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let (ok, out, err) = sluice(args);
    assert!(ok, "{args:?}: {out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The capture of a standalone Flink cluster (`scripts/flink/cluster.sh`, `--save`d by this
/// binary): the TaskManagers' own answers are read back too, so the verdict names the one whose
/// garbage collection stalls the bottleneck.
#[test]
fn from_dir_reads_a_standalone_clusters_taskmanagers() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/flink/flink-rest/gc-standalone"
    );
    let d = json_of(&["doctor", "--from-dir", dir, "--json", "--no-flame-graphs"]);
    assert_eq!(d["cause"], "gc-stalls", "{d:#}");
    assert_eq!(d["bottleneck"]["vertex-name"], "retain-map", "{d:#}");
    assert!(
        d["verdict"]
            .as_str()
            .unwrap()
            .contains("TaskManager `tm-small`"),
        "{d:#}"
    );
}

#[test]
fn from_dir_diagnoses_the_flink_capture() {
    let d = json_of(&["doctor", "--from-dir", FLINK_SKEW, "--json"]);
    assert_eq!(d["cause"], "key-skew", "{d:#}");
    assert_eq!(
        d["bottleneck"]["vertex-name"], "sum-per-key -> counting-sink: Writer",
        "{d:#}"
    );
    assert_eq!(d["bottleneck"]["subtasks"], serde_json::json!([1]), "{d:#}");
    assert_eq!(d["fix"]["plan-change"]["kind"], "two-phase", "{d:#}");
    let unknown: Vec<&str> = d["undetermined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert!(unknown.iter().any(|u| u.starts_with("CPU time")), "{d:#}");
    assert!(unknown.iter().any(|u| u.starts_with("hot keys")), "{d:#}");
    // Flink's checkpoint stats in the capture: 1 of 19 aligned checkpoints failed while the
    // source was backpressured.
    let advice = d["checkpoint-advice"].as_str().unwrap_or("");
    assert!(
        advice.contains("1 of 19 checkpoints failed") && advice.contains("unaligned"),
        "{d:#}"
    );
}

/// The debloating advice follows the job's own setting: the capture's job ran with Flink's
/// default (off), so enabling it is advised; the same answers with the job's configuration
/// saying it is on (Flink's `/jobs/:id/jobmanager/config`) advise unaligned checkpoints only.
#[test]
fn debloating_advice_reads_the_jobs_setting() {
    let advice = |dir: &str| {
        let d = json_of(&["doctor", "--from-dir", dir, "--json"]);
        d["checkpoint-advice"].as_str().unwrap_or("").to_string()
    };
    let off = advice(FLINK_SKEW);
    assert!(off.contains("buffer-debloat.enabled: true"), "{off}");
    let dir = fresh_dir("debloat-on");
    for e in std::fs::read_dir(FLINK_SKEW).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    std::fs::write(
        dir.join("job-jobmanager-config.json"),
        r#"[{"key":"taskmanager.network.memory.buffer-debloat.enabled","value":"true"}]"#,
    )
    .unwrap();
    let on = advice(dir.to_str().unwrap());
    assert!(
        on.contains("unaligned") && !on.contains("buffer-debloat"),
        "{on}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn from_dir_prints_the_text_report() {
    let (ok, out, err) = sluice(&["doctor", "--from-dir", FLINK_SKEW]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("RestScenario-skew  3ae16f48a563821c4f57820703ba6b0f"),
        "{out}"
    );
    assert!(
        out.contains("sum-per-key -> counting-sink: Writer (2/2)  busy 100%  backpressured   0%"),
        "{out}"
    );
    assert!(
        out.contains("Verdict: key skew at `sum-per-key -> counting-sink: Writer`"),
        "{out}"
    );
}

#[test]
fn from_dir_rejects_a_directory_without_answers() {
    let (ok, _, err) = sluice(&["doctor", "--from-dir", env!("CARGO_MANIFEST_DIR")]);
    assert!(!ok);
    assert!(err.contains("job.json"), "{err}");
}

fn start_job() -> (Job, String) {
    start_live(&["skew", "--records", "100000000000"])
}

fn fresh_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("sluice-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn save_then_from_dir_gives_the_same_diagnosis() {
    let (job, url) = start_job();
    std::thread::sleep(Duration::from_millis(1200));
    let dir = fresh_dir("doctor-save");
    let d = dir.to_str().unwrap();
    // One sample, so the saved snapshot is exactly what was diagnosed.
    let live = json_of(&[
        "doctor", "--url", &url, "--window", "0", "--save", d, "--json",
    ]);
    drop(job);
    for f in [
        "jobs-overview.json",
        "job.json",
        "v0-source-generator-map-subtask0-metrics.json",
        "v1-sum-per-key-sink-final-sums-subtask1-metrics.json",
        "v1-sum-per-key-sink-final-sums-subtasks-metrics-aggregated.json",
        "v1-sum-per-key-sink-final-sums-hot-keys.json",
    ] {
        assert!(dir.join(f).exists(), "{f} missing in {}", dir.display());
    }
    let saved = json_of(&["doctor", "--from-dir", d, "--json"]);
    assert_eq!(saved, live);
    assert_eq!(saved["cause"], "key-skew", "{saved:#}");
    assert_eq!(saved["hot-keys"][0]["key"], "0", "{saved:#}");
    let _ = std::fs::remove_dir_all(&dir);
}
