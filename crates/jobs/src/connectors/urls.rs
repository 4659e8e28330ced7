//! `--from` / `--to` URLs of the built-in jobs: where their records come from and where their
//! results go. Parsed by clap (a bad URL is refused before anything starts, with the reason);
//! the brokers and the database are contacted when the job is built, so an unreachable one is
//! an error naming its address before the job starts.
//!
//! - `--from kafka://HOST:PORT/TOPIC` (`key,value` lines, as `sluice produce` writes them;
//!   `--bounded` stops at the end offsets seen at start),
//!   `--from socket://HOST:PORT[?max-retries=N][&retry-delay=500ms][&accept-loss-on-restore]`
//!   (`key,value` lines over TCP, Flink's `socketTextStream`: reconnect `max-retries` times
//!   (default 0, -1 = forever) `retry-delay` apart (default 500 ms));
//! - `--to postgres://USER@HOST:PORT/DB?table=T[&append]` (upsert by the first column; with
//!   `append`, one row per result, exactly once by two-phase commit under checkpoints),
//!   `--to kafka://HOST:PORT/TOPIC[?exactly-once][&partitions=P]`.

use sluice_datastream::SocketSourceConfig;
use sluice_kafka::KafkaUrl;
use sluice_types::duration::parse_duration;

use super::PG_CONNECT_TIMEOUT;

/// Where a job reads its records.
#[derive(Clone, Debug, PartialEq)]
pub enum FromUrl {
    /// `kafka://HOST:PORT/TOPIC`.
    Kafka(KafkaUrl),
    /// `socket://HOST:PORT[?…]`.
    Socket(SocketSourceConfig),
}

/// Where a job writes its results.
#[derive(Clone, Debug, PartialEq)]
pub enum ToUrl {
    /// `kafka://HOST:PORT/TOPIC[?exactly-once][&partitions=P]`.
    Kafka {
        /// The brokers and the topic.
        url: KafkaUrl,
        /// `?exactly-once`: transactions committed on checkpoints.
        exactly_once: bool,
        /// Partitions of the topic when the sink creates it.
        partitions: Option<i32>,
    },
    /// `postgres://USER@HOST:PORT/DB?table=T[&append]`.
    Postgres {
        /// The connection URL without its query.
        conn: String,
        /// The table written.
        table: String,
        /// `&append`: every result a row (binary COPY; under periodic checkpoints one
        /// prepared transaction per checkpoint, committed when it completes: two-phase
        /// commit), instead of an upsert by key.
        append: bool,
    },
}

/// `--from`: `kafka://…` or `socket://HOST:PORT`.
pub fn parse_from(s: &str) -> Result<FromUrl, String> {
    if s.starts_with("kafka://") {
        let url = KafkaUrl::parse(s).map_err(|e| e.to_string())?;
        url.check_params(&["connect-timeout-ms"])
            .map_err(|e| e.to_string())?;
        return Ok(FromUrl::Kafka(url));
    }
    if let Some(rest) = s.strip_prefix("socket://") {
        return parse_socket(s, rest).map(FromUrl::Socket);
    }
    Err(format!(
        "'{s}': unknown source; expected kafka://HOST:PORT/TOPIC or socket://HOST:PORT"
    ))
}

/// `socket://HOST:PORT[?max-retries=N&retry-delay=D&accept-loss-on-restore]` (`rest` is what
/// follows `socket://` in `s`), Flink's defaults for what is not given.
fn parse_socket(s: &str, rest: &str) -> Result<SocketSourceConfig, String> {
    let (addr, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| format!("'{s}': expected socket://HOST:PORT"))?;
    if host.is_empty() {
        return Err(format!("'{s}': no host (expected socket://HOST:PORT)"));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("'{s}': port '{port}' is not a port number (1-65535)"))?;
    let mut config = SocketSourceConfig::new(host, port);
    for kv in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "max-retries" => {
                config.max_retries = v.parse().ok().filter(|&n: &i64| n >= -1).ok_or_else(|| {
                    format!("'{s}': max-retries '{v}' must be a count, or -1 for forever")
                })?
            }
            "retry-delay" => {
                config.retry_delay = parse_duration(v).map_err(|_| {
                    format!("'{s}': retry-delay '{v}' is not a duration (500ms, 2s)")
                })?
            }
            "accept-loss-on-restore" if v.is_empty() || v == "true" => {
                config.accept_loss_on_restore = true
            }
            _ => {
                return Err(format!(
                    "'{s}': unknown parameter '{kv}' (socket sources take max-retries=N, \
                     retry-delay=DURATION, accept-loss-on-restore)"
                ))
            }
        }
    }
    Ok(config)
}

/// `--lookup` (the `blocking` scenario's lookup table): `postgres://USER@HOST:PORT/DB?table=T`.
pub fn parse_lookup(s: &str) -> Result<crate::blocking::PostgresTable, String> {
    match parse_to(s)? {
        ToUrl::Postgres {
            conn,
            table,
            append: false,
        } => Ok(crate::blocking::PostgresTable { conn, table }),
        ToUrl::Postgres { append: true, .. } => Err(format!(
            "'{s}': a lookup table is postgres://USER@HOST:PORT/DB?table=NAME (no append)"
        )),
        ToUrl::Kafka { .. } => Err(format!(
            "'{s}': a lookup table is postgres://USER@HOST:PORT/DB?table=NAME"
        )),
    }
}

