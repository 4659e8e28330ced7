//! The stream graph: one node per operator as the user wrote it (Flink's `StreamGraph`).

use std::sync::Arc;

use sluice_types::{NodeId, ShipStrategy};

use crate::typeops::{OperatorFactory, SinkFactory, SourceFactory, TypeOps, WriterFactory};

/// Flink's chaining strategies: `disable_chaining` = Never, `start_new_chain` = Head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainingStrategy {
    Always,
    Head,
    Never,
}

/// What kind of node, for plans (`pact`) and for deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Source,
    Operator,
    Sink,
}

impl NodeKind {
    /// The `pact` string of Flink's execution plan.
    pub fn pact(self) -> &'static str {
        match self {
            NodeKind::Source => "Data Source",
            NodeKind::Operator => "Operator",
            NodeKind::Sink => "Data Sink",
        }
    }
}

pub(crate) enum NodeBody {
    Source(Arc<dyn SourceFactory>),
    Operator(Arc<dyn OperatorFactory>),
    Sink(Arc<dyn SinkFactory>),
}

impl Clone for NodeBody {
    fn clone(&self) -> Self {
        match self {
            NodeBody::Source(f) => NodeBody::Source(f.clone()),
            NodeBody::Operator(f) => NodeBody::Operator(f.clone()),
            NodeBody::Sink(f) => NodeBody::Sink(f.clone()),
        }
    }
}

/// An input of a node: which node it reads and how records are shipped. `strategy: None` is the
/// default edge (FORWARD at equal parallelism, REBALANCE otherwise), decided when the job graph
/// is built.
#[derive(Clone)]
pub struct StreamEdge {
    pub from: NodeId,
    pub strategy: Option<ShipStrategy>,
    pub(crate) writer: Arc<dyn WriterFactory>,
}

impl std::fmt::Debug for StreamEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEdge")
            .field("from", &self.from)
            .field("strategy", &self.strategy)
            .finish()
    }
}

/// One operator of the stream graph.
#[derive(Clone)]
pub struct StreamNode {
    pub id: NodeId,
    pub name: String,
    pub kind: NodeKind,
    pub uid: Option<String>,
    /// Set by `set_parallelism`; `None` takes the environment's default.
    pub parallelism: Option<usize>,
    /// Sources that cannot be split (iterators) must run at parallelism 1.
    pub non_parallel: bool,
    pub max_parallelism: Option<u32>,
    pub chaining: ChainingStrategy,
    pub inputs: Vec<StreamEdge>,
    pub(crate) body: NodeBody,
    pub(crate) in_type: Option<Arc<dyn TypeOps>>,
    pub(crate) out_type: Option<Arc<dyn TypeOps>>,
    /// For keyed rolling aggregations: rebuilds this node as salt → pre-aggregate → combine and
    /// returns the combine node (used by the plan fixer).
    pub(crate) two_phase: Option<TwoPhaseRewrite>,
    /// How the node's stable id is derived beyond its own inputs (see [`crate::operator_id`]).
    pub identity: crate::operator_id::IdentityHint,
}

/// See [`StreamNode::two_phase`].
pub(crate) type TwoPhaseRewrite = Arc<dyn Fn(&crate::StreamEnv, u32) -> NodeId + Send + Sync>;

impl std::fmt::Debug for StreamNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamNode")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("parallelism", &self.parallelism)
            .field("inputs", &self.inputs)
            .finish()
    }
}
