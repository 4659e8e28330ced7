//! generator → map → discard: measures the engine's per-record overhead.

use sluice_datastream::{DiscardHandle, GraphError, StreamEnv};

/// Settings of the passthrough job.
#[derive(Clone, Debug, PartialEq)]
pub struct PassthroughConfig {
    /// Records generated in total.
    pub records: u64,
    /// Parallelism of every operator.
    pub parallelism: usize,
    /// Put `rebalance()` between the source and the map (otherwise all three chain).
    pub rebalance: bool,
}

impl Default for PassthroughConfig {
    fn default() -> Self {
        PassthroughConfig {
            records: 10_000_000,
            parallelism: 2,
            rebalance: false,
        }
    }
}

/// The built passthrough job.
pub struct PassthroughJob {
    /// Counts what reached the discarding sink.
    pub discarded: DiscardHandle,
}

/// Adds the passthrough job to `env`; fails on a parallelism of 0.
pub fn build(env: &StreamEnv, cfg: &PassthroughConfig) -> Result<PassthroughJob, GraphError> {
    if cfg.parallelism == 0 {
        return Err(GraphError::invalid_config(
            "--parallelism must be at least 1".into(),
        ));
    }
    env.set_parallelism(cfg.parallelism);
    env.set_job_name("passthrough");
    // Over several processes a REBALANCE sends these across (raw little-endian on the wire).
    env.exchange_type::<u64>();
    let source = env.generate(cfg.records, |i| i).name("generator");
    let input = if cfg.rebalance {
        source.rebalance()
    } else {
        source
    };
    let sink = input
        .map(|i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .name("map")
        .discard();
    Ok(PassthroughJob {
        discarded: sink.handle,
    })
}
