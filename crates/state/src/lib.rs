//! # sluice-state: keyed state, organised by key group
//!
//! A keyed operator keeps state per key: [`ValueState`], [`ListState`], [`MapState`],
//! [`ReducingState`] and [`AggregatingState`], obtained by name from a [`KeyedStateStore`] (one
//! per operator subtask) and scoped to the store's *current key*, which the operator sets before
//! each record ([`KeyedStateStore::set_current_key`], the "key context").
//!
//! Every key belongs to one **key group** (Flink's `KeyGroupRangeAssignment`, computed by the
//! graph layer and handed to the operator as a [`KeyGroupFn`]); a subtask owns a contiguous range
//! of key groups. State is stored per key group so that a later checkpoint can snapshot one key
//! group at a time ([`KeyedStateStore::snapshot_key_group`]) and rescaling can move whole key
//! groups between subtasks.
//!
//! # Backends ([`StateBackendKind`], chosen per job)
//!
//! - **Memory** (Flink's `hashmap` backend): per state, one hash map per key group, holding the
//!   typed values. No serialization on the access path.
//! - **Lsm** (Flink's `rocksdb` backend, here [fjall](https://crates.io/crates/fjall), a pure-Rust
//!   LSM tree): one fjall database per operator subtask in a fresh directory under the configured
//!   one, deleted when the operator ends (working state; durable snapshots are the checkpoint
//!   issue's). One keyspace (column family) per state name, `state:<name>`. Keys and values are
//!   encoded with postcard, laid out as described in [`layout`]: every key starts with its
//!   2-byte big-endian key group, so a key group, and a range of key groups, is one contiguous
//!   scan.
//!
//! Both backends give identical results for the same job; the only observable difference is the
//! iteration order of [`MapState::entries`] (hash order vs. byte order), which is unspecified.
//! Snapshots are backend-independent: both produce the byte layout of [`layout`].
//!
//! # Cost accounting
//!
//! Time spent inside state calls is added to the subtask's `TaskMetrics::state_access_ns`
//! (the LSM backend times every call; the memory backend times one call in
//! [`MEMORY_TIMING_SAMPLE_EVERY`] and scales it, because reading the clock would cost as much as
//! the access).
//!
//! State types must be `Serialize + DeserializeOwned + Clone + Send + 'static` ([`StateValue`];
//! keys also `Hash + Eq`, [`StateKey`]) so that the same job can run on either backend.
//!
//! The LSM backend is behind the cargo feature `lsm` (on by default); built without it, a store
//! asked for [`StateBackendKind::Lsm`] fails to open with an error. [`fasthash`] is the hasher
//! of the memory backend's maps (and of other per-record maps of the runtime), [`private_dir`]
//! where working directories (the LSM backend's) go by default.
//!
//! Invariant: state is per operator subtask and scoped to the current key and key group. This
//! crate must NOT know about checkpoints, tasks or operators: it snapshots and restores bytes
//! per key group when asked; when and where those bytes are stored is `sluice-checkpoint`'s
//! and the operators' business.

#![warn(missing_docs)]

pub mod fasthash;
pub mod layout;
#[cfg(not(feature = "lsm"))]
mod lsm_off;
pub mod private_dir;

mod handles;
pub mod snapshot;
mod store;
mod timers;

use std::hash::Hash;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;

pub use handles::{AggregatingState, ListState, MapState, ReducingState, ValueState};
pub use store::{
    KeyedStateStore, ListOf, MapOf, StateEntry, StateHandle, StateKind, ValueOf,
    MEMORY_TIMING_SAMPLE_EVERY,
};
pub use timers::TimerService;

/// Re-exported so that users can name the serde traits their state types must implement.
pub use serde;

/// Where keyed state lives. Chosen per job; [`StateBackendKind::Memory`] by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum StateBackendKind {
    /// Typed values in hash maps, one map per key group (Flink's `hashmap` backend).
    #[default]
    Memory,
    /// An embedded LSM store (fjall). Each operator subtask opens its own database in a fresh
    /// sub-directory of `dir` and removes it when it ends.
    Lsm {
        /// The directory under which each subtask creates its database.
        dir: PathBuf,
    },
}

impl StateBackendKind {
    /// The LSM backend under `dir`.
    pub fn lsm(dir: impl Into<PathBuf>) -> StateBackendKind {
        StateBackendKind::Lsm { dir: dir.into() }
    }

    /// The LSM backend under `state` in Sluice's private default root
    /// (`<system temp dir>/sluice-<uid>/state`, see [`crate::private_dir`]).
    pub fn lsm_in_temp_dir() -> StateBackendKind {
        StateBackendKind::lsm(crate::private_dir::default_dir("state"))
    }

