//! Plans of the skew job, compared exactly with golden files (regenerate with UPDATE_GOLDEN=1)
//! and, where the jobs coincide, with what real Flink 2.3 printed for the same job.

use serde_json::Value;
use sluice_datastream::plan::{job_graph_dot, job_graph_text, job_plan_json};
use sluice_datastream::StreamEnv;
use sluice_jobs::skew::{build, SkewConfig};
use sluice_types::Id128;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn golden(name: &str, actual: &str) {
    let path = format!("{ROOT}/tests/golden/{name}");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (run with UPDATE_GOLDEN=1 to create it)"));
    assert_eq!(actual, expected, "{name} differs from its golden file");
}

fn env_for(cfg: &SkewConfig) -> StreamEnv {
    let env = StreamEnv::new();
    build(&env, cfg).unwrap();
    env
}

fn node(plan: &Value, id: u64) -> &Value {
    plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("node {id} in {plan}"))
}

#[test]
fn skew_plan_as_built() {
    let env = env_for(&SkewConfig::default());
    let text = env.execution_plan().unwrap();
    golden("skew-plan.json", &text);
    let plan: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(node(&plan, 2)["parallelism"], 2);
    assert_eq!(
        node(&plan, 2)["predecessors"][0]["ship_strategy"],
        "FORWARD"
    );
    assert_eq!(node(&plan, 4)["predecessors"][0]["ship_strategy"], "HASH");
    assert_eq!(
        node(&plan, 4)["predecessors"][0]["id"],
        2,
        "points through the key_by (id 3)"
    );
}

#[test]
fn skew_plan_with_more_map_parallelism_behind_rebalance() {
    let cfg = SkewConfig {
        map_parallelism: Some(4),
        rebalance_before_map: true,
        ..SkewConfig::default()
    };
    let env = env_for(&cfg);
    let text = env.execution_plan().unwrap();
    golden("skew-plan-rebalanced.json", &text);
    let plan: Value = serde_json::from_str(&text).unwrap();
    // rebalance() takes id 2, so the map is node 3, key_by 4, the sum 5.
    let map = node(&plan, 3);
    assert_eq!(map["type"], "map");
    assert_eq!(map["parallelism"], 4);
    assert_eq!(map["predecessors"][0]["ship_strategy"], "REBALANCE");
    assert_eq!(node(&plan, 5)["predecessors"][0]["ship_strategy"], "HASH");
    assert_eq!(node(&plan, 5)["predecessors"][0]["id"], 3);
}

#[test]
fn changing_only_parallelism_turns_forward_into_rebalance() {
    // Without an explicit rebalance(), a parallelism change makes the default edge REBALANCE.
    let cfg = SkewConfig {
        map_parallelism: Some(4),
        ..SkewConfig::default()
    };
    let plan: Value = serde_json::from_str(&env_for(&cfg).execution_plan().unwrap()).unwrap();
    assert_eq!(
        node(&plan, 2)["predecessors"][0]["ship_strategy"],
        "REBALANCE"
    );
}

#[test]
fn stream_plan_matches_flinks_for_the_shared_operators() {
    // Flink's reference job has the same source, map and keyed sum (ids 1, 2, 4); only its sink
    // differs (a Sink V2 writer, id 7). Everything before the sink must be byte-identical.
    let ours = env_for(&SkewConfig::default()).execution_plan().unwrap();
    let flink = std::fs::read_to_string(format!(
        "{ROOT}/tests/fixtures/flink/flink-rest/skew/stream-graph-execution-plan.json"
    ))
    .unwrap();
    let cut = |s: &str, sink_id: u32| {
        let marker = format!("}}, {{\n    \"id\" : {sink_id},");
        s[..s.find(&marker).expect("sink node")].to_string()
    };
    assert_eq!(cut(&ours, 5), cut(&flink, 7));
}

#[test]
fn job_graph_plan_has_flinks_shape() {
    let env = env_for(&SkewConfig::default());
    let g = env.job_graph().unwrap();
    let ours = job_plan_json(&g, Id128::hash_of(b"skew")).to_string();
    golden("skew-job-graph.json", &ours);
    let flink: Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{ROOT}/tests/fixtures/flink/flink-rest/skew/job-plan.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let ours: Value = serde_json::from_str(&ours).unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let (on, fnodes) = (
        ours["plan"]["nodes"].as_array().unwrap(),
        flink["plan"]["nodes"].as_array().unwrap(),
    );
    assert_eq!(on.len(), fnodes.len());
    for (o, f) in on.iter().zip(fnodes) {
        assert_eq!(keys(o), keys(f), "node keys and their order");
        assert_eq!(o["parallelism"], f["parallelism"]);
        if let Some(fi) = f.get("inputs") {
            assert_eq!(keys(&o["inputs"][0]), keys(&fi[0]));
            assert_eq!(o["inputs"][0]["ship_strategy"], fi[0]["ship_strategy"]);
        }
    }
    // Same vertex order as Flink (the keyed vertex first) and the same TREE descriptions for the
    // operators both jobs share.
    assert_eq!(on[1]["description"], fnodes[1]["description"]);
    assert!(on[0]["description"]
        .as_str()
        .unwrap()
        .starts_with("sum-per-key<br/>+- "));
    assert_eq!(keys(&ours["plan"]), keys(&flink["plan"]));
}

#[test]
fn text_and_dot_renderings() {
    let g = env_for(&SkewConfig::default()).job_graph().unwrap();
    golden("skew-plan.txt", &job_graph_text(&g));
    golden("skew-plan.dot", &job_graph_dot(&g));
}
