//! `sluice produce skew --records N --to kafka://HOST:PORT/TOPIC?partitions=P`: writes the skew
//! workload's records (spec/skew-workload.md) to Kafka as `key,value` UTF-8 lines keyed by the
//! key, creating the topic with P partitions if it is missing. Keys are placed by Kafka's
//! default partitioner (murmur2, librdkafka's `murmur2_random`, as Java clients place keyed
//! records), so any Kafka client agrees on which partition holds a key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use sluice_jobs::skew::{record, SkewConfig};
use sluice_kafka::admin::{ensure_topic, TopicStatus};
use sluice_kafka::KafkaUrl;

#[derive(Args, Debug)]
pub struct ProduceArgs {
    #[command(subcommand)]
    pub workload: ProduceCmd,
}

#[derive(Subcommand, Debug)]
pub enum ProduceCmd {
    /// The skew job's records as `key,value` lines keyed by key.
    Skew(ProduceSkewArgs),
}

#[derive(Args, Debug)]
pub struct ProduceSkewArgs {
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Share of records with the hot key 0.
    #[arg(long, default_value_t = 0.8)]
    pub hot_key_share: f64,
    /// Number of other keys (1..=keys).
    #[arg(long, default_value_t = 10_000)]
    pub keys: u64,
    /// `kafka://HOST:PORT/TOPIC[?partitions=P&connect-timeout-ms=MS]` (P: partitions of a topic
    /// created here, default 1; an existing topic is used as it is).
    #[arg(long)]
    pub to: String,
    /// Never draw the progress bar (it is drawn only on a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
}

/// Counts deliveries and keeps the first failure.
#[derive(Default)]
struct Deliveries {
    ok: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

pub fn produce(args: ProduceArgs) -> Result<std::process::ExitCode> {
    match args.workload {
        ProduceCmd::Skew(a) => produce_skew(a),
    }
}

fn produce_skew(a: ProduceSkewArgs) -> Result<std::process::ExitCode> {
    let cfg = SkewConfig {
        records: a.records,
        hot_key_share: a.hot_key_share,
        keys: a.keys,
        ..SkewConfig::default()
    };
    cfg.validate().map_err(anyhow::Error::msg)?;
    if cfg.keys == 0 {
        bail!("--keys must be at least 1");
    }
    let url = KafkaUrl::parse(&a.to)?;
    url.check_params(&["partitions", "connect-timeout-ms"])?;
    let partitions = url.parse_param::<i32>("partitions")?.unwrap_or(1);
    if !(1..=10_000).contains(&partitions) {
        bail!("--to {url}: partitions must be 1..=10000, got {partitions}");
    }
    let settings = url.client_settings()?;
    match ensure_topic(&settings, &url.topic, partitions)? {
        TopicStatus::Created { partitions } => {
            eprintln!("created topic '{}' with {partitions} partitions", url.topic)
        }
        TopicStatus::Existed { partitions: n }
            if n != partitions && url.param("partitions").is_some() =>
        {
            eprintln!(
                "topic '{}' exists with {n} partitions (not {partitions}); writing to it as it is",
                url.topic
            )
        }
        TopicStatus::Existed { .. } => {}
    }
    let producer: BaseProducer<Deliveries> = settings
        .client_config(&[
            ("partitioner", "murmur2_random"),
            ("linger.ms", "5"),
            ("batch.num.messages", "10000"),
            ("queue.buffering.max.messages", "200000"),
            ("acks", "all"),
            ("message.timeout.ms", "30000"),
        ])
        .create_with_context(Deliveries::default())
        .with_context(|| format!("creating a Kafka producer for {}", settings.bootstrap))?;
    let bar = crate::progress::records_bar(cfg.records, !a.no_progress);
    let started = Instant::now();
    let hot_limit = cfg.hot_limit();
    let (mut key, mut line) = (String::new(), String::new());
    for i in 0..cfg.records {
        let (k, v) = record(i, hot_limit, cfg.keys);
        key.clear();
        line.clear();
        use std::fmt::Write as _;
        let _ = write!(key, "{k}");
        let _ = write!(line, "{k},{v}");
        let mut r = BaseRecord::to(&url.topic)
            .key(key.as_str())
            .payload(line.as_str());
        loop {
            match producer.send(r) {
                Ok(()) => break,
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    r = back;
                    producer.poll(Duration::from_millis(10));
                    fail_if_stuck(&producer, &settings.bootstrap)?;
                }
                Err((e, _)) => bail!("producing record {i} to {url}: {e}"),
            }
        }
        if i % 4096 == 0 {
            producer.poll(Duration::ZERO);
            if let Some(b) = &bar {
                b.set_position(producer.context().ok.load(Ordering::Relaxed));
            }
            fail_if_stuck(&producer, &settings.bootstrap)?;
        }
    }
    producer
        .flush(Duration::from_secs(60))
        .with_context(|| format!("flushing records to {url}"))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let ctx = producer.context();
    let (ok, failed) = (
        ctx.ok.load(Ordering::Relaxed),
        ctx.failed.load(Ordering::Relaxed),
    );
    if failed > 0 || ok != cfg.records {
        let first = ctx
            .first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        bail!(
            "{failed} of {} records were not delivered to {url} (first error: {})",
            cfg.records,
            first.unwrap_or_else(|| "none reported".into())
        );
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "produced {ok} records to {url} in {secs:.2} s ({}/s)",
        crate::progress::human(ok as f64 / secs.max(1e-9))
    );
    Ok(std::process::ExitCode::SUCCESS)
}

/// Deliveries that failed (broker gone mid-run) end the command instead of waiting forever.
fn fail_if_stuck(producer: &BaseProducer<Deliveries>, bootstrap: &str) -> Result<()> {
    let ctx = producer.context();
    if ctx.failed.load(Ordering::Relaxed) > 0 {
        let first = ctx
            .first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        bail!(
            "records could not be delivered to {bootstrap}: {}",
            first.unwrap_or_default()
        );
    }
    Ok(())
}
