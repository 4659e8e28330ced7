//! Stream graph → job graph: resolve parallelism and ship strategies, validate, chain
//! (docs/src/reference/flink-formats.md#chaining).

use std::collections::BTreeMap;

use sluice_types::{Id128, JobVertexId, NodeId, ShipStrategy};

use crate::partition::{check_max_parallelism, default_max_parallelism};
use crate::stream_graph::{ChainingStrategy, NodeKind, StreamNode};
use crate::PlanError;

/// The job-wide settings planning reads (the rest of a job's configuration is the runtime's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanConfig {
    /// `parallelism.default`: the parallelism of an operator that sets none.
    pub parallelism: usize,
    /// `pipeline.max-parallelism`; `None` = derived per operator from its parallelism.
    pub max_parallelism: Option<u32>,
    /// `pipeline.operator-chaining.enabled`.
    pub chaining: bool,
}

/// A node with everything resolved.
#[derive(Clone, Debug)]
pub struct ResolvedNode {
    /// The stream-graph node's id.
    pub id: NodeId,
    /// The operator's name as plans show it.
    pub name: String,
    /// Source, operator or sink.
    pub kind: NodeKind,
    /// The parallelism it runs at (the environment's default applied).
    pub parallelism: usize,
    /// The number of key groups (the default applied).
    pub max_parallelism: u32,
    /// Whether it may chain to its neighbours.
    pub chaining: ChainingStrategy,
    /// `(upstream node, resolved strategy)` per input, in input order.
    pub inputs: Vec<(NodeId, ShipStrategy)>,
    /// The node's connector options ([`crate::stream_graph::StreamNode::options`]).
    pub options: Vec<(String, String)>,
}

/// A chained vertex: one task per subtask runs all its operators.
#[derive(Clone, Debug)]
pub struct JobVertex {
    /// Position in [`JobGraph::vertices`] (topological: sources first).
    pub index: usize,
    /// Flink's 32-hex vertex id (the head node's stable id).
    pub id: JobVertexId,
    /// Flink's chained name: `a -> b`, `a -> (b, c)`.
    pub name: String,
    /// The number of subtasks (all chained nodes share it).
    pub parallelism: usize,
    /// The number of key groups.
    pub max_parallelism: u32,
    /// The first node of the chain: the one network inputs feed.
    pub head: NodeId,
    /// The chain's nodes, head first; every node before its chained successors.
    pub nodes: Vec<NodeId>,
}

/// A network edge between two vertices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEdge {
    /// Index of the producing vertex in [`JobGraph::vertices`].
    pub from_vertex: usize,
    /// Index of the consuming vertex in [`JobGraph::vertices`].
    pub to_vertex: usize,
    /// The node whose output the edge carries.
    pub from_node: NodeId,
    /// The node that reads it.
    pub to_node: NodeId,
    /// Which input of `to_node` this edge is (position in its inputs).
    pub input: usize,
    /// How records are partitioned across the consumer's subtasks.
    pub strategy: ShipStrategy,
}

/// The chained job graph (Flink's `JobGraph`).
#[derive(Clone, Debug)]
pub struct JobGraph {
    /// The job's name.
    pub name: String,
    /// Every node, resolved, by id.
    pub nodes: BTreeMap<NodeId, ResolvedNode>,
    /// The chained vertices, sources first.
    pub vertices: Vec<JobVertex>,
    /// The network edges between vertices.
    pub edges: Vec<JobEdge>,
    /// `(upstream, downstream)` node pairs joined inside a chain.
    pub chained: Vec<(NodeId, NodeId)>,
    /// The SQL plan the job was compiled from, if it was (set by the DataStream API's
    /// environment, never by [`build`]).
    pub query_plan: Option<crate::QueryPlan>,
}

impl JobGraph {
    /// The vertex whose chain holds `node`.
    pub fn vertex_of(&self, node: NodeId) -> Option<&JobVertex> {
        self.vertices.iter().find(|v| v.nodes.contains(&node))
    }

    /// The order Flink's generator creates vertices in (and lists them in REST plans): chains are
    /// created depth-first from each source, a vertex after everything downstream of it.
    pub fn flink_vertex_order(&self) -> Vec<usize> {
        let mut order = Vec::new();
        let mut seen = vec![false; self.vertices.len()];
        fn visit(g: &JobGraph, v: usize, seen: &mut [bool], order: &mut Vec<usize>) {
            if seen[v] {
                return;
            }
            seen[v] = true;
            for e in g.edges.iter().filter(|e| e.from_vertex == v) {
                visit(g, e.to_vertex, seen, order);
            }
            order.push(v);
        }
        for v in &self.vertices {
            if self.nodes[&v.head].kind == NodeKind::Source {
                visit(self, v.index, &mut seen, &mut order);
            }
        }
        for v in 0..self.vertices.len() {
            visit(self, v, &mut seen, &mut order);
        }
        order
    }

