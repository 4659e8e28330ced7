//! Savepoint → changed plan → restore: the plan changes the doctor's fixer makes keep every
//! operator's state (stable operator ids, state migration), so the final sums equal an
//! uninterrupted run of the original job; state that would be lost is refused, by id.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sluice_datastream::StreamEnv;
use sluice_jobs::skew::{build, SkewConfig};

const RECORDS: u64 = 600_000;

fn original() -> SkewConfig {
    SkewConfig {
        records: RECORDS,
        parallelism: 2,
        ..SkewConfig::default()
    }
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "sluice-migration-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn uninterrupted(cfg: &SkewConfig) -> BTreeMap<i64, i64> {
    let env = StreamEnv::new();
    let job = build(&env, cfg).unwrap();
    env.execute().unwrap();
    job.final_sums()
}

/// Runs `cfg` until its sources emitted a tenth of the records, then stops it with a savepoint.
fn savepoint_of(cfg: &SkewConfig, name: &str) -> PathBuf {
    let env = StreamEnv::new();
    build(&env, cfg).unwrap();
    let h = env.launch().unwrap();
    let m = h.monitor();
    let deadline = Instant::now() + Duration::from_secs(120);
    while m.records_emitted_by_sources() < cfg.records / 10 {
        assert!(!h.is_finished(), "the job ended before the savepoint");
        assert!(Instant::now() < deadline, "the sources did not start");
        std::thread::sleep(Duration::from_millis(2));
    }
    let p = h.stop_with_savepoint(tempdir(name)).unwrap();
    assert!(
        p.join("_metadata").is_file(),
        "savepoint written: {}",
        p.display()
    );
    p
}

fn restored(cfg: &SkewConfig, from: &PathBuf) -> BTreeMap<i64, i64> {
    let env = StreamEnv::new();
    env.restore_from(from);
    let job = build(&env, cfg).unwrap();
    env.execute().unwrap();
    job.final_sums()
}

fn assert_same(expected: &BTreeMap<i64, i64>, got: &BTreeMap<i64, i64>, what: &str) {
    assert_eq!(expected.len(), got.len(), "{what}: number of keys");
    let wrong = expected
        .iter()
        .filter(|(k, v)| got.get(k) != Some(v))
        .count();
    assert_eq!(
        wrong,
        0,
        "{what}: {wrong} of {} sums differ",
        expected.len()
    );
}

#[test]
fn the_fixers_plan_changes_restore_a_savepoint_of_the_original() {
    let expected = uninterrupted(&original());
    assert_eq!(expected.len(), 10_001);
    let sp = savepoint_of(&original(), "original");
    let changes = [
        ("same plan", original()),
        (
            "parallelism 3",
            SkewConfig {
                parallelism: 3,
                ..original()
            },
        ),
        (
            "rebalance before the map, map at 3",
            SkewConfig {
                rebalance_before_map: true,
                map_parallelism: Some(3),
                ..original()
            },
        ),
        (
            "two-phase, 16 buckets",
            SkewConfig {
                two_phase: Some(16),
                ..original()
            },
        ),
        (
            "adaptive two-phase at parallelism 3",
            SkewConfig {
                two_phase: Some(8),
                adaptive: true,
                parallelism: 3,
                ..original()
            },
        ),
    ];
    for (what, cfg) in changes {
        assert_same(&expected, &restored(&cfg, &sp), what);
    }
}

#[test]
fn a_two_phase_savepoint_restores_into_the_one_phase_job() {
    let two = SkewConfig {
        two_phase: Some(16),
        ..original()
    };
    let expected = uninterrupted(&original());
    let sp = savepoint_of(&two, "two-phase");
    assert_same(&expected, &restored(&original(), &sp), "two → one phase");
    assert_same(
        &expected,
        &restored(
            &SkewConfig {
                parallelism: 3,
                ..original()
            },
            &sp,
        ),
        "two → one phase at parallelism 3",
    );
}

#[test]
fn unmapped_state_is_refused_with_its_ids_unless_allowed() {
    let sp = savepoint_of(&original(), "unmapped");
    // The same job with its aggregation under a uid: the savepoint's aggregation state (filed
    // under the position hash) has no operator any more.
    let with_uid = |env: &StreamEnv| {
        let cfg = original();
        env.set_parallelism(2);
        let s = env
            .generate(cfg.records, move |i| {
                sluice_jobs::skew::record(i, cfg.hot_limit(), cfg.keys)
            })
            .name("generator");
        s.key_by(|r: &(i64, i64)| r.0)
            .sum(|r: &mut (i64, i64)| &mut r.1)
            .uid("renamed-sum")
            .discard();
    };
    let meta = std::fs::read_to_string(sp.join("_metadata")).unwrap();
    let env = StreamEnv::new();
    env.restore_from(&sp);
    with_uid(&env);
    let err = env.launch().err().expect("refused").to_string();
    assert!(err.contains("does not have"), "{err}");
    assert!(err.contains("--allow-non-restored-state"), "{err}");
    // Every operator id the refusal names is one the savepoint holds.
    let named: Vec<&str> = err
        .split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 32)
        .collect();
    assert!(!named.is_empty(), "{err}");
    for id in &named {
        assert!(meta.contains(id), "{id} not in the savepoint: {meta}");
    }

    let env = StreamEnv::new();
    env.restore_from(&sp).allow_non_restored_state(true);
    with_uid(&env);
    env.execute()
        .expect("accepted with allow_non_restored_state");
}

#[test]
fn a_manifest_edited_to_list_no_operators_is_refused() {
    let sp = savepoint_of(&original(), "edited");
    let meta_path = sp.join("_metadata");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["operators"] = serde_json::json!([]);
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let env = StreamEnv::new();
    env.restore_from(&sp);
    build(&env, &original()).unwrap();
    let err = env.launch().err().expect("refused").to_string();
    assert!(err.contains("no operator state at all"), "{err}");
}
