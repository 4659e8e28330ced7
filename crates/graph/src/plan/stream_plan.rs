use crate::job_graph::resolve;
use crate::json::Json;
use crate::stream_graph::{NodeKind, StreamNode};
use crate::{EnvConfig, GraphError};

/// Flink's `getExecutionPlan()` (spec §1.1): `{"nodes":[...]}` with non-sink nodes by id, then
/// sinks by id; fields `id, type, pact, contents, parallelism[, predecessors]`; predecessors
/// `{id, ship_strategy, side: "second"}` pointing through virtual nodes to real ones.
pub fn stream_plan_json(nodes: &[StreamNode], cfg: &EnvConfig) -> Result<Json, GraphError> {
    let resolved = resolve(nodes, cfg)?;
    let mut ordered: Vec<_> = resolved.values().collect();
    ordered.sort_by_key(|n| (n.kind == NodeKind::Sink, n.id));
    let out = ordered
        .into_iter()
        .map(|n| {
            let mut j = Json::obj()
                .with("id", n.id)
                .with("type", n.name.as_str())
                .with("pact", n.kind.pact())
                .with("contents", n.name.as_str())
                .with("parallelism", n.parallelism);
            if !n.inputs.is_empty() {
                let preds = n
                    .inputs
                    .iter()
                    .map(|(from, s)| {
                        Json::obj()
                            .with("id", *from)
                            .with("ship_strategy", s.as_str())
                            .with("side", "second")
                    })
                    .collect::<Vec<_>>();
                j = j.with("predecessors", preds);
            }
            j
        })
        .collect::<Vec<_>>();
    Ok(Json::obj().with("nodes", out))
}
