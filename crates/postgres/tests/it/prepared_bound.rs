//! Two-phase commit against the server's `max_prepared_transactions`: an exactly-once append
//! sink holds up to (max concurrent checkpoints + tolerated failed checkpoints + 1) prepared
//! transactions per subtask (see `sluice_postgres::xa::prepared_per_subtask`). A job whose
//! parallelism × that bound exceeds the server's setting is refused before it starts, and a
//! server whose slots are taken by others fails the job with a message naming the setting,
//! not PostgreSQL's bare "maximum number of prepared transactions reached".

use std::time::Duration;

use sluice_datastream::{RestartStrategy, StreamEnv};
use sluice_postgres::{PostgresSink, RowMapping};
use sluice_testkit::PostgresCluster;

fn mapping() -> RowMapping<(i64, i64, i64)> {
    RowMapping::new()
        .column("k", |r: &(i64, i64, i64)| r.0)
        .column("seq", |r: &(i64, i64, i64)| r.1)
        .column("s", |r: &(i64, i64, i64)| r.2)
}

/// An appending job at sink parallelism `p`, checkpointing every 20 ms with `concurrent`
/// checkpoints in flight and `tolerated` failed ones, no restarts.
fn job(pg: &PostgresCluster, p: usize, concurrent: usize, tolerated: u32) -> StreamEnv {
    let env = StreamEnv::new();
    env.set_parallelism(p);
    env.enable_checkpointing(Duration::from_millis(20))
        .configure_checkpoints(|c| {
            c.max_concurrent = concurrent;
            c.tolerable_failures = tolerated;
        })
        .set_restart_strategy(RestartStrategy::NoRestart);
    PostgresSink::builder(&pg.url(), "out", mapping())
        .add_to(&env.generate(20_000, |i| (i as i64 % 7, i as i64, 1)))
        .unwrap();
    env
}

fn refusal(env: &StreamEnv) -> String {
    match env.launch() {
        Ok(h) => {
            let outcome = h.wait();
            panic!("the job started (and ended: {:?})", outcome.err())
        }
        Err(e) => {
            eprintln!("refused: {e}");
            e.to_string()
        }
    }
}

#[test]
fn a_job_that_can_prepare_more_than_the_server_allows_is_refused_before_it_starts() {
    let pg = PostgresCluster::start_with(&[("max_prepared_transactions", "3")]).unwrap();
    pg.psql("CREATE TABLE out (k bigint, seq bigint, s bigint)")
        .unwrap();
    // 2 subtasks × (1 + 0 + 1) = 4 > 3.
    let e = refusal(&job(&pg, 2, 1, 0));
    assert!(
        e.contains("max_prepared_transactions = 3")
            && e.contains("up to 4")
            && e.contains("parallelism 2"),
        "{e}"
    );
    // 1 subtask × (2 concurrent + 1 tolerated + 1) = 4 > 3: the checkpoint settings count.
    let e = refusal(&job(&pg, 1, 2, 1));
    assert!(
        e.contains("max_prepared_transactions = 3")
            && e.contains("max-concurrent-checkpoints = 2")
            && e.contains("tolerable-failed-checkpoints = 1"),
        "{e}"
    );
    // 1 × (1 + 1 + 1) = 3 fits: the job runs and writes every row.
    job(&pg, 1, 1, 1).execute().unwrap();
    assert_eq!(pg.psql("SELECT count(*) FROM out").unwrap().trim(), "20000");
    // Upserts prepare nothing: no bound.
    pg.psql("CREATE TABLE up (k bigint PRIMARY KEY, seq bigint, s bigint)")
        .unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(4);
    env.enable_checkpointing(Duration::from_millis(20));
    PostgresSink::builder(&pg.url(), "up", mapping())
        .upsert(&["k"])
        .add_to(&env.generate(1_000, |i| (i as i64 % 7, i as i64, 1)))
        .unwrap();
    env.execute().unwrap();
}

#[test]
fn prepared_slots_taken_by_others_fail_the_job_naming_the_setting() {
    let pg = PostgresCluster::start_with(&[("max_prepared_transactions", "3")]).unwrap();
    pg.psql("CREATE TABLE out (k bigint, seq bigint, s bigint)")
        .unwrap();
    // The job alone fits (1 × 2 ≤ 3), but another client holds all three slots.
    for gid in ["other:1", "other:2", "other:3"] {
        pg.psql(&format!(
            "BEGIN; INSERT INTO out VALUES (-1, -1, -1); PREPARE TRANSACTION '{gid}';"
        ))
        .unwrap();
    }
    let err = job(&pg, 1, 1, 0)
        .execute()
        .expect_err("the job cannot prepare a transaction")
        .to_string();
    eprintln!("failed: {err}");
    assert!(
        err.contains("max_prepared_transactions (3) is reached")
            && err.contains("3 prepared transactions on the server, 0 of them this subtask's")
            && err.contains("pg_prepared_xacts"),
        "{err}"
    );
    // Nothing of the job's became visible, the others' transactions are untouched.
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_prepared_xacts")
            .unwrap()
            .trim(),
        "3"
    );
    assert_eq!(pg.psql("SELECT count(*) FROM out").unwrap().trim(), "0");
}
