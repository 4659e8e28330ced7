//! The `blocking` scenario against a real PostgreSQL table (testkit's cluster): the sync
//! lookup, the doctor's async fix and its cache fix join the same rows, and the rows are the
//! table's (emptying it changes the output).

use sluice_datastream::fixer::{apply, PlanChange};
use sluice_datastream::StreamEnv;
use sluice_jobs::blocking::{LookupDigest, PostgresTable};
use sluice_jobs::scenarios::{build, ScenarioConfig};
use sluice_testkit::PostgresCluster;

const RECORDS: u64 = 400;
/// Keys looked up (values modulo this); the table holds 0..40, so a fifth join no row.
const KEYS: u64 = 50;

fn run(pg: &PostgresCluster, fixes: &[PlanChange]) -> LookupDigest {
    let env = StreamEnv::new();
    let cfg = ScenarioConfig {
        records: RECORDS,
        parallelism: 1,
        lookup_keys: Some(KEYS),
        lookup_table: Some(PostgresTable {
            conn: pg.url(),
            table: "scores".into(),
        }),
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
fn async_and_cache_fixes_join_the_same_rows_from_postgres() {
    let pg = PostgresCluster::start().unwrap();
    pg.psql(
        "CREATE TABLE scores (key bigint PRIMARY KEY, score bigint);
         INSERT INTO scores SELECT i, i * 7 + 1 FROM generate_series(0, 39) i;",
    )
    .unwrap();
    let sync = run(&pg, &[]);
    assert_eq!(sync.multiset.1, RECORDS);
    let op = || "blocking-call".to_string();
    let to_async = PlanChange::AsyncCapacity {
        operator: op(),
        capacity: 16,
    };
    assert_eq!(run(&pg, &[to_async]), sync, "ordered async: identical");
    let cache = PlanChange::LookupCache {
        operator: op(),
        max_rows: 10_000,
    };
    assert_eq!(run(&pg, &[cache]), sync, "cached: identical");
    // The rows were really read: a run against an emptied table differs.
    pg.psql("DELETE FROM scores;").unwrap();
    assert_ne!(
        run(&pg, &[]).ordered,
        sync.ordered,
        "the scores come from the table"
    );
}
