//! The built-in jobs on real systems: the skew workload's `(key, value)` records read from
//! Kafka (`key,value` lines; a line that does not parse is a dead letter with its topic,
//! partition and offset) or a socket (the same lines; a bad one is a dead letter with the
//! address and line number), and `(key, value)` results written to PostgreSQL (upsert
//! by key, the table created if missing) or Kafka (`key,value` lines keyed by the key, at least
//! once or exactly once). Building contacts the brokers and the database, so an unreachable
//! one or a missing topic is an error before the job starts.

use std::time::Duration;

use sluice_datastream::{DataStream, StreamEnv};
use sluice_kafka::source::{KafkaDeserializer, KafkaRecord, KafkaSource, Lines};
use sluice_kafka::{DeliveryGuarantee, KafkaSink, KafkaSinkExt, KafkaUrl, Serializer};
use sluice_postgres::{PostgresSink, PostgresSinkExt, RowMapping};

use crate::skew;

mod route;
mod urls;

pub use route::{records_from, skew_source, write_to};
pub use urls::{parse_from, parse_lookup, parse_to, FromUrl, ToUrl};

/// How long connecting to PostgreSQL may take.
pub const PG_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong reaching or using a real system; the message names the flag and URL.
pub type Result<T> = std::result::Result<T, String>;

/// The consumer group the built-in jobs commit their offsets to (monitoring only).
pub const GROUP: &str = "sluice-run";

/// `key,value` lines from Kafka, parsed, with `extra` per-record work in the deserializer
/// (the source-ceiling scenario's expensive decoding; 0 for none).
pub fn kafka_records(
    env: &StreamEnv,
    url: &KafkaUrl,
    bounded: bool,
    extra_work: u32,
) -> Result<DataStream<(i64, i64)>> {
    let settings = url.client_settings().map_err(|e| e.to_string())?;
    let decode = move |r: &KafkaRecord<'_>| -> Result<(i64, i64)> {
        let line = Lines.deserialize(r)?;
        let (k, v) = skew::parse_line(&line)?;
        if extra_work > 0 {
            return Ok((k, std::hint::black_box(skew::work(v, extra_work)) & 0xFFFF));
        }
        Ok((k, v))
    };
    let source = KafkaSource::builder()
        .client_settings(settings)
        .topics([url.topic.clone()])
        .group_id(GROUP)
        .set_bounded(bounded)
        .build(decode)
        .map_err(|e| format!("--from {url}: {e}"))?;
    Ok(source.add_to(env, &format!("Kafka: {}", url.topic)))
}

/// `key,value` lines from a TCP server (Flink's `socketTextStream`); a line that does not
/// parse is a dead letter naming the address and line number. Refused under checkpoints
/// unless the URL accepts the loss a restore brings (a socket cannot replay).
pub fn socket_records(
    env: &StreamEnv,
    config: &sluice_datastream::SocketSourceConfig,
    bounded: bool,
    extra_work: u32,
) -> Result<DataStream<(i64, i64)>> {
    let address = config.address();
    if bounded {
        return Err(format!(
            "--bounded: the socket source {address} has no end offsets to stop at (it ends when \
             the server closes the connection and no retries remain)"
        ));
    }
    if env.config().checkpoints.interval.is_some() && !config.accept_loss_on_restore {
        return Err(format!(
            "--from socket://{address} with --checkpoint-interval: a socket cannot replay, so a \
             restore from a checkpoint would lose the lines received after it; run without \
             --checkpoint-interval, or accept that loss with \
             socket://{address}?accept-loss-on-restore (each restore then reports the lines lost)"
        ));
    }
    let decode = move |line: &str| -> Result<(i64, i64)> {
        let (k, v) = skew::parse_line(line)?;
        if extra_work > 0 {
            return Ok((k, std::hint::black_box(skew::work(v, extra_work)) & 0xFFFF));
        }
        Ok((k, v))
    };
    Ok(env.socket_stream_decoded(config.clone(), decode))
}

/// What a `--to` sink wrote, for the summary and `doctor fix`.
pub enum SinkHandle {
    /// A PostgreSQL table.
    Postgres {
        /// The connection URL.
        conn: String,
        /// The table.
        table: String,
        /// What the sink counted.
        metrics: std::sync::Arc<sluice_postgres::SinkMetrics>,
    },
    /// A Kafka topic: what the sink counted.
    Kafka(std::sync::Arc<sluice_kafka::sink::KafkaSinkMetrics>),
}

impl SinkHandle {
    /// One line for the run summary: what the sink wrote.
    pub fn summary(&self) -> String {
        match self {
            SinkHandle::Postgres { table, metrics, .. } => {
                let m = metrics.snapshot();
                format!(
                    "PostgreSQL table {table}: {} rows written in {} batches ({:.2} ms per batch), {} reconnections",
                    m.rows_written,
                    m.batches,
                    m.flush_ns as f64 / 1e6 / m.batches.max(1) as f64,
                    m.retries
                )
            }
            SinkHandle::Kafka(m) => format!(
                "Kafka: {} records written, {} transactions committed, {} transactions of an \
                 earlier process committed on restore ({} records), {} records of transactions \
                 that could not be committed",
                m.records_out(),
                m.transactions_committed(),
                m.transactions_recovered
                    .load(std::sync::atomic::Ordering::Relaxed),
                m.recovered_records
                    .load(std::sync::atomic::Ordering::Relaxed),
                m.unresumable_records()
            ),
        }
    }
}

