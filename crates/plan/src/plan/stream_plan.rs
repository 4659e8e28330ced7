use crate::job_graph::resolve;
use serde_json::{json, Value};

use crate::stream_graph::{NodeKind, StreamNode};
use crate::{PlanConfig, PlanError};

/// Flink's `getExecutionPlan()` (docs/src/reference/flink-formats.md#execution-plan):
/// `{"nodes":[...]}` with non-sink nodes by id, then
/// sinks by id; fields `id, type, pact, contents, parallelism[, predecessors]`; predecessors
/// `{id, ship_strategy, side: "second"}` pointing through virtual nodes to real ones.
pub fn stream_plan_json(nodes: &[StreamNode], cfg: &PlanConfig) -> Result<Value, PlanError> {
    let resolved = resolve(nodes, cfg)?;
    let mut ordered: Vec<_> = resolved.values().collect();
    ordered.sort_by_key(|n| (n.kind == NodeKind::Sink, n.id));
    let out = ordered
        .into_iter()
        .map(|n| {
            let mut j = json!({
                "id": n.id,
                "type": n.name,
                "pact": n.kind.pact(),
                "contents": n.name,
                "parallelism": n.parallelism,
            });
            if !n.inputs.is_empty() {
                let preds = n
                    .inputs
                    .iter()
                    .map(|(from, s)| json!({"id": from, "ship_strategy": s.as_str(), "side": "second"}))
                    .collect::<Vec<_>>();
                j["predecessors"] = Value::Array(preds);
            }
            j
        })
        .collect::<Vec<_>>();
    Ok(json!({ "nodes": out }))
}
