use std::fmt::Debug;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;

use sluice_runtime::sinks::{
    part_path, CollectHandle, DiscardHandle, FnSink, PrintSink, TextFileSink,
};
use sluice_types::{Collector, Data, NodeId, OperatorContext, OperatorError};

use crate::node_body::{split_inputs, NodeBody, NodeImpl};
use crate::stream_graph::{ChainingStrategy, NodeKind, StreamNode};
use crate::typeops::{type_ops, TypedSinkFactory};
use crate::{DataStream, StreamEnv};

/// A sink added to the job. Configure it with the builder methods; `handle` gives access to what
/// it produces (collected records, a count).
pub struct Sink<H> {
    env: StreamEnv,
    node: NodeId,
    /// What the sink gives back to the program (e.g. a [`CollectHandle`] to take the records
    /// after `execute`, a [`DiscardHandle`] to count them).
    pub handle: H,
}

impl<H> Sink<H> {
    fn set(self, f: impl FnOnce(&mut StreamNode)) -> Self {
        self.env.with_node(self.node, f);
        self
    }
    /// The sink's name in plans, metrics and thread names (shown as `Sink: <name>`).
    pub fn name(self, name: &str) -> Self {
        self.set(|n| n.name = format!("Sink: {name}"))
    }
    /// A stable id for the sink, so its state is matched across job versions.
    pub fn uid(self, uid: &str) -> Self {
        self.set(|n| n.uid = Some(uid.to_string()))
    }
    /// Number of parallel sink subtasks (default: the job's parallelism).
    pub fn set_parallelism(self, p: usize) -> Self {
        self.set(|n| n.parallelism = Some(p))
    }
    /// Never chain the sink with the operator before it.
    pub fn disable_chaining(self) -> Self {
        self.set(|n| n.chaining = ChainingStrategy::Never)
    }
    /// Starts a new chain at the sink, so it runs in a task of its own.
    pub fn start_new_chain(self) -> Self {
        self.set(|n| n.chaining = ChainingStrategy::Head)
    }
    /// The sink's id in the stream graph (as named by plans and the plan fixer).
    pub fn node_id(&self) -> NodeId {
        self.node
    }
    /// The same sink with its handle turned into another (e.g. dropped: `map_handle(|_| ())`,
    /// for a caller that offers one sink type over several connectors).
    pub fn map_handle<G>(self, f: impl FnOnce(H) -> G) -> Sink<G> {
        Sink {
            env: self.env,
            node: self.node,
            handle: f(self.handle),
        }
    }
    /// Declares connector option `key` with its value for this job (e.g.
    /// `sink.buffer-flush.max-rows`). The sink reads it from [`OperatorContext::option`] when
    /// it is deployed, and the fixer may change declared options only.
    pub fn option(self, key: &str, value: impl ToString) -> Self {
        let (key, value) = (key.to_string(), value.to_string());
        self.set(|n| n.options.push((key, value)))
    }
}

/// What a sink's deploy-time check (see [`DataStream::add_sink_deployed`]) is told about the
/// job, once per deployment, before any subtask starts.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SinkDeployment {
    /// The sink vertex's parallelism.
    pub parallelism: usize,
    /// The job's checkpoint settings (`interval: None`: no periodic checkpoints), for sinks
    /// whose resources grow with checkpoints in flight (a transaction per checkpoint).
    pub checkpoints: crate::CheckpointConfig,
}

impl<T: Data> DataStream<T> {
    /// Adds a sink built per subtask by `make`; `prepare(parallelism)` runs once per deployment.
    /// `make` may return any collector type (a concrete type is best: the per-record call is
    /// then inlined into the sink's timing wrapper); `Box<dyn Collector<T>>` works too.
    pub fn add_sink<H, C, P, F>(&self, name: &str, handle: H, prepare: P, make: F) -> Sink<H>
    where
        C: Collector<T> + 'static,
        P: Fn(usize) -> Result<(), OperatorError> + Send + Sync + 'static,
        F: Fn(&OperatorContext) -> Result<C, OperatorError> + Send + Sync + 'static,
    {
        self.add_sink_deployed(
            name,
            handle,
            move |d: &SinkDeployment| prepare(d.parallelism),
            make,
        )
    }

    /// [`add_sink`](Self::add_sink) whose `prepare` also sees the job's checkpoint settings
    /// ([`SinkDeployment`]): a sink can refuse a job whose checkpointing it cannot sustain
    /// before the job starts (an error at a subtask's start would be restarted over and over).
    pub fn add_sink_deployed<H, C, P, F>(
        &self,
        name: &str,
        handle: H,
        prepare: P,
        make: F,
    ) -> Sink<H>
    where
        C: Collector<T> + 'static,
        P: Fn(&SinkDeployment) -> Result<(), OperatorError> + Send + Sync + 'static,
        F: Fn(&OperatorContext) -> Result<C, OperatorError> + Send + Sync + 'static,
    {
        let id = self.env.alloc_id();
        let (inputs, input_writers) = split_inputs(&self.inputs);
        self.env.add_node(
            StreamNode {
                id,
                name: format!("Sink: {name}"),
                kind: NodeKind::Sink,
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
                body: NodeBody::Sink(Arc::new(TypedSinkFactory::<T, C, P, F> {
                    prepare,
                    make,
                    _t: PhantomData,
                })),
                in_type: Some(type_ops::<T>()),
                out_type: None,
                input_writers,
                two_phase: None,
            },
        );
        Sink {
            env: self.env.clone(),
            node: id,
            handle,
        }
    }

