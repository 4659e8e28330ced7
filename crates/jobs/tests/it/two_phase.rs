//! The two-phase (salted) skew job: same final sums as the one-phase job, a plan with HASH into
//! both the salted pre-aggregation and the combiner, and the hot key's records spread out —
//! counted from per-subtask record counts, not timings.

use std::collections::BTreeMap;

use serde_json::Value;
use sluice_datastream::StreamEnv;
use sluice_jobs::skew::{build, SkewConfig};

fn run(cfg: &SkewConfig) -> (BTreeMap<i64, i64>, sluice_datastream::JobExecution) {
    let env = StreamEnv::new();
    let job = build(&env, cfg).unwrap();
    let exec = env.execute().unwrap();
    (job.final_sums(), exec)
}

fn max_share(exec: &sluice_datastream::JobExecution, vertex_prefix: &str) -> f64 {
    let v = exec
        .result
        .vertices
        .iter()
        .find(|v| v.name.starts_with(vertex_prefix))
        .unwrap_or_else(|| panic!("no vertex {vertex_prefix}"));
    let total: u64 = v.subtask_records_in.iter().sum();
    *v.subtask_records_in.iter().max().unwrap() as f64 / total as f64
}

#[test]
fn two_phase_gives_the_same_final_sums_at_any_parallelism_and_hot_share() {
    for share in [0.0, 0.5, 0.8, 1.0] {
        for p in [1, 2, 3] {
            let base = SkewConfig {
                records: 30_000,
                hot_key_share: share,
                parallelism: p,
                ..SkewConfig::default()
            };
            let (one, _) = run(&base);
            let (two, _) = run(&SkewConfig {
                two_phase: Some(8),
                ..base.clone()
            });
            let (fixed, _) = run(&SkewConfig {
                map_parallelism: Some(p + 1),
                rebalance_before_map: true,
                ..base.clone()
            });
            assert_eq!(one, two, "share {share}, p {p}");
            assert_eq!(one, fixed, "share {share}, p {p}");
        }
    }
}

#[test]
fn two_phase_spreads_the_hot_key() {
    for p in [2usize, 4] {
        let base = SkewConfig {
            records: 200_000,
            parallelism: p,
            ..SkewConfig::default()
        };
        let (_, one) = run(&base);
        let (_, two) = run(&SkewConfig {
            two_phase: Some(16),
            ..base
        });
        let (_, adaptive) = run(&SkewConfig {
            two_phase: Some(16),
            adaptive: true,
            records: 200_000,
            parallelism: p,
            ..SkewConfig::default()
        });
        let adaptive_share = max_share(&adaptive, "pre-aggregate (salted)");
        assert!(
            adaptive_share < 1.35 / p as f64,
            "p={p}: adaptive two-phase hot subtask share {adaptive_share}"
        );
        let before = max_share(&one, "sum-per-key");
        let after = max_share(&two, "pre-aggregate (salted)");
        assert!(before > 0.8, "p={p}: one-phase hot subtask share {before}");
        let even = 1.0 / p as f64;
        assert!(
            after < even * 1.35,
            "p={p}: two-phase hot subtask share {after}, expected about {even}"
        );
        // The combiner sees partials, not records: the hot key's 160k records arrive as a few
        // hundred partials; the 10,000 cold keys (about 4 records each) one partial per (key, salt).
        let combine: u64 = two
            .result
            .vertices
            .iter()
            .find(|v| v.name.starts_with("sum-per-key (combine)"))
            .unwrap()
            .records_in;
        assert!(combine < 200_000 / 4, "combine received {combine} partials");
    }
}

#[test]
fn two_phase_plan_has_hash_into_pre_aggregation_and_combine() {
    let env = StreamEnv::new();
    build(
        &env,
        &SkewConfig {
            two_phase: Some(16),
            ..SkewConfig::default()
        },
    )
    .unwrap();
    let plan: Value = serde_json::from_str(&env.execution_plan().unwrap()).unwrap();
    let nodes = plan["nodes"].as_array().unwrap();
    let by_type = |t: &str| nodes.iter().find(|n| n["type"] == t).unwrap().clone();
    let salt = by_type("salt");
    assert_eq!(salt["predecessors"][0]["ship_strategy"], "FORWARD");
    let pre = by_type("pre-aggregate (salted)");
    assert_eq!(pre["predecessors"][0]["ship_strategy"], "HASH");
    assert_eq!(pre["predecessors"][0]["id"], salt["id"]);
    let comb = by_type("sum-per-key (combine)");
    assert_eq!(comb["predecessors"][0]["ship_strategy"], "HASH");
    assert_eq!(comb["predecessors"][0]["id"], pre["id"]);
}
