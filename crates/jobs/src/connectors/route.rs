//! `--from` and `--to` of the built-in jobs, dispatched to their connectors (Kafka, a socket,
//! PostgreSQL).

use sluice_datastream::{DataStream, StreamEnv};

use super::{
    kafka_records, socket_records, write_to_kafka, write_to_postgres, FromUrl, Result, SinkHandle,
    ToUrl,
};

/// The records of `--from`.
pub fn records_from(
    env: &StreamEnv,
    from: &FromUrl,
    bounded: bool,
    extra_work: u32,
) -> Result<DataStream<(i64, i64)>> {
    match from {
        FromUrl::Kafka(url) => kafka_records(env, url, bounded, extra_work),
        FromUrl::Socket(config) => socket_records(env, config, bounded, extra_work),
    }
}

/// Writes `(key, value)` results to `--to`; `options` are connector options to set on the
/// sink (PostgreSQL only).
pub fn write_to(
    stream: &DataStream<(i64, i64)>,
    to: &ToUrl,
    name: &str,
    options: &[(&str, &str)],
) -> Result<SinkHandle> {
    match to {
        ToUrl::Postgres {
            conn,
            table,
            append,
        } => write_to_postgres(stream, conn, table, *append, name, options),
        ToUrl::Kafka {
            url,
            exactly_once,
            partitions,
        } => {
            if !options.is_empty() {
                return Err("the Kafka sink takes no connector options here".to_string());
            }
            write_to_kafka(stream, url, *exactly_once, *partitions)
        }
    }
}

/// The skew job's source when its records come from `--from` (instead of its generator): the
/// configuration checked, the job named, the source at `cfg.source_parallelism` when given.
pub fn skew_source(
    env: &StreamEnv,
    cfg: &crate::skew::SkewConfig,
    from: &FromUrl,
    bounded: bool,
) -> Result<DataStream<(i64, i64)>> {
    cfg.validate()
        .map_err(|e| sluice_datastream::GraphError::invalid_config(e).to_string())?;
    env.set_parallelism(cfg.parallelism);
    env.set_job_name("skew");
    let mut s = records_from(env, from, bounded, 0)?;
    if let Some(p) = cfg.source_parallelism {
        s = s.set_parallelism(p);
    }
    Ok(s)
}
