//! The PostgreSQL sink benchmark, shared by `cargo bench -p sluice-postgres` (on a throwaway
//! cluster) and `sluice bench postgres --url postgres://…` (on any database): the sink's
//! rows/s at a batch size, append (binary COPY, optionally two-phase) or upsert, beside
//! `psql \copy` of the same rows into the same table in the same run.
//!
//! Main items: [`Target`] (the database, its `psql` and scratch directory, the server's pid
//! when it is local and known), [`Target::create_tables`], [`run_copy`], [`run_sink`], [`best`],
//! and [`Case`] with [`Case::line`]. Only the harness lives here: the sink is used through
//! its public builder, as a job would.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_datastream::StreamEnv;

use crate::{Endpoint, PostgresError, PostgresSink, RowMapping, SinkOptions, UpsertStatement};

/// The benchmark's row: `(k, seq, s)` plus a `name` column derived from `k`.
pub type Row = (i64, i64, i64);

/// Row `i` (50,000 distinct `k`, unique `seq`).
pub fn row(i: u64) -> Row {
    (
        i as i64 % 50_000,
        i as i64,
        (i as i64).wrapping_mul(7919) % 1_000_003,
    )
}

/// The sink's columns: `k, seq, s, name`.
pub fn mapping() -> RowMapping<Row> {
    RowMapping::new()
        .column("k", |r: &Row| r.0)
        .column("seq", |r: &Row| r.1)
        .column("s", |r: &Row| r.2)
        .column("name", |r: &Row| format!("user-{}", r.0))
}

/// CPU time (user + system) of this process, ns.
pub fn process_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 2..]);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let get = |i: usize| f.get(i).copied().unwrap_or(0);
    (get(11) + get(12)) * 10_000_000 // USER_HZ = 100
}

/// CPU time of this process's waited-for children (psql), ns.
fn children_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 2..]);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let get = |i: usize| f.get(i).copied().unwrap_or(0);
    (get(13) + get(14)) * 10_000_000
}

/// CPU time of the server: the postmaster `pid` and its children (the backends), ns.
pub fn server_cpu_ns(pid: u32) -> u64 {
    let tick = 10_000_000;
    let mut total = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(i) = stat.rfind(')') else { continue };
        let f: Vec<&str> = stat[i + 2..].split_whitespace().collect();
        let me = e.file_name().to_string_lossy().parse::<u32>().ok();
        let ppid = f.get(1).and_then(|x| x.parse::<u32>().ok());
        let get = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        if me == Some(pid) {
            // Its own time and that of the backends that ended (waited for).
            total += (get(11) + get(12) + get(13) + get(14)) * tick;
        } else if ppid == Some(pid) {
            total += (get(11) + get(12)) * tick;
        }
    }
    total
}

/// Resets this process's peak resident set (Linux `clear_refs` 5), so that the next
/// [`peak_rss_mib`] reports one case's peak rather than the whole run's.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// This process's peak resident set size (VmHWM) since the last [`reset_peak_rss`], MiB (NaN
/// off Linux).
pub fn peak_rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Where the benchmark writes.
#[derive(Debug, Clone)]
pub struct Target {
    /// `postgres://USER@HOST:PORT/DB`.
    pub url: String,
    /// PostgreSQL's `psql`, for `\copy` (the baseline).
    pub psql: PathBuf,
    /// Scratch files: the `\copy` input, the two-phase case's checkpoints.
    pub scratch: PathBuf,
    /// The postmaster's pid, when the server is local and known: its CPU per row is shown.
    pub server_pid: Option<u32>,
    /// The append table (`k bigint, seq bigint, s bigint, name text`).
    pub append_table: String,
    /// The upsert table (the same columns, `seq` the primary key).
    pub upsert_table: String,
}

fn failed(what: impl Into<String>, detail: impl std::fmt::Display) -> PostgresError {
    PostgresError::Config(format!("{}: {detail}", what.into()))
}