    /// The network inputs of a vertex, in input order.
    pub fn inputs_of(&self, vertex: usize) -> Vec<&JobEdge> {
        self.edges
            .iter()
            .filter(|e| e.to_vertex == vertex)
            .collect()
    }
}

/// Resolves parallelism, max parallelism and ship strategies of every node.
pub fn resolve(
    nodes: &[StreamNode],
    cfg: &PlanConfig,
) -> Result<BTreeMap<NodeId, ResolvedNode>, PlanError> {
    let mut out: BTreeMap<NodeId, ResolvedNode> = BTreeMap::new();
    for n in topological(nodes)? {
        let parallelism = n
            .parallelism
            .unwrap_or(if n.non_parallel { 1 } else { cfg.parallelism });
        if parallelism == 0 {
            return Err(PlanError::InvalidConfig(format!(
                "operator '{}' has parallelism 0; it must be at least 1",
                n.name
            )));
        }
        if n.non_parallel && parallelism != 1 {
            return Err(PlanError::InvalidJob(format!(
                "source '{}' cannot be split (it reads one iterator), so its parallelism must be 1, not {parallelism}",
                n.name
            )));
        }
        let max_parallelism = n
            .max_parallelism
            .or(cfg.max_parallelism)
            .unwrap_or_else(|| default_max_parallelism(parallelism as u32));
        check_max_parallelism(parallelism as u32, max_parallelism)
            .map_err(|m| PlanError::InvalidConfig(format!("operator '{}': {m}", n.name)))?;
        let mut inputs = Vec::with_capacity(n.inputs.len());
        for e in &n.inputs {
            let up = out.get(&e.from).ok_or_else(|| {
                PlanError::InvalidJob(format!(
                    "operator '{}' reads node {} which does not exist",
                    n.name, e.from
                ))
            })?;
            let strategy = match e.strategy {
                None if up.parallelism == parallelism => ShipStrategy::Forward,
                None => ShipStrategy::Rebalance,
                Some(ShipStrategy::Forward) if up.parallelism != parallelism => {
                    return Err(PlanError::ForwardParallelismMismatch {
                        upstream: up.name.clone(),
                        upstream_parallelism: up.parallelism,
                        downstream: n.name.clone(),
                        downstream_parallelism: parallelism,
                    })
                }
                Some(s) => s,
            };
            inputs.push((e.from, strategy));
        }
        out.insert(
            n.id,
            ResolvedNode {
                id: n.id,
                name: n.name.clone(),
                kind: n.kind,
                parallelism,
                max_parallelism,
                chaining: n.chaining,
                inputs,
                options: n.options.clone(),
            },
        );
    }
    Ok(out)
}

/// Nodes ordered so that every node comes after its inputs. Usually that is id order; a rewrite
/// (the plan fixer's two-phase form) can add upstream nodes with higher ids.
fn topological(nodes: &[StreamNode]) -> Result<Vec<&StreamNode>, PlanError> {
    let mut done: std::collections::BTreeSet<NodeId> = std::collections::BTreeSet::new();
    let mut order = Vec::with_capacity(nodes.len());
    let mut pending: Vec<&StreamNode> = nodes.iter().collect();
    pending.sort_by_key(|n| n.id);
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|n| {
            if n.inputs.iter().all(|e| done.contains(&e.from)) {
                done.insert(n.id);
                order.push(*n);
                false
            } else {
                true
            }
        });
        if pending.len() == before {
            let n = pending[0];
            return Err(PlanError::InvalidJob(format!(
                "operator '{}' reads node {} which does not exist (or the graph has a cycle)",
                n.name,
                n.inputs
                    .iter()
                    .find(|e| !done.contains(&e.from))
                    .map(|e| e.from)
                    .unwrap_or(0)
            )));
        }
    }
    Ok(order)
}

/// docs/src/reference/flink-formats.md#chaining: may the edge `up -> down` be chained?
fn chainable(
    up: &ResolvedNode,
    down: &ResolvedNode,
    strategy: ShipStrategy,
    cfg: &PlanConfig,
) -> bool {
    down.inputs.len() == 1
        && cfg.chaining
        && up.chaining != ChainingStrategy::Never
        && down.chaining == ChainingStrategy::Always
        && strategy == ShipStrategy::Forward
        && up.parallelism == down.parallelism
}

