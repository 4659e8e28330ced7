//! Properties of keyed state: every state type, on both backends, against a plain model.
//!
//! Each property runs a random sequence of operations over several keys spread across several
//! key groups on a memory store and an LSM store side by side, checks every read against the
//! model, and at the end checks key-group iteration (exactly the keys with state, in the right
//! key groups) and that both backends produce byte-identical key-group snapshots.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use sluice_metrics::TaskMetrics;
use sluice_state::{layout, AggregateFunction, KeyedStateStore, StateBackendKind};

type K = i64;

/// The key groups of the test stores: deliberately not starting at 0.
const FIRST_KG: u32 = 5;
const KEY_GROUPS: u32 = 4;
const LAST_KG: u32 = FIRST_KG + KEY_GROUPS - 1;

fn kg_of(k: &K) -> u32 {
    FIRST_KG + (k.rem_euclid(i64::from(KEY_GROUPS))) as u32
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "sluice-state-props-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A memory store and an LSM store receiving the same operations.
struct Both {
    stores: [KeyedStateStore<K>; 2],
    _dir: TempDir,
}

impl Both {
    fn new() -> Both {
        let dir = TempDir::new("both");
        let lsm = KeyedStateStore::open(
            &StateBackendKind::lsm(dir.path()),
            "op-0",
            FIRST_KG..=LAST_KG,
        )
        .unwrap();
        assert_eq!(lsm.backend_name(), "lsm");
        Both {
            stores: [KeyedStateStore::memory(FIRST_KG..=LAST_KG).unwrap(), lsm],
            _dir: dir,
        }
    }

    fn set_key(&mut self, k: K) {
        for s in &mut self.stores {
            s.set_current_key(k, kg_of(&k)).unwrap();
        }
    }

    /// Runs `f` on both stores and returns the memory store's result after checking the LSM
    /// store gave the same.
    fn both<R: PartialEq + std::fmt::Debug>(
        &mut self,
        mut f: impl FnMut(&mut KeyedStateStore<K>) -> R,
    ) -> R {
        let a = f(&mut self.stores[0]);
        let b = f(&mut self.stores[1]);
        assert_eq!(a, b, "memory and LSM backends disagree");
        a
    }

    /// Key-group iteration covers exactly `keys` (the keys with any state), `keys(state)` lists
    /// exactly `state_keys`, and both backends snapshot every key group to the same bytes.
    fn check_iteration(&self, keys: &BTreeSet<K>, state: &str, state_keys: &BTreeSet<K>) {
        let mut by_group: BTreeMap<u32, BTreeSet<K>> = BTreeMap::new();
        for k in keys {
            by_group.entry(kg_of(k)).or_default().insert(*k);
        }
        for s in &self.stores {
            let groups = s.key_groups().unwrap();
            assert_eq!(
                groups,
                by_group.keys().copied().collect::<Vec<_>>(),
                "{}",
                s.backend_name()
            );
            for kg in FIRST_KG..=LAST_KG {
                let got: BTreeSet<K> = s.keys_in_key_group(kg).unwrap().into_iter().collect();
                assert_eq!(
                    got,
                    by_group.get(&kg).cloned().unwrap_or_default(),
                    "{} kg {kg}",
                    s.backend_name()
                );
                for e in s.snapshot_key_group(kg).unwrap() {
                    let (g, _, _) = layout::split_key(&e.key).unwrap();
                    assert_eq!(g, kg, "snapshot of kg {kg} holds an entry of kg {g}");
                }
            }
            // `keys(state)`: by key group, then serialized key.
            let listed: Vec<(u32, K)> = s.keys(state).unwrap();
            let mut expected: Vec<(u32, Vec<u8>, K)> = state_keys
                .iter()
                .map(|k| (kg_of(k), layout::encode(k).unwrap(), *k))
                .collect();
            expected.sort();
            assert_eq!(
                listed,
                expected
                    .into_iter()
                    .map(|(g, _, k)| (g, k))
                    .collect::<Vec<_>>(),
                "{}",
                s.backend_name()
            );
        }
        for kg in FIRST_KG..=LAST_KG {
            assert_eq!(
                self.stores[0].snapshot_key_group(kg).unwrap(),
                self.stores[1].snapshot_key_group(kg).unwrap(),
                "snapshots of key group {kg} differ between backends"
            );
        }
    }
}

fn key() -> impl Strategy<Value = K> {
    // Negative keys too (zig-zag encoding), several per key group.
    -6i64..10
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// --- ValueState --------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum ValueOp {
    Update(String),
    Clear,
    Get,
}

fn value_op() -> impl Strategy<Value = ValueOp> {
    prop_oneof![
        3 => "[a-z]{0,6}".prop_map(ValueOp::Update),
        1 => Just(ValueOp::Clear),
        2 => Just(ValueOp::Get),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn value_state_matches_model(ops in prop::collection::vec((key(), value_op()), 1..60)) {
        let mut b = Both::new();
        let mut model: HashMap<K, String> = HashMap::new();
        for (k, op) in ops {
            b.set_key(k);
            match op {
                ValueOp::Update(v) => {
                    b.both(|s| s.value_state::<String>("v").update(v.clone()).unwrap());
                    model.insert(k, v);
                }
                ValueOp::Clear => {
                    b.both(|s| s.value_state::<String>("v").clear().unwrap());
                    model.remove(&k);
                }
                ValueOp::Get => {
                    let got = b.both(|s| s.value_state::<String>("v").value().unwrap());
                    prop_assert_eq!(got, model.get(&k).cloned());
                }
            }
        }
        let keys: BTreeSet<K> = model.keys().copied().collect();
        b.check_iteration(&keys, "v", &keys);
    }
}

// --- ListState ---------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum ListOp {
    Add(i32),
    AddAll(Vec<i32>),
    Update(Vec<i32>),
    Clear,
    Get,
}

fn list_op() -> impl Strategy<Value = ListOp> {
    prop_oneof![
        4 => any::<i32>().prop_map(ListOp::Add),
        1 => prop::collection::vec(any::<i32>(), 0..4).prop_map(ListOp::AddAll),
        1 => prop::collection::vec(any::<i32>(), 0..4).prop_map(ListOp::Update),
        1 => Just(ListOp::Clear),
        2 => Just(ListOp::Get),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn list_state_matches_model(ops in prop::collection::vec((key(), list_op()), 1..60)) {
        let mut b = Both::new();
        let mut model: HashMap<K, Vec<i32>> = HashMap::new();
        for (k, op) in ops {
            b.set_key(k);
            match op {
                ListOp::Add(v) => {
                    b.both(|s| s.list_state::<i32>("l").add(v).unwrap());
                    model.entry(k).or_default().push(v);
                }
                ListOp::AddAll(vs) => {
                    b.both(|s| s.list_state::<i32>("l").add_all(vs.clone()).unwrap());
                    model.entry(k).or_default().extend(vs);
                }
                ListOp::Update(vs) => {
                    b.both(|s| s.list_state::<i32>("l").update(vs.clone()).unwrap());
                    model.insert(k, vs);
                }
                ListOp::Clear => {
                    b.both(|s| s.list_state::<i32>("l").clear().unwrap());
                    model.remove(&k);
                }
                ListOp::Get => {
                    let got = b.both(|s| s.list_state::<i32>("l").get().unwrap());
                    prop_assert_eq!(got, model.get(&k).cloned().unwrap_or_default());
                }
            }
        }
        model.retain(|_, v| !v.is_empty());
        let keys: BTreeSet<K> = model.keys().copied().collect();
        b.check_iteration(&keys, "l", &keys);
    }
}

// --- MapState ----------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum MapOp {
    Put(u8, String),
    Remove(u8),
    Get(u8),
    Contains(u8),
    Entries,
    IsEmpty,
    Clear,
    /// Appends to the value in place (an empty one first if absent).
    Append(u8, String),
    /// Takes the entries below a user key.
    TakeBelow(u8),
}

fn map_op() -> impl Strategy<Value = MapOp> {
    let uk = 0u8..6;
    prop_oneof![
        4 => (uk.clone(), "[a-z]{0,4}").prop_map(|(k, v)| MapOp::Put(k, v)),
        2 => uk.clone().prop_map(MapOp::Remove),
        2 => uk.clone().prop_map(MapOp::Get),
        1 => uk.clone().prop_map(MapOp::Contains),
        1 => Just(MapOp::Entries),
        1 => Just(MapOp::IsEmpty),
        1 => Just(MapOp::Clear),
        2 => (uk, "[a-z]{0,2}").prop_map(|(k, v)| MapOp::Append(k, v)),
        1 => (0u8..7).prop_map(MapOp::TakeBelow),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn map_state_matches_model(ops in prop::collection::vec((key(), map_op()), 1..60)) {
        let mut b = Both::new();
        let mut model: HashMap<K, BTreeMap<u8, String>> = HashMap::new();
        for (k, op) in ops {
            b.set_key(k);
            let m = model.entry(k).or_default();
            match op {
                MapOp::Put(uk, uv) => {
                    let old = b.both(|s| s.map_state::<u8, String>("m").put(uk, uv.clone()).unwrap());
                    prop_assert_eq!(old, m.insert(uk, uv));
                }
                MapOp::Remove(uk) => {
                    let old = b.both(|s| s.map_state::<u8, String>("m").remove(&uk).unwrap());
                    prop_assert_eq!(old, m.remove(&uk));
                }
                MapOp::Get(uk) => {
                    let got = b.both(|s| s.map_state::<u8, String>("m").get(&uk).unwrap());
                    prop_assert_eq!(got, m.get(&uk).cloned());
                }
                MapOp::Contains(uk) => {
                    let got = b.both(|s| s.map_state::<u8, String>("m").contains(&uk).unwrap());
                    prop_assert_eq!(got, m.contains_key(&uk));
                }
                MapOp::Entries => {
                    // Iteration order is unspecified: compare as sorted maps.
                    let got = b.both(|s| {
                        s.map_state::<u8, String>("m")
                            .entries()
                            .unwrap()
                            .into_iter()
                            .collect::<BTreeMap<_, _>>()
                    });
                    prop_assert_eq!(&got, &*m);
                    let mut visited = BTreeMap::new();
                    let got = b.both(|s| {
                        visited.clear();
                        s.map_state::<u8, String>("m")
                            .for_each(|k, v| {
                                visited.insert(*k, v.clone());
                                Ok(())
                            })
                            .unwrap();
                        visited.clone()
                    });
                    prop_assert_eq!(&got, &*m);
                }
                MapOp::IsEmpty => {
                    let got = b.both(|s| s.map_state::<u8, String>("m").is_empty().unwrap());
                    prop_assert_eq!(got, m.is_empty());
                }
                MapOp::Clear => {
                    b.both(|s| s.map_state::<u8, String>("m").clear().unwrap());
                    m.clear();
                }
                MapOp::Append(uk, tail) => {
                    let got = b.both(|s| {
                        s.map_state::<u8, String>("m")
                            .upsert(uk, String::new, |v| {
                                v.push_str(&tail);
                                v.len()
                            })
                            .unwrap()
                    });
                    let inserted = !m.contains_key(&uk);
                    let v = m.entry(uk).or_default();
                    v.push_str(&tail);
                    prop_assert_eq!(got, (inserted, v.len()));
                }
                MapOp::TakeBelow(t) => {
                    let got = b.both(|s| {
                        s.map_state::<u8, String>("m")
                            .take_where(|k| *k < t)
                            .unwrap()
                            .into_iter()
                            .collect::<BTreeMap<_, _>>()
                    });
                    let kept = m.split_off(&t);
                    prop_assert_eq!(&got, &*m);
                    *m = kept;
                }
            }
        }
        model.retain(|_, m| !m.is_empty());
        let keys: BTreeSet<K> = model.keys().copied().collect();
        b.check_iteration(&keys, "m", &keys);
    }
}

// --- ReducingState -----------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum ReduceOp {
    Add(String),
    AddAndGet(String),
    Get,
    Clear,
}

fn reduce_op() -> impl Strategy<Value = ReduceOp> {
    prop_oneof![
        3 => "[a-z]{1,3}".prop_map(ReduceOp::Add),
        1 => "[a-z]{1,3}".prop_map(ReduceOp::AddAndGet),
        2 => Just(ReduceOp::Get),
        1 => Just(ReduceOp::Clear),
    ]
}

/// Order-sensitive, so the property also checks that values are folded in arrival order.
fn concat(a: String, b: String) -> String {
    format!("{a}.{b}")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn reducing_state_matches_model(ops in prop::collection::vec((key(), reduce_op()), 1..60)) {
        let mut b = Both::new();
        let mut model: HashMap<K, String> = HashMap::new();
        for (k, op) in ops {
            b.set_key(k);
            match op {
                ReduceOp::Add(v) => {
                    b.both(|s| s.reducing_state("r", concat).add(v.clone()).unwrap());
                    let next = match model.remove(&k) {
                        Some(acc) => concat(acc, v),
                        None => v,
                    };
                    model.insert(k, next);
                }
                ReduceOp::AddAndGet(v) => {
                    let got = b.both(|s| s.reducing_state("r", concat).add_and_get(v.clone()).unwrap());
                    let next = match model.remove(&k) {
                        Some(acc) => concat(acc, v),
                        None => v,
                    };
                    prop_assert_eq!(&got, &next);
                    model.insert(k, next);
                }
                ReduceOp::Get => {
                    let got = b.both(|s| s.reducing_state("r", concat).get().unwrap());
                    prop_assert_eq!(got, model.get(&k).cloned());
                }
                ReduceOp::Clear => {
                    b.both(|s| s.reducing_state::<String, _>("r", concat).clear().unwrap());
                    model.remove(&k);
                }
            }
        }
        let keys: BTreeSet<K> = model.keys().copied().collect();
        b.check_iteration(&keys, "r", &keys);
    }
}

// --- AggregatingState --------------------------------------------------------------------------

/// Sum, count and the last value: `(sum, count, last)`.
struct Stats;

impl AggregateFunction<i32, (i64, u32, i32), (i64, u32, i32)> for Stats {
    fn create_accumulator(&self) -> (i64, u32, i32) {
        (0, 0, 0)
    }
    fn add(&self, v: i32, a: (i64, u32, i32)) -> (i64, u32, i32) {
        (a.0 + i64::from(v), a.1 + 1, v)
    }
    fn merge(&self, a: (i64, u32, i32), b: (i64, u32, i32)) -> (i64, u32, i32) {
        (a.0 + b.0, a.1 + b.1, b.2)
    }
    fn get_result(&self, a: &(i64, u32, i32)) -> (i64, u32, i32) {
        *a
    }
}

#[derive(Clone, Debug)]
enum AggOp {
    Add(i32),
    AddAndGet(i32),
    Merge(i64, u32, i32),
    Get,
    Clear,
}

fn agg_op() -> impl Strategy<Value = AggOp> {
    prop_oneof![
        3 => (-100i32..100).prop_map(AggOp::Add),
        1 => (-100i32..100).prop_map(AggOp::AddAndGet),
        1 => (-100i64..100, 1u32..4, -5i32..5).prop_map(|(s, c, l)| AggOp::Merge(s, c, l)),
        2 => Just(AggOp::Get),
        1 => Just(AggOp::Clear),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn aggregating_state_matches_model(ops in prop::collection::vec((key(), agg_op()), 1..60)) {
        let mut b = Both::new();
        let mut model: HashMap<K, (i64, u32, i32)> = HashMap::new();
        for (k, op) in ops {
            b.set_key(k);
            match op {
                AggOp::Add(v) => {
                    b.both(|s| s.aggregating_state("a", &Stats).add(v).unwrap());
                    let acc = model.remove(&k).unwrap_or_else(|| Stats.create_accumulator());
                    model.insert(k, Stats.add(v, acc));
                }
                AggOp::AddAndGet(v) => {
                    let got = b.both(|s| s.aggregating_state("a", &Stats).add_and_get(v).unwrap());
                    let acc = model.remove(&k).unwrap_or_else(|| Stats.create_accumulator());
                    let acc = Stats.add(v, acc);
                    prop_assert_eq!(got, Stats.get_result(&acc));
                    model.insert(k, acc);
                }
                AggOp::Merge(sum, count, last) => {
                    let acc = (sum, count, last);
                    b.both(|s| s.aggregating_state("a", &Stats).merge_accumulator(acc).unwrap());
                    let next = match model.remove(&k) {
                        Some(a) => Stats.merge(a, acc),
                        None => acc,
                    };
                    model.insert(k, next);
                }
                AggOp::Get => {
                    let got = b.both(|s| s.aggregating_state("a", &Stats).get().unwrap());
                    prop_assert_eq!(got, model.get(&k).map(|a| Stats.get_result(a)));
                }
                AggOp::Clear => {
                    b.both(|s| s.aggregating_state("a", &Stats).clear().unwrap());
                    model.remove(&k);
                }
            }
        }
        let keys: BTreeSet<K> = model.keys().copied().collect();
        b.check_iteration(&keys, "a", &keys);
    }
}

// --- Several states at once --------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// Value, list and map state of the same keys side by side: iteration covers the union of
    /// the keys that hold anything, and snapshots still agree.
    #[test]
    fn states_of_one_store_are_independent(
        ops in prop::collection::vec((key(), 0u8..6, any::<i32>()), 1..80)
    ) {
        let mut b = Both::new();
        let mut values: HashMap<K, i32> = HashMap::new();
        let mut lists: HashMap<K, Vec<i32>> = HashMap::new();
        let mut maps: HashMap<K, BTreeMap<u8, i32>> = HashMap::new();
        for (k, what, v) in ops {
            b.set_key(k);
            match what {
                0 => {
                    b.both(|s| s.value_state::<i32>("value").update(v).unwrap());
                    values.insert(k, v);
                }
                1 => {
                    b.both(|s| s.value_state::<i32>("value").clear().unwrap());
                    values.remove(&k);
                }
                2 => {
                    b.both(|s| s.list_state::<i32>("list").add(v).unwrap());
                    lists.entry(k).or_default().push(v);
                }
                3 => {
                    b.both(|s| s.list_state::<i32>("list").clear().unwrap());
                    lists.remove(&k);
                }
                4 => {
                    let uk = (v.rem_euclid(3)) as u8;
                    b.both(|s| s.map_state::<u8, i32>("map").put(uk, v).unwrap());
                    maps.entry(k).or_default().insert(uk, v);
                }
                _ => {
                    let uk = (v.rem_euclid(3)) as u8;
                    b.both(|s| s.map_state::<u8, i32>("map").remove(&uk).unwrap());
                    if let Some(m) = maps.get_mut(&k) {
                        m.remove(&uk);
                    }
                }
            }
            let got = b.both(|s| {
                (
                    s.value_state::<i32>("value").value().unwrap(),
                    s.list_state::<i32>("list").get().unwrap(),
                    s.map_state::<u8, i32>("map").entries().unwrap().into_iter().collect::<BTreeMap<_, _>>(),
                )
            });
            prop_assert_eq!(
                got,
                (
                    values.get(&k).copied(),
                    lists.get(&k).cloned().unwrap_or_default(),
                    maps.get(&k).cloned().unwrap_or_default(),
                )
            );
        }
        maps.retain(|_, m| !m.is_empty());
        let all: BTreeSet<K> = values.keys().chain(lists.keys()).chain(maps.keys()).copied().collect();
        b.check_iteration(&all, "value", &values.keys().copied().collect());
        let names = b.both(|s| s.state_names().unwrap());
        prop_assert_eq!(names, vec!["list".to_string(), "map".to_string(), "value".to_string()]);
    }
}

// --- Plain tests -------------------------------------------------------------------------------

#[test]
fn lsm_state_persists_across_reopen_of_the_same_directory() {
    let dir = TempDir::new("reopen");
    let db = dir.path().join("db");
    let snapshot;
    {
        let mut s = KeyedStateStore::<String>::lsm(&db, 0..=127, false).unwrap();
        for (i, k) in ["alpha", "beta", "gamma"].iter().enumerate() {
            let kg = i as u32 * 40;
            s.set_current_key(k.to_string(), kg).unwrap();
            s.value_state::<u64>("count").update(i as u64 + 1).unwrap();
            s.list_state::<String>("seen")
                .add_all(vec![k.to_uppercase(), "x".into()])
                .unwrap();
            s.map_state::<u8, f64>("m").put(i as u8, 0.5).unwrap();
        }
        snapshot = (0..=127)
            .map(|kg| s.snapshot_key_group(kg).unwrap())
            .collect::<Vec<_>>();
        s.persist().unwrap();
    }
    let mut s = KeyedStateStore::<String>::lsm(&db, 0..=127, false).unwrap();
    // States from the earlier session are visible to iteration before they are used again.
    assert_eq!(s.state_names().unwrap(), vec!["count", "m", "seen"]);
    assert_eq!(s.key_groups().unwrap(), vec![0, 40, 80]);
    assert_eq!(
        (0..=127)
            .map(|kg| s.snapshot_key_group(kg).unwrap())
            .collect::<Vec<_>>(),
        snapshot
    );
    s.set_current_key("beta".into(), 40).unwrap();
    assert_eq!(s.value_state::<u64>("count").value().unwrap(), Some(2));
    assert_eq!(
        s.list_state::<String>("seen").get().unwrap(),
        vec!["BETA".to_string(), "x".into()]
    );
    // Appending after a reopen continues the list's numbering.
    s.list_state::<String>("seen").add("y".into()).unwrap();
    assert_eq!(s.list_state::<String>("seen").get().unwrap().len(), 3);
    assert_eq!(s.map_state::<u8, f64>("m").get(&1).unwrap(), Some(0.5));
    assert_eq!(s.keys_in_key_group(40).unwrap(), vec!["beta".to_string()]);
    drop(s);
    assert!(db.exists(), "a non-temporary database stays");
}

#[test]
fn operator_stores_use_a_fresh_directory_that_is_removed_on_drop() {
    let dir = TempDir::new("instance");
    let kind = StateBackendKind::lsm(dir.path());
    let mut s = KeyedStateStore::<u32>::open(&kind, "Aggregate-0-x", 0..=3).unwrap();
    let path = s.lsm_dir().unwrap().to_path_buf();
    assert!(path.starts_with(dir.path()) && path.exists());
    s.set_current_key(1, 1).unwrap();
    s.value_state::<u32>("v").update(5).unwrap();
    drop(s);
    assert!(
        !path.exists(),
        "working state is removed when the operator ends"
    );
}

#[test]
fn a_state_name_is_bound_to_one_kind_and_type_on_both_backends() {
    let mut b = Both::new();
    b.set_key(1);
    b.both(|s| s.value_state::<i64>("x").update(1).unwrap());
    let errs = b.both(|s| {
        let e1 = s
            .value_state::<String>("x")
            .value()
            .unwrap_err()
            .to_string();
        let e2 = s.list_state::<i64>("x").get().unwrap_err().to_string();
        let e3 = s
            .reducing_state("x", |a: i64, b| a + b)
            .get()
            .unwrap_err()
            .to_string();
        (e1, e2, e3)
    });
    assert!(
        errs.0.contains("'x' is a ValueState of i64") && errs.0.contains("String"),
        "{errs:?}"
    );
    assert!(errs.1.contains("ListState"), "{errs:?}");
    assert!(errs.2.contains("ReducingState"), "{errs:?}");
    // Without a current key, and outside the key-group range.
    let mut s = KeyedStateStore::<i64>::memory(0..=1).unwrap();
    assert!(s.value_state::<i64>("v").value().is_err());
    assert!(s.set_current_key(3, 2).is_err());
    assert!(KeyedStateStore::<i64>::memory(0..=70_000).is_err());
}

#[test]
fn state_access_time_is_counted_into_the_task_metrics() {
    for kind in ["memory", "lsm"] {
        let dir = TempDir::new("timing");
        let backend = if kind == "memory" {
            StateBackendKind::Memory
        } else {
            StateBackendKind::lsm(dir.path())
        };
        let metrics = Arc::new(TaskMetrics::default());
        let mut s = KeyedStateStore::<u32>::open(&backend, "t", 0..=0).unwrap();
        s.attach_metrics(Some(metrics.clone()));
        for i in 0..1000u32 {
            s.set_current_key(i % 10, 0).unwrap();
            let mut v = s.value_state::<u32>("v");
            let n = v.value().unwrap().unwrap_or(0);
            v.update(n + 1).unwrap();
        }
        let ns = metrics.state_access_ns.load(Ordering::Relaxed);
        assert!(ns > 0, "{kind}");
        assert_eq!(ns, s.access_ns(), "{kind}");
    }
}
