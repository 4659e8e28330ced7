use std::marker::PhantomData;
use std::sync::Arc;

use sluice_runtime::operators::{FilterOp, FlatMapOp, MapOp, TimestampFn};
use sluice_types::{Data, NodeId, Operator, OperatorContext, ShipStrategy};

use crate::node_body::{split_inputs, InputEdge, NodeBody, NodeImpl};
use crate::partition::JavaHash;
use crate::stream_graph::{ChainingStrategy, NodeKind, StreamNode};
use crate::typeops::{type_ops, TypedOperatorFactory, TypedWriterFactory};
use crate::{KeyedStream, StreamEnv};

/// A stream of `T`: either an operator's output (then `name`, `set_parallelism`, ... configure that
/// operator) or a re-partitioned/unioned view of other streams.
pub struct DataStream<T> {
    pub(crate) env: StreamEnv,
    /// The operator whose direct output this is, if any.
    pub(crate) node: Option<NodeId>,
    pub(crate) inputs: Vec<InputEdge>,
    /// How to read a record's event timestamp, once known (set by
    /// `assign_timestamps_and_watermarks` or `with_timestamps`, kept by operations that pass
    /// records through unchanged: filter, partitioning, key_by, union).
    pub(crate) timestamps: Option<TimestampFn<T>>,
    pub(crate) _t: PhantomData<fn() -> T>,
}

