//! The doctor on real answers of a standalone Flink 2.3 session cluster (JobManager and
//! TaskManager processes, `scripts/flink/cluster.sh`; captures in
//! tests/fixtures/flink/flink-rest/{gc-standalone,standalone-blocking,standalone-computing}/),
//! read through the doctor's own probe ([`RestProbe`]) over the saved files, so the placement of
//! subtasks on TaskManagers and the TaskManagers' JVM metrics are read as on a live cluster.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use sluice_doctor::flink_rest::taskmanagers::{
    failures_by_taskmanager, host_sample, subtask_placement,
};
use sluice_doctor::{
    examine, Cause, DoctorError, Examination, ExamineOptions, RestProbe, RestSource,
};

fn dir(capture: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/flink/flink-rest")
        .join(capture)
}

fn read(path: PathBuf) -> Option<Value> {
    Some(serde_json::from_str(&std::fs::read_to_string(path).ok()?).unwrap())
}

/// Saved answers in `sluice doctor --save`'s layout (`sluice-client`'s `layout`; the few paths
/// the probe asks for, mapped here again so this crate stays free of the client).
struct Saved {
    dir: PathBuf,
    stems: Vec<(String, String)>,
}

impl Saved {
    fn open(capture: &str) -> Saved {
        let dir = dir(capture);
        let job = read(dir.join("job.json")).unwrap();
        let stems = job["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut slug = String::new();
                for c in v["name"].as_str().unwrap().chars() {
                    if c.is_ascii_alphanumeric() {
                        slug.push(c.to_ascii_lowercase());
                    } else if !slug.is_empty() && !slug.ends_with('-') {
                        slug.push('-');
                    }
                }
                let slug = slug.trim_end_matches('-').to_string();
                (
                    v["id"].as_str().unwrap().to_string(),
                    format!("v{i}-{slug}"),
                )
            })
            .collect();
        Saved { dir, stems }
    }

    fn file(&self, path: &str) -> Option<String> {
        let route = path.split('?').next().unwrap();
        let seg: Vec<&str> = route.trim_matches('/').split('/').collect();
        let stem = |vid: &str| {
            self.stems
                .iter()
                .find(|(id, _)| id == vid)
                .map(|(_, s)| s.clone())
        };
        Some(match seg.as_slice() {
            ["jobs", "overview"] => "jobs-overview.json".into(),
            ["jobs", _] => "job.json".into(),
            ["jobs", _, "exceptions"] => "job-exceptions.json".into(),
            ["jobs", _, "vertices", vid] => format!("{}.json", stem(vid)?),
            ["jobs", _, "vertices", vid, "subtasks", n, "metrics"] => {
                format!("{}-subtask{n}-metrics.json", stem(vid)?)
            }
            ["taskmanagers"] => "taskmanagers.json".into(),
            ["taskmanagers", tm, "metrics"] => format!("taskmanager-{tm}-metrics.json"),
            _ => return None,
        })
    }
}

impl RestSource for Saved {
    fn get(&self, path: &str) -> Result<Option<Value>, DoctorError> {
        Ok(self.file(path).and_then(|f| read(self.dir.join(f))))
    }
    fn describe(&self) -> String {
        self.dir.display().to_string()
    }
    fn is_live(&self) -> bool {
        false
    }
    fn pause(&self, _: Duration) {}
}

fn examined(capture: &str) -> Examination {
    let saved = Saved::open(capture);
    let opts = ExamineOptions {
        window: 0.0,
        flame_graphs: false,
    };
    examine(&RestProbe::new(&saved), None, &opts).unwrap()
}

