use sluice_types::JobId;

use crate::job_graph::chain_successors;
use serde_json::{json, Value};

use crate::JobGraph;

/// HTML-escapes a vertex description as Flink's JSON plan generator does.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\\' => out.push_str("&#92;"),
            c => out.push(c),
        }
    }
    out
}

/// Flink's default (TREE) vertex description: one line per chained operator; a child is
/// prefixed `+- ` when it is its parent's last chained output and `:- ` otherwise, and its own
/// children are indented by `   ` or `:  ` accordingly. Lines end with `\n`.
pub fn tree_description(g: &JobGraph, vertex: usize) -> String {
    fn walk(g: &JobGraph, id: u32, prefix: &str, out: &mut String) {
        let kids = chain_successors(g, id);
        for (i, k) in kids.iter().enumerate() {
            let last = i + 1 == kids.len();
            out.push_str(prefix);
            out.push_str(if last { "+- " } else { ":- " });
            out.push_str(&g.nodes[k].name);
            out.push('\n');
            let deeper = format!("{prefix}{}", if last { "   " } else { ":  " });
            walk(g, *k, &deeper, out);
        }
    }
    let head = g.vertices[vertex].head;
    let mut out = format!("{}\n", g.nodes[&head].name);
    walk(g, head, "", &mut out);
    out
}

/// Flink's REST `/jobs/:id/plan` body (as Flink 2.3 emits it): `{"plan":{jid, name, type, nodes}}`,
/// nodes `{id, operator, parallelism, operator_strategy, description, optimizer_properties[, inputs]}`
/// in the order Flink creates vertices; inputs `{id, num, exchange, ship_strategy}`.
pub fn job_plan_json(g: &JobGraph, job_id: JobId) -> Value {
    let nodes = g
        .flink_vertex_order()
        .into_iter()
        .map(|vi| {
            let v = &g.vertices[vi];
            let desc = html_escape(&tree_description(g, vi)).replace('\n', "<br/>");
            let mut j = json!({
                "id": v.id.to_string(),
                "operator": "",
                "parallelism": v.parallelism,
                "operator_strategy": "",
                "description": desc,
                "optimizer_properties": {},
            });
            let inputs = g.inputs_of(vi);
            if !inputs.is_empty() {
                let ins = inputs
                    .iter()
                    .enumerate()
                    .map(|(num, e)| {
                        json!({
                            "id": g.vertices[e.from_vertex].id.to_string(),
                            "num": num,
                            "exchange": "pipelined_bounded",
                            "ship_strategy": e.strategy.as_str(),
                        })
                    })
                    .collect::<Vec<_>>();
                j["inputs"] = Value::Array(ins);
            }
            j
        })
        .collect::<Vec<_>>();
    json!({
        "plan": {
            "jid": job_id.to_string(),
            "name": g.name,
            "type": "STREAMING",
            "nodes": nodes,
        }
    })
}
