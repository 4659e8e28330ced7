//! [`QueryPlan`]: the plan a job was compiled from (a SQL query's optimized physical plan), as
//! plain data beside its job graph, so that observers which know no SQL (the REST server's
//! `EXPLAIN ANALYZE`) can show each plan operator with the figures of the operator it became.

use sluice_types::NodeId;

/// A job's source plan, line by line: every plan node in pre order (each node before its
/// inputs, tree after tree), with the stream-graph node that runs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryPlan {
    /// The plan's nodes in pre order.
    pub nodes: Vec<QueryPlanNode>,
}

/// One node of a [`QueryPlan`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryPlanNode {
    /// Depth in its tree (a root is 0).
    pub depth: usize,
    /// The node's line as the plan text draws it, tree prefix (`:- `, `+- `) included.
    pub line: String,
    /// The node's description alone (`Calc(select=[…])`).
    pub text: String,
    /// The stable uid of the operator it became, when it became one.
    pub uid: Option<String>,
    /// The stream-graph node that runs it; `None` when it runs no operator of its own (an
    /// exchange is an edge, a union merges its inputs, a watermark pushed into its source).
    pub node: Option<NodeId>,
    /// What to know when reading its figures (e.g. that it runs fused in its source).
    pub note: Option<String>,
}

impl QueryPlan {
    /// Appends another plan's nodes (a second query added to the same job).
    pub fn extend(&mut self, other: QueryPlan) {
        self.nodes.extend(other.nodes);
    }
}