/// Creates `table (key BIGINT PRIMARY KEY, sum BIGINT NOT NULL)` if missing (for appends:
/// `key` without a key, one row per result).
fn create_table(conn: &str, table: &str, append: bool) -> Result<()> {
    let endpoint =
        sluice_postgres::Endpoint::parse(conn, PG_CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
    let mut client = endpoint
        .connect("sluice run (create table)")
        .map_err(|e| e.to_string())?;
    let key = if append {
        "BIGINT NOT NULL"
    } else {
        "BIGINT PRIMARY KEY"
    };
    let create = format!("CREATE TABLE IF NOT EXISTS {table} (key {key}, sum BIGINT NOT NULL)");
    // `IF NOT EXISTS` is not safe against a concurrent creation: the processes of a split job
    // (`--processes N`, a StatefulSet) all create the table as they start, and the losers of
    // the race get a unique violation on the catalog. Once it exists, the statement is a no-op.
    let mut attempt = 0;
    loop {
        match client.batch_execute(&create) {
            Ok(()) => return Ok(()),
            Err(e) if attempt < 3 => {
                tracing::debug!("creating table {table} (attempt {attempt}): {e}");
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(50 * attempt));
            }
            Err(e) => {
                return Err(format!(
                    "creating table {table} at {}: {e}",
                    endpoint.address()
                ))
            }
        }
    }
}

/// Writes `(key, value)` results to PostgreSQL table `table` at `conn` (upserted by key, or
/// appended: one row per result, exactly once by two-phase commit under checkpoints), the
/// table created if missing; `options` are connector options to set on the sink (e.g. the
/// slow-sink scenario's one-row batches), declared on its plan node so the doctor's fixer can
/// change them.
pub fn write_to_postgres(
    stream: &DataStream<(i64, i64)>,
    conn: &str,
    table: &str,
    append: bool,
    name: &str,
    options: &[(&str, &str)],
) -> Result<SinkHandle> {
    create_table(conn, table, append)?;
    let mut sink = PostgresSink::builder(
        conn,
        table,
        RowMapping::new()
            .column("key", |r: &(i64, i64)| r.0)
            .column("sum", |r: &(i64, i64)| r.1),
    )
    .name(name);
    // Appends by default (two-phase commit under periodic checkpoints).
    if !append {
        sink = sink.upsert(&["key"]);
    }
    for (k, v) in options {
        sink = sink.option(k, v).map_err(|e| e.to_string())?;
    }
    let s = stream
        .sink_to_postgres(sink)
        .map_err(|e| format!("--to {conn}?table={table}: {e}"))?;
    Ok(SinkHandle::Postgres {
        conn: conn.to_string(),
        table: table.to_string(),
        metrics: s.handle.metrics.clone(),
    })
}

/// Writes `(key, value)` results to Kafka as `key,value` lines keyed by the key, at least once
/// or exactly once; the topic created with `partitions` when given.
pub fn write_to_kafka(
    stream: &DataStream<(i64, i64)>,
    url: &KafkaUrl,
    exactly_once: bool,
    partitions: Option<i32>,
) -> Result<SinkHandle> {
    let guarantee = if exactly_once {
        DeliveryGuarantee::ExactlyOnce
    } else {
        DeliveryGuarantee::AtLeastOnce
    };
    let mut b = KafkaSink::builder()
        .bootstrap(&url.bootstrap)
        .topic(&url.topic)
        .guarantee(guarantee)
        .serializer(Serializer::utf8(|r: &(i64, i64)| {
            (Some(r.0.to_string()), skew::format_line(*r))
        }));
    if let Some(p) = partitions {
        b = b.create_topic(p);
    }
    let sink = b.build().map_err(|e| format!("--to {url}: {e}"))?;
    let s = stream.sink_to_kafka(sink);
    Ok(SinkHandle::Kafka(s.handle.clone()))
}

/// The table a PostgreSQL sink wrote: key → sum.
pub fn read_table(conn: &str, table: &str) -> Result<std::collections::BTreeMap<i64, i64>> {
    let endpoint =
        sluice_postgres::Endpoint::parse(conn, PG_CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
    let mut client = endpoint
        .connect("sluice (read table)")
        .map_err(|e| e.to_string())?;
    let rows = client
        .query(&format!("SELECT key, sum FROM {table}"), &[])
        .map_err(|e| format!("reading table {table} at {}: {e}", endpoint.address()))?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<_, i64>(0), r.get::<_, i64>(1)))
        .collect())
}

/// Empties the table before a run that must be compared with another (`doctor fix`).
pub fn truncate_table(conn: &str, table: &str) -> Result<()> {
    let endpoint =
        sluice_postgres::Endpoint::parse(conn, PG_CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
    let mut client = endpoint
        .connect("sluice (truncate table)")
        .map_err(|e| e.to_string())?;
    client
        .batch_execute(&format!("TRUNCATE {table}"))
        .map_err(|e| format!("emptying table {table} at {}: {e}", endpoint.address()))?;
    Ok(())
}
