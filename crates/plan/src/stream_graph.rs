//! The stream graph: one node per operator as the user wrote it (Flink's `StreamGraph`).
//!
//! Only the topology lives here: names, ids, parallelism, chaining and how each input is shipped.
//! What a node runs (the user's closures, typed factories) is kept by the DataStream API crate
//! beside these descriptors, by node id.

use sluice_types::{NodeId, ShipStrategy};

/// Flink's chaining strategies: `disable_chaining` = Never, `start_new_chain` = Head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainingStrategy {
    /// Chains to its upstream and downstream when it can (the default).
    Always,
    /// Starts a new chain but lets downstream operators chain to it.
    Head,
    /// Never chains.
    Never,
}

/// What kind of node, for plans (`pact`) and for deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// Produces records; has no inputs.
    Source,
    /// Transforms its inputs' records.
    Operator,
    /// Consumes records; has no outputs.
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

/// An input of a node: which node it reads and how records are shipped. `strategy: None` is the
/// default edge (FORWARD at equal parallelism, REBALANCE otherwise), decided when the job graph
/// is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEdge {
    /// The upstream node.
    pub from: NodeId,
    /// The partitioner the user chose, or `None` for the default.
    pub strategy: Option<ShipStrategy>,
}

/// One operator of the stream graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamNode {
    /// The node's id, in creation order.
    pub id: NodeId,
    /// The operator's name (`Map`, `Source: gen`).
    pub name: String,
    /// Source, operator or sink.
    pub kind: NodeKind,
    /// The user's stable id (`uid(...)`), which names its state across job versions.
    pub uid: Option<String>,
    /// Set by `set_parallelism`; `None` takes the environment's default.
    pub parallelism: Option<usize>,
    /// Sources that cannot be split (iterators) must run at parallelism 1.
    pub non_parallel: bool,
    /// Set by `set_max_parallelism`; `None` takes the environment's default.
    pub max_parallelism: Option<u32>,
    /// Whether it chains (see [`ChainingStrategy`]).
    pub chaining: ChainingStrategy,
    /// The inputs, in input order.
    pub inputs: Vec<StreamEdge>,
    /// How the node's stable id is derived beyond its own inputs (see `sluice_datastream::operator_id`).
    pub identity: IdentityHint,
    /// Connector options (`key`, `value`) in declaration order, e.g. a sink's
    /// `sink.buffer-flush.max-rows` (Flink's connector option names): the operator reads them
    /// from its context at deployment, so a plan change can set them without touching the code
    /// that built the job. Only keys the connector declared may be set (see the fixer).
    pub options: Vec<(String, String)>,
}

/// How a node without a uid derives its stable id, when not only from its own inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdentityHint {
    /// Tells apart a node a rewrite adds from the node whose identity the rewrite keeps
    /// (e.g. `salt`, `pre-aggregate`).
    pub role: Option<&'static str>,
    /// Hash as if fed by these inputs: the node takes over the identity, and so the state, of
    /// the operator those inputs fed before the rewrite.
    pub as_if_fed_by: Option<Vec<NodeId>>,
}

impl IdentityHint {
    /// A helper node of a rewrite, told apart by `role`.
    pub fn role(role: &'static str) -> IdentityHint {
        IdentityHint {
            role: Some(role),
            as_if_fed_by: None,
        }
    }
}
