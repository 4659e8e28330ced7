//! Job graph → running subtasks, the DataStream API's side: the job master (`sluice-runtime`)
//! owns the job's life and asks `Wiring` for the tasks of each attempt. Wiring creates the
//! input gates and channel senders of every network edge (pointwise or all-to-all), and for
//! each subtask the closure that builds its chain of typed operators on its own thread and runs
//! it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use sluice_runtime::job_master::{Attempt, AttemptBuilder};
use sluice_runtime::sources::SourceContext;
use sluice_runtime::telemetry::cluster::{ClusterLayout, TaskManagerSpec};
use sluice_runtime::{JobHandle, JobMaster, TaskContext, TaskSpec};
use sluice_types::{NodeId, OperatorContext, OperatorError, ShipStrategy};

use crate::node_body::{NodeBody, NodeImpl};
use crate::partition::{pointwise_sources, pointwise_targets};
use crate::placement::WireOps;
use crate::stream_graph::StreamNode;
use crate::typeops::{AnyBox, TypeOps, WriterArgs, WriterFactory};
use crate::{EnvConfig, GraphError, JobGraph, Placement};
use sluice_net::{ChannelId, SerdeMetrics};
use std::any::TypeId;

struct NetworkOut {
    writer: Arc<dyn WriterFactory>,
    strategy: ShipStrategy,
    downstream_parallelism: usize,
    downstream_max_parallelism: u32,
    seed: u64,
    senders: Vec<AnyBox>,
}

struct ChainMember {
    id: NodeId,
    op_ctx: OperatorContext,
    body: NodeBody,
    out_type: Option<Arc<dyn TypeOps>>,
    chained: Vec<NodeId>,
    network: Vec<NetworkOut>,
}

/// Channels into local gates from another process, by (that process, edge): id and sender.
type RemoteIn = BTreeMap<(usize, usize), Vec<(ChannelId, AnyBox)>>;
/// Channels from local subtasks to another process, by (that process, edge): id, upstream and
/// downstream subtask.
type RemoteOut = BTreeMap<(usize, usize), Vec<(ChannelId, usize, usize)>>;

