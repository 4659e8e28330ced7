//! The `blocking` scenario's lookup join under the fixer's changes: ordered async (the doctor's
//! fix) gives identical output per subtask, unordered the same multiset.

use sluice_datastream::fixer::{apply, PlanChange};
use sluice_datastream::StreamEnv;
use sluice_jobs::scenarios::{build, ScenarioConfig};

fn run(fixes: &[PlanChange]) -> sluice_jobs::blocking::LookupDigest {
    run_with_keys(None, 2, fixes)
}

fn run_with_keys(
    keys: Option<u64>,
    parallelism: usize,
    fixes: &[PlanChange],
) -> sluice_jobs::blocking::LookupDigest {
    let env = StreamEnv::new();
    let cfg = ScenarioConfig {
        records: 600,
        parallelism,
        lookup_keys: keys,
        ..ScenarioConfig::new("blocking")
    };
    let job = build(&env, &cfg).unwrap();
    for f in fixes {
        apply(&env, f).unwrap();
    }
    env.execute().unwrap();
    job.lookup_output().unwrap()
}

#[test]
fn async_fixes_keep_the_output() {
    let sync = run(&[]);
    assert_eq!(sync.multiset.1, 600);
    assert_eq!(sync.ordered.iter().map(|s| s.0).sum::<u64>(), 600);
    let to_async = PlanChange::AsyncCapacity {
        operator: "blocking-call".into(),
        capacity: 16,
    };
    assert_eq!(
        run(std::slice::from_ref(&to_async)),
        sync,
        "ordered: identical"
    );
    let unordered = run(&[
        to_async,
        PlanChange::SinkOption {
            operator: "blocking-call".into(),
            key: "lookup.async.output-mode".into(),
            value: "ALLOW_UNORDERED".into(),
        },
    ]);
    assert_eq!(
        unordered.multiset, sync.multiset,
        "unordered: the same multiset"
    );
}

#[test]
fn the_cache_fix_keeps_the_output_when_keys_repeat() {
    // 600 records over 20 keys: the uncached run asks the service for every record, the
    // cached one for each key once per subtask; the joined rows are the same. One subtask:
    // its input order is the generator's, so "identical" includes the order (with two, a
    // subtask's two input channels interleave by timing, so only the multiset is fixed).
    let cache = PlanChange::LookupCache {
        operator: "blocking-call".into(),
        max_rows: 10_000,
    };
    let uncached = run_with_keys(Some(20), 1, &[]);
    assert_eq!(uncached.multiset.1, 600);
    assert_eq!(
        run_with_keys(Some(20), 1, std::slice::from_ref(&cache)),
        uncached,
        "cached: identical"
    );
    let uncached2 = run_with_keys(Some(20), 2, &[]);
    assert_eq!(uncached2.multiset, uncached.multiset);
    let cached2 = run_with_keys(Some(20), 2, std::slice::from_ref(&cache));
    assert_eq!(
        cached2.multiset, uncached.multiset,
        "cached, 2 subtasks: the same multiset"
    );
    // Cached and ordered async together (what a second doctor pass would add): identical.
    let both = run_with_keys(
        Some(20),
        1,
        &[
            cache,
            PlanChange::AsyncCapacity {
                operator: "blocking-call".into(),
                capacity: 8,
            },
        ],
    );
    assert_eq!(both, uncached, "cached + ordered async: identical");
}

#[test]
fn the_cache_fix_is_refused_where_there_is_no_lookup() {
    let env = StreamEnv::new();
    build(&env, &ScenarioConfig::new("stalls")).unwrap();
    let e = apply(
        &env,
        &PlanChange::LookupCache {
            operator: "stalling-map".into(),
            max_rows: 100,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("is not a lookup join"), "{e}");
}

#[test]
fn async_capacity_is_refused_where_there_is_no_lookup() {
    let env = StreamEnv::new();
    build(&env, &ScenarioConfig::new("stalls")).unwrap();
    let e = apply(
        &env,
        &PlanChange::AsyncCapacity {
            operator: "stalling-map".into(),
            capacity: 8,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("neither a lookup join nor an async operator"),
        "{e}"
    );
}
