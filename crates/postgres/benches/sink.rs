//! `cargo bench -p sluice-postgres`: the PostgreSQL sink's rows/s at batch sizes 1, 100, 1000
//! and 10000, append (one COPY per batch, and two-phase: one COPY per checkpoint transaction)
//! and upsert (both upsert statements), beside `psql \copy` of the same rows into the same
//! table in the same run, on a throwaway cluster (`sluice_testkit::PostgresCluster`). The
//! harness is `sluice_postgres::bench`, shared with `sluice bench postgres --url …`.
//!
//! Each line: rows/s, the ratio to `\copy`, CPU-ns per row of this process (the sink's client
//! side; `\copy`'s is psql's), the server's CPU per row (postmaster and backends), the share
//! of the sink's time spent inside batch writes, and the case's peak RSS.
//!
//! `SLUICE_BENCH_ROWS` (default 200000) sets the rows per case (batch size 1 runs a tenth),
//! `SLUICE_BENCH_REPS` (default 3) the runs per case, of which the fastest is shown (the
//! machine may be shared), `SLUICE_BENCH_ONLY` a substring of the cases to run.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sluice_postgres::bench::{best, run_copy, run_sink, Target, CASES};
use sluice_testkit::PostgresCluster;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` does not: skip the work then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("the PostgreSQL sink benchmark runs under `cargo bench -p sluice-postgres`");
        return Ok(());
    }
    let rows: u64 = env_or("SLUICE_BENCH_ROWS", 200_000);
    let reps: usize = env_or("SLUICE_BENCH_REPS", 3);
    let only = std::env::var("SLUICE_BENCH_ONLY").unwrap_or_default();
    let pg = PostgresCluster::start()?;
    let bin = PostgresCluster::bin_dir().ok_or("PostgreSQL's binaries are not installed")?;
    let t = Target {
        url: pg.url(),
        psql: bin.join("psql"),
        scratch: pg.dir().join("bench"),
        server_pid: Some(pg.pid()),
        append_table: "app".into(),
        upsert_table: "up".into(),
    };
    t.create_tables()?;
    // Warm up the server (catalog caches, WAL files).
    run_copy(&t, rows, false)?;
    let copy = best(reps, || run_copy(&t, rows, false))?;
    println!("{}", copy.line("psql \\copy", &copy));
    let keyed = best(reps, || run_copy(&t, rows, true))?;
    println!(
        "{}  (into the upsert table: its primary key maintained)",
        keyed.line("psql \\copy keyed", &copy)
    );
    for (name, how, two_phase) in CASES {
        if !name.contains(only.as_str()) {
            continue;
        }
        for batch in [1usize, 100, 1000, 10_000] {
            let n = if batch == 1 { rows / 10 } else { rows };
            let c = best(reps, || run_sink(&t, n, batch, how, two_phase))?;
            println!("{}", c.line(&format!("{name} batch {batch}"), &copy));
        }
    }
    Ok(())
}
