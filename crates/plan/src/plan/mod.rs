//! Plans as Flink renders them (stream-graph JSON, REST job-graph JSON) and for humans (text, DOT).

mod dot;
mod job_plan;
mod stream_plan;
mod text;

pub use dot::job_graph_dot;
pub use job_plan::{html_escape, job_plan_json, tree_description};
pub use stream_plan::stream_plan_json;
pub use text::job_graph_text;

/// Output formats of `sluice plan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanFormat {
    /// Flink's `getExecutionPlan()` stream-graph JSON.
    Json,
    /// Flink's REST `/jobs/:id/plan` job-graph JSON.
    JobGraph,
    /// An indented text tree of the chained vertices.
    Text,
    /// Graphviz `dot`.
    Dot,
}

impl PlanFormat {
    /// Reads a `--format` value (`json`, `job-graph`, `text`, `dot`); `None` for others.
    pub fn parse(s: &str) -> Option<PlanFormat> {
        Some(match s {
            "json" => PlanFormat::Json,
            "job-graph" => PlanFormat::JobGraph,
            "text" => PlanFormat::Text,
            "dot" => PlanFormat::Dot,
            _ => return None,
        })
    }
}
