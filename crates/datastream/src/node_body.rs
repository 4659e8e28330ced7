//! What each stream-graph node runs, kept beside its plan descriptor ([`sluice_plan::StreamNode`])
//! by node id: the typed factories created where the record types were known.

use std::sync::Arc;

use sluice_plan::StreamEdge;
use sluice_types::{NodeId, ShipStrategy};

use crate::typeops::{OperatorFactory, SinkFactory, SourceFactory, TypeOps, WriterFactory};

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

/// The typed side of one node.
#[derive(Clone)]
pub(crate) struct NodeImpl {
    pub body: NodeBody,
    pub in_type: Option<Arc<dyn TypeOps>>,
    pub out_type: Option<Arc<dyn TypeOps>>,
    /// One writer factory per input of the node (same order as the descriptor's inputs): builds
    /// the record writer an upstream subtask uses to feed this input.
    pub input_writers: Vec<Arc<dyn WriterFactory>>,
    /// For keyed rolling aggregations: rebuilds this node as salt → pre-aggregate → combine and
    /// returns the combine node (used by the plan fixer).
    pub two_phase: Option<TwoPhaseRewrite>,
}

/// See [`NodeImpl::two_phase`].
pub(crate) type TwoPhaseRewrite = Arc<dyn Fn(&crate::StreamEnv, u32) -> NodeId + Send + Sync>;

/// An input of a stream not yet attached to a node: the plan edge plus the writer that ships it.
#[derive(Clone)]
pub(crate) struct InputEdge {
    pub from: NodeId,
    pub strategy: Option<ShipStrategy>,
    pub writer: Arc<dyn WriterFactory>,
}

/// Splits pending inputs into the plan's edges and the node's writer factories.
pub(crate) fn split_inputs(inputs: &[InputEdge]) -> (Vec<StreamEdge>, Vec<Arc<dyn WriterFactory>>) {
    inputs
        .iter()
        .map(|e| {
            (
                StreamEdge {
                    from: e.from,
                    strategy: e.strategy,
                },
                e.writer.clone(),
            )
        })
        .unzip()
}
