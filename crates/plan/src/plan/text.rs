use std::fmt::Write;

use crate::JobGraph;

/// A readable plan: one block per vertex (topological order) with its operators and inputs.
///
/// ```text
/// [1] Source: generator -> map  (parallelism 2, max parallelism 128)
///       operators: Source: generator, map
/// [2] sum-per-key -> Sink: final  (parallelism 2, max parallelism 128)
///       <- [1] HASH
/// ```
pub fn job_graph_text(g: &JobGraph) -> String {
    let mut s = String::new();
    for v in &g.vertices {
        let _ = writeln!(
            s,
            "[{}] {}  (parallelism {}, max parallelism {})",
            v.index + 1,
            v.name,
            v.parallelism,
            v.max_parallelism
        );
        if v.nodes.len() > 1 {
            let names: Vec<&str> = v.nodes.iter().map(|n| g.nodes[n].name.as_str()).collect();
            let _ = writeln!(s, "      operators: {}", names.join(", "));
        }
        for e in g.inputs_of(v.index) {
            let _ = writeln!(
                s,
                "      <- [{}] {}  ({} -> {})",
                e.from_vertex + 1,
                e.strategy,
                g.nodes[&e.from_node].name,
                g.nodes[&e.to_node].name
            );
        }
    }
    s
}
