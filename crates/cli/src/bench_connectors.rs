//! `sluice bench kafka-source --url kafka://HOST:PORT/TOPIC` and `sluice bench postgres --url
//! postgres://USER@HOST:PORT/DB`: the connector benchmarks of `cargo bench -p sluice-kafka
//! --bench source` and `cargo bench -p sluice-postgres` (the same harness, in
//! `sluice_kafka::bench` and `sluice_postgres::bench`) on servers the user names. The URL is
//! required: the command starts no server of its own (`scripts/kafka.sh start` and
//! `scripts/postgres.sh start` start throwaway ones and print their URL).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use sluice_kafka::KafkaUrl;
use sluice_postgres::bench::{best, run_copy, run_sink, Target, CASES};

#[derive(Subcommand, Debug)]
pub enum BenchTarget {
    /// The Kafka source's records/s per core beside a bare rdkafka consumer loop on the same
    /// topic, same run (fills the topic up to --records `key,value` lines first).
    KafkaSource(KafkaSourceBenchArgs),
    /// The PostgreSQL sink's rows/s at batch sizes 1, 100, 1000 beside `psql \copy` of the
    /// same rows, same run (in two tables of its own, dropped at the end).
    Postgres(PostgresBenchArgs),
}

#[derive(Args, Debug)]
pub struct KafkaSourceBenchArgs {
    /// The broker and topic: `kafka://HOST:PORT/TOPIC[?connect-timeout-ms=MS]`
    /// (`scripts/kafka.sh start` starts a throwaway tansu and prints HOST:PORT).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Records the topic should hold; missing ones are appended to partition 0 first (a
    /// missing topic is created with one partition). Every record of the topic is read.
    #[arg(long, default_value_t = 2_000_000)]
    pub records: u64,
    /// Alternations of the two readers; the run of each that took the least CPU is shown.
    #[arg(long, default_value_t = 2, value_parser = sluice::bounds::between(1usize, 100, ""))]
    pub rounds: usize,
}

#[derive(Args, Debug)]
pub struct PostgresBenchArgs {
    /// The database: `postgres://USER@HOST:PORT/DB` (`scripts/postgres.sh start` starts a
    /// throwaway cluster and prints its URL).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Rows per case (batch size 1 writes a tenth).
    #[arg(long, default_value_t = 200_000)]
    pub rows: u64,
    /// Runs per case; the fastest is shown (the machine may be shared).
    #[arg(long, default_value_t = 3, value_parser = sluice::bounds::between(1usize, 100, ""))]
    pub reps: usize,
    /// PostgreSQL's `psql`, for the `\copy` baseline.
    #[arg(long, value_name = "PATH", default_value = "psql")]
    pub psql: PathBuf,
    /// The postmaster's pid, if the server runs on this machine: its CPU per row is shown.
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
}

pub fn bench(target: &BenchTarget) -> anyhow::Result<ExitCode> {
    match target {
        BenchTarget::KafkaSource(a) => kafka_source(a),
        BenchTarget::Postgres(a) => postgres(a),
    }
}

fn kafka_source(a: &KafkaSourceBenchArgs) -> anyhow::Result<ExitCode> {
    let Some(url) = &a.url else {
        anyhow::bail!(
            "sluice bench kafka-source needs --url kafka://HOST:PORT/TOPIC: it starts no broker \
             of its own (scripts/kafka.sh start starts a throwaway tansu and prints its address)"
        );
    };
    let url = KafkaUrl::parse(url)?;
    url.check_params(&["connect-timeout-ms"])?;
    let settings = url.client_settings()?;
    let t = std::time::Instant::now();
    let wrote = sluice_kafka::bench::fill_topic(&settings, &url.topic, a.records)
        .with_context(|| format!("filling {url}"))?;
    if wrote > 0 {
        eprintln!(
            "appended {wrote} records to {} in {:.1} s",
            url.topic,
            t.elapsed().as_secs_f64()
        );
    }
    let c = sluice_kafka::bench::compare(&settings, &url.topic, a.rounds)
        .with_context(|| format!("benchmarking the Kafka source on {url}"))?;
    print!("{}", c.report());
    Ok(ExitCode::SUCCESS)
}

fn postgres(a: &PostgresBenchArgs) -> anyhow::Result<ExitCode> {
    let Some(url) = &a.url else {
        anyhow::bail!(
            "sluice bench postgres needs --url postgres://USER@HOST:PORT/DB: it starts no \
             database of its own (scripts/postgres.sh start starts a throwaway cluster and \
             prints its URL)"
        );
    };
    let (conn, query) = url.split_once('?').unwrap_or((url, ""));
    if !query.is_empty() {
        anyhow::bail!("--url {url}: takes no parameters (the benchmark makes its own tables)");
    }
    sluice_postgres::Endpoint::parse(conn, sluice_jobs::connectors::PG_CONNECT_TIMEOUT)?;
    let scratch =
        std::env::temp_dir().join(format!("sluice-bench-postgres-{}", std::process::id()));
    let target = Target {
        url: conn.to_string(),
        psql: a.psql.clone(),
        scratch: scratch.clone(),
        server_pid: a.server_pid,
        append_table: "sluice_bench_append".into(),
        upsert_table: "sluice_bench_upsert".into(),
    };
    let result = postgres_cases(&target, a);
    let dropped = target.drop_tables();
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    dropped.context("dropping the benchmark tables")?;
    Ok(ExitCode::SUCCESS)
}

fn postgres_cases(t: &Target, a: &PostgresBenchArgs) -> anyhow::Result<()> {
    t.create_tables()
        .with_context(|| format!("creating the benchmark tables at {}", t.url))?;
    // Warm up the server (catalog caches, WAL files).
    run_copy(t, a.rows, false).context("the psql \\copy baseline")?;
    let copy = best(a.reps, || run_copy(t, a.rows, false))?;
    println!("{}", copy.line("psql \\copy", &copy));
    let keyed = best(a.reps, || run_copy(t, a.rows, true))?;
    println!(
        "{}  (into the upsert table: its primary key maintained)",
        keyed.line("psql \\copy keyed", &copy)
    );
    for (name, how, two_phase) in CASES {
        for batch in [1usize, 100, 1000] {
            let n = if batch == 1 { a.rows / 10 } else { a.rows }.max(1);
            let c = best(a.reps, || run_sink(t, n, batch, how, two_phase))
                .with_context(|| format!("{name} at batch {batch}"))?;
            println!("{}", c.line(&format!("{name} batch {batch}"), &copy));
        }
    }
    Ok(())
}