impl<T> Clone for DataStream<T> {
    fn clone(&self) -> Self {
        DataStream {
            env: self.env.clone(),
            node: self.node,
            inputs: self.inputs.clone(),
            timestamps: self.timestamps.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: Data> DataStream<T> {
    pub(crate) fn of_node(env: StreamEnv, id: NodeId) -> Self {
        DataStream {
            env,
            node: Some(id),
            inputs: vec![InputEdge {
                from: id,
                strategy: None,
                writer: Arc::new(TypedWriterFactory::<T>::unkeyed()),
            }],
            timestamps: None,
            _t: PhantomData,
        }
    }

    /// The environment (job) this stream belongs to.
    pub fn env(&self) -> &StreamEnv {
        &self.env
    }

    /// The stream-graph id of the operator producing this stream, if it is an operator's output.
    pub fn node_id(&self) -> Option<NodeId> {
        self.node
    }

    fn configure(self, what: &str, f: impl FnOnce(&mut StreamNode)) -> Self {
        match self.node {
            Some(id) => self.env.with_node(id, f),
            None => self.env.record_error(format!(
                "{what}() applies to an operator; it was called on a stream produced by a partitioning or union (call it before rebalance()/key_by()/union())"
            )),
        }
        self
    }

    /// The operator's name, shown in plans, metrics and thread names.
    pub fn name(self, name: &str) -> Self {
        let kind_prefix = |n: &mut StreamNode| match n.kind {
            NodeKind::Source => format!("Source: {name}"),
            NodeKind::Sink => format!("Sink: {name}"),
            NodeKind::Operator => name.to_string(),
        };
        self.configure("name", |n| n.name = kind_prefix(n))
    }
    /// A stable id for the operator (used to match state across job versions).
    pub fn uid(self, uid: &str) -> Self {
        self.configure("uid", |n| n.uid = Some(uid.to_string()))
    }
    /// Number of parallel subtasks of the operator (default: the job's parallelism).
    pub fn set_parallelism(self, p: usize) -> Self {
        self.configure("set_parallelism", |n| n.parallelism = Some(p))
    }
    /// The operator's number of key groups: the most subtasks its keyed state can be rescaled
    /// to (default: the job's setting).
    pub fn set_max_parallelism(self, m: u32) -> Self {
        self.configure("set_max_parallelism", |n| n.max_parallelism = Some(m))
    }
    /// Never chain this operator with its neighbours.
    pub fn disable_chaining(self) -> Self {
        self.configure("disable_chaining", |n| n.chaining = ChainingStrategy::Never)
    }
    /// Start a new chain at this operator (it may still chain with its successors).
    pub fn start_new_chain(self) -> Self {
        self.configure("start_new_chain", |n| n.chaining = ChainingStrategy::Head)
    }

    /// Declares plan option `key` of this operator with its value (a connector's setting, e.g.
    /// a lookup's `lookup.async`): the operator reads it from [`OperatorContext::option`] when it
    /// is deployed, and the fixer may change declared options only.
    pub fn option(self, key: &str, value: impl ToString) -> Self {
        let (key, value) = (key.to_string(), value.to_string());
        self.configure("option", |n| n.options.push((key, value)))
    }

    /// Adds a one-input operator; `make` is called once per subtask, on that subtask's thread.
    pub fn transform<U, Op, F>(&self, name: &str, make: F) -> DataStream<U>
    where
        U: Data,
        Op: Operator<T, U> + 'static,
        F: Fn(&OperatorContext) -> Op + Send + Sync + 'static,
    {
        let id = self.env.alloc_id();
        let (inputs, input_writers) = split_inputs(&self.inputs);
        self.env.add_node(
            StreamNode {
                id,
                name: name.to_string(),
                kind: NodeKind::Operator,
                uid: None,
                parallelism: None,
                non_parallel: false,
                max_parallelism: None,
                chaining: ChainingStrategy::Always,
                inputs,
                identity: Default::default(),
                options: Vec::new(),
            },
            NodeImpl {
                body: NodeBody::Operator(Arc::new(TypedOperatorFactory::<T, U, F> {
                    make,
                    _t: PhantomData,
                })),
                in_type: Some(type_ops::<T>()),
                out_type: Some(type_ops::<U>()),
                input_writers,
                two_phase: None,
            },
        );
        DataStream::of_node(self.env.clone(), id)
    }

    /// Applies `f` to every record, one output per input.
    pub fn map<U, F>(&self, f: F) -> DataStream<U>
    where
        U: Data,
        F: Fn(T) -> U + Clone + Send + Sync + 'static,
    {
        self.transform("Map", move |_| MapOp(f.clone()))
    }

    /// Keeps the records for which `f` is true; the stream still knows how to read their event
    /// timestamps, as records pass through unchanged.
    pub fn filter<F>(&self, f: F) -> DataStream<T>
    where
        F: Fn(&T) -> bool + Clone + Send + Sync + 'static,
    {
        let mut out = self.transform("Filter", move |_| FilterOp(f.clone()));
        out.timestamps = self.timestamps.clone();
        out
    }

    /// Applies `f` to every record and emits each item of what it returns (none, one or many).
    pub fn flat_map<U, I, F>(&self, f: F) -> DataStream<U>
    where
        U: Data,
        I: IntoIterator<Item = U>,
        F: Fn(T) -> I + Clone + Send + Sync + 'static,
    {
        self.transform("Flat Map", move |_| FlatMapOp(f.clone()))
    }

    /// Merges streams of the same type. Each input keeps its own partitioning.
    pub fn union(&self, others: &[&DataStream<T>]) -> DataStream<T> {
        self.env.alloc_id();
        let mut inputs = self.inputs.clone();
        for o in others {
            inputs.extend(o.inputs.iter().cloned());
        }
        DataStream {
            env: self.env.clone(),
            node: None,
            inputs,
            timestamps: self.timestamps.clone(),
            _t: PhantomData,
        }
    }

    fn partitioned(&self, s: ShipStrategy) -> DataStream<T> {
        self.repartitioned(s, Arc::new(TypedWriterFactory::<T>::unkeyed()))
    }

    /// A virtual partitioning transformation (Flink's PartitionTransformation): takes an id,
    /// creates no node, and re-routes every input edge of this stream through `writer`.
    fn repartitioned(
        &self,
        s: ShipStrategy,
        writer: Arc<dyn crate::typeops::WriterFactory>,
    ) -> DataStream<T> {
        self.env.alloc_id();
        DataStream {
            env: self.env.clone(),
            node: None,
            inputs: self
                .inputs
                .iter()
                .map(|e| InputEdge {
                    from: e.from,
                    strategy: Some(s),
                    writer: writer.clone(),
                })
                .collect(),
            timestamps: self.timestamps.clone(),
            _t: PhantomData,
        }
    }

    /// Subtask i feeds subtask i of the next operator (parallelism must match).
    pub fn forward(&self) -> DataStream<T> {
        self.partitioned(ShipStrategy::Forward)
    }
    /// Round robin over all downstream subtasks, from a random start per sender.
    pub fn rebalance(&self) -> DataStream<T> {
        self.partitioned(ShipStrategy::Rebalance)
    }
    /// Round robin over a local subset of downstream subtasks (pointwise wiring).
    pub fn rescale(&self) -> DataStream<T> {
        self.partitioned(ShipStrategy::Rescale)
    }
    /// A uniformly random downstream subtask per record.
    pub fn shuffle(&self) -> DataStream<T> {
        self.partitioned(ShipStrategy::Shuffle)
    }
    /// Every record to every downstream subtask.
    pub fn broadcast(&self) -> DataStream<T> {
        self.partitioned(ShipStrategy::Broadcast)
    }
    /// Every record to downstream subtask 0.
    pub fn global(&self) -> DataStream<T> {
        self.partitioned(ShipStrategy::Global)
    }

    /// Partitions by key: records with equal keys go to the same subtask, placed exactly as Flink
    /// places them (Java `hashCode`, murmur, key groups).
    pub fn key_by<K, F>(&self, key: F) -> KeyedStream<K, T, F>
    where
        K: JavaHash + std::hash::Hash + Eq + Clone + Send + Sync + 'static,
        F: Fn(&T) -> K + Send + Sync + 'static,
    {
        self.key_by_selector(key)
    }

    /// `key_by` with any [`KeySelector`](crate::api::keyed::KeySelector) (the API's own named
    /// selectors, e.g. `connect`'s key of either side).
    pub(crate) fn key_by_selector<K, F>(&self, key: F) -> KeyedStream<K, T, F>
    where
        K: JavaHash + std::hash::Hash + Eq + Clone + Send + Sync + 'static,
        F: crate::api::keyed::KeySelector<T, K>,
    {
        let key = Arc::new(key);
        let k2 = key.clone();
        let writer = Arc::new(TypedWriterFactory {
            key_hash: Some(move |r: &T| k2.key_of(r).java_hash_code()),
            _t: PhantomData,
        });
        let stream = self.repartitioned(ShipStrategy::Hash, writer);
        KeyedStream {
            stream,
            unkeyed: self.clone(),
            key,
            _k: PhantomData,
        }
    }
}