#[test]
fn gc_capture_is_gc_stalls_on_the_small_taskmanager() {
    let e = examined("gc-standalone");
    let d = &e.diagnosis;
    let b = d.bottleneck.as_ref().expect("a bottleneck");
    assert_eq!(b.vertex_name, "retain-map");
    assert_eq!(b.operator.as_deref(), Some("retain-map"));
    assert_eq!(
        d.cause,
        Cause::GcStalls {
            taskmanager: "tm-small".into()
        },
        "{:#?}",
        d.evidence
    );
    assert!(d.verdict().contains("TaskManager `tm-small`"));
    // The capture's figures: 347 ms/s of GC, 93 MB used of a 112 MB heap, task heap 48 MB.
    let gc = d
        .evidence
        .iter()
        .find(|l| l.contains("ms of every second in garbage collection"))
        .unwrap();
    assert!(gc.contains("spends 347 ms"), "{gc}");
    assert!(
        d.evidence
            .iter()
            .any(|l| l.contains("79% full") || l.contains("(93 MB used of 112 MB max)")),
        "{:#?}",
        d.evidence
    );
    let fix = d.fix.as_ref().unwrap();
    assert!(fix
        .change
        .contains("taskmanager.memory.task.heap.size: 96m"));
    assert!(fix.description.contains("from 48 MB to 96 MB"));
    assert!(fix.description.contains("pipeline.object-reuse: true"));
    assert!(fix.description.contains("state.backend.type: rocksdb"));
    assert!(
        fix.plan_change.is_none(),
        "a cluster setting, not a plan change"
    );
    // Every subtask knows its TaskManager; the generator and the sink share tm-small's slot.
    let hosts: Vec<&str> = e
        .job
        .vertices
        .iter()
        .flat_map(|v| &v.subtasks)
        .map(|s| s.host.as_ref().unwrap().taskmanager.as_str())
        .collect();
    assert_eq!(hosts, ["tm-small"; 3]);
    assert!(
        e.job.vertices[1].subtasks[0]
            .host
            .as_ref()
            .unwrap()
            .alone_tasks
            .is_none(),
        "tm-small runs three vertices: its CPU is not retain-map's"
    );
}

#[test]
fn a_vertex_alone_on_its_taskmanager_gets_its_cpu_from_the_process() {
    // Waiting (Thread.sleep per record): busy 98 %, process CPU 2 % of 2 cores → blocking calls.
    let e = examined("standalone-blocking");
    let d = &e.diagnosis;
    assert_eq!(d.cause, Cause::BlockingCalls, "{:#?}", d.evidence);
    assert!(
        d.evidence
            .iter()
            .any(|l| l.starts_with("TaskManager `tm-b` runs only `work -> sink: Writer`")),
        "{:#?}",
        d.evidence
    );
    assert!(
        !d.undetermined.iter().any(|u| u.starts_with("CPU time")),
        "{:#?}",
        d.undetermined
    );
    // Computing (LCG rounds per record): busy 100 %, process CPU 41 % of 2 cores → real work.
    let e = examined("standalone-computing");
    let d = &e.diagnosis;
    assert_eq!(d.cause, Cause::UnderProvisioned, "{:#?}", d.evidence);
    assert!(
        d.evidence
            .iter()
            .any(|l| l.starts_with("the busy time is CPU time (cpu 82% of busy 100%)")),
        "{:#?}",
        d.evidence
    );
}

#[test]
fn the_readers_take_the_real_answers() {
    let gc = dir("gc-standalone");
    let placed = subtask_placement(&read(gc.join("v1-retain-map.json")).unwrap());
    assert_eq!(placed, vec![Some("tm-small".to_string())]);
    // A TaskManager lost to GC thrashing (retain-mb above the heap): its heartbeat timed out.
    let failures =
        failures_by_taskmanager(&read(gc.join("job-exceptions-heap-exhausted.json")).unwrap());
    let (n, last) = &failures["small"];
    assert_eq!(*n, 1);
    assert!(
        last.contains("heartbeat of TaskManager with id small timed out"),
        "{last}"
    );
    let big = host_sample(
        "tm-big",
        None,
        read(gc.join("taskmanager-tm-big-metrics.json")).as_ref(),
        None,
        None,
    );
    assert_eq!(big.gc_ms, Some(4.05));
    assert_eq!(big.heap_max, Some(603_979_776.0));
    assert!(
        big.old_gc_count.is_none(),
        "tm-big had no old-generation collection"
    );
}
