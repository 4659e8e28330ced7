//! The per-subtask keyed state store and its two backends.

use std::any::{Any, TypeId};
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

#[cfg(not(feature = "lsm"))]
use crate::lsm_off as lsm;
#[cfg(feature = "lsm")]
use fjall as lsm;
use lsm::{Database, Keyspace, KeyspaceCreateOptions};
use sluice_types::OperatorError;

use super::layout::{self, key_group_prefix, split_key, write_key_prefix};
use super::{StateBackendKind, StateKey, StateValue};
use crate::fasthash::FastHashMap;
use sluice_metrics::TaskMetrics;

/// The memory backend times one state call in this many (and counts it this many times).
pub const MEMORY_TIMING_SAMPLE_EVERY: u32 = 32;

/// The kind of a registered state (a name is bound to one kind and one type per store).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateKind {
    /// One value per key ([`crate::ValueState`]).
    Value,
    /// A list per key ([`crate::ListState`]).
    List,
    /// A map per key ([`crate::MapState`]).
    Map,
    /// A value folded with a reduce function ([`crate::ReducingState`]).
    Reducing,
    /// An accumulator folded with an aggregate function ([`crate::AggregatingState`]).
    Aggregating,
}

impl StateKind {
    /// Flink's name of the state type (`ValueState`, ...), for error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            StateKind::Value => "ValueState",
            StateKind::List => "ListState",
            StateKind::Map => "MapState",
            StateKind::Reducing => "ReducingState",
            StateKind::Aggregating => "AggregatingState",
        }
    }
}

/// One stored entry of a key-group snapshot, in the byte layout of [`layout`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StateEntry {
    /// The state's registered name.
    pub state: String,
    /// The entry's key: key group, length-prefixed serialized key, then any suffix.
    pub key: Vec<u8>,
    /// The entry's serialized value.
    pub value: Vec<u8>,
}

// ---------------------------------------------------------------------------------------------
// Memory backend: typed cells in one hash map per key group.

/// What one key holds in one state of the memory backend.
trait Cell: Send + 'static {
    fn is_empty(&self) -> bool;
    /// Appends the entries of this cell in the [`layout`] format; `prefix` is the key's prefix.
    fn encode(&self, prefix: &[u8], out: &mut Entries) -> Result<(), OperatorError>;
    /// An empty cell.
    fn fresh() -> Self
    where
        Self: Sized;
    /// Takes back one entry [`encode`](Self::encode) wrote: `suffix` is what followed the key's
    /// prefix (a map key), `value` the stored bytes.
    fn absorb(&mut self, suffix: &[u8], value: &[u8]) -> Result<(), OperatorError>;
}

/// Value, Reducing and Aggregating state. `None` only transiently (while a value is being
/// replaced); treated as absent.
struct ValueCell<V>(Option<V>);
struct ListCell<V>(Vec<V>);
struct MapCell<UK, UV>(FastHashMap<UK, UV>);

impl<V: StateValue> Cell for ValueCell<V> {
    fn is_empty(&self) -> bool {
        self.0.is_none()
    }
    fn fresh() -> Self {
        ValueCell(None)
    }
    fn absorb(&mut self, _suffix: &[u8], value: &[u8]) -> Result<(), OperatorError> {
        self.0 = Some(layout::decode(value)?);
        Ok(())
    }
    fn encode(&self, prefix: &[u8], out: &mut Entries) -> Result<(), OperatorError> {
        if let Some(v) = &self.0 {
            out.push((prefix.to_vec(), layout::encode(v)?));
        }
        Ok(())
    }
}

impl<V: StateValue> Cell for ListCell<V> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn fresh() -> Self {
        ListCell(Vec::new())
    }
    fn absorb(&mut self, _suffix: &[u8], value: &[u8]) -> Result<(), OperatorError> {
        self.0 = layout::decode_list(value)?;
        Ok(())
    }
    fn encode(&self, prefix: &[u8], out: &mut Entries) -> Result<(), OperatorError> {
        if !self.0.is_empty() {
            let mut v = Vec::new();
            layout::encode_list_into(&self.0, &mut v)?;
            out.push((prefix.to_vec(), v));
        }
        Ok(())
    }
}

impl<UK: StateKey, UV: StateValue> Cell for MapCell<UK, UV> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn fresh() -> Self {
        MapCell(FastHashMap::default())
    }
    fn absorb(&mut self, suffix: &[u8], value: &[u8]) -> Result<(), OperatorError> {
        self.0
            .insert(layout::decode(suffix)?, layout::decode(value)?);
        Ok(())
    }
    fn encode(&self, prefix: &[u8], out: &mut Entries) -> Result<(), OperatorError> {
        for (uk, uv) in &self.0 {
            let mut k = prefix.to_vec();
            layout::encode_into(uk, &mut k)?;
            out.push((k, layout::encode(uv)?));
        }
        Ok(())
    }
}

/// One state of the memory backend: a map per key group of the subtask's range (index =
/// key group − first key group), grown on demand.
struct Table<K, C> {
    groups: Vec<FastHashMap<K, C>>,
}

impl<K, C> Table<K, C> {
    fn new() -> Self {
        Table { groups: Vec::new() }
    }

    #[inline]
    fn group_mut(&mut self, local: usize) -> &mut FastHashMap<K, C> {
        if self.groups.len() <= local {
            self.groups.resize_with(local + 1, FastHashMap::default);
        }
        &mut self.groups[local]
    }

    #[inline]
    fn group(&self, local: usize) -> Option<&FastHashMap<K, C>> {
        self.groups.get(local)
    }
}

/// A memory table with its types erased, for what the store does across states (snapshots,
/// key iteration).
trait ErasedTable<K>: Send {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn has_entries(&self, local: usize) -> bool;
    fn keys(&self, local: usize) -> Vec<K>;
    fn encode(&self, key_group: u32, local: usize, out: &mut Entries) -> Result<(), OperatorError>;
    /// Takes back one stored entry (`key`: the serialized state key).
    fn absorb(
        &mut self,
        local: usize,
        key: &[u8],
        suffix: &[u8],
        value: &[u8],
    ) -> Result<(), OperatorError>;
}

