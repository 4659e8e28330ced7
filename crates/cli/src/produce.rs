//! `sluice produce skew --records N --to kafka://HOST:PORT/TOPIC?partitions=P`: writes the skew
//! workload's records (docs/src/reference/skew-workload.md) to Kafka as `key,value` UTF-8 lines
//! keyed by the key (`sluice_kafka::produce`), creating the topic with P partitions if it is missing.

use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
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
    let bar = crate::progress::records_bar(cfg.records, !a.no_progress);
    let started = Instant::now();
    let hot_limit = cfg.hot_limit();
    let fill = |i: u64, key: &mut String, line: &mut String| {
        use std::fmt::Write as _;
        let (k, v) = record(i, hot_limit, cfg.keys);
        let _ = write!(key, "{k}");
        let _ = write!(line, "{k},{v}");
    };
    let progress = |delivered: u64| {
        if let Some(b) = &bar {
            b.set_position(delivered);
        }
    };
    let ok = sluice_kafka::produce::produce_lines(&settings, &url, cfg.records, fill, progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "produced {ok} records to {url} in {secs:.2} s ({}/s)",
        crate::progress::human(ok as f64 / secs.max(1e-9))
    );
    Ok(std::process::ExitCode::SUCCESS)
}
