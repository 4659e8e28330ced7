//! Lookup joins against a real PostgreSQL (testkit's throwaway cluster): every row of a key is
//! joined (several per key, none for a missing key), sync and async agree, and PostgreSQL's own
//! `LEFT JOIN` over the same input (computed by psql) is the oracle.

use std::time::Duration;

use serde_json::Value;
use sluice_datastream::StreamEnv;
use sluice_lookup::{LookupCache, LookupExt, LookupOptions, LookupSource, Row};
use sluice_testkit::PostgresCluster;

const RECORDS: u64 = 1000;

/// Record `i` looks up key `i % 400`; the table holds keys 0..300, two rows for multiples of 7.
fn setup(pg: &PostgresCluster) {
    pg.psql(
        "CREATE TABLE dim (id bigint, name text, weight float8, active boolean);
         INSERT INTO dim SELECT i, 'name-' || i, i / 4.0, i % 2 = 0 FROM generate_series(0, 299) i;
         INSERT INTO dim SELECT i, 'extra-' || i, NULL, NULL FROM generate_series(0, 299, 7) i;
         CREATE INDEX ON dim (id);",
    )
    .unwrap();
}

fn line(i: &u64, row: Option<&Row>) -> Option<String> {
    let name = row
        .and_then(|r| r.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Some(format!("{i}|{name}"))
}

fn run(pg: &PostgresCluster, options: &LookupOptions) -> (Vec<Vec<String>>, LookupSource) {
    let source = LookupSource::postgres(&pg.url(), "dim", "id").unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let out = env
        .generate(RECORDS, |i| i)
        .lookup_with(&source, |i: &u64| (*i % 400) as i64, line, options)
        .collect();
    env.execute().unwrap();
    (out.handle.take_by_subtask(), source)
}

fn sorted(v: Vec<Vec<String>>) -> Vec<String> {
    let mut v = v.concat();
    v.sort();
    v
}

#[test]
fn lookups_equal_postgresqls_own_left_join_in_every_mode() {
    let pg = PostgresCluster::start().unwrap();
    setup(&pg);
    let oracle = pg
        .psql(&format!(
            "SELECT i || '|' || coalesce(d.name, '') FROM generate_series(0, {}) i
             LEFT JOIN dim d ON d.id = i % 400",
            RECORDS - 1
        ))
        .unwrap();
    let mut want: Vec<String> = oracle.lines().map(String::from).collect();
    want.sort();
    assert!(want.len() > RECORDS as usize, "some keys have two rows");

    let (sync, _) = run(&pg, &LookupOptions::sync());
    assert_eq!(sorted(sync.clone()), want);
    let (ordered, src) = run(&pg, &LookupOptions::ordered(32));
    // Ordered async: the same records in the same order on every subtask (a key's rows come in
    // the order PostgreSQL returns them, which may differ between two queries, so rows of one
    // record are compared as a set).
    let per_record = |v: &Vec<Vec<String>>| -> Vec<Vec<(String, Vec<String>)>> {
        v.iter()
            .map(|s| {
                let mut groups: Vec<(String, Vec<String>)> = Vec::new();
                for l in s {
                    let (i, name) = l.split_once('|').unwrap();
                    match groups.last_mut() {
                        Some((last, names)) if last == i => names.push(name.into()),
                        _ => groups.push((i.into(), vec![name.into()])),
                    }
                }
                for g in &mut groups {
                    g.1.sort();
                }
                groups
            })
            .collect()
    };
    assert_eq!(per_record(&ordered), per_record(&sync));
    assert!(src.stats().snapshot().max_in_flight > 1);
    let (unordered, _) = run(&pg, &LookupOptions::unordered(32));
    assert_eq!(sorted(unordered), want);

    // With a cache, 400 keys over 1000 records: at most 400 loads per subtask.
    let (cached, src) = run(
        &pg,
        &LookupOptions::sync().cache(LookupCache::partial(10_000, Duration::from_secs(600))),
    );
    assert_eq!(sorted(cached), want);
    let s = src.stats().snapshot();
    assert_eq!(s.hits + s.misses, RECORDS);
    assert!(s.loads <= 2 * 400 && s.hits >= RECORDS - 2 * 400, "{s:?}");
    assert!(s.hit_rate() >= 0.2, "{s:?}");
}

#[test]
fn a_closed_connection_is_reopened_and_a_bad_table_is_named() {
    let pg = PostgresCluster::start().unwrap();
    setup(&pg);
    // Terminate the lookups' backends while the job runs: the next attempt reconnects.
    let source = LookupSource::postgres(&pg.url(), "dim", "id").unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let url = pg.url();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killer = std::thread::spawn({
        let pg_bin = PostgresCluster::bin_dir().unwrap();
        let done = done.clone();
        move || {
            let mut killed = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let out = std::process::Command::new(pg_bin.join("psql"))
                    .args(["-X", "-q", "-A", "-t", &url, "-c"])
                    .arg("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT * FROM \"dim\"%' AND pid <> pg_backend_pid()")
                    .output()
                    .unwrap();
                killed += String::from_utf8_lossy(&out.stdout).matches('t').count();
            }
            killed
        }
    });
    let out = env
        .generate(3000, |i| i)
        .map(|i| {
            // Slow enough that the terminations land mid-run.
            std::thread::sleep(Duration::from_micros(200));
            i
        })
        .lookup_with(
            &source,
            |i: &u64| (*i % 400) as i64,
            line,
            &LookupOptions::ordered(8).retry_delay(Duration::from_millis(5)),
        )
        .collect();
    let result = env.execute();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let killed = killer.join().unwrap();
    result.unwrap();
    let got = out.handle.take();
    // Keys 0..200 come 8 times, 200..400 7 times; multiples of 7 below 300 have two rows.
    let extra: usize = (0..300)
        .step_by(7)
        .map(|k| if k < 200 { 8 } else { 7 })
        .sum();
    assert_eq!(got.len(), 3000 + extra);
    assert_eq!(got.iter().filter(|l| l.starts_with("0|")).count(), 2);
    let s = source.stats().snapshot();
    assert!(killed > 0, "no backend was terminated while the job ran");
    assert!(s.load_failures > 0, "{s:?}");

    let env = StreamEnv::new();
    let bad = LookupSource::postgres(&pg.url(), "no_such_table", "id").unwrap();
    env.generate(1, |i| i)
        .lookup(&bad, |i: &u64| *i as i64, line)
        .discard();
    let e = env.execute().err().unwrap().to_string();
    assert!(e.contains("no_such_table"), "{e}");
}