impl Target {
    fn execute(&self, sql: &str) -> Result<Vec<postgres::Row>, PostgresError> {
        let endpoint = Endpoint::parse(&self.url, Duration::from_secs(10))?;
        let mut client = endpoint.connect("sluice bench")?;
        client
            .query(sql, &[])
            .map_err(|e| failed(format!("{sql} at {}", endpoint.address()), e))
    }

    /// (Re)creates the two tables, empty.
    pub fn create_tables(&self) -> Result<(), PostgresError> {
        for (table, key) in [
            (&self.append_table, ""),
            (&self.upsert_table, " PRIMARY KEY"),
        ] {
            self.execute(&format!("DROP TABLE IF EXISTS {table}"))?;
            self.execute(&format!(
                "CREATE TABLE {table} (k bigint, seq bigint{key}, s bigint, name text)"
            ))?;
        }
        Ok(())
    }

    /// Drops the two tables.
    pub fn drop_tables(&self) -> Result<(), PostgresError> {
        for table in [&self.append_table, &self.upsert_table] {
            self.execute(&format!("DROP TABLE IF EXISTS {table}"))?;
        }
        Ok(())
    }

    fn count(&self, table: &str) -> Result<u64, PostgresError> {
        let rows = self.execute(&format!("SELECT count(*) FROM {table}"))?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0)) as u64)
    }

    fn server_cpu(&self) -> Option<u64> {
        self.server_pid.map(server_cpu_ns)
    }
}

/// One measured case.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// Rows written.
    pub rows: u64,
    /// Rows per second of wall-clock time.
    pub rows_per_s: f64,
    /// This process's CPU per row (the sink's client side), or psql's for `\copy`.
    pub cpu_ns_per_row: f64,
    /// Share of the wall time the sink spent inside batch writes (1 for `\copy`).
    pub in_writes: f64,
    /// The server's CPU time per row (postmaster and backends), when its pid is known.
    pub server_ns_per_row: Option<f64>,
    /// This process's peak resident set during the case, MiB (the sink's side; NaN for
    /// `\copy`, whose memory is psql's).
    pub peak_rss_mib: f64,
}

/// The sink's cases: name, upsert statement (`None`: append), two-phase (appends in a
/// checkpointing job, prepared at each barrier).
pub const CASES: [(&str, Option<UpsertStatement>, bool); 4] = [
    ("append (COPY)", None, false),
    ("append (COPY, 2PC)", None, true),
    ("upsert (UNNEST)", Some(UpsertStatement::Unnest), false),
    ("upsert (multi-row)", Some(UpsertStatement::MultiRow), false),
];

impl Case {
    /// `rows/s (ratio of \copy) CPU ns/row server ns/row % in writes peak RSS`, after `name`.
    pub fn line(&self, name: &str, copy: &Case) -> String {
        format!(
            "{name:<32} {:>8} rows  {:>10.0} rows/s  ({:.2} of \\copy)  CPU {:>6.0} ns/row  server {}  {:>3.0}% in writes  peak RSS {}",
            self.rows,
            self.rows_per_s,
            self.rows_per_s / copy.rows_per_s,
            self.cpu_ns_per_row,
            self.server_ns_per_row
                .map_or("   n/a".to_string(), |s| format!("{s:>6.0} ns/row")),
            self.in_writes * 100.0,
            if self.peak_rss_mib.is_nan() {
                "n/a".to_string()
            } else {
                format!("{:.1} MiB", self.peak_rss_mib)
            }
        )
    }
}

/// The fastest of `n` runs (the machine may be shared: the best run is the least disturbed).
pub fn best(
    n: usize,
    mut f: impl FnMut() -> Result<Case, PostgresError>,
) -> Result<Case, PostgresError> {
    let mut b = f()?;
    for _ in 1..n {
        let c = f()?;
        if c.rows_per_s > b.rows_per_s {
            b = c;
        }
    }
    Ok(b)
}

