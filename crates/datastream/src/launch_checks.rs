//! Checks a job graph must pass before any thread starts: the resources it would take stay
//! within fixed ceilings, and every injected fault names a subtask that can fail.
//!
//! **Why ceilings.** Sluice runs every subtask on its own thread and every network channel
//! holds buffers, so an absurd parallelism does not fail cleanly on its own: an all-to-all
//! edge at parallelism 2,000 has 4 million channels and the process grows until the kernel
//! kills it. Flink refuses such a job up front ("Insufficient number of network buffers") from
//! a fixed network memory budget (`taskmanager.memory.network.max`); Sluice does the same:
//!
//! - [`MAX_SUBTASKS`] threads per job (4,096: far above what two to a few dozen cores can run
//!   usefully, well below the usual per-user thread limits);
//! - [`MAX_NETWORK_MEMORY_BYTES`] (1 GiB, Flink 1.x's default network maximum) for the buffers
//!   the exchanges may hold at once: per channel its exclusive credits plus the sender's buffer
//!   being filled, per input gate its floating credits, each `buffer_bytes`. A job above it is
//!   refused with the figures and the knobs that lower them (parallelism, `--buffer-size`,
//!   `--exclusive-credits`, `--floating-credits`).

use crate::{EnvConfig, FaultSpec, GraphError, JobGraph};

/// Most subtasks (threads) one job may run.
pub const MAX_SUBTASKS: usize = 4096;
/// Most memory the job's exchange buffers may hold at once, in bytes (1 GiB).
pub const MAX_NETWORK_MEMORY_BYTES: u64 = 1 << 30;

/// What the exchanges of a job need at most.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkDemand {
    /// Channels: one per (upstream subtask, downstream subtask) pair an edge connects.
    pub channels: u64,
    /// Input gates: one per subtask of a vertex with inputs.
    pub gates: u64,
    /// Bytes of buffers those may hold at once.
    pub bytes: u64,
}

/// Channels, gates and the buffer memory `graph` needs with `cfg`'s exchange settings.
pub fn network_demand(graph: &JobGraph, cfg: &EnvConfig) -> NetworkDemand {
    let mut channels = 0u64;
    for e in &graph.edges {
        let pu = graph.vertices[e.from_vertex].parallelism as u64;
        let pd = graph.vertices[e.to_vertex].parallelism as u64;
        channels += if e.strategy.is_pointwise() {
            // Each upstream subtask feeds a run of downstream ones (or the reverse).
            pu.max(pd)
        } else {
            pu * pd
        };
    }
    let gates: u64 = graph
        .vertices
        .iter()
        .filter(|v| graph.edges.iter().any(|e| e.to_vertex == v.index))
        .map(|v| v.parallelism as u64)
        .sum();
    let per_channel = cfg.exclusive_credits as u64 + 1;
    let buffers = channels
        .saturating_mul(per_channel)
        .saturating_add(gates.saturating_mul(cfg.floating_credits as u64));
    NetworkDemand {
        channels,
        gates,
        bytes: buffers.saturating_mul(cfg.buffer_bytes as u64),
    }
}

/// Refuses a job whose threads or exchange buffers exceed the ceilings, or whose injected
/// faults could never fire.
pub fn check(graph: &JobGraph, cfg: &EnvConfig) -> Result<(), GraphError> {
    let subtasks: usize = graph.vertices.iter().map(|v| v.parallelism).sum();
    if subtasks > MAX_SUBTASKS {
        return Err(GraphError::invalid_config(format!(
            "the job would run {subtasks} subtasks (one thread each), more than the {MAX_SUBTASKS} \
             a job may have; lower the parallelism"
        )));
    }
    let d = network_demand(graph, cfg);
    if d.bytes > MAX_NETWORK_MEMORY_BYTES {
        return Err(GraphError::invalid_config(format!(
            "the job's exchanges would hold up to {} of buffers ({} channels × ({} exclusive + 1) \
             + {} gates × {} floating, {} bytes each), more than the {} limit; lower the \
             parallelism, --buffer-size or the credits",
            mib(d.bytes),
            d.channels,
            cfg.exclusive_credits,
            d.gates,
            cfg.floating_credits,
            cfg.buffer_bytes,
            mib(MAX_NETWORK_MEMORY_BYTES),
        )));
    }
    for f in &cfg.faults {
        check_fault(graph, f)?;
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    let mib = bytes as f64 / (1024.0 * 1024.0);
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

/// A fault counts the records a subtask *receives*, so it must name a vertex with inputs
/// (sources receive none) and a subtask that vertex has.
fn check_fault(graph: &JobGraph, f: &FaultSpec) -> Result<(), GraphError> {
    let has_inputs = |i: usize| graph.edges.iter().any(|e| e.to_vertex == i);
    let matching: Vec<_> = graph
        .vertices
        .iter()
        .filter(|v| v.name.contains(&f.vertex))
        .collect();
    let spec = format!(
        "--inject-failure {}:{}:{}",
        f.vertex, f.subtask, f.after_records
    );
    let receiving: Vec<String> = graph
        .vertices
        .iter()
        .filter(|v| has_inputs(v.index))
        .map(|v| format!("'{}' (p={})", v.name, v.parallelism))
        .collect();
    if matching.is_empty() {
        return Err(GraphError::invalid_config(format!(
            "{spec}: no vertex name contains '{}'; the vertices that receive records are {}",
            f.vertex,
            receiving.join(", ")
        )));
    }
    let Some(v) = matching.iter().find(|v| has_inputs(v.index)) else {
        return Err(GraphError::invalid_config(format!(
            "{spec}: '{}' only matches source vertices, which receive no records; the vertices \
             that do are {}",
            f.vertex,
            receiving.join(", ")
        )));
    };
    if f.subtask >= v.parallelism {
        return Err(GraphError::invalid_config(format!(
            "{spec}: vertex '{}' has subtasks 0..{} (parallelism {}), not {}",
            v.name,
            v.parallelism - 1,
            v.parallelism,
            f.subtask
        )));
    }
    Ok(())
}