impl<K: StateKey, C: Cell> ErasedTable<K> for Table<K, C> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn has_entries(&self, local: usize) -> bool {
        self.group(local)
            .is_some_and(|g| g.values().any(|c| !c.is_empty()))
    }
    fn keys(&self, local: usize) -> Vec<K> {
        self.group(local)
            .map(|g| {
                g.iter()
                    .filter(|(_, c)| !c.is_empty())
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
    fn absorb(
        &mut self,
        local: usize,
        key: &[u8],
        suffix: &[u8],
        value: &[u8],
    ) -> Result<(), OperatorError> {
        let k: K = layout::decode(key)?;
        self.group_mut(local)
            .entry(k)
            .or_insert_with(C::fresh)
            .absorb(suffix, value)
    }
    fn encode(&self, key_group: u32, local: usize, out: &mut Entries) -> Result<(), OperatorError> {
        let Some(g) = self.group(local) else {
            return Ok(());
        };
        let mut prefix = Vec::new();
        for (k, c) in g {
            if c.is_empty() {
                continue;
            }
            write_key_prefix(key_group, &layout::encode(k)?, &mut prefix)?;
            c.encode(&prefix, out)?;
        }
        Ok(())
    }
}

/// Puts one snapshot entry back into a memory table.
fn absorb_entry<K>(
    table: &mut dyn ErasedTable<K>,
    first_kg: u32,
    e: &StateEntry,
) -> Result<(), OperatorError> {
    let (kg, key, suffix) = layout::split_key(&e.key).ok_or_else(|| {
        OperatorError::failed(format!(
            "a malformed entry of state '{}' in a snapshot",
            e.state
        ))
    })?;
    table.absorb((kg - first_kg) as usize, key, suffix, &e.value)
}

// ---------------------------------------------------------------------------------------------
// LSM backend.

struct LsmBackend {
    db: Database,
    dir: PathBuf,
    /// Per registered state (same index as `KeyedStateStore::slots`).
    spaces: Vec<Keyspace>,
}

const KEYSPACE_PREFIX: &str = "state:";

fn lsm_err(e: lsm::Error) -> OperatorError {
    OperatorError::failed(format!("LSM state backend: {e}"))
}

impl LsmBackend {
    fn open(dir: &Path, temporary: bool) -> Result<LsmBackend, OperatorError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            OperatorError::io(format!("creating state directory {}", dir.display()), e)
        })?;
        let db = Database::builder(dir)
            .worker_threads(1)
            .cache_size(16 * 1024 * 1024)
            // Working state, not a checkpoint: no need to push every write to the OS.
            .manual_journal_persist(true)
            .temporary(temporary)
            .open()
            .map_err(lsm_err)?;
        Ok(LsmBackend {
            db,
            dir: dir.to_path_buf(),
            spaces: Vec::new(),
        })
    }

    fn keyspace(&self, name: &str) -> Result<Keyspace, OperatorError> {
        let ks_name = format!("{KEYSPACE_PREFIX}{name}");
        if ks_name.len() > 255 {
            return Err(OperatorError::failed(format!(
                "state name '{name}' is too long (at most {} bytes)",
                255 - KEYSPACE_PREFIX.len()
            )));
        }
        self.db
            .keyspace(&ks_name, KeyspaceCreateOptions::default)
            .map_err(lsm_err)
    }

    /// Every state keyspace in the database (also those of an earlier session), by state name.
    fn all_states(&self) -> Result<Vec<(String, Keyspace)>, OperatorError> {
        let mut out = Vec::new();
        for n in self.db.list_keyspace_names() {
            let n: &str = &n;
            if let Some(state) = n.strip_prefix(KEYSPACE_PREFIX) {
                out.push((state.to_string(), self.keyspace(state)?));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// Stored entries as `(key, value)` bytes.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Scans `ks` for entries whose key starts with `prefix`.
fn scan(ks: &Keyspace, prefix: &[u8]) -> Result<Entries, OperatorError> {
    let mut out = Vec::new();
    for g in ks.prefix(prefix) {
        let (k, v) = g.into_inner().map_err(lsm_err)?;
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

fn scan_keys(ks: &Keyspace, prefix: &[u8]) -> Result<Vec<Vec<u8>>, OperatorError> {
    let mut out = Vec::new();
    for g in ks.prefix(prefix) {
        out.push(g.key().map_err(lsm_err)?.to_vec());
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The store.

enum Backend<K> {
    Memory(Vec<Box<dyn ErasedTable<K>>>),
    Lsm(LsmBackend),
}

/// Which state a call is about: by name (looked up, registered on first use) or by a handle's
/// slot (resolved at registration: no lookup, no type check per call).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target<'a> {
    Name(&'a str),
    Slot(usize),
    /// A handle registered with another store.
    Foreign,
}

/// Store instances, so that a handle is only ever used with the store that issued it.
static NEXT_STORE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A state registered once, typically in `open` ([`KeyedStateStore::register_value`] and its
/// siblings): calls through it reach the state by index, without the lookup by name and the
/// type check a by-name call makes. `S` is the state's shape ([`ValueOf`], [`ListOf`],
/// [`MapOf`]).
pub struct StateHandle<S> {
    pub(super) slot: usize,
    store: u64,
    _s: PhantomData<fn() -> S>,
}

impl<S> Clone for StateHandle<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for StateHandle<S> {}

impl<S> std::fmt::Debug for StateHandle<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateHandle")
            .field("slot", &self.slot)
            .finish()
    }
}

/// The shape of a value state's handle.
pub struct ValueOf<V>(PhantomData<fn() -> V>);
/// The shape of a list state's handle.
pub struct ListOf<V>(PhantomData<fn() -> V>);
/// The shape of a map state's handle.
pub struct MapOf<UK, UV>(PhantomData<fn() -> (UK, UV)>);

/// A registered state: name, kind and the type of what it stores.
struct Slot {
    name: String,
    kind: StateKind,
    type_id: TypeId,
    type_name: &'static str,
}

/// The current key (the key context): set by the operator per record.
struct Current<K> {
    key: K,
    key_group: u32,
    local: usize,
}

/// Time spent in state calls: every call on the LSM backend, one in
/// [`MEMORY_TIMING_SAMPLE_EVERY`] (scaled) on the memory backend.
struct AccessTiming {
    every: u32,
    countdown: u32,
    total_ns: u64,
    metrics: Option<Arc<TaskMetrics>>,
}

impl AccessTiming {
    #[inline]
    fn begin(&mut self) -> Option<Instant> {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = self.every;
            Some(Instant::now())
        } else {
            None
        }
    }

    #[inline]
    fn end(&mut self, started: Option<Instant>) {
        if let Some(t) = started {
            let ns = t.elapsed().as_nanos() as u64 * u64::from(self.every);
            self.total_ns += ns;
            if let Some(m) = &self.metrics {
                m.state_access_ns.fetch_add(ns, Relaxed);
            }
        }
    }
}

/// The keyed state of one operator subtask: every state of every key of the subtask's key
/// groups, on one backend. See the [module docs](super).
///
/// Operators call [`set_current_key`](Self::set_current_key) before each record, then obtain
/// typed handles by name ([`value_state`](Self::value_state), ...), which read and write the
/// current key's state.
pub struct KeyedStateStore<K> {
    /// This instance (see [`StateHandle`]).
    id: u64,
    first_kg: u32,
    last_kg: u32,
    slots: Vec<Slot>,
    backend: Backend<K>,
    current: Option<Current<K>>,
    /// LSM: `key_group | len | postcard(key)` of the current key, valid if `prefix_ok`.
    prefix: Vec<u8>,
    prefix_ok: bool,
    scratch: Vec<u8>,
    timing: AccessTiming,
    /// Memory backend: restored entries of states not used yet (their types are known only
    /// when the operator first asks for them); they count in snapshots meanwhile.
    pending_restore: Vec<StateEntry>,
}

impl<K> std::fmt::Debug for KeyedStateStore<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedStateStore")
            .field(
                "backend",
                &match self.backend {
                    Backend::Memory(_) => "memory",
                    Backend::Lsm(_) => "lsm",
                },
            )
            .field("key_groups", &(self.first_kg..=self.last_kg))
            .field(
                "states",
                &self.slots.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn check_range(key_groups: &RangeInclusive<u32>) -> Result<(), OperatorError> {
    if key_groups.is_empty() || *key_groups.end() > u32::from(u16::MAX) {
        return Err(OperatorError::failed(format!(
            "invalid key-group range {key_groups:?}"
        )));
    }
    Ok(())
}

impl<K: StateKey> KeyedStateStore<K> {
    fn with_backend(key_groups: RangeInclusive<u32>, backend: Backend<K>) -> Self {
        let every = match backend {
            Backend::Memory(_) => MEMORY_TIMING_SAMPLE_EVERY,
            Backend::Lsm(_) => 1,
        };
        KeyedStateStore {
            id: NEXT_STORE_ID.fetch_add(1, Relaxed),
            first_kg: *key_groups.start(),
            last_kg: *key_groups.end(),
            slots: Vec::new(),
            backend,
            current: None,
            prefix: Vec::new(),
            prefix_ok: false,
            scratch: Vec::new(),
            timing: AccessTiming {
                every,
                countdown: 1,
                total_ns: 0,
                metrics: None,
            },
            pending_restore: Vec::new(),
        }
    }

    /// A memory-backed store for the key groups `key_groups`.
    pub fn memory(key_groups: RangeInclusive<u32>) -> Result<Self, OperatorError> {
        check_range(&key_groups)?;
        Ok(Self::with_backend(key_groups, Backend::Memory(Vec::new())))
    }

    /// An LSM-backed store in `dir` (created if missing; an existing database there is
    /// reopened). With `temporary`, the directory is removed when the store is dropped.
    pub fn lsm(
        dir: &Path,
        key_groups: RangeInclusive<u32>,
        temporary: bool,
    ) -> Result<Self, OperatorError> {
        check_range(&key_groups)?;
        let b = LsmBackend::open(dir, temporary)?;
        Ok(Self::with_backend(key_groups, Backend::Lsm(b)))
    }

    /// The store of one operator subtask on `backend`: the LSM backend gets a fresh temporary
    /// directory `instance` under its configured directory.
    pub fn open(
        backend: &StateBackendKind,
        instance: &str,
        key_groups: RangeInclusive<u32>,
    ) -> Result<Self, OperatorError> {
        match backend {
            StateBackendKind::Memory => Self::memory(key_groups),
            StateBackendKind::Lsm { dir } => {
                // The default root must be private before the store is created under it.
                crate::private_dir::check_default(dir).map_err(OperatorError::failed)?;
                Self::lsm(&dir.join(instance), key_groups, true)
            }
        }
    }

    /// Adds the time spent in state calls to `metrics.state_access_ns` from now on.
    pub fn attach_metrics(&mut self, metrics: Option<Arc<TaskMetrics>>) {
        self.timing.metrics = metrics;
    }

    /// Estimated time spent in state calls so far (ns).
    pub fn access_ns(&self) -> u64 {
        self.timing.total_ns
    }

    /// `"memory"` or `"lsm"`, the backend this store runs on.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Memory(_) => "memory",
            Backend::Lsm(_) => "lsm",
        }
    }

    /// The LSM database directory, if on the LSM backend.
    pub fn lsm_dir(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Lsm(b) => Some(&b.dir),
            Backend::Memory(_) => None,
        }
    }

    /// The key groups this store holds (inclusive).
    pub fn key_group_range(&self) -> RangeInclusive<u32> {
        self.first_kg..=self.last_kg
    }

    // --- key context -------------------------------------------------------------------------

    /// Makes `key` (of key group `key_group`) the key that state handles read and write.
    /// Fails if the key group is not one of this store's (the input is not partitioned by this
    /// key, or with another max parallelism).
    #[inline]
    pub fn set_current_key(&mut self, key: K, key_group: u32) -> Result<(), OperatorError> {
        if key_group < self.first_kg || key_group > self.last_kg {
            return Err(OperatorError::failed(format!(
                "key group {key_group} of the current key is not in this subtask's key groups {}..={} (is the input keyed by the same key and max parallelism?)",
                self.first_kg, self.last_kg
            )));
        }
        self.current = Some(Current {
            key,
            key_group,
            local: (key_group - self.first_kg) as usize,
        });
        self.prefix_ok = false;
        Ok(())
    }

    /// The current key, if one was set.
    pub fn current_key(&self) -> Option<&K> {
        self.current.as_ref().map(|c| &c.key)
    }

    /// The current key's key group, if a key was set.
    pub fn current_key_group(&self) -> Option<u32> {
        self.current.as_ref().map(|c| c.key_group)
    }

    // --- typed handles -----------------------------------------------------------------------

    /// The current key's [`ValueState`](super::ValueState) named `name`.
    pub fn value_state<'a, V: StateValue>(
        &'a mut self,
        name: &'a str,
    ) -> super::ValueState<'a, K, V> {
        super::ValueState::new(self, Target::Name(name))
    }

    /// The current key's [`ListState`](super::ListState) named `name`.
    pub fn list_state<'a, V: StateValue>(
        &'a mut self,
        name: &'a str,
    ) -> super::ListState<'a, K, V> {
        super::ListState::new(self, Target::Name(name))
    }

    /// The current key's [`MapState`](super::MapState) named `name`.
    pub fn map_state<'a, UK: StateKey, UV: StateValue>(
        &'a mut self,
        name: &'a str,
    ) -> super::MapState<'a, K, UK, UV> {
        super::MapState::new(self, Target::Name(name))
    }

    /// The current key's [`ReducingState`](super::ReducingState) named `name`, combining with
    /// `reduce`.
    pub fn reducing_state<'a, V, F>(
        &'a mut self,
        name: &'a str,
        reduce: F,
    ) -> super::ReducingState<'a, K, V, F>
    where
        V: StateValue,
        F: Fn(V, V) -> V,
    {
        super::ReducingState::new(self, Target::Name(name), reduce)
    }

    /// The current key's [`AggregatingState`](super::AggregatingState) named `name`, over `agg`.
    pub fn aggregating_state<'a, IN, ACC, OUT, A>(
        &'a mut self,
        name: &'a str,
        agg: &'a A,
    ) -> super::AggregatingState<'a, K, IN, ACC, OUT, A>
    where
        ACC: StateValue,
        A: super::AggregateFunction<IN, ACC, OUT>,
    {
        super::AggregatingState::new(self, Target::Name(name), agg)
    }

    // --- internals shared by the handles -----------------------------------------------------

    #[inline]
    fn timed<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let t = self.timing.begin();
        let r = f(self);
        self.timing.end(t);
        r
    }

    /// The slot of `target`: a handle's, or the named state's (registered on first use).
    #[inline]
    fn resolve<C: Cell>(
        &mut self,
        target: Target<'_>,
        kind: StateKind,
    ) -> Result<usize, OperatorError> {
        match target {
            Target::Slot(i) => Ok(i),
            Target::Name(name) => self.slot::<C>(name, kind),
            Target::Foreign => Err(OperatorError::failed(
                "a state handle was used with a store other than the one that registered it",
            )),
        }
    }

    /// The target of handle `h` in this store.
    #[inline]
    pub(crate) fn target_of<S>(&self, h: &StateHandle<S>) -> Target<'static> {
        if h.store == self.id {
            Target::Slot(h.slot)
        } else {
            Target::Foreign
        }
    }

    fn handle<S>(&self, slot: usize) -> StateHandle<S> {
        StateHandle {
            slot,
            store: self.id,
            _s: PhantomData,
        }
    }

    /// Registers value state `name` (or finds it, checking its kind and type) and returns its
    /// handle.
    pub fn register_value<V: StateValue>(
        &mut self,
        name: &str,
    ) -> Result<StateHandle<ValueOf<V>>, OperatorError> {
        let slot = self.slot::<ValueCell<V>>(name, StateKind::Value)?;
        Ok(self.handle(slot))
    }

    /// Registers list state `name` and returns its handle.
    pub fn register_list<V: StateValue>(
        &mut self,
        name: &str,
    ) -> Result<StateHandle<ListOf<V>>, OperatorError> {
        let slot = self.slot::<ListCell<V>>(name, StateKind::List)?;
        Ok(self.handle(slot))
    }

    /// Registers map state `name` and returns its handle.
    pub fn register_map<UK: StateKey, UV: StateValue>(
        &mut self,
        name: &str,
    ) -> Result<StateHandle<MapOf<UK, UV>>, OperatorError> {
        let slot = self.slot::<MapCell<UK, UV>>(name, StateKind::Map)?;
        Ok(self.handle(slot))
    }

    /// The current key's value state of handle `h`.
    pub fn value<V: StateValue>(
        &mut self,
        h: &StateHandle<ValueOf<V>>,
    ) -> super::ValueState<'_, K, V> {
        let t = self.target_of(h);
        super::ValueState::new(self, t)
    }

    /// The current key's list state of handle `h`.
    pub fn list<V: StateValue>(
        &mut self,
        h: &StateHandle<ListOf<V>>,
    ) -> super::ListState<'_, K, V> {
        let t = self.target_of(h);
        super::ListState::new(self, t)
    }

    /// The current key's map state of handle `h`.
    pub fn map<UK: StateKey, UV: StateValue>(
        &mut self,
        h: &StateHandle<MapOf<UK, UV>>,
    ) -> super::MapState<'_, K, UK, UV> {
        let t = self.target_of(h);
        super::MapState::new(self, t)
    }

    /// The slot index of state `name`, registering it (and creating its storage) on first use.
    /// `C` is the memory cell type, which stands for the state's value types on both backends.
    fn slot<C: Cell>(&mut self, name: &str, kind: StateKind) -> Result<usize, OperatorError> {
        if let Some(i) = self.slots.iter().position(|s| s.name == name) {
            let s = &self.slots[i];
            if s.kind != kind || s.type_id != TypeId::of::<C>() {
                return Err(OperatorError::failed(format!(
                    "state '{name}' is a {} of {}; it cannot be used as a {} of {}",
                    s.kind.as_str(),
                    s.type_name,
                    kind.as_str(),
                    cell_type_name::<C>()
                )));
            }
            return Ok(i);
        }
        if name.is_empty() {
            return Err(OperatorError::failed("a state name must not be empty"));
        }
        match &mut self.backend {
            Backend::Memory(tables) => {
                let mut table: Box<dyn ErasedTable<K>> = Box::new(Table::<K, C>::new());
                let (mine, rest): (Vec<StateEntry>, Vec<StateEntry>) =
                    std::mem::take(&mut self.pending_restore)
                        .into_iter()
                        .partition(|e| e.state == name);
                self.pending_restore = rest;
                for e in mine {
                    absorb_entry(&mut *table, self.first_kg, &e)?;
                }
                tables.push(table)
            }
            Backend::Lsm(b) => {
                let ks = b.keyspace(name)?;
                b.spaces.push(ks);
            }
        }
        self.slots.push(Slot {
            name: name.to_string(),
            kind,
            type_id: TypeId::of::<C>(),
            type_name: cell_type_name::<C>(),
        });
        Ok(self.slots.len() - 1)
    }

    /// LSM: makes `self.prefix` the current key's prefix.
    fn ensure_prefix(&mut self) -> Result<(), OperatorError> {
        if self.prefix_ok {
            return Ok(());
        }
        let cur = self
            .current
            .as_ref()
            .ok_or_else(|| OperatorError::failed("keyed state accessed without a current key"))?;
        self.scratch.clear();
        layout::encode_into(&cur.key, &mut self.scratch)?;
        write_key_prefix(cur.key_group, &self.scratch, &mut self.prefix)?;
        self.prefix_ok = true;
        Ok(())
    }

    /// The memory table of `slot` and the current key (split borrows of `self`).
    fn mem_parts<C: Cell>(
        &mut self,
        slot: usize,
    ) -> Result<(&mut Table<K, C>, &Current<K>), OperatorError> {
        let cur = self
            .current
            .as_ref()
            .ok_or_else(|| OperatorError::failed("keyed state accessed without a current key"))?;
        let Backend::Memory(tables) = &mut self.backend else {
            unreachable!("memory table of an LSM store")
        };
        let table = tables[slot]
            .as_any_mut()
            .downcast_mut::<Table<K, C>>()
            // Slot types are checked at registration, so this cannot fail; an error beats a panic.
            .ok_or_else(|| OperatorError::failed("keyed state slot holds another type"))?;
        Ok((table, cur))
    }

    fn lsm_space(&self, slot: usize) -> Keyspace {
        match &self.backend {
            Backend::Lsm(b) => b.spaces[slot].clone(),
            Backend::Memory(_) => unreachable!("keyspace of a memory store"),
        }
    }

    fn is_memory(&self) -> bool {
        matches!(self.backend, Backend::Memory(_))
    }

    // Value-like states (Value, Reducing, Aggregating): one value per key.

    pub(crate) fn value_get<V: StateValue>(
        &mut self,
        target: Target<'_>,
        kind: StateKind,
    ) -> Result<Option<V>, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<ValueCell<V>>(target, kind)?;
            if s.is_memory() {
                let (t, cur) = s.mem_parts::<ValueCell<V>>(slot)?;
                Ok(t.group(cur.local)
                    .and_then(|g| g.get(&cur.key))
                    .and_then(|c| c.0.clone()))
            } else {
                s.ensure_prefix()?;
                let ks = s.lsm_space(slot);
                match ks.get(&s.prefix).map_err(lsm_err)? {
                    Some(b) => Ok(Some(layout::decode(&b)?)),
                    None => Ok(None),
                }
            }
        })
    }

    /// Replaces the current key's value of the value state `h` by `f(old)` (`None` removes it)
    /// in one call; returns `f`'s result (a keyed reduce's read-modify-write).
    pub fn modify_value<V: StateValue, R>(
        &mut self,
        h: &StateHandle<ValueOf<V>>,
        f: impl FnOnce(Option<V>) -> (Option<V>, R),
    ) -> Result<R, OperatorError> {
        let target = self.target_of(h);
        self.value_modify(target, StateKind::Value, f)
    }

    /// Replaces the current key's value by `f(old)` (`None` removes it); returns `f`'s result.
    pub(crate) fn value_modify<V: StateValue, R>(
        &mut self,
        target: Target<'_>,
        kind: StateKind,
        f: impl FnOnce(Option<V>) -> (Option<V>, R),
    ) -> Result<R, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<ValueCell<V>>(target, kind)?;
            if s.is_memory() {
                let (t, cur) = s.mem_parts::<ValueCell<V>>(slot)?;
                let g = t.group_mut(cur.local);
                Ok(match g.get_mut(&cur.key) {
                    Some(cell) => {
                        let (new, r) = f(cell.0.take());
                        match new {
                            Some(v) => cell.0 = Some(v),
                            None => {
                                g.remove(&cur.key);
                            }
                        }
                        r
                    }
                    None => {
                        let (new, r) = f(None);
                        if let Some(v) = new {
                            g.insert(cur.key.clone(), ValueCell(Some(v)));
                        }
                        r
                    }
                })
            } else {
                s.ensure_prefix()?;
                let ks = s.lsm_space(slot);
                let old = match ks.get(&s.prefix).map_err(lsm_err)? {
                    Some(b) => Some(layout::decode::<V>(&b)?),
                    None => None,
                };
                let had = old.is_some();
                let (new, r) = f(old);
                match new {
                    Some(v) => ks
                        .insert(s.prefix.as_slice(), layout::encode(&v)?)
                        .map_err(lsm_err)?,
                    None if had => ks.remove(s.prefix.as_slice()).map_err(lsm_err)?,
                    None => {}
                }
                Ok(r)
            }
        })
    }

    // List state.

    pub(crate) fn list_get<V: StateValue>(
        &mut self,
        target: Target<'_>,
    ) -> Result<Vec<V>, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<ListCell<V>>(target, StateKind::List)?;
            if s.is_memory() {
                let (t, cur) = s.mem_parts::<ListCell<V>>(slot)?;
                Ok(t.group(cur.local)
                    .and_then(|g| g.get(&cur.key))
                    .map(|c| c.0.clone())
                    .unwrap_or_default())
            } else {
                s.ensure_prefix()?;
                match s.lsm_space(slot).get(&s.prefix).map_err(lsm_err)? {
                    Some(b) => layout::decode_list(&b),
                    None => Ok(Vec::new()),
                }
            }
        })
    }

    /// Appends `values` to the current key's list; with `replace`, replaces the list.
    pub(crate) fn list_extend<V: StateValue>(
        &mut self,
        target: Target<'_>,
        values: Vec<V>,
        replace: bool,
    ) -> Result<(), OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<ListCell<V>>(target, StateKind::List)?;
            if s.is_memory() {
                let (t, cur) = s.mem_parts::<ListCell<V>>(slot)?;
                let g = t.group_mut(cur.local);
                if let Some(cell) = g.get_mut(&cur.key) {
                    if replace {
                        cell.0 = values;
                    } else {
                        cell.0.extend(values);
                    }
                    if cell.0.is_empty() {
                        g.remove(&cur.key);
                    }
                } else if !values.is_empty() {
                    g.insert(cur.key.clone(), ListCell(values));
                }
                Ok(())
            } else {
                s.ensure_prefix()?;
                let ks = s.lsm_space(slot);
                if replace && values.is_empty() {
                    return ks.remove(s.prefix.as_slice()).map_err(lsm_err);
                }
                if values.is_empty() {
                    return Ok(());
                }
                let mut bytes = Vec::new();
                if !replace {
                    if let Some(old) = ks.get(&s.prefix).map_err(lsm_err)? {
                        bytes.extend_from_slice(&old);
                    }
                }
                layout::encode_list_into(&values, &mut bytes)?;
                ks.insert(s.prefix.as_slice(), bytes).map_err(lsm_err)?;
                Ok(())
            }
        })
    }

    pub(crate) fn list_clear<V: StateValue>(
        &mut self,
        target: Target<'_>,
    ) -> Result<(), OperatorError> {
        self.list_extend::<V>(target, Vec::new(), true)
    }

    // Map state.

    /// Runs `f` on the current key's map (memory) — `None` if the key has no map.
    fn mem_map<UK: StateKey, UV: StateValue, R>(
        &mut self,
        slot: usize,
        create: bool,
        f: impl FnOnce(Option<&mut FastHashMap<UK, UV>>) -> R,
    ) -> Result<R, OperatorError> {
        let (t, cur) = self.mem_parts::<MapCell<UK, UV>>(slot)?;
        let g = t.group_mut(cur.local);
        Ok(match g.get_mut(&cur.key) {
            Some(cell) => {
                let r = f(Some(&mut cell.0));
                if cell.0.is_empty() {
                    g.remove(&cur.key);
                }
                r
            }
            None if create => {
                let mut m = FastHashMap::default();
                let r = f(Some(&mut m));
                if !m.is_empty() {
                    g.insert(cur.key.clone(), MapCell(m));
                }
                r
            }
            None => f(None),
        })
    }

    /// LSM: the full key of user key `uk` of the current key, in `self.scratch`.
    fn map_key<UK: StateKey>(&mut self, uk: &UK) -> Result<(), OperatorError> {
        self.ensure_prefix()?;
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.prefix);
        layout::encode_into(uk, &mut self.scratch)
    }

    pub(crate) fn map_get<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
        uk: &UK,
    ) -> Result<Option<UV>, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| m.and_then(|m| m.get(uk).cloned()))
            } else {
                s.map_key(uk)?;
                match s.lsm_space(slot).get(&s.scratch).map_err(lsm_err)? {
                    Some(b) => Ok(Some(layout::decode(&b)?)),
                    None => Ok(None),
                }
            }
        })
    }

    pub(crate) fn map_contains<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
        uk: &UK,
    ) -> Result<bool, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| m.is_some_and(|m| m.contains_key(uk)))
            } else {
                s.map_key(uk)?;
                s.lsm_space(slot).contains_key(&s.scratch).map_err(lsm_err)
            }
        })
    }

    /// Puts (`Some`) or removes (`None`) user key `uk`; returns the previous value.
    pub(crate) fn map_set<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
        uk: UK,
        uv: Option<UV>,
    ) -> Result<Option<UV>, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                let create = uv.is_some();
                s.mem_map::<UK, UV, _>(slot, create, |m| match (m, uv) {
                    (Some(m), Some(v)) => m.insert(uk, v),
                    (Some(m), None) => m.remove(&uk),
                    (None, _) => None,
                })
            } else {
                s.map_key(&uk)?;
                let ks = s.lsm_space(slot);
                let old = match ks.get(&s.scratch).map_err(lsm_err)? {
                    Some(b) => Some(layout::decode::<UV>(&b)?),
                    None => None,
                };
                match uv {
                    Some(v) => ks
                        .insert(s.scratch.as_slice(), layout::encode(&v)?)
                        .map_err(lsm_err)?,
                    None if old.is_some() => ks.remove(s.scratch.as_slice()).map_err(lsm_err)?,
                    None => {}
                }
                Ok(old)
            }
        })
    }

    /// Updates user key `uk`'s value in place with `update`, first inserting `init()` if the
    /// map has none; returns whether it was inserted, and `update`'s result. On the memory
    /// backend this is one lookup and no copy of the value (a window's accumulators updated
    /// per record); on the LSM backend a read, then a write.
    pub(crate) fn map_upsert<UK: StateKey, UV: StateValue, R>(
        &mut self,
        target: Target<'_>,
        uk: UK,
        init: impl FnOnce() -> UV,
        update: impl FnOnce(&mut UV) -> R,
    ) -> Result<(bool, R), OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, true, |m| {
                    let Some(m) = m else {
                        unreachable!("mem_map creates the map when asked to")
                    };
                    // The key is moved in (a new row as a join's key is not copied).
                    match m.entry(uk) {
                        std::collections::hash_map::Entry::Occupied(mut e) => {
                            (false, update(e.get_mut()))
                        }
                        std::collections::hash_map::Entry::Vacant(e) => {
                            let mut v = init();
                            let r = update(&mut v);
                            e.insert(v);
                            (true, r)
                        }
                    }
                })
            } else {
                s.map_key(&uk)?;
                let ks = s.lsm_space(slot);
                let (inserted, mut v) = match ks.get(&s.scratch).map_err(lsm_err)? {
                    Some(b) => (false, layout::decode::<UV>(&b)?),
                    None => (true, init()),
                };
                let r = update(&mut v);
                ks.insert(s.scratch.as_slice(), layout::encode(&v)?)
                    .map_err(lsm_err)?;
                Ok((inserted, r))
            }
        })
    }

    /// Calls `f` on every entry of the current key's map (unspecified order), by reference
    /// on the memory backend (nothing copied); stops at `f`'s first error.
    pub(crate) fn map_for_each<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
        mut f: impl FnMut(&UK, &UV) -> Result<(), OperatorError>,
    ) -> Result<(), OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| {
                    m.map_or(Ok(()), |m| m.iter().try_for_each(|(k, v)| f(k, v)))
                })?
            } else {
                s.ensure_prefix()?;
                let plen = s.prefix.len();
                for (k, v) in scan(&s.lsm_space(slot), &s.prefix)? {
                    f(&layout::decode(&k[plen..])?, &layout::decode(&v)?)?;
                }
                Ok(())
            }
        })
    }

    /// Removes and returns the entries of the current key's map whose user key satisfies
    /// `take` (unspecified order), moving the values out rather than copying them.
    pub(crate) fn map_take<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
        mut take: impl FnMut(&UK) -> bool,
    ) -> Result<Vec<(UK, UV)>, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| {
                    m.map(|m| m.extract_if(|k, _| take(k)).collect())
                        .unwrap_or_default()
                })
            } else {
                s.ensure_prefix()?;
                let plen = s.prefix.len();
                let ks = s.lsm_space(slot);
                let mut out = Vec::new();
                for (k, v) in scan(&ks, &s.prefix)? {
                    let uk: UK = layout::decode(&k[plen..])?;
                    if take(&uk) {
                        out.push((uk, layout::decode(&v)?));
                        ks.remove(k).map_err(lsm_err)?;
                    }
                }
                Ok(out)
            }
        })
    }

    pub(crate) fn map_entries<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
    ) -> Result<Vec<(UK, UV)>, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| {
                    m.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                        .unwrap_or_default()
                })
            } else {
                s.ensure_prefix()?;
                let plen = s.prefix.len();
                let mut out = Vec::new();
                for (k, v) in scan(&s.lsm_space(slot), &s.prefix)? {
                    out.push((layout::decode(&k[plen..])?, layout::decode(&v)?));
                }
                Ok(out)
            }
        })
    }

    /// The user keys of the current key's map, without copying its values (a window
    /// operator's timer lists its windows, then moves each due one's value out).
    pub(crate) fn map_keys<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
    ) -> Result<Vec<UK>, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| {
                    m.map(|m| m.keys().cloned().collect()).unwrap_or_default()
                })
            } else {
                s.ensure_prefix()?;
                let plen = s.prefix.len();
                let mut out = Vec::new();
                for k in scan_keys(&s.lsm_space(slot), &s.prefix)? {
                    out.push(layout::decode(&k[plen..])?);
                }
                Ok(out)
            }
        })
    }

    pub(crate) fn map_is_empty<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
    ) -> Result<bool, OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| m.is_none_or(|m| m.is_empty()))
            } else {
                s.ensure_prefix()?;
                Ok(s.lsm_space(slot).prefix(&s.prefix).next().is_none())
            }
        })
    }

    pub(crate) fn map_clear<UK: StateKey, UV: StateValue>(
        &mut self,
        target: Target<'_>,
    ) -> Result<(), OperatorError> {
        self.timed(|s| {
            let slot = s.resolve::<MapCell<UK, UV>>(target, StateKind::Map)?;
            if s.is_memory() {
                s.mem_map::<UK, UV, _>(slot, false, |m| {
                    if let Some(m) = m {
                        m.clear()
                    }
                })
            } else {
                s.ensure_prefix()?;
                let ks = s.lsm_space(slot);
                for k in scan_keys(&ks, &s.prefix)? {
                    ks.remove(k).map_err(lsm_err)?;
                }
                Ok(())
            }
        })
    }

    // --- key groups: iteration and snapshots ------------------------------------------------

    /// Names of the states this store holds, sorted. On the LSM backend this includes states
    /// found in a reopened database that were not used in this session.
    pub fn state_names(&self) -> Result<Vec<String>, OperatorError> {
        match &self.backend {
            Backend::Memory(_) => {
                let mut v: Vec<String> = self.slots.iter().map(|s| s.name.clone()).collect();
                v.sort();
                Ok(v)
            }
            Backend::Lsm(b) => Ok(b.all_states()?.into_iter().map(|(n, _)| n).collect()),
        }
    }

    /// The key groups that hold state, ascending.
    pub fn key_groups(&self) -> Result<Vec<u32>, OperatorError> {
        let mut out = std::collections::BTreeSet::new();
        match &self.backend {
            Backend::Memory(tables) => {
                for t in tables {
                    for kg in self.first_kg..=self.last_kg {
                        if t.has_entries((kg - self.first_kg) as usize) {
                            out.insert(kg);
                        }
                    }
                }
            }
            Backend::Lsm(b) => {
                for (_, ks) in b.all_states()? {
                    // Skip-scan: seek to the first entry at or after key group `kg`, note its
                    // key group, continue after it. One seek per non-empty key group.
                    let mut kg = self.first_kg;
                    while kg <= self.last_kg {
                        let Some(first) = ks.range(key_group_prefix(kg)..).next() else {
                            break;
                        };
                        let k = first.key().map_err(lsm_err)?;
                        let (g, _, _) = split_key(&k)
                            .ok_or_else(|| OperatorError::failed("malformed state key"))?;
                        if g > self.last_kg {
                            break;
                        }
                        out.insert(g);
                        kg = g + 1;
                    }
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Every entry of every key group of the subtask, sorted by key group, state and key: what
    /// a checkpoint stores for this operator subtask.
    pub fn snapshot(&self) -> Result<Vec<StateEntry>, OperatorError> {
        let mut out = Vec::new();
        for kg in self.first_kg..=self.last_kg {
            out.extend(self.snapshot_key_group(kg)?);
        }
        Ok(out)
    }

    /// Loads entries a snapshot produced (possibly of other subtasks, at another parallelism):
    /// those of this subtask's key groups are kept, the others ignored. Call before use.
    pub fn restore(&mut self, entries: Vec<StateEntry>) -> Result<(), OperatorError> {
        let (first, last) = (self.first_kg, self.last_kg);
        let mine = entries.into_iter().filter(|e| {
            layout::split_key(&e.key).is_some_and(|(kg, _, _)| kg >= first && kg <= last)
        });
        match &mut self.backend {
            Backend::Memory(tables) => {
                for e in mine {
                    match self.slots.iter().position(|s| s.name == e.state) {
                        Some(i) => absorb_entry(&mut *tables[i], first, &e)?,
                        None => self.pending_restore.push(e),
                    }
                }
            }
            Backend::Lsm(b) => {
                for e in mine {
                    b.keyspace(&e.state)?
                        .insert(e.key, e.value)
                        .map_err(lsm_err)?;
                }
            }
        }
        Ok(())
    }

    /// Every entry of key group `kg`, in the [`layout`] format, sorted by state name and key.
    /// The same state gives the same bytes on both backends.
    pub fn snapshot_key_group(&self, kg: u32) -> Result<Vec<StateEntry>, OperatorError> {
        let mut out = Vec::new();
        match &self.backend {
            Backend::Memory(tables) => {
                if kg < self.first_kg || kg > self.last_kg {
                    return Ok(out);
                }
                out.extend(
                    self.pending_restore
                        .iter()
                        .filter(|e| layout::split_key(&e.key).is_some_and(|(g, _, _)| g == kg))
                        .cloned(),
                );
                let local = (kg - self.first_kg) as usize;
                for (slot, t) in self.slots.iter().zip(tables) {
                    let mut kvs = Vec::new();
                    t.encode(kg, local, &mut kvs)?;
                    out.extend(kvs.into_iter().map(|(key, value)| StateEntry {
                        state: slot.name.clone(),
                        key,
                        value,
                    }));
                }
            }
            Backend::Lsm(b) => {
                for (name, ks) in b.all_states()? {
                    for (key, value) in scan(&ks, &key_group_prefix(kg))? {
                        out.push(StateEntry {
                            state: name.clone(),
                            key,
                            value,
                        });
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The distinct keys with state in key group `kg`, ordered by their serialized bytes.
    pub fn keys_in_key_group(&self, kg: u32) -> Result<Vec<K>, OperatorError> {
        let mut seen = std::collections::BTreeMap::new();
        for e in self.snapshot_key_group(kg)? {
            if let Some((_, k, _)) = split_key(&e.key) {
                if !seen.contains_key(k) {
                    seen.insert(k.to_vec(), layout::decode::<K>(k)?);
                }
            }
        }
        Ok(seen.into_values().collect())
    }

    /// The keys that have state `name`, with their key groups, ordered by key group and then
    /// serialized key (the same order on both backends). Empty if the state is unknown.
    pub fn keys(&self, name: &str) -> Result<Vec<(u32, K)>, OperatorError> {
        let Some(slot) = self.slots.iter().position(|s| s.name == name) else {
            return Ok(Vec::new());
        };
        let mut out: Vec<(u32, Vec<u8>, K)> = Vec::new();
        match &self.backend {
            Backend::Memory(tables) => {
                for kg in self.first_kg..=self.last_kg {
                    for k in tables[slot].keys((kg - self.first_kg) as usize) {
                        out.push((kg, layout::encode(&k)?, k));
                    }
                }
                out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            }
            Backend::Lsm(b) => {
                let mut last: Option<Vec<u8>> = None;
                for g in b.spaces[slot].iter() {
                    let k = g.key().map_err(lsm_err)?;
                    let (kg, kb, _) = split_key(&k)
                        .ok_or_else(|| OperatorError::failed("malformed state key"))?;
                    let head = &k[..4 + kb.len()];
                    if last.as_deref() == Some(head) {
                        continue;
                    }
                    last = Some(head.to_vec());
                    out.push((kg, kb.to_vec(), layout::decode(kb)?));
                }
            }
        }
        Ok(out.into_iter().map(|(kg, _, k)| (kg, k)).collect())
    }

    /// LSM: writes buffered journal data to the OS (the database is also persisted on drop).
    pub fn persist(&self) -> Result<(), OperatorError> {
        if let Backend::Lsm(b) = &self.backend {
            b.db.persist(lsm::PersistMode::Buffer).map_err(lsm_err)?;
        }
        Ok(())
    }
}

fn cell_type_name<C: 'static>() -> &'static str {
    // `Cell` types are private wrappers; name the wrapped type for error messages.
    let n = std::any::type_name::<C>();
    n.find('<')
        .map(|i| &n[i + 1..n.len().saturating_sub(1)])
        .unwrap_or(n)
}
