//! The doctor over real Flink 2.3 answers captured from the harness's scenarios where Flink
//! reports time per chain (tests/fixtures/flink/flink-rest/{chained,blocking-sink,kryo}/, saved
//! by `sluice doctor --save`): the whole examination, deterministic (saved answers are one
//! snapshot; the flame graphs are those the live doctor fetched).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::{examine, Diagnosis, DoctorError, ExamineOptions, RestProbe, RestSource};

/// Saved answers in the `--save` layout (`sluice-client`'s; the paths the doctor asks for).
struct Saved {
    dir: PathBuf,
    stems: HashMap<String, String>,
}

fn stem(i: usize, name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    format!("v{i}-{}", slug.trim_end_matches('-'))
}

impl Saved {
    fn open(scenario: &str) -> Saved {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/flink/flink-rest"
        ))
        .join(scenario);
        let job: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("job.json")).unwrap()).unwrap();
        let stems = job["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, v)| {
                (
                    v["id"].as_str().unwrap().to_string(),
                    stem(i, v["name"].as_str().unwrap()),
                )
            })
            .collect();
        Saved { dir, stems }
    }

    fn file(&self, path: &str) -> Option<String> {
        let (route, query) = path.split_once('?').unwrap_or((path, ""));
        let seg: Vec<&str> = route.trim_matches('/').split('/').collect();
        let st = |vid: &str| self.stems.get(vid).cloned();
        let param = |k: &str| {
            query
                .split('&')
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
        };
        Some(match seg.as_slice() {
            ["jobs", "overview"] => "jobs-overview.json".into(),
            ["jobs", _] => "job.json".into(),
            ["jobs", _, "vertices", v, "subtasks", n, "metrics"] => {
                format!("{}-subtask{n}-metrics.json", st(v)?)
            }
            ["jobs", _, "vertices", v, "flamegraph"] => match param("subtaskindex") {
                Some(n) => format!("{}-flamegraph-{}-subtask{n}.json", st(v)?, param("type")?),
                None => format!("{}-flamegraph-{}.json", st(v)?, param("type")?),
            },
            ["jobs", _, "checkpoints"] => "job-checkpoints.json".into(),
            ["jobs", _, "checkpoints", "config"] => "job-checkpoints-config.json".into(),
            ["jobs", _, "config"] => "job-config.json".into(),
            _ => return None,
        })
    }
}

impl RestSource for Saved {
    fn get(&self, path: &str) -> Result<Option<Value>, DoctorError> {
        let Some(f) = self.file(path) else {
            return Ok(None);
        };
        let Ok(text) = std::fs::read_to_string(self.dir.join(f)) else {
            return Ok(None);
        };
        Ok(serde_json::from_str(&text).ok())
    }
    fn describe(&self) -> String {
        self.dir.display().to_string()
    }
    fn is_live(&self) -> bool {
        false
    }
    fn pause(&self, _: Duration) {}
}

fn diagnose(scenario: &str) -> Diagnosis {
    let src = Saved::open(scenario);
    let opts = ExamineOptions {
        window: 0.0,
        flame_graphs: true,
    };
    let e = examine(&RestProbe::new(&src), None, &opts).unwrap();
    eprintln!("{}\n{:#?}", e.diagnosis.verdict(), e.diagnosis);
    e.diagnosis
}

fn evidence(d: &Diagnosis) -> String {
    d.evidence.join("\n")
}

#[test]
fn a_heavy_map_chained_to_its_source_is_named_from_the_streammap_frames() {
    let d = diagnose("chained");
    let b = d.bottleneck.clone().unwrap();
    assert_eq!(d.cause.name(), "under-provisioned");
    assert_eq!(b.vertex_name, "Source: generator -> heavy-map");
    assert_eq!(b.operator.as_deref(), Some("heavy-map"));
    assert!(d.verdict().contains(
        "at `Source: generator -> heavy-map`, operator `heavy-map` (95% of the chain's flame-graph samples)"
    ), "{}", d.verdict());
    let ev = evidence(&d);
    assert!(ev.contains("the time is in `heavy-map`"), "{ev}");
    assert!(
        ev.contains("under Flink's `StreamMap`, user code `sluice.harness.SkewWorkload$Work.map`"),
        "{ev}"
    );
    let fix = d.fix.unwrap();
    assert!(
        fix.description
            .starts_with("split `heavy-map` from its chain"),
        "{}",
        fix.description
    );
    assert_eq!(
        fix.plan_change,
        Some(crate::PlanChange::Parallelism {
            operator: "heavy-map".into(),
            parallelism: 2,
            ship: crate::ShipStrategy::Rebalance,
        })
    );
}

#[test]
fn the_same_chain_without_its_flame_graph_cannot_name_the_operator() {
    let src = Saved::open("chained");
    let opts = ExamineOptions {
        window: 0.0,
        flame_graphs: false,
    };
    let d = examine(&RestProbe::new(&src), None, &opts)
        .unwrap()
        .diagnosis;
    assert_eq!(d.cause.name(), "source-ceiling");
    assert_eq!(d.bottleneck.unwrap().operator, None);
    assert!(d.fix.is_none());
}

