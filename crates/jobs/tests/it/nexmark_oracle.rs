//! Nexmark correctness (docs/src/reference/nexmark-generator.md#correctness): every deterministic
//! query's output on a bounded
//! run equals DuckDB's SQL over the same events, at parallelism 1 and 2.
//!
//! The events are exported once (the one-table CSV, in event-number order) at 10 000 events/s
//! of event time, so 1 M events span 100 s: ~50 hop windows for q5, ten tumbling windows for
//! q7/q8, real sessions for q11. The engine runs the in-process generator; its events equal the
//! file's (the generator is a pure function of the event number and its splits' union is the
//! same for every parallelism — asserted below by hashing both). `SLUICE_NEXMARK_EVENTS`
//! overrides the count.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::process::Command;

use sluice_datastream::StreamEnv;
use sluice_jobs::nexmark::{final_rows, NexmarkJob, OutputKind, Query};
use sluice_nexmark::{GeneratorConfig, NexmarkGenerator};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const RATE: u64 = 10_000;

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("SLUICE_PYTHON") {
        return p.into();
    }
    PathBuf::from(format!("{ROOT}/target/venv-oracle/bin/python"))
}

fn events() -> u64 {
    std::env::var("SLUICE_NEXMARK_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn generator(events: u64) -> NexmarkGenerator {
    NexmarkGenerator::new(GeneratorConfig {
        events,
        rate: RATE,
        ..GeneratorConfig::default()
    })
    .unwrap()
}

/// Order-independent hash of the events of `splits` generator splits.
fn events_hash(events: u64, splits: usize) -> (u64, u64) {
    let g = generator(events);
    let mut sum = 0u64;
    let mut n = 0;
    for k in 0..splits {
        for (id, e) in g.split(k, splits) {
            let mut h = DefaultHasher::new();
            (id, format!("{e:?}")).hash(&mut h);
            sum = sum.wrapping_add(h.finish());
            n += 1;
        }
    }
    (n, sum)
}

fn run(query: Query, events: u64, parallelism: usize) -> Vec<String> {
    let env = StreamEnv::new();
    let job = NexmarkJob {
        query,
        events,
        rate: RATE,
        parallelism,
    };
    let out = job.build(&env, OutputKind::Collect).unwrap();
    env.execute().unwrap();
    let mut rows = out.rows();
    if query.is_updating() {
        rows = final_rows(&rows, 1);
    }
    rows.sort();
    rows
}

fn first_difference(engine: &[String], oracle: &[String]) -> String {
    let i = engine
        .iter()
        .zip(oracle)
        .position(|(a, b)| a != b)
        .unwrap_or(engine.len().min(oracle.len()));
    format!(
        "engine {} rows, DuckDB {} rows; first difference at sorted row {i}:\n  engine: {:?}\n  duckdb: {:?}",
        engine.len(),
        oracle.len(),
        engine.get(i),
        oracle.get(i)
    )
}

#[test]
fn every_deterministic_query_equals_duckdb_at_parallelism_1_and_2() {
    let events = events();
    let dir = std::env::temp_dir().join(format!("sluice-nexmark-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("events.csv");
    let file = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
    let written = sluice_nexmark::write_csv(generator(events).iter(), file).unwrap();
    assert_eq!(written, events);
    // The file is the ground truth: the splits the engine's sources run hash equal to it.
    let whole = events_hash(events, 1);
    assert_eq!(
        events_hash(events, 2),
        whole,
        "2 splits = the exported stream"
    );
    assert_eq!(
        events_hash(events, 3),
        whole,
        "3 splits = the exported stream"
    );

    let py = python();
    let out = Command::new(&py)
        .arg(format!("{ROOT}/tests/oracle/nexmark_oracle.py"))
        .arg(&csv)
        .arg(&dir)
        .args(Query::ALL.map(|q| q.name()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}); run scripts/test.sh, which installs DuckDB into target/venv-oracle",
                py.display()
            )
        });
    assert!(
        out.status.success(),
        "DuckDB oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut failures = Vec::new();
    for q in Query::ALL {
        let oracle: Vec<String> = std::fs::read_to_string(dir.join(format!("{}.csv", q.name())))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert!(!oracle.is_empty(), "{}: the oracle found no rows", q.name());
        for p in [1, 2] {
            let engine = run(q, events, p);
            if engine != oracle {
                failures.push(format!(
                    "{} at p={p}: {}",
                    q.name(),
                    first_difference(&engine, &oracle)
                ));
            } else {
                eprintln!("{} p={p}: {} rows equal DuckDB's", q.name(), engine.len());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
