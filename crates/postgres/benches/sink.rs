//! `cargo bench -p sluice-postgres`: the PostgreSQL sink's rows/s at batch sizes 1, 100 and
//! 1000, append and upsert (both upsert statements), beside `psql \copy` of the same rows into
//! the same table in the same run, on a throwaway cluster (`sluice_testkit::PostgresCluster`).
//! Prints one line per case: rows/s, the ratio to `\copy`, and CPU-ns per row of this process
//! (the sink's client side; `\copy`'s is psql's).
//!
//! `SLUICE_BENCH_ROWS` (default 200000) sets the rows per case; batch size 1 runs a tenth.

use std::time::{Duration, Instant};

use sluice_graph::StreamEnv;
use sluice_postgres::{PostgresSink, RowMapping, SinkOptions, UpsertStatement};
use sluice_testkit::PostgresCluster;

type Row = (i64, i64, i64);

/// CPU time (user + system) of this process and of its waited-for children, ns.
fn cpu_ns() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 2..]);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let tick = 10_000_000; // USER_HZ = 100
    let get = |i: usize| f.get(i).copied().unwrap_or(0);
    ((get(11) + get(12)) * tick, (get(13) + get(14)) * tick)
}

fn row(i: u64) -> Row {
    (
        i as i64 % 50_000,
        i as i64,
        (i as i64).wrapping_mul(7919) % 1_000_003,
    )
}

fn mapping() -> RowMapping<Row> {
    RowMapping::new()
        .column("k", |r: &Row| r.0)
        .column("seq", |r: &Row| r.1)
        .column("s", |r: &Row| r.2)
        .column("name", |r: &Row| format!("user-{}", r.0))
}

struct Case {
    rows_per_s: f64,
    cpu_ns_per_row: f64,
}

fn run_sink(
    pg: &PostgresCluster,
    rows: u64,
    batch: usize,
    upsert: Option<UpsertStatement>,
) -> Case {
    let table = if upsert.is_some() { "up" } else { "app" };
    pg.psql(&format!("TRUNCATE {table}")).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let mut options = SinkOptions {
        max_rows: batch,
        flush_interval: Duration::from_secs(3600),
        ..SinkOptions::default()
    };
    let mut b = PostgresSink::builder(&pg.url(), table, mapping());
    if let Some(how) = upsert {
        options.upsert_statement = how;
        b = b.upsert(&["seq"]);
    }
    b.options(options).add_to(&env.generate(rows, row)).unwrap();
    let (cpu0, _) = cpu_ns();
    let t = Instant::now();
    env.execute().unwrap();
    let wall = t.elapsed();
    let (cpu1, _) = cpu_ns();
    let n: u64 = pg
        .psql(&format!("SELECT count(*) FROM {table}"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(n, rows, "{table}: every row written");
    Case {
        rows_per_s: rows as f64 / wall.as_secs_f64(),
        cpu_ns_per_row: (cpu1 - cpu0) as f64 / rows as f64,
    }
}

fn run_copy(pg: &PostgresCluster, rows: u64) -> Case {
    let path = pg.dir().join("bench-input.csv");
    let mut text = String::with_capacity(rows as usize * 32);
    for i in 0..rows {
        let r = row(i);
        text.push_str(&format!("{},{},{},user-{}\n", r.0, r.1, r.2, r.0));
    }
    std::fs::write(&path, text).unwrap();
    pg.psql("TRUNCATE app").unwrap();
    let (_, c0) = cpu_ns();
    let t = Instant::now();
    pg.psql(&format!("\\copy app FROM '{}' CSV", path.display()))
        .unwrap();
    let wall = t.elapsed();
    let (_, c1) = cpu_ns();
    let _ = std::fs::remove_file(&path);
    Case {
        rows_per_s: rows as f64 / wall.as_secs_f64(),
        cpu_ns_per_row: (c1 - c0) as f64 / rows as f64,
    }
}

fn main() {
    // `cargo test --benches` runs this with `--bench`-less args; do the work only for bench.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rows: u64 = std::env::var("SLUICE_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let pg = PostgresCluster::start().unwrap();
    pg.psql(
        "CREATE TABLE app (k bigint, seq bigint, s bigint, name text); \
         CREATE TABLE up (k bigint, seq bigint PRIMARY KEY, s bigint, name text)",
    )
    .unwrap();
    // Warm up the server (catalog caches, WAL files).
    run_copy(&pg, rows);
    let copy = run_copy(&pg, rows);
    println!(
        "psql \\copy            {rows:>8} rows  {:>10.0} rows/s  (1.00)       psql CPU {:>6.0} ns/row",
        copy.rows_per_s, copy.cpu_ns_per_row
    );
    let cases: [(&str, Option<UpsertStatement>); 3] = [
        ("append (COPY)", None),
        ("upsert (UNNEST)", Some(UpsertStatement::Unnest)),
        ("upsert (multi-row)", Some(UpsertStatement::MultiRow)),
    ];
    for (name, how) in cases {
        for batch in [1usize, 100, 1000] {
            let n = if batch == 1 { rows / 10 } else { rows };
            let c = run_sink(&pg, n, batch, how);
            println!(
                "{name:<20} batch {batch:>4} {n:>8} rows  {:>10.0} rows/s  ({:.2} of \\copy)  sluice CPU {:>6.0} ns/row",
                c.rows_per_s,
                c.rows_per_s / copy.rows_per_s,
                c.cpu_ns_per_row
            );
        }
    }
}