    /// `memory` or `lsm`.
    pub fn name(&self) -> &'static str {
        match self {
            StateBackendKind::Memory => "memory",
            StateBackendKind::Lsm { .. } => "lsm",
        }
    }
}

/// A key of keyed state: hashable (memory backend) and serializable (LSM backend, snapshots).
pub trait StateKey:
    Hash + Eq + Clone + serde::Serialize + serde::de::DeserializeOwned + Send + 'static
{
}
impl<T> StateKey for T where
    T: Hash + Eq + Clone + serde::Serialize + serde::de::DeserializeOwned + Send + 'static
{
}

/// A value of keyed state.
pub trait StateValue:
    Clone + serde::Serialize + serde::de::DeserializeOwned + Send + 'static
{
}
impl<T> StateValue for T where
    T: Clone + serde::Serialize + serde::de::DeserializeOwned + Send + 'static
{
}

/// An incremental aggregation (Flink's `AggregateFunction`): values are added to an accumulator,
/// accumulators can be merged, and the result is read from the accumulator.
///
/// ```
/// use sluice_state::AggregateFunction;
/// /// Average of i64 values.
/// struct Avg;
/// impl AggregateFunction<i64, (i64, u64), f64> for Avg {
///     fn create_accumulator(&self) -> (i64, u64) { (0, 0) }
///     fn add(&self, v: i64, acc: (i64, u64)) -> (i64, u64) { (acc.0 + v, acc.1 + 1) }
///     fn merge(&self, a: (i64, u64), b: (i64, u64)) -> (i64, u64) { (a.0 + b.0, a.1 + b.1) }
///     fn get_result(&self, acc: &(i64, u64)) -> f64 { acc.0 as f64 / acc.1 as f64 }
/// }
/// let acc = [1, 2, 6].into_iter().fold(Avg.create_accumulator(), |a, v| Avg.add(v, a));
/// assert_eq!(Avg.get_result(&acc), 3.0);
/// ```
pub trait AggregateFunction<IN, ACC, OUT>: Send + Sync {
    /// A fresh, empty accumulator.
    fn create_accumulator(&self) -> ACC;
    /// Folds `value` into `acc` and returns the new accumulator.
    fn add(&self, value: IN, acc: ACC) -> ACC;
    /// Combines two accumulators into one (as when merging windows).
    fn merge(&self, a: ACC, b: ACC) -> ACC;
    /// The result an accumulator stands for.
    fn get_result(&self, acc: &ACC) -> OUT;
}

impl<IN, ACC, OUT, A: AggregateFunction<IN, ACC, OUT> + ?Sized> AggregateFunction<IN, ACC, OUT>
    for Arc<A>
{
    fn create_accumulator(&self) -> ACC {
        (**self).create_accumulator()
    }
    fn add(&self, value: IN, acc: ACC) -> ACC {
        (**self).add(value, acc)
    }
    fn merge(&self, a: ACC, b: ACC) -> ACC {
        (**self).merge(a, b)
    }
    fn get_result(&self, acc: &ACC) -> OUT {
        (**self).get_result(acc)
    }
}

/// The key group of a key (computed by the graph layer with Flink's formula).
pub type KeyGroupFn<K> = Arc<dyn Fn(&K) -> u32 + Send + Sync>;

/// What a keyed operator needs to set up its state: the backend, how to find a key's key group,
/// and the key groups this subtask owns (inclusive).
pub struct KeyedStateConfig<K> {
    /// Where the state lives.
    pub backend: StateBackendKind,
    /// Maps a key to its key group.
    pub key_group_of: KeyGroupFn<K>,
    /// The key groups this subtask owns (inclusive); a current key of another group is an error.
    pub key_groups: RangeInclusive<u32>,
}

impl<K> Clone for KeyedStateConfig<K> {
    fn clone(&self) -> Self {
        KeyedStateConfig {
            backend: self.backend.clone(),
            key_group_of: self.key_group_of.clone(),
            key_groups: self.key_groups.clone(),
        }
    }
}

impl<K> std::fmt::Debug for KeyedStateConfig<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedStateConfig")
            .field("backend", &self.backend)
            .field("key_groups", &self.key_groups)
            .finish()
    }
}

/// A directory name for one operator subtask's state: the operator name reduced to
/// `[A-Za-z0-9_-]`, the subtask index, the process id and a per-process counter, so that two
/// instances (two jobs, two operators with the same name) never share a directory.
pub fn instance_dir_name(operator_name: &str, subtask: usize) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name: String = operator_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    format!(
        "{name}-{subtask}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