#[test]
fn a_chained_sink_sleeping_per_record_is_told_to_batch_its_writes() {
    let d = diagnose("blocking-sink");
    let b = d.bottleneck.clone().unwrap();
    assert_eq!(d.cause.name(), "sink-limit");
    assert_eq!(b.vertex_name, "Source: generator -> map -> db-sink: Writer");
    assert_eq!(b.operator.as_deref(), Some("db-sink: Writer"));
    let ev = evidence(&d);
    assert!(ev.contains("off CPU in a sleep"), "{ev}");
    assert!(ev.contains("records/s per subtask and waits"), "{ev}");
    let fix = d.fix.unwrap();
    assert!(
        fix.description.starts_with("batch the writes"),
        "{}",
        fix.description
    );
    assert!(fix
        .description
        .contains("split `db-sink: Writer` from its chain"));
    assert!(!format!("{fix:?}").to_lowercase().contains("async"));
    assert_eq!(fix.plan_change, None);
}

#[test]
fn kryo_is_named_at_the_keyed_input_with_flinks_fixes() {
    let d = diagnose("kryo");
    let b = d.bottleneck.clone().unwrap();
    assert_eq!(d.cause.name(), "serialization");
    assert_eq!(b.vertex_name, "latest-per-key -> sink: Writer");
    let ev = evidence(&d);
    assert!(
        ev.contains("Flink fell back to generic serialization (Kryo)"),
        "{ev}"
    );
    assert!(ev.contains("`latest-per-key` reads from its input"), "{ev}");
    let fix = d.fix.unwrap();
    assert!(fix.description.contains("public no-arg constructor"));
    assert!(fix.description.contains("pipeline.serialization-config"));
    assert!(
        fix.change.contains("`pipeline.generic-types: false`"),
        "{}",
        fix.change
    );
}

// Synthetic Flink-shaped stacks (no per-operator metrics) for the paths the captures do not take.

const SRC: &str = "org.apache.flink.streaming.api.operators.SourceOperator.emitNext:535";
const OUT: &str =
    "org.apache.flink.streaming.runtime.tasks.CopyingChainingOutput.pushToOperator:75";
const MAP: &str = "org.apache.flink.streaming.api.operators.StreamMap.processElement:37";
const SINK: &str =
    "org.apache.flink.streaming.runtime.operators.sink.SinkWriterOperator.processElement:184";

/// One vertex `Source: gen -> map -> out: Writer` (p=1, busy, no consumers) with these stacks.
fn one_chain(on: &[(&[&str], u64)], off: &[(&[&str], u64)], rate: f64) -> crate::JobView {
    use crate::profile::tests::tree;
    let s = crate::SubtaskSample {
        busy: Some(1000.0),
        backpressured: Some(0.0),
        idle: Some(0.0),
        records_in: Some(0.0),
        records_out: Some(0.0),
        last_records_in: Some(rate),
        ..Default::default()
    };
    let ops = ["Source: gen", "map", "out: Writer"];
    crate::JobView {
        vertices: vec![crate::VertexView {
            id: "v0".into(),
            name: ops.join(" -> "),
            parallelism: 1,
            is_source: true,
            is_sink: true,
            operators: ops.iter().map(|o| o.to_string()).collect(),
            subtasks: vec![s],
            profile: Some(crate::VertexProfile {
                on_cpu: tree(on),
                off_cpu: tree(off),
            }),
            ..Default::default()
        }],
        available_cores: Some(4),
    }
}

#[test]
fn a_source_chain_whose_time_is_in_the_source_is_a_source_ceiling() {
    let j = one_chain(
        &[
            (&[SRC, "my.Reader.poll:1"], 80),
            (&[SRC, OUT, MAP, "my.Map.map:1"], 20),
        ],
        &[],
        50_000.0,
    );
    let d = crate::diagnose(&j);
    assert_eq!(d.cause.name(), "source-ceiling", "{d:#?}");
    assert_eq!(
        d.bottleneck.as_ref().unwrap().operator.as_deref(),
        Some("Source: gen")
    );
    assert!(evidence(&d).contains("the time is in `Source: gen` (80%"));
}

#[test]
fn a_batched_sink_that_waits_is_scaled_out_of_its_chain() {
    // 1000 records/s, half the time off CPU in socket reads under the sink: 0.5 ms per
    // record would be a round trip each; at 40k records/s it is 0.0125 ms, batched already.
    let stacks_on: &[(&[&str], u64)] = &[(&[SRC, OUT, MAP, OUT, SINK, "my.Db.encode:1"], 40)];
    let stacks_off: &[(&[&str], u64)] = &[(
        &[
            SRC,
            OUT,
            MAP,
            OUT,
            SINK,
            "my.Db.flush:1",
            "sun.nio.ch.SocketDispatcher.read0:-2",
        ],
        60,
    )];
    let d = crate::diagnose(&one_chain(stacks_on, stacks_off, 40_000.0));
    assert_eq!(d.cause.name(), "sink-limit", "{d:#?}");
    let fix = d.fix.unwrap();
    assert!(
        fix.description.starts_with("scale the sink"),
        "{}",
        fix.description
    );
    assert!(fix
        .description
        .contains("split `out: Writer` from its chain"));
    assert_eq!(
        fix.plan_change,
        Some(crate::PlanChange::Parallelism {
            operator: "out: Writer".into(),
            parallelism: 2,
            ship: crate::ShipStrategy::Rebalance,
        })
    );
    let d = crate::diagnose(&one_chain(stacks_on, stacks_off, 1_000.0));
    assert!(d
        .fix
        .as_ref()
        .unwrap()
        .description
        .starts_with("batch the writes"));
    assert!(
        evidence(&d).contains("waits 0.60 ms per record"),
        "{}",
        evidence(&d)
    );
}
