//! The `blocking` scenario's lookup join under the fixer's changes: ordered async (the doctor's
//! fix) gives identical output per subtask, unordered the same multiset.

use sluice_graph::fixer::{apply, Fix};
use sluice_graph::StreamEnv;
use sluice_jobs::scenarios::{build, ScenarioConfig};

fn run(fixes: &[Fix]) -> sluice_jobs::blocking::LookupDigest {
    let env = StreamEnv::new();
    let cfg = ScenarioConfig {
        records: 600,
        parallelism: 2,
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
    let to_async = Fix::AsyncCapacity {
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
        Fix::SinkOption {
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
fn async_capacity_is_refused_where_there_is_no_lookup() {
    let env = StreamEnv::new();
    build(&env, &ScenarioConfig::new("stalls")).unwrap();
    let e = apply(
        &env,
        &Fix::AsyncCapacity {
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
