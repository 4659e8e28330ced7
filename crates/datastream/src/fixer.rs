//! The plan fixer: named changes to a job's stream graph that remove a bottleneck without
//! changing the job's results, and a readable diff of what changed.
//!
//! One remedy per [`PlanChange`] variant (the type lives in `sluice-plan`, shared with the
//! doctor, the autopilot and REST; the seeds' method):
//! - [`PlanChange::Parallelism`]: raise an operator's parallelism and feed it through a redistributing
//!   edge (REBALANCE / RESCALE, or HASH for a keyed operator) instead of FORWARD; a source
//!   has no input edge, so only its parallelism changes (a non-parallel source is refused);
//! - [`PlanChange::TwoPhase`]: rebuild a hot-key keyed aggregation as salt → pre-aggregate on
//!   `(key, salt)` → combine on the key;
//! - [`PlanChange::SinkOption`]: set a connector option the sink declared (e.g. batch its writes with
//!   `sink.buffer-flush.max-rows`); the sink reads its options from its context at deployment, so
//!   the change works for any job that uses that sink.
//! - [`PlanChange::AsyncCapacity`]: a lookup join's `lookup.async` / `lookup.async.capacity` (output
//!   mode `ORDERED`, so the output is unchanged), or an async wait operator's `async.capacity`.
//! - [`PlanChange::LookupCache`]: a lookup join's `lookup.cache = PARTIAL` with
//!   `lookup.partial-cache.max-rows` (and a TTL), for keys that repeat.
//!
//! A change that could alter results is refused with the reason: rebalancing in front of a keyed
//! operator would split a key's state over subtasks; HASH needs a key the job does not define;
//! a two-phase rewrite needs an aggregation that was built with `sum`/`min`/`max`/`reduce`.

use std::collections::BTreeMap;
use std::fmt;

use sluice_types::{NodeId, ShipStrategy};

use crate::job_graph::{resolve, ResolvedNode};
use crate::{GraphError, StreamEnv};

pub use sluice_plan::{PlanChange, LOOKUP_CACHE_TTL};

/// A node's inputs: upstream node and ship strategy, in input order.
pub type Inputs = Vec<(NodeId, ShipStrategy)>;

/// One node's change in a [`PlanDiff`].
#[derive(Clone, Debug, PartialEq)]
pub enum NodeChange {
    /// A node only the changed graph has (e.g. the two-phase rewrite's salt and pre-aggregate).
    Added {
        /// Its node id.
        id: NodeId,
        /// Its operator name.
        name: String,
        /// Its resolved parallelism.
        parallelism: usize,
        /// Its inputs.
        inputs: Inputs,
    },
    /// A node only the original graph had.
    Removed {
        /// Its node id.
        id: NodeId,
        /// Its operator name.
        name: String,
    },
    /// A node whose parallelism or inputs changed.
    Changed {
        /// Its node id.
        id: NodeId,
        /// Its operator name (after the change).
        name: String,
        /// Parallelism before → after.
        parallelism: (usize, usize),
        /// Per input: upstream id and strategy before → after (upstream ids may change too).
        inputs: (Inputs, Inputs),
    },
    /// A connector option set or changed: `before` is `None` when the option was not set.
    Option {
        /// Its node id.
        id: NodeId,
        /// Its operator name.
        name: String,
        /// The option's key.
        key: String,
        /// The value before, `None` when unset.
        before: Option<String>,
        /// The value after.
        after: String,
    },
}

/// Parallelism and ship-strategy changes per node, between two stream graphs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanDiff {
    /// The changed nodes: changed and removed ones in node order, then added ones.
    pub changes: Vec<NodeChange>,
}