fn seed_of(edge: usize, subtask: usize) -> u64 {
    (edge as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (subtask as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

/// Starts the job: prepares the sinks, then hands the job graph and the wiring to the runtime's
/// job master.
pub(crate) fn launch(
    graph: JobGraph,
    nodes: &[StreamNode],
    impls: &BTreeMap<NodeId, NodeImpl>,
    cfg: &EnvConfig,
    placement: Option<Placement>,
    wire: &HashMap<TypeId, Arc<dyn WireOps>>,
) -> Result<JobHandle, GraphError> {
    let mut cfg = cfg.clone();
    if let Some(p) = &placement {
        check_placement(&graph, impls, p, wire)?;
        // A split job is restarted by whoever started its processes, all of them together
        // (Flink's full restart): the launcher of `--processes`, or Kubernetes. Within a
        // process a failure ends the process.
        cfg.restart = Some(sluice_runtime::checkpoint::RestartStrategy::NoRestart);
    }
    let cfg = &cfg;
    for n in nodes {
        if let NodeBody::Sink(f) = &impls[&n.id].body {
            let deployment = crate::SinkDeployment {
                parallelism: graph.nodes[&n.id].parallelism,
                checkpoints: cfg.checkpoints.clone(),
            };
            f.prepare(&deployment).map_err(|e| {
                GraphError::invalid_job(format!("cannot prepare sink '{}': {e}", n.name))
            })?;
        }
    }
    let op_ids = crate::operator_id::operator_ids(nodes);
    // The job's operators by stable id (see `crate::operator_id`), with their names: what a
    // restore maps checkpoint state onto.
    let operators: BTreeMap<String, String> = nodes
        .iter()
        .map(|n| (op_ids[&n.id].to_string(), n.name.clone()))
        .collect();
    let wiring = Wiring {
        nodes: nodes.iter().map(|n| (n.id, n.clone())).collect(),
        impls: impls.clone(),
        op_ids,
        placement,
        wire: wire.clone(),
    };
    // A restore that would lose state is refused before anything starts.
    let link = wiring
        .placement
        .as_ref()
        .map(|p| crate::process_link::NetLink::new(p.endpoint.clone(), p.process, p.processes));
    let layout = wiring.placement.as_ref().map(|p| cluster_layout(&graph, p));
    let mut master = JobMaster::new(graph, cfg.clone(), operators, Box::new(wiring))
        .map_err(|e| GraphError::invalid_job(e.message))?;
    if let (Some(l), Some(layout)) = (link, layout) {
        master.set_process_link(l.role(), l, layout);
    }
    // A job that checkpoints is refused before it starts if its directory cannot be written.
    master
        .prepare_checkpoint_dir()
        .map_err(GraphError::invalid_config)?;
    Ok(master.launch()?)
}

/// The job's widest parallelism: the slots its subtasks need (Flink's slot sharing).
fn widest(graph: &JobGraph) -> usize {
    graph
        .vertices
        .iter()
        .map(|v| v.parallelism)
        .max()
        .unwrap_or(1)
}

/// Where every subtask of a split job runs (the placement's rule) and each process's
/// TaskManager, named from its address.
fn cluster_layout(graph: &JobGraph, p: &Placement) -> ClusterLayout {
    let slots = p.slots_per_process(widest(graph));
    ClusterLayout {
        process: p.process,
        taskmanagers: p
            .endpoint
            .addresses()
            .iter()
            .map(|a| TaskManagerSpec::at(*a))
            .collect(),
        process_of: graph
            .vertices
            .iter()
            .map(|v| (0..v.parallelism).map(|k| p.process_of(k, slots)).collect())
            .collect(),
    }
}

/// The typed side of a job, by node id: what the job master cannot know (record types, user
/// closures) and needs to build the tasks of an attempt.
struct Wiring {
    nodes: HashMap<NodeId, StreamNode>,
    impls: BTreeMap<NodeId, NodeImpl>,
    /// Every node's stable operator id: what its state is filed under in checkpoints.
    op_ids: BTreeMap<NodeId, crate::operator_id::OperatorId>,
    /// This process's part of a job split over processes.
    placement: Option<Placement>,
    wire: HashMap<TypeId, Arc<dyn WireOps>>,
}

impl AttemptBuilder for Wiring {
    fn build(&self, a: &Attempt<'_>) -> Result<Vec<TaskSpec>, String> {
        if a.number > 0 && self.placement.is_some() {
            return Err(
                "a job split over processes does not restart yet: its channels to the other \
                 processes are those of the first attempt"
                    .into(),
            );
        }
        build_attempt(self, a)
    }
}

/// A job split over processes: its process index must exist, and every record type that
/// crosses processes must have its wire operations ([`crate::StreamEnv::exchange_type`]; they
/// also write unaligned checkpoints' in-flight records).
fn check_placement(
    graph: &JobGraph,
    impls: &BTreeMap<NodeId, NodeImpl>,
    p: &Placement,
    wire: &HashMap<TypeId, Arc<dyn WireOps>>,
) -> Result<(), GraphError> {
    if p.process >= p.processes {
        return Err(GraphError::invalid_config(format!(
            "process index {} is not below the number of processes {}",
            p.process, p.processes
        )));
    }
    for e in &graph.edges {
        let down = &graph.vertices[e.to_vertex];
        let Some(t) = &impls[&down.head].in_type else {
            continue;
        };
        let (id, name) = t.record_type();
        if !wire.contains_key(&id) {
            return Err(GraphError::invalid_job(format!(
                "the records of the edge {} -> {} ({name}) would cross processes, but the type \
                 has no wire codec: declare it with StreamEnv::exchange_type::<{name}>()",
                graph.vertices[e.from_vertex].name, down.name
            )));
        }
    }
    Ok(())
}

/// Builds one attempt of the job: fresh gates, channels and task bodies (operators are created
/// on their task threads when the bodies run, restoring state if the hub says so).
// Subtask indices address gates, senders and metrics alike; index loops read clearest here.
#[allow(clippy::needless_range_loop)]
fn build_attempt(w: &Wiring, a: &Attempt<'_>) -> Result<Vec<TaskSpec>, String> {
    let (graph, cfg, control, metrics, emitted) =
        (a.graph, a.config, a.control, a.metrics, a.emitted);
    let by_id: HashMap<NodeId, &StreamNode> = w.nodes.iter().map(|(k, v)| (*k, v)).collect();
    let (impls, op_ids) = (&w.impls, &w.op_ids);
    let exch = cfg.exchange();
    let every_input_encodable = graph.vertices.iter().all(|v| {
        impls[&v.head]
            .in_type
            .as_ref()
            .is_none_or(|t| w.wire.contains_key(&t.record_type().0))
    });
    let mut out_pool: Vec<Vec<f64>> = graph
        .vertices
        .iter()
        .map(|v| vec![0.0; v.parallelism])
        .collect();
    // Gates, and the senders feeding them, per (edge, upstream subtask): (downstream subtask, sender).
    let mut gates: HashMap<(usize, usize), AnyBox> = HashMap::new();
    let mut senders: HashMap<(usize, usize), Vec<(usize, AnyBox)>> = HashMap::new();
    // Split over processes: which subtasks run here, and the channels that cross, by (other
    // process, edge): into a local gate (`remote_in`) or out of a local subtask (`remote_out`).
    let place = w
        .placement
        .as_ref()
        .map(|p| (p, p.slots_per_process(widest(graph))));
    let process_of = |k: usize| place.map_or(0, |(p, slots)| p.process_of(k, slots));
    let here = place.map_or(0, |(p, _)| p.process);
    let mut remote_in: RemoteIn = BTreeMap::new();
    let mut remote_out: RemoteOut = BTreeMap::new();
    let mut edge_type: HashMap<usize, Arc<dyn TypeOps>> = HashMap::new();
    let channel_id = |ei: usize, i: usize, j: usize| ChannelId {
        edge: ei as u32,
        from: i as u32,
        to: j as u32,
    };
    for v in &graph.vertices {
        let inputs: Vec<(usize, &crate::JobEdge)> = graph
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.to_vertex == v.index)
            .collect();
        if inputs.is_empty() {
            continue;
        }
        let in_type = impls[&v.head].in_type.clone().ok_or_else(|| {
            format!(
                "vertex {} has inputs but its head operator takes none",
                v.index
            )
        })?;
        for &(ei, _) in &inputs {
            edge_type.insert(ei, in_type.clone());
        }
        for j in 0..v.parallelism {
            let mut plan = Vec::new();
            for &(ei, e) in &inputs {
                let pu = graph.vertices[e.from_vertex].parallelism;
                let ups = if e.strategy.is_pointwise() {
                    pointwise_sources(pu, v.parallelism, j)
                } else {
                    0..pu
                };
                for i in ups {
                    plan.push((ei, i));
                }
            }
            if process_of(j) != here {
                // Runs on another process: only its channels from subtasks here matter.
                for (ei, i) in plan {
                    if process_of(i) == here {
                        remote_out.entry((process_of(j), ei)).or_default().push((
                            channel_id(ei, i, j),
                            i,
                            j,
                        ));
                    }
                }
                continue;
            }
            let (gate, canceller, gate_senders) =
                in_type.make_gate(plan.len(), &exch, metrics[v.index][j].waits.clone());
            metrics[v.index][j].input_pool_size.store(
                (plan.len() * exch.exclusive_credits + exch.floating_credits) as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            metrics[v.index][j].input_exclusive_size.store(
                (plan.len() * exch.exclusive_credits) as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            // Each channel may hold its exclusive credits plus an even share of the floating ones.
            let per_channel = exch.exclusive_credits as f64
                + exch.floating_credits as f64 / plan.len().max(1) as f64;
            for &(ei, i) in &plan {
                let up = graph.edges[ei].from_vertex;
                out_pool[up][i] += per_channel;
            }
            control.register_gate(canceller);
            for ((ei, i), s) in plan.into_iter().zip(gate_senders) {
                if process_of(i) == here {
                    senders.entry((ei, i)).or_default().push((j, s));
                } else {
                    remote_in
                        .entry((process_of(i), ei))
                        .or_default()
                        .push((channel_id(ei, i, j), s));
                }
            }
            gates.insert((v.index, j), gate);
        }
    }
    if let Some((p, _)) = place {
        let cancellers = open_remote(w, p, &edge_type, remote_in, remote_out, &exch, &mut senders)?;
        // A failing or cancelled job wakes its writers waiting on an outbox's own buffers.
        for c in cancellers {
            control.register_gate(c);
        }
    }

    for (v, pools) in out_pool.iter().enumerate() {
        for (i, p) in pools.iter().enumerate() {
            metrics[v][i]
                .output_pool_size
                .store(p.round() as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let mut tasks = Vec::new();
    for v in &graph.vertices {
        for i in 0..v.parallelism {
            if process_of(i) != here {
                continue;
            }
            let mut members = Vec::new();
            for &nid in &v.nodes {
                let n = by_id[&nid];
                let body = &impls[&nid];
                let r = &graph.nodes[&nid];
                let mut network = Vec::new();
                for (ei, e) in graph
                    .edges
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.from_node == nid)
                {
                    let mut ss = senders.remove(&(ei, i)).unwrap_or_default();
                    ss.sort_by_key(|(j, _)| *j);
                    let down = &graph.vertices[e.to_vertex];
                    debug_assert!(
                        !e.strategy.is_pointwise()
                            || ss.len()
                                == pointwise_targets(v.parallelism, down.parallelism, i).len()
                    );
                    network.push(NetworkOut {
                        writer: impls[&e.to_node].input_writers[e.input].clone(),
                        strategy: e.strategy,
                        downstream_parallelism: down.parallelism,
                        downstream_max_parallelism: graph.nodes[&e.to_node].max_parallelism,
                        seed: seed_of(ei, i),
                        senders: ss.into_iter().map(|(_, s)| s).collect(),
                    });
                }
                members.push(ChainMember {
                    id: nid,
                    op_ctx: OperatorContext {
                        operator_name: n.name.clone(),
                        task_name: v.name.clone(),
                        subtask_index: i,
                        parallelism: v.parallelism,
                        max_parallelism: r.max_parallelism,
                        operator_id: op_ids[&nid].to_string(),
                        // The task's services, set when the task builds its chain.
                        services: sluice_types::ServicesHandle::none(),
                        options: n.options.clone(),
                    },
                    body: body.body.clone(),
                    out_type: body.out_type.clone(),
                    chained: crate::job_graph::chain_successors(graph, nid),
                    network,
                });
            }
            let gate = gates.remove(&(v.index, i));
            let head_in = impls[&v.head].in_type.clone();
            // Unaligned checkpoints write this subtask's in-flight input records with its
            // input type's wire codec, when every input type of the job has one (all or none:
            // a checkpoint restores in another process only with every vertex's records).
            let channel_codec = head_in
                .as_ref()
                .filter(|_| every_input_encodable)
                .and_then(|t| {
                    w.wire.get(&t.record_type().0).map(|ops| {
                        (
                            sluice_runtime::checkpoint::task::channel_state_id(
                                &op_ids[&v.head].to_string(),
                            ),
                            ops.channel_codec(),
                            v.parallelism,
                        )
                    })
                });
            let emitted = emitted
                .get(&(v.index, i))
                .cloned()
                .unwrap_or_else(|| Arc::new(AtomicU64::new(0)));
            let head = v.head;
            let exch_cfg = exch.clone();
            let operator_timing = cfg.operator_timing;
            let body = Box::new(move |ctx: &TaskContext| {
                run_subtask(
                    SubtaskPlan {
                        members,
                        head,
                        gate,
                        head_in,
                        emitted,
                        exch: exch_cfg,
                        operator_timing,
                        channel_codec: channel_codec.clone(),
                    },
                    ctx,
                )
            });
            tasks.push(TaskSpec::new(
                v.index,
                v.name.clone(),
                i,
                v.parallelism,
                metrics[v.index][i].clone(),
                body,
            ));
        }
    }

    Ok(tasks)
}

/// Opens the channels that cross to other processes on the placement's endpoint: the remote
/// ends of local gates, and the senders of local subtasks towards remote gates (added to
/// `senders`, where the local ones are).
fn open_remote(
    w: &Wiring,
    p: &Placement,
    edge_type: &HashMap<usize, Arc<dyn TypeOps>>,
    remote_in: RemoteIn,
    remote_out: RemoteOut,
    exch: &sluice_channel::ExchangeConfig,
    senders: &mut HashMap<(usize, usize), Vec<(usize, AnyBox)>>,
) -> Result<Vec<sluice_channel::GateCanceller>, String> {
    let wire_of = |ei: usize| -> Result<&Arc<dyn WireOps>, String> {
        let (id, name) = edge_type[&ei].record_type();
        w.wire
            .get(&id)
            .ok_or_else(|| format!("no wire codec for {name} (StreamEnv::exchange_type)"))
    };
    for ((process, ei), channels) in remote_in {
        for (_, s) in &channels {
            edge_type[&ei].mark_remote(s);
        }
        wire_of(ei)?
            .open_inputs(
                &p.endpoint,
                process,
                channels,
                exch.exclusive_credits,
                Arc::new(SerdeMetrics::default()),
            )
            .map_err(|e| {
                format!("opening the channels of edge {ei} from process {process}: {e}")
            })?;
    }
    let mut cancellers = Vec::new();
    for ((process, ei), channels) in remote_out {
        let ids = channels.iter().map(|(id, _, _)| *id).collect();
        let (opened, canceller) = wire_of(ei)?
            .open_outputs(&p.endpoint, process, ids, Arc::new(SerdeMetrics::default()))
            .map_err(|e| format!("opening the channels of edge {ei} to process {process}: {e}"))?;
        cancellers.push(canceller);
        for ((_, i, j), s) in channels.into_iter().zip(opened) {
            edge_type[&ei].mark_remote(&s);
            senders.entry((ei, i)).or_default().push((j, s));
        }
    }
    Ok(cancellers)
}

/// Everything one subtask needs to build its chain on its own thread.
struct SubtaskPlan {
    members: Vec<ChainMember>,
    head: NodeId,
    gate: Option<AnyBox>,
    head_in: Option<Arc<dyn TypeOps>>,
    emitted: Arc<AtomicU64>,
    exch: sluice_channel::ExchangeConfig,
    operator_timing: bool,
    /// The channel-state id, codec and vertex parallelism for unaligned checkpoints.
    channel_codec: Option<ChannelCodec>,
}

type ChannelCodec = (
    String,
    Arc<dyn sluice_runtime::checkpoint::task::ChannelStateCodec>,
    usize,
);

fn run_subtask(plan: SubtaskPlan, ctx: &TaskContext) -> Result<(), OperatorError> {
    let SubtaskPlan {
        mut members,
        head,
        gate,
        head_in,
        emitted,
        exch,
        operator_timing,
        channel_codec,
    } = plan;
    if let (Some((id, codec, parallelism)), Some(c)) = (channel_codec, ctx.services.checkpoints()) {
        c.set_channel_codec(id, codec, parallelism);
    }
    // Every operator of the chain reaches this task's services (checkpoints, metrics) through
    // its context.
    for m in &mut members {
        m.op_ctx.services = ctx.services.handle();
    }
    let mut built: BTreeMap<NodeId, AnyBox> = BTreeMap::new();
    // The chain head's source function, ready to run, with its operator context.
    let mut source_runner = None;
    // Operator metrics in chain order (head first), with the chain's internal edges.
    let mut op_metrics: BTreeMap<NodeId, Arc<sluice_runtime::OperatorMetrics>> = BTreeMap::new();
    {
        let mut edges = Vec::new();
        let index: BTreeMap<NodeId, usize> =
            members.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
        for m in &members {
            let (_, om) = ctx.metrics.register_operator(&m.op_ctx.operator_name);
            if matches!(m.body, NodeBody::Source(_)) {
                om.whole_task
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            op_metrics.insert(m.id, om);
            for c in &m.chained {
                edges.push((index[&m.id], index[c]));
            }
        }
        *ctx.metrics
            .operator_edges
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = edges;
    }
    let timing = |id: &NodeId| operator_timing.then(|| op_metrics[id].clone());
    // Overdraft needs record boundaries, which only the input loop marks (a source's records
    // are emitted inside its user function): source tasks ship on credit only.
    let has_input = gate.is_some();
    for m in members.into_iter().rev() {
        let mut outs: Vec<AnyBox> = Vec::new();
        for c in &m.chained {
            // Members are built back to front, so a chained successor is already built.
            outs.push(built.remove(c).ok_or_else(|| {
                wiring_bug(format!(
                    "chained successor {c:?} not built before its predecessor"
                ))
            })?);
        }
        for n in m.network {
            outs.push(n.writer.make_writer(
                n.senders,
                WriterArgs {
                    strategy: n.strategy,
                    downstream_parallelism: n.downstream_parallelism,
                    downstream_max_parallelism: n.downstream_max_parallelism,
                    seed: n.seed,
                    cfg: exch.clone(),
                    control: ctx.control.clone(),
                    metrics: ctx.metrics.clone(),
                    overdraft: has_input.then(|| {
                        sluice_channel::OverdraftBudget::new(
                            exch.max_overdraft_buffers,
                            ctx.output_debt.clone(),
                        )
                    }),
                },
            )?);
        }
        match &m.body {
            NodeBody::Sink(f) => {
                built.insert(m.id, f.create(&m.op_ctx, timing(&m.id))?);
            }
            NodeBody::Operator(f) => {
                let out = m
                    .out_type
                    .as_ref()
                    .ok_or_else(|| wiring_bug(format!("operator {:?} has no output type", m.id)))?
                    .fanout(outs)?;
                built.insert(m.id, f.bind(out, &m.op_ctx, timing(&m.id))?);
            }
            NodeBody::Source(f) => {
                let out = m
                    .out_type
                    .as_ref()
                    .ok_or_else(|| wiring_bug(format!("source {:?} has no output type", m.id)))?
                    .fanout(outs)?;
                source_runner = Some((f.runner(&m.op_ctx, out)?, m.op_ctx.clone()));
            }
        }
    }
    if let Some((run, op)) = source_runner {
        let sctx = SourceContext {
            op,
            control: ctx.control.clone(),
            metrics: ctx.metrics.clone(),
            emitted,
            checkpoints: ctx.services.hub().cloned(),
            last_barrier: std::cell::Cell::new(0),
            dead_letters: std::cell::Cell::new(0),
            notified: std::cell::Cell::new(
                ctx.services.hub().map_or(0, |h| h.completed_checkpoint()),
            ),
        };
        return run(&sctx);
    }
    let head_collector = built
        .remove(&head)
        .ok_or_else(|| wiring_bug(format!("chain head {head:?} was not built")))?;
    let gate = gate.ok_or_else(|| wiring_bug("a non-source chain head without an input gate"))?;
    head_in
        .ok_or_else(|| wiring_bug("a non-source chain head without an input type"))?
        .run_input(gate, head_collector, ctx)
}

/// A subtask whose deployment plan contradicts itself (a bug in this crate's wiring, not in the
/// user's job): fails the subtask with a message saying so, instead of panicking its thread.
fn wiring_bug(what: impl std::fmt::Display) -> OperatorError {
    OperatorError::failed(format!("graph wiring bug: {what}"))
}
