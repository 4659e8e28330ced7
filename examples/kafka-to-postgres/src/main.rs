//! clicks-per-minute: a Sluice job as a user writes one, to copy and adapt.
//!
//! Reads JSON click events `{"user": "ada", "amount": 3, "ts": 1700000000000}` from a Kafka
//! topic (a line that is not such an object goes to the dead-letter output with its topic,
//! partition and offset, counted, and the job goes on), keys them by user, sums `amount` per user
//! over tumbling one-minute event-time windows (watermarks 5 s behind the latest event), and
//! upserts `(user_id, window_start, total)` into a PostgreSQL table, which it creates if missing.
//!
//! `sluice::run` gives it the REST API and dashboard (`--rest-port`, default 8081), the doctor,
//! checkpoints (`--checkpoint-interval`, `--checkpoint-dir`), restarts (`--restart`), savepoints
//! and restore (`--from-checkpoint`, `--from-savepoint`); `--help` lists every flag.
//!
//! ```sh
//! cargo run -p sluice-example-kafka-to-postgres -- --brokers 127.0.0.1:9092 --topic clicks \
//!     --postgres postgres://sluice@127.0.0.1:5432/sluice --checkpoint-interval 1000
//! ```

use clap::Parser;
use serde::{Deserialize, Serialize};
use sluice::{WatermarkStrategy, WindowAssigner, WindowResult};
use sluice_kafka::source::{Json, KafkaSource};
use sluice_postgres::{PostgresSink, PostgresSinkExt, RowMapping};

/// One click, as JSON on the topic.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Click {
    user: String,
    amount: i64,
    /// Event time, ms since the epoch.
    ts: i64,
}

/// The job's own flags, and Sluice's (`RunOptions`: parallelism, checkpoints, REST, …).
#[derive(Parser, Debug)]
#[command(about = "Clicks per user per minute, from Kafka to PostgreSQL")]
struct Args {
    /// Kafka brokers, host:port[,host:port…].
    #[arg(long)]
    brokers: String,
    /// The topic of JSON click events.
    #[arg(long, default_value = "clicks")]
    topic: String,
    /// Stop at the end of the topic as it is at start (a backfill).
    #[arg(long)]
    bounded: bool,
    /// The database, postgres://USER@HOST:PORT/DB.
    #[arg(long)]
    postgres: String,
    /// The result table (created if missing).
    #[arg(long, default_value = "clicks_per_minute")]
    table: String,
    #[command(flatten)]
    run: sluice::RunOptions,
}

const WINDOW_MS: i64 = 60_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    create_table(&args.postgres, &args.table)?;

    let env = args.run.stream_env()?;
    env.set_job_name("clicks-per-minute");
    let clicks = KafkaSource::builder()
        .bootstrap_servers(&args.brokers)
        .topics([args.topic.as_str()])
        .group_id("clicks-per-minute")
        .set_bounded(args.bounded)
        .build(Json::<Click>::new())?
        .add_to(&env, "clicks");
    let per_minute = clicks
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(5_000, |c: &Click| c.ts)
                .with_idleness(2_000),
        )
        .key_by(|c: &Click| c.user.clone())
        .window(WindowAssigner::tumbling(WINDOW_MS)?)
        .reduce(|a: Click, b: Click| Click {
            amount: a.amount + b.amount,
            ..a
        });
    type Row = WindowResult<String, Click>;
    per_minute.sink_to_postgres(
        PostgresSink::builder(
            &args.postgres,
            &args.table,
            RowMapping::new()
                .column("user_id", |r: &Row| r.key.clone())
                .column("window_start", |r: &Row| r.window.start)
                .column("total", |r: &Row| r.value.amount),
        )
        // Idempotent: a replay after a failure writes the same rows again.
        .upsert(&["user_id", "window_start"])
        .option("sink.buffer-flush.max-rows", "500")?,
    )?;

    let summary = sluice::run(env, &args.run)?;
    if let Some(exec) = &summary.execution {
        eprintln!(
            "clicks-per-minute: {} records read, {} malformed (dead letters), {} restarts",
            summary.records, exec.result.dead_letters, summary.restarts
        );
    }
    Ok(())
}

fn create_table(url: &str, table: &str) -> Result<(), Box<dyn std::error::Error>> {
    if !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("--table '{table}': letters, digits and '_' only").into());
    }
    let mut client = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    client.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (
             user_id TEXT NOT NULL,
             window_start BIGINT NOT NULL,
             total BIGINT NOT NULL,
             PRIMARY KEY (user_id, window_start))"
    ))?;
    Ok(())
}