    /// Keeps every record in memory; read them from `handle.take()` after the job finished.
    pub fn collect(&self) -> Sink<CollectHandle<T>> {
        let h = CollectHandle::new();
        let (h1, h2) = (h.clone(), h.clone());
        self.add_sink(
            "Collect",
            h,
            move |p| {
                h1.reset(p);
                Ok(())
            },
            move |ctx| Ok(h2.sink(ctx.subtask_index)),
        )
    }

    /// Drops every record, counting them.
    pub fn discard(&self) -> Sink<DiscardHandle> {
        let h = DiscardHandle::default();
        let (h1, h2) = (h.clone(), h.clone());
        self.add_sink(
            "Discard",
            h,
            move |_| {
                h1.reset();
                Ok(())
            },
            move |_| Ok(h2.sink()),
        )
    }

    /// Prints records to stdout (`Debug` format), prefixed `n> ` at parallelism > 1.
    pub fn print(&self) -> Sink<()>
    where
        T: Debug,
    {
        self.add_sink(
            "Print to Std. Out",
            (),
            |_| Ok(()),
            |ctx| Ok(PrintSink::new(ctx.subtask_index, ctx.parallelism)),
        )
    }

    /// Calls `f` for every record (a custom sink).
    pub fn sink_fn<F>(&self, name: &str, f: F) -> Sink<()>
    where
        F: Fn(T) -> Result<(), OperatorError> + Clone + Send + Sync + 'static,
    {
        self.add_sink(name, (), |_| Ok(()), move |_| Ok(FnSink(f.clone())))
    }

    /// Writes one line per record. At parallelism 1 `path` is the file; otherwise it is a
    /// directory holding `part-<subtask>` files.
    pub fn write_text<F>(&self, path: impl Into<PathBuf>, format: F) -> Sink<()>
    where
        F: Fn(&T, &mut String) + Clone + Send + Sync + 'static,
    {
        self.write_lines("Text File", path.into(), None, format)
    }

    /// Writes CSV: a header line, then one row per record, fields under Sluice's one CSV rule
    /// ([`sluice_csv`]: RFC 4180 quoting when needed; an empty string is written `""`).
    /// Paths as for [`write_text`](Self::write_text).
    pub fn write_csv<F>(&self, path: impl Into<PathBuf>, header: &[&str], row: F) -> Sink<()>
    where
        F: Fn(&T) -> Vec<String> + Clone + Send + Sync + 'static,
    {
        let header = sluice_csv::record(header.iter().copied());
        self.write_lines(
            "CSV File",
            path.into(),
            Some(header),
            move |r: &T, line: &mut String| {
                for (i, f) in row(r).iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    sluice_csv::push_field(line, f);
                }
            },
        )
    }

    /// Writes lines exactly once (operator `Sink: Transactional File`): each subtask writes
    /// `dir/part-<subtask>-<attempt>-<n>.pending` and publishes it (renames it without the
    /// suffix) only when the checkpoint after it completes, or at the end of a successful job.
    /// After a failure and restore, the committed files hold every record exactly once. Read
    /// them with [`sluice_runtime::sinks::committed_lines`].
    pub fn write_text_exactly_once<F>(&self, dir: impl Into<PathBuf>, format: F) -> Sink<()>
    where
        F: Fn(&T, &mut String) + Clone + Send + Sync + 'static,
    {
        let dir = dir.into();
        self.add_sink(
            "Transactional File",
            (),
            |_| Ok(()),
            move |ctx| {
                sluice_runtime::sinks::TransactionalFileSink::new(dir.clone(), format.clone(), ctx)
            },
        )
    }

    fn write_lines<F>(
        &self,
        name: &str,
        path: PathBuf,
        header: Option<String>,
        format: F,
    ) -> Sink<()>
    where
        F: Fn(&T, &mut String) + Clone + Send + Sync + 'static,
    {
        let p2 = path.clone();
        self.add_sink(
            name,
            (),
            move |p| {
                if p > 1 {
                    std::fs::create_dir_all(&p2).map_err(|e| {
                        OperatorError::io(format!("creating output directory {}", p2.display()), e)
                    })?;
                }
                Ok(())
            },
            move |ctx| {
                Ok(TextFileSink::new(
                    part_path(&path, ctx.subtask_index, ctx.parallelism),
                    header.clone(),
                    format.clone(),
                ))
            },
        )
    }
}
