use std::cell::RefCell;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_runtime::sources::{
    GeneratorSource, IterSource, SocketSourceConfig, SocketTextSource, SourceFunction,
    TextFileSource, VecSource,
};
use sluice_types::{Data, NodeId, OperatorError};

use crate::node_body::{NodeBody, NodeImpl, TwoPhaseRewrite};
use crate::stream_graph::{ChainingStrategy, NodeKind, StreamNode};
use crate::typeops::{type_ops, TypedSourceFactory};
use crate::{DataStream, EnvConfig, GraphError, JobExecution, JobGraph, JobHandle};

pub(crate) struct EnvInner {
    pub config: EnvConfig,
    /// Like Flink's transformation counter: every transformation, virtual or not, takes an id.
    pub next_id: NodeId,
    pub nodes: Vec<StreamNode>,
    /// What each node runs, by node id (the plan descriptors above hold only the topology).
    pub impls: BTreeMap<NodeId, NodeImpl>,
    /// API misuse found while building (reported when the job is planned or run).
    pub errors: Vec<String>,
    /// Sources that cannot replay after a failure (a socket), by description: a job with
    /// periodic checkpoints is refused while any is listed (see `socket_text_stream`).
    pub non_replayable: Vec<String>,
    /// This process's part when the job runs over several processes (`None`: all of it).
    pub placement: Option<crate::Placement>,
    /// The record types that may cross processes, with their wire operations.
    pub wire: std::collections::HashMap<std::any::TypeId, Arc<dyn crate::placement::WireOps>>,
    /// The SQL plan the job was compiled from (see [`StreamEnv::add_query_plan`]).
    pub query_plan: Option<sluice_plan::QueryPlan>,
}

/// The job builder and its settings (Flink's `StreamExecutionEnvironment`).
///
/// Cheap to clone (a shared handle); build a job on one thread, then `execute()` it.
#[derive(Clone)]
pub struct StreamEnv {
    pub(crate) inner: Rc<RefCell<EnvInner>>,
}

impl Default for StreamEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for StreamEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEnv")
            .field("config", &self.inner.borrow().config)
            .finish()
    }
}

impl StreamEnv {
    /// An empty job with the default settings ([`EnvConfig::default`]).
    pub fn new() -> Self {
        Self::with_config(EnvConfig::default())
    }

    /// An empty job with the given settings (e.g. read from a configuration file).
    pub fn with_config(config: EnvConfig) -> Self {
        StreamEnv {
            inner: Rc::new(RefCell::new(EnvInner {
                config,
                next_id: 1,
                nodes: Vec::new(),
                impls: BTreeMap::new(),
                errors: Vec::new(),
                non_replayable: Vec::new(),
                placement: None,
                wire: Default::default(),
                query_plan: None,
            })),
        }
    }

    /// Runs only this process's part of the job: the subtasks placed on `placement.process`
    /// (see [`crate::placement`]), with the channels to the other processes' subtasks over
    /// its endpoint. Every process must build the same job with the same settings.
    pub fn set_placement(&self, placement: crate::Placement) -> &Self {
        self.inner.borrow_mut().placement = Some(placement);
        self
    }

    /// Lets records of type `T` cross between processes (postcard-encoded): a job split over
    /// processes is refused before it starts if an edge between two processes carries a type
    /// not declared here.
    pub fn exchange_type<T: Data + serde::Serialize + serde::de::DeserializeOwned>(&self) -> &Self {
        let (id, ops) = crate::placement::wire_ops::<T>();
        self.inner.borrow_mut().wire.insert(id, ops);
        self
    }

    /// A copy of the job's settings as they stand now (later setters do not change it).
    pub fn config(&self) -> EnvConfig {
        self.inner.borrow().config.clone()
    }

