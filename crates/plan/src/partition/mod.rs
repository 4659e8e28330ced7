//! Record placement that matches Apache Flink bit for bit.
//!
//! Sluice aims to be a drop-in stand-in for Flink jobs, which means a keyed record has to land on
//! the same subtask, and in the same key group, that Flink would pick. That matters for more than
//! cosmetics: key groups are the unit of keyed state in snapshots, so state written by one engine
//! can only be restored by the other if both agree on the key → key group → subtask mapping; and
//! skew diagnoses ("key X is hot on subtask 3") are only comparable when placement is identical.
//!
//! The same goes for the non-keyed strategies: FORWARD/RESCALE wiring between subtasks and the
//! REBALANCE/RESCALE round robins follow Flink's formulas so that per-subtask load, and the
//! plans shown to users, look the way Flink users expect.
//!
//! * [`java_hash`] — Java `hashCode()` for the Rust types used as keys (Flink hashes the key
//!   object with Java's `hashCode`, so we must too).
//! * [`key_groups`] — Flink's `KeyGroupRangeAssignment`: murmur finaliser, key groups, default max
//!   parallelism, per-subtask key-group ranges.
//! * [`key_group_router`] — the same key → subtask routing precomputed per edge (no division
//!   per record), for HASH writers.
//! * [`pointwise`] — which subtasks a FORWARD/RESCALE edge connects.
//! * [`round_robin`] — per-sender channel choosers for REBALANCE and RESCALE.
//! * [`key_group_csv`] — the library behind `sluice key-group`.

pub mod java_hash;
pub mod key_group_csv;
pub mod key_group_router;
pub mod key_groups;
pub mod pointwise;
pub mod round_robin;

pub use java_hash::JavaHash;
pub use key_group_csv::{key_group_csv_header, key_group_line, KeyType};
pub use key_group_router::KeyGroupRouter;
pub use key_groups::{
    assign_key_to_subtask, assign_to_key_group, check_max_parallelism, default_max_parallelism,
    key_group_range_for_subtask, key_group_to_subtask, murmur_hash, KeyGroupRange,
    DEFAULT_LOWER_BOUND_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM,
};
pub use pointwise::{pointwise_sources, pointwise_targets};
pub use round_robin::{RoundRobin, SplitMix64};
