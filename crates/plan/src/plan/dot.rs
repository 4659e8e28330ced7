use std::fmt::Write;

use crate::JobGraph;

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Graphviz DOT of the job graph: one box per vertex (name and parallelism), edges labelled with
/// their ship strategy, laid out left to right.
pub fn job_graph_dot(g: &JobGraph) -> String {
    let mut s =
        String::from("digraph job {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n");
    let _ = writeln!(s, "  label=\"{}\";", dot_escape(&g.name));
    for v in &g.vertices {
        let _ = writeln!(
            s,
            "  v{} [label=\"{}\\nparallelism {}\"];",
            v.index,
            dot_escape(&v.name),
            v.parallelism
        );
    }
    for e in &g.edges {
        let _ = writeln!(
            s,
            "  v{} -> v{} [label=\"{}\"];",
            e.from_vertex, e.to_vertex, e.strategy
        );
    }
    s.push_str("}\n");
    s
}