    /// The name shown in job listings, metrics and REST answers (default `Sluice Job`).
    pub fn set_job_name(&self, name: impl Into<String>) -> &Self {
        self.inner.borrow_mut().config.job_name = name.into();
        self
    }
    /// Default parallelism of every operator.
    pub fn set_parallelism(&self, p: usize) -> &Self {
        self.inner.borrow_mut().config.parallelism = p;
        self
    }
    /// Number of key groups (the upper bound for rescaling keyed state).
    pub fn set_max_parallelism(&self, m: u32) -> &Self {
        self.inner.borrow_mut().config.max_parallelism = Some(m);
        self
    }
    /// Longest time a record waits in a partly filled buffer; zero flushes after every record.
    pub fn set_buffer_timeout(&self, t: Duration) -> &Self {
        self.inner.borrow_mut().config.buffer_timeout = t;
        self
    }
    /// Size of a network buffer in bytes (default 32 KiB): a writer ships a buffer when it is
    /// full or when the buffer timeout ends. Zero is refused when the job starts.
    pub fn set_buffer_size(&self, bytes: usize) -> &Self {
        self.inner.borrow_mut().config.buffer_bytes = bytes;
        self
    }
    /// Exclusive credits per channel and floating credits per input gate.
    pub fn set_credits(&self, exclusive_per_channel: usize, floating_per_gate: usize) -> &Self {
        let mut i = self.inner.borrow_mut();
        i.config.exclusive_credits = exclusive_per_channel;
        i.config.floating_credits = floating_per_gate;
        self
    }
    /// Buffers a task may ship without credit while emitting one input record's outputs, per
    /// output gate (`taskmanager.network.memory.max-overdraft-buffers-per-gate`, 5; 0 = none).
    pub fn set_max_overdraft_buffers(&self, per_gate: usize) -> &Self {
        self.inner.borrow_mut().config.max_overdraft_buffers = per_gate;
        self
    }
    /// Buffer debloating (`taskmanager.network.memory.buffer-debloat.*`): every gate sizes its
    /// senders' buffers so that the data in flight takes `target` to consume.
    pub fn set_buffer_debloat(&self, debloat: sluice_channel::DebloatConfig) -> &Self {
        self.inner.borrow_mut().config.buffer_debloat = debloat;
        self
    }
    /// Turns buffer debloating on or off with Flink's default target, period and samples.
    pub fn enable_buffer_debloat(&self, enabled: bool) -> &Self {
        self.inner.borrow_mut().config.buffer_debloat.enabled = enabled;
        self
    }
    /// Runs every operator in its own task, with a network exchange between neighbours (for
    /// debugging and per-operator metrics; chaining is on by default).
    pub fn disable_operator_chaining(&self) -> &Self {
        self.inner.borrow_mut().config.chaining = false;
        self
    }

    pub(crate) fn alloc_id(&self) -> NodeId {
        let mut i = self.inner.borrow_mut();
        let id = i.next_id;
        i.next_id += 1;
        id
    }

    pub(crate) fn add_node(&self, node: StreamNode, body: NodeImpl) {
        let mut i = self.inner.borrow_mut();
        i.impls.insert(node.id, body);
        i.nodes.push(node);
    }

    /// Points every consumer of node `old` at node `new` and removes `old` (a plan rewrite).
    pub(crate) fn replace_node(&self, old: NodeId, new: NodeId) {
        let mut i = self.inner.borrow_mut();
        for n in i.nodes.iter_mut() {
            for e in n.inputs.iter_mut() {
                if e.from == old {
                    e.from = new;
                }
            }
        }
        i.nodes.retain(|n| n.id != old);
        i.impls.remove(&old);
    }

    pub(crate) fn record_error(&self, e: String) {
        self.inner.borrow_mut().errors.push(e);
    }