/// Builds the chained job graph.
pub fn build(name: &str, nodes: &[StreamNode], cfg: &PlanConfig) -> Result<JobGraph, PlanError> {
    let resolved = resolve(nodes, cfg)?;
    let mut has_consumer: BTreeMap<NodeId, bool> = BTreeMap::new();
    let mut chained_into: BTreeMap<NodeId, NodeId> = BTreeMap::new();
    let mut chained = Vec::new();
    let mut successors: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
    for n in resolved.values() {
        for &(from, strategy) in &n.inputs {
            has_consumer.insert(from, true);
            if chainable(&resolved[&from], n, strategy, cfg) {
                chained_into.insert(n.id, from);
                chained.push((from, n.id));
                successors.entry(from).or_default().push(n.id);
            }
        }
    }
    for n in resolved.values() {
        if n.kind != NodeKind::Sink && !has_consumer.contains_key(&n.id) {
            return Err(PlanError::InvalidJob(format!(
                "operator '{}' (node {}) has no consumer: add a sink (collect, print, discard, write_*) to every stream you build",
                n.name, n.id
            )));
        }
    }
    if !resolved.values().any(|n| n.kind == NodeKind::Sink) {
        return Err(PlanError::InvalidJob("the job has no sink".into()));
    }

    let mut vertices = Vec::new();
    let mut vertex_of: BTreeMap<NodeId, usize> = BTreeMap::new();
    for head in resolved
        .values()
        .filter(|n| !chained_into.contains_key(&n.id))
    {
        let mut members = Vec::new();
        let mut stack = vec![head.id];
        while let Some(id) = stack.pop() {
            members.push(id);
            if let Some(s) = successors.get(&id) {
                stack.extend(s.iter().rev());
            }
        }
        // `members` is in depth-first pre-order: every operator comes before its chained
        // successors, whatever their ids (a plan rewrite can give upstream nodes higher ids).
        let index = vertices.len();
        for &m in &members {
            vertex_of.insert(m, index);
        }
        let chain_name = chained_name(head.id, &resolved, &successors);
        // Members and names, not parallelism: as in Flink, a vertex keeps its id when it is
        // rescaled (`PUT /jobs/:jid/resource-requirements` names vertices by id).
        let mut fingerprint = String::new();
        for m in &members {
            let r = &resolved[m];
            fingerprint.push_str(&format!("{}:{};", m, r.name));
        }
        vertices.push(JobVertex {
            index,
            id: Id128::hash_of(fingerprint.as_bytes()),
            name: chain_name,
            parallelism: head.parallelism,
            max_parallelism: head.max_parallelism,
            head: head.id,
            nodes: members,
        });
    }
    let mut edges = Vec::new();
    for n in resolved.values() {
        for (input, &(from, strategy)) in n.inputs.iter().enumerate() {
            if chained_into.get(&n.id) == Some(&from) {
                continue;
            }
            edges.push(JobEdge {
                from_vertex: vertex_of[&from],
                to_vertex: vertex_of[&n.id],
                from_node: from,
                to_node: n.id,
                input,
                strategy,
            });
        }
    }
    Ok(JobGraph {
        name: name.to_string(),
        nodes: resolved,
        vertices,
        edges,
        chained,
        query_plan: None,
    })
}

/// Flink's `createChainedName`: `a -> b` for one chained successor, `a -> (b, c)` for several.
fn chained_name(
    id: NodeId,
    nodes: &BTreeMap<NodeId, ResolvedNode>,
    successors: &BTreeMap<NodeId, Vec<NodeId>>,
) -> String {
    let name = &nodes[&id].name;
    match successors.get(&id).map(Vec::as_slice) {
        None | Some([]) => name.clone(),
        Some([one]) => format!("{name} -> {}", chained_name(*one, nodes, successors)),
        Some(many) => {
            let parts: Vec<String> = many
                .iter()
                .map(|c| chained_name(*c, nodes, successors))
                .collect();
            format!("{name} -> ({})", parts.join(", "))
        }
    }
}

/// Successors within the chain, for renderers.
pub fn chain_successors(g: &JobGraph, id: NodeId) -> Vec<NodeId> {
    g.chained
        .iter()
        .filter(|(from, _)| *from == id)
        .map(|(_, to)| *to)
        .collect()
}
