//! [`PlanChange`]: one named change to a job's plan — the one type the doctor proposes, the
//! autopilot decides on, the fixer (`sluice_datastream::fixer`) applies, REST and the CLI read and
//! print. Pure data: applying it is the fixer's job, rendering it is each caller's (their JSON
//! shapes differ by design and are fixed by their tests).

use sluice_types::ShipStrategy;

/// A named plan change that removes a bottleneck without changing the job's results.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanChange {
    /// Set `operator`'s parallelism and ship its input with `ship`.
    Parallelism {
        /// The operator: node id (`"4"`), exact name or unique name prefix.
        operator: String,
        /// The new parallelism (at least 1).
        parallelism: usize,
        /// How the operator's input is redistributed (REBALANCE / RESCALE / SHUFFLE, or HASH
        /// for a keyed operator); a source has no input, so only its parallelism changes.
        ship: ShipStrategy,
    },
    /// Turn the keyed aggregation `operator` into its two-phase salted form.
    TwoPhase {
        /// The keyed aggregation.
        operator: String,
        /// Salt buckets of the pre-aggregation (at least 1).
        buckets: u32,
    },
    /// Set connector option `key` of `operator` (a key the connector declared) to `value`,
    /// e.g. `sink.buffer-flush.max-rows`.
    SinkOption {
        /// The operator whose connector declared `key`.
        operator: String,
        /// The option's key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// Keep `capacity` requests in flight per subtask in `operator`: a lookup join (it
    /// declares `lookup.async`) turns async with that capacity, output order kept; an async
    /// wait operator (it declares `async.capacity`) gets that capacity.
    AsyncCapacity {
        /// The lookup join or async wait operator.
        operator: String,
        /// Requests in flight per subtask (at least 1).
        capacity: usize,
    },
    /// Give the lookup join `operator` (it declares `lookup.cache`) a partial cache of
    /// `max_rows` rows, entries expiring [`LOOKUP_CACHE_TTL`] after they were loaded. The rows a
    /// record joins with are the same as long as the table does not change within the TTL.
    LookupCache {
        /// The lookup join.
        operator: String,
        /// Rows the cache holds (at least 1).
        max_rows: usize,
    },
}

/// How long a row the [`PlanChange::LookupCache`] cache holds stays valid
/// (`lookup.partial-cache.expire-after-write`): bounds how stale a joined row can be.
pub const LOOKUP_CACHE_TTL: &str = "60s";

impl PlanChange {
    /// The operator the change targets.
    pub fn operator(&self) -> &str {
        match self {
            PlanChange::Parallelism { operator, .. }
            | PlanChange::TwoPhase { operator, .. }
            | PlanChange::SinkOption { operator, .. }
            | PlanChange::AsyncCapacity { operator, .. }
            | PlanChange::LookupCache { operator, .. } => operator,
        }
    }
}
