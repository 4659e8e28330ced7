//! Scan fusion (`sluice_table::fused`): the official Nexmark queries over the `nexmark` source
//! give the same rows with their scan chains fused as with every plan node its own operator,
//! and the job graph — vertices, their ids and names (the chained operators as Flink names
//! them), every operator's name — is the same both ways; a reused scan (q3's `person` and
//! `auction`) too.

use sluice_datastream::StreamEnv;
use sluice_table::official::{capture_sinks, runner_script};
use sluice_table::{SqlJob, SqlScript, Translation};

use crate::support::{nexmark_vars, queries_dir, temp_dir};

/// What a run shows: the vertices (id, name, operator names), the sorted output lines, the
/// failed and late rows, how many chains ran fused.
type Run = (
    Vec<(String, String, Vec<String>)>,
    Vec<String>,
    u64,
    u64,
    usize,
);

fn run(query: &str, events: u64, tps: u64, unfused: bool) -> Run {
    let queries = queries_dir().unwrap();
    let dir = temp_dir(&format!("fused-{query}-{unfused}"));
    let text = runner_script(&queries, query).unwrap();
    let text = capture_sinks(&text, &dir.join("out")).unwrap();
    let script = SqlScript::prepare(&text, &nexmark_vars(events, tps)).unwrap();
    let jobs = script.jobs();
    assert_eq!(jobs.len(), 1, "{query}");
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let translation = Translation {
        unfused,
        ..Translation::default()
    };
    let job = SqlJob::build_in(&env, &jobs[0].session, &jobs[0].plan, &translation).unwrap();
    let graph = env.job_graph().unwrap();
    let vertices = graph
        .vertices
        .iter()
        .map(|v| {
            let ops = v
                .nodes
                .iter()
                .map(|n| graph.nodes[n].name.clone())
                .collect();
            (v.id.to_string(), v.name.clone(), ops)
        })
        .collect();
    env.execute().unwrap();
    let mut lines = sluice_runtime::sinks::committed_lines(&dir.join("out")).unwrap();
    lines.sort();
    let _ = std::fs::remove_dir_all(&dir);
    (
        vertices,
        lines,
        job.errors.count(),
        job.late.count(),
        job.fused,
    )
}

#[test]
fn fused_scans_give_the_unfused_rows_and_job_graph() {
    if queries_dir().is_none() {
        return;
    }
    // 60 s of event time at 1000 events/s: many windows for q5, q7 and q11.
    for (query, fuses) in [
        ("q0", true),
        ("q1", true),
        ("q2", true),
        // Reused scans: fused up to their watermark, their readers' kinds kept.
        ("q3", true),
        ("q5", true),
        ("q7", true),
        // Two chains over one scan: not fused (the scan is shared, not the chain).
        ("q8", false),
        ("q11", false),
        ("q14", true),
        ("q21", true),
        ("q22", true),
    ] {
        let fused = run(query, 60_000, 1_000, false);
        let unfused = run(query, 60_000, 1_000, true);
        assert_eq!(unfused.4, 0, "{query}");
        if fuses {
            assert!(fused.4 > 0, "{query}: the bid scan runs fused");
        }
        assert!(!fused.1.is_empty(), "{query}: rows");
        assert_eq!(fused.0, unfused.0, "{query}: the job graph");
        assert_eq!(fused.1, unfused.1, "{query}: the rows");
        assert_eq!(
            (fused.2, fused.3),
            (unfused.2, unfused.3),
            "{query}: failed and late rows"
        );
    }
}