/// The sink writing `rows` rows at batch size `batch`: appends (binary COPY; `two_phase`: in
/// a checkpointing job, prepared at each barrier) or upserts by `seq` with `upsert`'s
/// statement. The table is emptied first and must hold every row after.
pub fn run_sink(
    t: &Target,
    rows: u64,
    batch: usize,
    upsert: Option<UpsertStatement>,
    two_phase: bool,
) -> Result<Case, PostgresError> {
    let table = if upsert.is_some() {
        &t.upsert_table
    } else {
        &t.append_table
    };
    t.execute(&format!("TRUNCATE {table}"))?;
    let env = StreamEnv::new();
    env.set_parallelism(1);
    if two_phase {
        env.enable_checkpointing(Duration::from_secs(1))
            .set_checkpoint_dir(t.scratch.join("bench-chk"));
    }
    let mut options = SinkOptions {
        max_rows: batch,
        flush_interval: Duration::from_secs(3600),
        ..SinkOptions::default()
    };
    let mut b = PostgresSink::builder(&t.url, table, mapping());
    if let Some(how) = upsert {
        options.upsert_statement = how;
        b = b.upsert(&["seq"]);
    }
    let sink = b.options(options).add_to(&env.generate(rows, row))?;
    reset_peak_rss();
    let cpu0 = process_cpu_ns();
    let s0 = t.server_cpu();
    let start = Instant::now();
    env.execute().map_err(|e| failed("the benchmark job", e))?;
    let wall = start.elapsed();
    let cpu1 = process_cpu_ns();
    let s1 = t.server_cpu();
    let n = t.count(table)?;
    if n != rows {
        return Err(failed(
            format!("table {table}"),
            format!("{n} rows after the run, {rows} written"),
        ));
    }
    Ok(Case {
        rows,
        rows_per_s: rows as f64 / wall.as_secs_f64(),
        cpu_ns_per_row: (cpu1 - cpu0) as f64 / rows as f64,
        in_writes: sink.handle.metrics.snapshot().flush_ns as f64 / wall.as_nanos() as f64,
        server_ns_per_row: s0.zip(s1).map(|(a, b)| (b - a) as f64 / rows as f64),
        peak_rss_mib: peak_rss_mib(),
    })
}

/// `psql \copy` of the same `rows` rows (as CSV) into the append table, or with `keyed` into
/// the upsert table (what maintaining its primary key alone costs: the upserts' ceiling).
pub fn run_copy(t: &Target, rows: u64, keyed: bool) -> Result<Case, PostgresError> {
    let table = if keyed {
        &t.upsert_table
    } else {
        &t.append_table
    };
    std::fs::create_dir_all(&t.scratch)
        .map_err(|e| failed(format!("creating {}", t.scratch.display()), e))?;
    let path = t.scratch.join("bench-input.csv");
    let mut text = String::with_capacity(rows as usize * 32);
    for i in 0..rows {
        let r = row(i);
        text.push_str(&format!("{},{},{},user-{}\n", r.0, r.1, r.2, r.0));
    }
    std::fs::write(&path, text).map_err(|e| failed(format!("writing {}", path.display()), e))?;
    t.execute(&format!("TRUNCATE {table}"))?;
    let c0 = children_cpu_ns();
    let s0 = t.server_cpu();
    let start = Instant::now();
    let out = Command::new(&t.psql)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1"])
        .arg(&t.url)
        .arg("-c")
        .arg(format!("\\copy {table} FROM '{}' CSV", path.display()))
        .output()
        .map_err(|e| failed(format!("running {}", t.psql.display()), e))?;
    let wall = start.elapsed();
    let c1 = children_cpu_ns();
    let s1 = t.server_cpu();
    let _ = std::fs::remove_file(&path);
    if !out.status.success() {
        return Err(failed(
            "psql \\copy",
            String::from_utf8_lossy(&out.stderr).trim(),
        ));
    }
    Ok(Case {
        rows,
        rows_per_s: rows as f64 / wall.as_secs_f64(),
        cpu_ns_per_row: (c1 - c0) as f64 / rows as f64,
        in_writes: 1.0,
        server_ns_per_row: s0.zip(s1).map(|(a, b)| (b - a) as f64 / rows as f64),
        peak_rss_mib: f64::NAN,
    })
}
