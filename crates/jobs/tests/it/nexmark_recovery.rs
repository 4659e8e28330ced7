//! Nexmark queries with state (windows, timers, joins) recover exactly once: killed mid-run,
//! restored from checkpoints, they publish what an undisturbed run publishes.

use std::time::Duration;

use sluice_datastream::{FaultSpec, RestartStrategy, StreamEnv};
use sluice_jobs::nexmark::{final_rows, NexmarkJob, OutputKind, Query};

fn run(query: Query, faults: Vec<FaultSpec>, tag: &str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("sluice-nx-rec-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let env = StreamEnv::new();
    if !faults.is_empty() {
        env.enable_checkpointing(Duration::from_millis(10))
            .set_restart_strategy(RestartStrategy::FixedDelay {
                attempts: faults.len() as u32,
                delay: Duration::ZERO,
            })
            .inject_faults(faults);
    }
    let job = NexmarkJob {
        query,
        events: 300_000,
        rate: 10_000,
        parallelism: 2,
    };
    job.build(&env, OutputKind::ExactlyOnce(dir.clone()))
        .unwrap();
    env.execute().unwrap();
    let mut lines = sluice_runtime::sinks::committed_lines(&dir).unwrap();
    if query.is_updating() {
        // A changelog: intermediate updates depend on arrival order, the final table does not.
        lines = final_rows(&lines, 1);
    }
    lines.sort();
    let _ = std::fs::remove_dir_all(&dir);
    lines
}

#[test]
fn windowed_and_joined_queries_recover_exactly_once() {
    // Each fault names a vertex of that query's graph (a name that matches nothing is refused
    // before the job starts).
    for (query, vertex, second) in [
        (
            Query::Q5,
            "q5 max per window",
            "Window(SlidingEventTimeWindows",
        ),
        (Query::Q4, "q4 average", "Winning bid"),
    ] {
        let expected = run(query, Vec::new(), "ok");
        assert!(!expected.is_empty());
        let faults = vec![
            FaultSpec {
                vertex: vertex.into(),
                subtask: 0,
                after_records: 5,
            },
            FaultSpec {
                vertex: second.into(),
                subtask: 1,
                after_records: 20_000,
            },
        ];
        let got = run(query, faults, "faulty");
        assert!(
            got == expected,
            "{query:?}: {} lines, expected {}",
            got.len(),
            expected.len()
        );
    }
}