impl PlanDiff {
    /// What changed from `before` to `after` (resolved graphs): parallelism, inputs and their
    /// ship strategies, effective connector options, nodes added or removed.
    pub fn between(
        before: &BTreeMap<NodeId, ResolvedNode>,
        after: &BTreeMap<NodeId, ResolvedNode>,
    ) -> PlanDiff {
        let mut changes = Vec::new();
        for (id, b) in before {
            match after.get(id) {
                None => changes.push(NodeChange::Removed {
                    id: *id,
                    name: b.name.clone(),
                }),
                Some(a) if a.parallelism != b.parallelism || a.inputs != b.inputs => {
                    changes.push(NodeChange::Changed {
                        id: *id,
                        name: a.name.clone(),
                        parallelism: (b.parallelism, a.parallelism),
                        inputs: (b.inputs.clone(), a.inputs.clone()),
                    })
                }
                Some(_) => {}
            }
            if let Some(a) = after.get(id) {
                for (key, value) in effective_options(&a.options) {
                    let old = effective_options(&b.options)
                        .into_iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v);
                    if old.as_deref() != Some(value.as_str()) {
                        changes.push(NodeChange::Option {
                            id: *id,
                            name: a.name.clone(),
                            key,
                            before: old,
                            after: value,
                        });
                    }
                }
            }
        }
        for (id, a) in after {
            if !before.contains_key(id) {
                changes.push(NodeChange::Added {
                    id: *id,
                    name: a.name.clone(),
                    parallelism: a.parallelism,
                    inputs: a.inputs.clone(),
                });
            }
        }
        PlanDiff { changes }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Options as they take effect: the last value of each key, in first-declaration order.
fn effective_options(options: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in options {
        match out.iter_mut().find(|(key, _)| key == k) {
            Some(slot) => slot.1 = v.clone(),
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}

fn inputs_text(inputs: &[(NodeId, ShipStrategy)]) -> String {
    inputs
        .iter()
        .map(|(id, s)| format!("{s} from {id}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for PlanDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.changes.is_empty() {
            return writeln!(f, "  (no change)");
        }
        for c in &self.changes {
            match c {
                NodeChange::Added {
                    id,
                    name,
                    parallelism,
                    inputs,
                } => writeln!(
                    f,
                    "+ [{id}] {name}  parallelism {parallelism}  input: {}",
                    inputs_text(inputs)
                )?,
                NodeChange::Removed { id, name } => writeln!(f, "- [{id}] {name}")?,
                NodeChange::Changed {
                    id,
                    name,
                    parallelism,
                    inputs,
                } => {
                    write!(f, "~ [{id}] {name}")?;
                    if parallelism.0 != parallelism.1 {
                        write!(f, "  parallelism {} -> {}", parallelism.0, parallelism.1)?;
                    }
                    if inputs.0 != inputs.1 {
                        write!(
                            f,
                            "  input: {} -> {}",
                            inputs_text(&inputs.0),
                            inputs_text(&inputs.1)
                        )?;
                    }
                    writeln!(f)?;
                }
                NodeChange::Option {
                    id,
                    name,
                    key,
                    before,
                    after,
                } => writeln!(
                    f,
                    "~ [{id}] {name}  option {key}: {} -> {after}",
                    before.as_deref().unwrap_or("(unset)")
                )?,
            }
        }
        Ok(())
    }
}

/// A lookup join's plan options (`sluice-lookup`'s `options`), named here because the fixer
/// sits below that crate.
const LOOKUP_ASYNC: &str = "lookup.async";
const LOOKUP_CAPACITY: &str = "lookup.async.capacity";
const LOOKUP_OUTPUT_MODE: &str = "lookup.async.output-mode";
const LOOKUP_CACHE: &str = "lookup.cache";
const LOOKUP_MAX_ROWS: &str = "lookup.partial-cache.max-rows";
const LOOKUP_EXPIRE_AFTER_WRITE: &str = "lookup.partial-cache.expire-after-write";
/// The async wait operator's capacity option.
const ASYNC_CAPACITY: &str = "async.capacity";

/// Finds a node by id (`"4"`), exact name, or unique name prefix.
fn find(env: &StreamEnv, operator: &str) -> Result<NodeId, GraphError> {
    let nodes = env.stream_nodes();
    if let Ok(id) = operator.parse::<NodeId>() {
        if nodes.iter().any(|n| n.id == id) {
            return Ok(id);
        }
    }
    let exact: Vec<_> = nodes.iter().filter(|n| n.name == operator).collect();
    let matches = if exact.is_empty() {
        nodes
            .iter()
            .filter(|n| n.name.starts_with(operator))
            .collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [one] => Ok(one.id),
        [] => Err(GraphError::UnknownOperator(
            operator.to_string(),
            nodes
                .iter()
                .map(|n| format!("[{}] {}", n.id, n.name))
                .collect::<Vec<_>>()
                .join(", "),
        )),
        many => Err(GraphError::AmbiguousOperator(
            operator.to_string(),
            many.iter()
                .map(|n| format!("[{}] {}", n.id, n.name))
                .collect::<Vec<_>>()
                .join(", "),
        )),
    }
}

/// Applies `fix` to the environment's stream graph and returns what changed. On a refusal the
/// graph is left unchanged.
pub fn apply(env: &StreamEnv, fix: &PlanChange) -> Result<PlanDiff, GraphError> {
    let cfg = env.config();
    let before = resolve(&env.stream_nodes(), &cfg.plan_config())?;
    match fix {
        PlanChange::Parallelism {
            operator,
            parallelism,
            ship,
        } => {
            let id = find(env, operator)?;
            let node = &before[&id];
            if *parallelism == 0 {
                return Err(GraphError::InvalidChange(
                    "parallelism must be at least 1".into(),
                ));
            }
            // A source has no input edge: only its parallelism changes (`ship` does not apply),
            // and its readers deal the splits out anew at the restore; a non-parallel source is
            // refused when the plan is resolved.
            let keyed = node.inputs.iter().any(|(_, s)| *s == ShipStrategy::Hash);
            match ship {
                _ if node.inputs.is_empty() => {}
                ShipStrategy::Rebalance | ShipStrategy::Rescale | ShipStrategy::Shuffle if keyed => {
                    return Err(GraphError::WouldChangeResults(format!(
                        "'{}' is keyed (its input is HASH): every record of a key must reach the subtask holding that key's state; {} would split keys across subtasks. Raise its parallelism with HASH kept, or use the two-phase form for a hot key",
                        node.name, ship
                    )))
                }
                ShipStrategy::Hash if !keyed => {
                    return Err(GraphError::WouldChangeResults(format!(
                        "HASH needs a key, and '{}' is not keyed; add key_by in the job or choose REBALANCE/RESCALE",
                        node.name
                    )))
                }
                ShipStrategy::Rebalance
                | ShipStrategy::Rescale
                | ShipStrategy::Shuffle
                | ShipStrategy::Hash => {}
                other => {
                    return Err(GraphError::InvalidChange(format!(
                        "{other} does not redistribute records evenly; choose REBALANCE, RESCALE or HASH"
                    )))
                }
            }
            env.with_node(id, |n| {
                n.parallelism = Some(*parallelism);
                for e in &mut n.inputs {
                    e.strategy = Some(*ship);
                }
            });
            // Operators fed by FORWARD from the changed one move with it: turning those edges into
            // REBALANCE would interleave one key's updates across subtasks and change what a
            // downstream "latest value per key" sees.
            let mut frontier = vec![id];
            while let Some(up) = frontier.pop() {
                for n in before.values() {
                    if n.inputs
                        .iter()
                        .any(|(from, s)| *from == up && *s == ShipStrategy::Forward)
                        && n.inputs.len() == 1
                    {
                        env.with_node(n.id, |m| m.parallelism = Some(*parallelism));
                        frontier.push(n.id);
                    }
                }
            }
        }
        PlanChange::TwoPhase { operator, buckets } => {
            let id = find(env, operator)?;
            if *buckets == 0 {
                return Err(GraphError::InvalidChange(
                    "buckets must be at least 1".into(),
                ));
            }
            let rewrite = env.two_phase_rewrite(id);
            let Some(rewrite) = rewrite else {
                return Err(GraphError::InvalidChange(format!(
                    "'{}' is not a keyed aggregation built with sum/min/max/reduce, so it has no two-phase form",
                    before[&id].name
                )));
            };
            let old_name = before[&id].name.clone();
            let (parallelism, uid) = env
                .stream_nodes()
                .into_iter()
                .find(|n| n.id == id)
                .map(|n| (n.parallelism, n.uid))
                .unwrap_or_default();
            let combine = rewrite(env, *buckets);
            // The combiner takes over the aggregation's state, so it keeps its identity: its
            // uid if it had one (else the rewrite hashes it at the aggregation's position).
            env.with_node(combine, |n| {
                n.name = format!("{old_name} (combine)");
                n.parallelism = parallelism;
                n.uid = uid;
            });
            env.replace_node(id, combine);
        }
        PlanChange::SinkOption {
            operator,
            key,
            value,
        } => {
            let id = find(env, operator)?;
            let node = &before[&id];
            // Only a key the connector declared: an unknown key would be set and silently ignored.
            if !node.options.iter().any(|(k, _)| k == key) {
                let known: Vec<String> = effective_options(&node.options)
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                let known = if known.is_empty() {
                    "it declares none".to_string()
                } else {
                    format!("it declares: {}", known.join(", "))
                };
                return Err(GraphError::InvalidChange(format!(
                    "'{}' has no connector option '{key}' ({known})",
                    node.name
                )));
            }
            if value.trim().is_empty() {
                return Err(GraphError::InvalidChange(format!(
                    "option '{key}' needs a value"
                )));
            }
            env.with_node(id, |n| n.options.push((key.clone(), value.clone())));
        }
        PlanChange::AsyncCapacity { operator, capacity } => {
            let id = find(env, operator)?;
            let node = &before[&id];
            if *capacity == 0 {
                return Err(GraphError::InvalidChange(
                    "capacity must be at least 1".into(),
                ));
            }
            let declares = |k: &str| node.options.iter().any(|(key, _)| key == k);
            let set: Vec<(&str, String)> = if declares(LOOKUP_ASYNC) {
                vec![
                    (LOOKUP_ASYNC, "true".into()),
                    (LOOKUP_CAPACITY, capacity.to_string()),
                    (LOOKUP_OUTPUT_MODE, "ORDERED".into()),
                ]
            } else if declares(ASYNC_CAPACITY) {
                vec![(ASYNC_CAPACITY, capacity.to_string())]
            } else {
                return Err(GraphError::InvalidChange(format!(
                    "'{}' is neither a lookup join nor an async operator: make its call asynchronous in the job (ordered_wait / unordered_wait, or a lookup join)",
                    node.name
                )));
            };
            env.with_node(id, |n| {
                for (k, v) in set {
                    n.options.push((k.to_string(), v));
                }
            });
        }
        PlanChange::LookupCache { operator, max_rows } => {
            let id = find(env, operator)?;
            let node = &before[&id];
            if *max_rows == 0 {
                return Err(GraphError::InvalidChange(
                    "a cache needs at least 1 row".into(),
                ));
            }
            if !node.options.iter().any(|(k, _)| k == LOOKUP_CACHE) {
                return Err(GraphError::InvalidChange(format!(
                    "'{}' is not a lookup join (it declares no {LOOKUP_CACHE}): cache its calls in the job",
                    node.name
                )));
            }
            env.with_node(id, |n| {
                for (k, v) in [
                    (LOOKUP_CACHE, "PARTIAL".to_string()),
                    (LOOKUP_MAX_ROWS, max_rows.to_string()),
                    (LOOKUP_EXPIRE_AFTER_WRITE, LOOKUP_CACHE_TTL.to_string()),
                ] {
                    n.options.push((k.to_string(), v));
                }
            });
        }
    }
    let after = resolve(&env.stream_nodes(), &cfg.plan_config())?;
    Ok(PlanDiff::between(&before, &after))
}
