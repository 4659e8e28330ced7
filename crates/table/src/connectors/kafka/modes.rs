//! `scan.startup.mode` and `scan.bounded.mode` with their companion options, as
//! `sluice-kafka`'s [`StartingOffsets`] and [`StoppingOffsets`] (Flink's
//! `KafkaConnectorOptionsUtil.validateScanStartupMode` / `validateScanBoundedMode` and
//! `KafkaDynamicSource`'s offsets initializers).

use std::collections::BTreeMap;

use sluice_kafka::source::{OffsetFallback, StartingOffsets, StoppingOffsets};
use sluice_sql::Result;

use super::KafkaTable;
use crate::options::Options;

/// Where the source starts. `group-offsets` (Flink's default) needs `properties.group.id`; a
/// partition the group never committed starts where `properties.auto.offset.reset` says
/// (`none`, Flink's default: the job is refused naming the partition).
pub fn starting(options: &Options, table: &KafkaTable) -> Result<StartingOffsets> {
    let mode = options
        .one_of(
            "scan.startup.mode",
            &[
                "earliest-offset",
                "latest-offset",
                "group-offsets",
                "timestamp",
                "specific-offsets",
            ],
        )?
        .unwrap_or("group-offsets");
    Ok(match mode {
        "earliest-offset" => StartingOffsets::Earliest,
        "latest-offset" => StartingOffsets::Latest,
        "timestamp" => {
            StartingOffsets::Timestamp(millis(options, "scan.startup.timestamp-millis", "startup")?)
        }
        "specific-offsets" => StartingOffsets::Specific(specific(
            options,
            table,
            "scan.startup.specific-offsets",
            "startup",
        )?),
        _ => {
            if table.group_id.is_none() {
                return Err(options.bad(
                    "properties.group.id",
                    "'properties.group.id' is required in 'group-offsets' startup mode (the default of 'scan.startup.mode') but missing.",
                ));
            }
            let fallback = match table.auto_offset_reset.as_deref() {
                Some("earliest") => OffsetFallback::Earliest,
                Some("latest") => OffsetFallback::Latest,
                _ => OffsetFallback::Fail,
            };
            StartingOffsets::Committed { fallback }
        }
    })
}

/// Where a bounded source stops (`None`: unbounded, the default).
pub fn stopping(options: &Options, table: &KafkaTable) -> Result<Option<StoppingOffsets>> {
    let mode = options
        .one_of(
            "scan.bounded.mode",
            &[
                "unbounded",
                "latest-offset",
                "group-offsets",
                "timestamp",
                "specific-offsets",
            ],
        )?
        .unwrap_or("unbounded");
    Ok(Some(match mode {
        "unbounded" => return Ok(None),
        "latest-offset" => StoppingOffsets::Latest,
        "timestamp" => {
            StoppingOffsets::Timestamp(millis(options, "scan.bounded.timestamp-millis", "bounded")?)
        }
        "specific-offsets" => StoppingOffsets::Specific(specific(
            options,
            table,
            "scan.bounded.specific-offsets",
            "bounded",
        )?),
        _ => {
            if table.group_id.is_none() {
                return Err(options.bad(
                    "properties.group.id",
                    "'properties.group.id' is required in 'group-offsets' bounded mode but missing.",
                ));
            }
            StoppingOffsets::Committed
        }
    }))
}

/// A required timestamp (ms since the epoch) of a `timestamp` mode.
fn millis(options: &Options, key: &str, kind: &str) -> Result<i64> {
    match options.parse::<i64>(key, "milliseconds since the epoch")? {
        Some(ms) if ms >= 0 => Ok(ms),
        Some(ms) => Err(options.bad(key, format!("expected a time in ms >= 0, found {ms}"))),
        None => Err(options.bad(
            key,
            format!("'{key}' is required in 'timestamp' {kind} mode but missing."),
        )),
    }
}

/// The offsets of a `specific-offsets` mode: `partition:0,offset:42;partition:1,offset:300` of
/// the table's one topic.
fn specific(
    options: &Options,
    table: &KafkaTable,
    key: &str,
    kind: &str,
) -> Result<BTreeMap<(String, i32), i64>> {
    let Some(text) = options.get(key) else {
        return Err(options.bad(
            key,
            format!("'{key}' is required in 'specific-offsets' {kind} mode but missing."),
        ));
    };
    let [topic] = table.topics.as_slice() else {
        return Err(options.bad(
            key,
            "Currently Kafka source only supports specific offset for single topic.",
        ));
    };
    let bad = || {
        options.bad(
            key,
            format!("should follow the format 'partition:0,offset:42;partition:1,offset:300', but is '{text}'."),
        )
    };
    let mut out = BTreeMap::new();
    // As Java's `split(";")`: trailing empty pieces do not count.
    let pairs = text.trim_end_matches(';');
    if pairs.is_empty() {
        return Err(bad());
    }
    for pair in pairs.split(';') {
        let (p, o) = pair.split_once(',').ok_or_else(bad)?;
        let p: i32 = p
            .trim()
            .strip_prefix("partition:")
            .and_then(|v| v.trim().parse().ok())
            .filter(|p| *p >= 0)
            .ok_or_else(bad)?;
        let o: i64 = o
            .trim()
            .strip_prefix("offset:")
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(bad)?;
        if o < 0 {
            return Err(options.bad(
                key,
                format!("offset {o} of partition {p}: an offset is >= 0 (Kafka's sentinel offsets are not supported)"),
            ));
        }
        out.insert((topic.clone(), p), o);
    }
    Ok(out)
}