/// `--to`: `postgres://USER@HOST:PORT/DB?table=T` or `kafka://…[?exactly-once]`.
pub fn parse_to(s: &str) -> Result<ToUrl, String> {
    if s.starts_with("kafka://") {
        let url = KafkaUrl::parse(s).map_err(|e| e.to_string())?;
        url.check_params(&["exactly-once", "partitions", "connect-timeout-ms"])
            .map_err(|e| e.to_string())?;
        let exactly_once = url.flag("exactly-once").map_err(|e| e.to_string())?;
        let partitions = url
            .parse_param::<i32>("partitions")
            .map_err(|e| e.to_string())?;
        if partitions.is_some_and(|p| p < 1) {
            return Err(format!("'{s}': partitions must be at least 1"));
        }
        return Ok(ToUrl::Kafka {
            url,
            exactly_once,
            partitions,
        });
    }
    if s.starts_with("postgres://") || s.starts_with("postgresql://") {
        let (conn, query) = s.split_once('?').unwrap_or((s, ""));
        let mut table = None;
        let mut append = false;
        for kv in query.split('&').filter(|p| !p.is_empty()) {
            match kv.split_once('=') {
                Some(("table", t)) if !t.is_empty() => table = Some(t.to_string()),
                None if kv == "append" => append = true,
                _ => {
                    return Err(format!(
                        "'{s}': unknown parameter '{kv}' (they are table=NAME and append)"
                    ))
                }
            }
        }
        let table = table.ok_or_else(|| {
            format!("'{s}': no table: expected postgres://USER@HOST:PORT/DB?table=NAME")
        })?;
        if !table
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(format!(
                "'{s}': table '{table}' must be letters, digits, '_' (and '.' for a schema)"
            ));
        }
        sluice_postgres::Endpoint::parse(conn, PG_CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
        return Ok(ToUrl::Postgres {
            conn: conn.to_string(),
            table,
            append,
        });
    }
    Err(format!(
        "'{s}': unknown sink; expected postgres://USER@HOST:PORT/DB?table=NAME[&append] or \
         kafka://HOST:PORT/TOPIC[?exactly-once]"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sources_parse_and_bad_ones_say_why() {
        match parse_from("kafka://127.0.0.1:9092/skew").unwrap() {
            FromUrl::Kafka(u) => assert_eq!(
                (u.bootstrap.as_str(), u.topic.as_str()),
                ("127.0.0.1:9092", "skew")
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_from("socket://localhost:9999").unwrap(),
            FromUrl::Socket(SocketSourceConfig::new("localhost", 9999))
        );
        match parse_from("socket://h:1?max-retries=-1&retry-delay=2s&accept-loss-on-restore") {
            Ok(FromUrl::Socket(c)) => assert_eq!(
                (c.max_retries, c.retry_delay, c.accept_loss_on_restore),
                (-1, Duration::from_secs(2), true)
            ),
            other => panic!("{other:?}"),
        }
        assert!(parse_from("socket://h:1?max-retries=-2")
            .unwrap_err()
            .contains("max-retries"));
        assert!(parse_from("socket://h:1?retry-delay=soon")
            .unwrap_err()
            .contains("retry-delay"));
        assert!(parse_from("socket://h:1?bogus=1")
            .unwrap_err()
            .contains("unknown parameter 'bogus=1'"));
        assert!(parse_from("socket://localhost:0")
            .unwrap_err()
            .contains("port"));
        assert!(parse_from("kafka://127.0.0.1:9092")
            .unwrap_err()
            .contains("topic"));
        assert!(parse_from("kafka://h:1/t?bogus")
            .unwrap_err()
            .contains("bogus"));
        assert!(parse_from("file:///x")
            .unwrap_err()
            .contains("unknown source"));
    }

    #[test]
    fn sinks_parse_and_bad_ones_say_why() {
        match parse_to("kafka://h:1/out?exactly-once&partitions=3").unwrap() {
            ToUrl::Kafka {
                exactly_once,
                partitions,
                ..
            } => assert_eq!((exactly_once, partitions), (true, Some(3))),
            other => panic!("{other:?}"),
        }
        match parse_to("postgres://sluice@127.0.0.1:5432/sluice?table=sums").unwrap() {
            ToUrl::Postgres {
                conn,
                table,
                append,
            } => {
                assert_eq!(conn, "postgres://sluice@127.0.0.1:5432/sluice");
                assert_eq!(table, "sums");
                assert!(!append);
            }
            other => panic!("{other:?}"),
        }
        match parse_to("postgres://sluice@127.0.0.1:5432/sluice?table=sums&append").unwrap() {
            ToUrl::Postgres { table, append, .. } => {
                assert_eq!((table.as_str(), append), ("sums", true))
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_to("postgres://u@h:5432/db")
            .unwrap_err()
            .contains("no table"));
        assert!(parse_to("postgres://u@h:5432/db?table=a;drop")
            .unwrap_err()
            .contains("must be letters"));
        assert!(parse_to("postgres://u@h:5432/db?table=t&x=1")
            .unwrap_err()
            .contains("unknown parameter 'x=1'"));
        assert!(parse_to("kafka://h:1/out?partitions=0")
            .unwrap_err()
            .contains("at least 1"));
        assert!(parse_to("mysql://h/db")
            .unwrap_err()
            .contains("unknown sink"));
    }
}
