//! Restoring keyed state from snapshots: both backends take back exactly what a snapshot
//! holds, also split across subtasks with other key-group ranges (rescaling), and a state the
//! operator has not touched since the restore still counts in the next snapshot.

use proptest::prelude::*;
use sluice_state::{KeyedStateStore, StateBackendKind};

fn kg(k: &u32) -> u32 {
    k % 16
}

fn stores(range: std::ops::RangeInclusive<u32>, tag: &str) -> Vec<KeyedStateStore<u32>> {
    let dir = std::env::temp_dir().join(format!("sluice-restore-{tag}-{}", std::process::id()));
    vec![
        KeyedStateStore::memory(range.clone()).unwrap(),
        KeyedStateStore::open(&StateBackendKind::Lsm { dir }, tag, range).unwrap(),
    ]
}

/// Writes value, list and map state for `keys` into `s`.
fn fill(s: &mut KeyedStateStore<u32>, keys: &[(u32, i64)]) {
    for &(k, v) in keys {
        s.set_current_key(k, kg(&k)).unwrap();
        s.value_state::<i64>("count").update(v).unwrap();
        s.list_state::<String>("seen").add(format!("v{v}")).unwrap();
        s.map_state::<u8, (i64, String)>("by-byte")
            .put((v & 0xff) as u8, (v, "x".repeat((v & 3) as usize)))
            .unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn snapshots_restore_exactly_on_both_backends_and_split_by_key_group(
        keys in proptest::collection::vec((0u32..200, -1000i64..1000), 1..60),
    ) {
        let mut src = KeyedStateStore::<u32>::memory(0..=15).unwrap();
        fill(&mut src, &keys);
        let snap = src.snapshot().unwrap();
        // Whole range, both backends: the same bytes come back.
        for mut s in stores(0..=15, "whole") {
            s.restore(snap.clone()).unwrap();
            prop_assert_eq!(s.snapshot().unwrap(), snap.clone());
            // Readable with the right types after the restore.
            for &(k, _) in &keys {
                s.set_current_key(k, kg(&k)).unwrap();
                let v = s.value_state::<i64>("count").value().unwrap();
                prop_assert!(v.is_some());
            }
        }
        // Split over two subtasks (0..=7, 8..=15): each keeps its own key groups, together all.
        let mut halves = Vec::new();
        for (i, range) in [(0, 0..=7u32), (1, 8..=15u32)] {
            let mut s = stores(range, &format!("half{i}")).remove(i % 2);
            s.restore(snap.clone()).unwrap();
            halves.extend(s.snapshot().unwrap());
        }
        halves.sort();
        let mut whole = snap.clone();
        whole.sort();
        prop_assert_eq!(halves, whole);
    }
}