    pub(crate) fn with_node<R>(&self, id: NodeId, f: impl FnOnce(&mut StreamNode) -> R) -> R {
        let mut i = self.inner.borrow_mut();
        #[allow(
            clippy::expect_used,
            reason = "callers pass ids of this env's nodes: just added, or held by a live stream or sink"
        )]
        let n = i
            .nodes
            .iter_mut()
            .find(|n| n.id == id)
            .expect("node ids handed out by this env exist");
        f(n)
    }

    pub(crate) fn with_node_impl<R>(&self, id: NodeId, f: impl FnOnce(&mut NodeImpl) -> R) -> R {
        let mut i = self.inner.borrow_mut();
        #[allow(
            clippy::expect_used,
            reason = "every node this env hands out an id for is added with its implementation"
        )]
        let n = i
            .impls
            .get_mut(&id)
            .expect("node ids handed out by this env exist");
        f(n)
    }

    /// How to rebuild node `id` in two phases, if it is a keyed rolling aggregation.
    pub(crate) fn two_phase_rewrite(&self, id: NodeId) -> Option<TwoPhaseRewrite> {
        self.inner
            .borrow()
            .impls
            .get(&id)
            .and_then(|n| n.two_phase.clone())
    }

    /// A source from a factory called once per subtask with `(subtask, parallelism)`.
    pub fn add_source<T, S, F>(&self, name: &str, make: F) -> DataStream<T>
    where
        T: Data,
        S: SourceFunction<T> + 'static,
        F: Fn(usize, usize) -> Result<S, OperatorError> + Send + Sync + 'static,
    {
        self.source_node(format!("Source: {name}"), false, make)
    }

    fn source_node<T, S, F>(&self, name: String, non_parallel: bool, make: F) -> DataStream<T>
    where
        T: Data,
        S: SourceFunction<T> + 'static,
        F: Fn(usize, usize) -> Result<S, OperatorError> + Send + Sync + 'static,
    {
        let id = self.alloc_id();
        self.add_node(
            StreamNode {
                id,
                name,
                kind: NodeKind::Source,
                uid: None,
                parallelism: None,
                non_parallel,
                max_parallelism: None,
                chaining: ChainingStrategy::Head,
                inputs: Vec::new(),
                identity: Default::default(),
                options: Vec::new(),
            },
            NodeImpl {
                body: NodeBody::Source(Arc::new(TypedSourceFactory {
                    make,
                    _t: PhantomData,
                })),
                in_type: None,
                out_type: Some(type_ops::<T>()),
                input_writers: Vec::new(),
                two_phase: None,
            },
        );
        DataStream::of_node(self.clone(), id)
    }

    /// A bounded generator: record `i` is `f(i)` for `i` in `0..count`. Subtask `k` of `p`
    /// generates the contiguous share `[k*count/p, (k+1)*count/p)`, so the records and where
    /// they are produced depend only on `count` and `p`.
    pub fn generate<T, F>(&self, count: u64, f: F) -> DataStream<T>
    where
        T: Data,
        F: Fn(u64) -> T + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        self.source_node("Source: Generator Source".into(), false, move |i, p| {
            Ok(GeneratorSource::new(
                sluice_runtime::sources::split_range(count, i, p),
                f.clone(),
            ))
        })
    }

    /// The elements of a vector, split in contiguous shares across source subtasks.
    pub fn from_vec<T: Data + Sync>(&self, data: Vec<T>) -> DataStream<T> {
        let data = Arc::new(data);
        self.source_node("Source: Collection Source".into(), false, move |i, p| {
            Ok(VecSource::new(data.clone(), i, p))
        })
    }

    /// The items of an iterator. An iterator cannot be split, so this source runs at
    /// parallelism 1, and a job built on it can be executed once.
    pub fn from_iter<T, I>(&self, iter: I) -> DataStream<T>
    where
        T: Data,
        I: IntoIterator<Item = T>,
        I::IntoIter: Send + 'static,
    {
        let cell = Arc::new(Mutex::new(Some(iter.into_iter())));
        self.source_node("Source: Iterator Source".into(), true, move |_, _| {
            Ok(IterSource::new(cell.clone()))
        })
    }

    /// The lines of a text file, split by byte ranges across subtasks (aligned to line starts).
    /// Lines that are not valid UTF-8 go to the dead-letter output.
    pub fn read_text_file(&self, path: impl Into<PathBuf>) -> DataStream<String> {
        let path: PathBuf = path.into();
        let name = format!("Source: {}", path.display());
        self.source_node(name, false, move |i, p| {
            if !path.is_file() {
                return Err(OperatorError::failed(format!(
                    "input file {} does not exist or is not a file",
                    path.display()
                )));
            }
            Ok(TextFileSource::new(path.clone(), i, p))
        })
    }

    /// Lines from a TCP server, as Flink's `socketTextStream(host, port)`: delimiter `\n`,
    /// parallelism 1, no reconnection when the server closes (the source then ends). See
    /// [`socket_text_stream_with`](Self::socket_text_stream_with) for retries and delays.
    ///
    /// **It cannot replay after a failure**: lines received after the last checkpoint are lost
    /// when the job restores. A job with periodic checkpoints using it is refused at launch
    /// unless [`SocketSourceConfig::accept_loss_on_restore`] is set; then every restore
    /// reports how many received lines were lost.
    pub fn socket_text_stream(&self, host: &str, port: u16) -> DataStream<String> {
        self.socket_text_stream_with(SocketSourceConfig::new(host, port))
    }

    /// [`socket_text_stream`](Self::socket_text_stream) with every setting
    /// ([`SocketSourceConfig`]: delimiter, `max_retries` (-1 = forever), `retry_delay`
    /// (Flink's 500 ms), connect timeout, `accept_loss_on_restore`).
    pub fn socket_text_stream_with(&self, config: SocketSourceConfig) -> DataStream<String> {
        self.socket_stream_decoded(config, |s: &str| Ok(s.to_owned()))
    }

    /// [`socket_text_stream_with`](Self::socket_text_stream_with), each line decoded by
    /// `decode` inside the source: a line it rejects (or one that is not UTF-8) goes to the
    /// dead-letter output as `socket HOST:PORT line N` with the reason, and the job goes on.
    pub fn socket_stream_decoded<T, D>(
        &self,
        config: SocketSourceConfig,
        decode: D,
    ) -> DataStream<T>
    where
        T: Data,
        D: Fn(&str) -> Result<T, String> + Send + Sync + 'static,
    {
        let address = config.address();
        if !config.accept_loss_on_restore {
            self.inner
                .borrow_mut()
                .non_replayable
                .push(format!("the socket source {address}"));
        }
        let lines = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let decode: sluice_runtime::sources::LineDecoder<T> = Arc::new(decode);
        self.source_node(
            // Flink's name for it (the address is in its errors and restore reports).
            "Source: Socket Stream".into(),
            true,
            move |_, _| {
                Ok(SocketTextSource::with_decoder(
                    config.clone(),
                    lines.clone(),
                    decode.clone(),
                ))
            },
        )
    }

    /// Records the plan (a SQL query's) that the operators just added were compiled from; the
    /// job graph carries it ([`JobGraph::query_plan`]) for the REST server's `EXPLAIN
    /// ANALYZE`. A second plan added to the same job is appended.
    pub fn add_query_plan(&self, plan: sluice_plan::QueryPlan) -> &Self {
        let mut i = self.inner.borrow_mut();
        match &mut i.query_plan {
            Some(p) => p.extend(plan),
            None => i.query_plan = Some(plan),
        }
        self
    }

    /// The plan recorded by [`StreamEnv::add_query_plan`], if any.
    pub fn query_plan(&self) -> Option<sluice_plan::QueryPlan> {
        self.inner.borrow().query_plan.clone()
    }

    /// Every stream-graph node built so far, in id order.
    pub fn stream_nodes(&self) -> Vec<StreamNode> {
        self.inner.borrow().nodes.clone()
    }

    fn check_errors(&self) -> Result<(), GraphError> {
        let i = self.inner.borrow();
        match i.errors.first() {
            Some(e) => Err(GraphError::invalid_job(e.clone())),
            None => Ok(()),
        }
    }

    /// The chained job graph of what has been built.
    pub fn job_graph(&self) -> Result<JobGraph, GraphError> {
        self.check_errors()?;
        let i = self.inner.borrow();
        i.config.validate().map_err(GraphError::invalid_config)?;
        let mut graph =
            crate::job_graph::build(&i.config.job_name, &i.nodes, &i.config.plan_config())?;
        graph.query_plan = i.query_plan.clone();
        Ok(graph)
    }

    /// Flink's `getExecutionPlan()`: the stream graph as JSON, pretty-printed as Flink prints it.
    pub fn execution_plan(&self) -> Result<String, GraphError> {
        self.check_errors()?;
        let i = self.inner.borrow();
        Ok(crate::json::to_jackson_pretty(
            &crate::plan::stream_plan_json(&i.nodes, &i.config.plan_config())?,
        ))
    }

    /// Starts the job on background threads and returns at once.
    pub fn launch(&self) -> Result<JobHandle, GraphError> {
        let graph = self.job_graph()?;
        let i = self.inner.borrow();
        if i.config.checkpoints.interval.is_some() {
            if let Some(what) = i.non_replayable.first() {
                return Err(GraphError::invalid_job(format!(
                    "{what} cannot replay after a failure, so checkpoints cannot restore this \
                     job without losing the lines received after the last checkpoint; disable \
                     checkpointing, or accept the loss (SocketSourceConfig::accept_loss_on_restore, \
                     each restore then reports the lines lost)"
                )));
            }
        }
        // Resource ceilings and fault specs are checked before any thread starts.
        crate::launch_checks::check(&graph, &i.config)?;
        crate::deploy::launch(
            graph,
            &i.nodes,
            &i.impls,
            &i.config,
            i.placement.clone(),
            &i.wire,
        )
    }

    /// Runs the job to completion (bounded inputs) and returns its result.
    pub fn execute(&self) -> Result<JobExecution, GraphError> {
        Ok(self.launch()?.wait()?)
    }
}
