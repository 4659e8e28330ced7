//! The filesystem sink's own options, with Flink's names and defaults
//! (`FileSystemConnectorOptions`), and the write of a partitioned table.
//!
//! | option | default | |
//! |---|---|---|
//! | `sink.rolling-policy.file-size` | `128MB` | a part file is closed at this size |
//! | `sink.rolling-policy.rollover-interval` | `30 min` | … when this old |
//! | `sink.rolling-policy.inactivity-interval` | `30 min` | … when not written this long |
//! | `sink.rolling-policy.check-interval` | `1 min` | how often the two intervals are checked |
//! | `sink.partition-commit.trigger` | `process-time` | or `partition-time` (the watermark) |
//! | `sink.partition-commit.delay` | `0 s` | |
//! | `sink.partition-commit.policy.kind` | none | `success-file`; `metastore` and `custom` refused |
//! | `sink.partition-commit.success-file.name` | `_SUCCESS` | |
//! | `sink.partition-commit.watermark-time-zone` | `UTC` | only UTC |
//! | `partition.time-extractor.kind` | `default` | `custom` refused |
//! | `partition.time-extractor.timestamp-pattern` | none | `$dt $hm:00` |
//! | `partition.time-extractor.timestamp-formatter` | `yyyy-MM-dd HH:mm:ss` | |
//! | `partition.default-name` | `__DEFAULT_PARTITION__` | |
//! | `sink.shuffle-by-partition.enable`, `auto-compaction` | `false` | `true` refused |
//!
//! Without a commit policy no partition is committed (as Flink: the commit options then do
//! nothing, but Sluice refuses them so that none is silently without effect). The rolling
//! policy applies to partitioned tables; an unpartitioned table keeps one part file per
//! checkpoint and subtask ([`sluice_runtime::sinks::TransactionalFileSink`]), so a rolling
//! option there is refused.

use std::sync::Arc;
use std::time::Duration;

use sluice_datastream::{DataStream, Sink};
use sluice_runtime::sinks::partition_commit::{CommitPolicy, CommitTrigger, PartitionCommitter};
use sluice_runtime::sinks::{PartitionedFileSink, RollingPolicy};
use sluice_sql::{Result, Row};

use super::partition::{Partitioning, TimeExtractor};
use super::FilesystemSpec;
use crate::options::{parse_memory_size, Options};

/// The sink options Sluice reads (module docs).
pub(super) const SINK_OPTIONS: &[&str] = &[
    "sink.rolling-policy.file-size",
    "sink.rolling-policy.rollover-interval",
    "sink.rolling-policy.inactivity-interval",
    "sink.rolling-policy.check-interval",
    "sink.partition-commit.trigger",
    "sink.partition-commit.delay",
    "sink.partition-commit.policy.kind",
    "sink.partition-commit.success-file.name",
    "sink.partition-commit.watermark-time-zone",
    "partition.time-extractor.kind",
    "partition.time-extractor.timestamp-pattern",
    "partition.time-extractor.timestamp-formatter",
    "partition.default-name",
    "sink.shuffle-by-partition.enable",
    "auto-compaction",
];

/// Flink's options Sluice does not build, and why.
const REFUSED: &[(&str, &str)] = &[
    ("sink.partition-commit.policy.class", "custom commit policies (Java classes) are not supported; use 'success-file'"),
    ("sink.partition-commit.policy.class.parameters", "custom commit policies (Java classes) are not supported; use 'success-file'"),
    ("partition.time-extractor.class", "custom time extractors (Java classes) are not supported; use 'partition.time-extractor.timestamp-pattern'"),
    ("source.monitor-interval", "the filesystem source reads its files once (bounded); watching the directory for new files is not supported"),
    ("compaction.file-size", "auto-compaction is not supported"),
    ("sink.parallelism", "the filesystem sink runs at the job's parallelism"),
];

/// The commit part of the settings.
#[derive(Clone, Debug)]
pub struct CommitSettings {
    /// `partition-time` (else `process-time`).
    pub partition_time: bool,
    /// `sink.partition-commit.delay` in ms.
    pub delay_ms: i64,
    /// `sink.partition-commit.success-file.name`.
    pub success_file: String,
    /// How a partition's time is read.
    pub extractor: TimeExtractor,
}

/// What the sink options say.
#[derive(Clone, Debug)]
pub struct SinkSettings {
    /// `sink.rolling-policy.*`.
    pub rolling: RollingPolicy,
    /// The partition commit, when `sink.partition-commit.policy.kind` is set.
    pub commit: Option<CommitSettings>,
}

fn duration(options: &Options, key: &str, default: Duration) -> Result<Duration> {
    match options.get(key) {
        None => Ok(default),
        Some(v) => sluice_types::duration::parse_duration(v)
            .map_err(|e| options.bad(key, format!("'{v}' is not a duration: {e}"))),
    }
}

/// Refuses the options Sluice does not build (naming each and why); the caller checks the
/// rest against the known keys.
pub(super) fn refuse_unbuilt(options: &Options) -> Result<()> {
    for (key, why) in REFUSED {
        if options.get(key).is_some() {
            return Err(options.bad(key, format!("'{key}' is not supported: {why}")));
        }
    }
    for key in ["sink.shuffle-by-partition.enable", "auto-compaction"] {
        if options.bool(key)? == Some(true) {
            return Err(options.bad(
                key,
                format!("'{key}' = 'true' is not supported (only 'false', Flink's default)"),
            ));
        }
    }
    Ok(())
}

/// Reads the sink options of a table partitioned by `partitioning` (`None`: unpartitioned).
pub(super) fn settings(
    options: &Options,
    partitioning: Option<&Partitioning>,
) -> Result<SinkSettings> {
    if partitioning.is_none() {
        for key in SINK_OPTIONS {
            if options.get(key).is_some() {
                let why = if key.starts_with("sink.rolling-policy") {
                    "an unpartitioned filesystem table writes one part file per checkpoint and subtask; the rolling policy applies to PARTITIONED BY tables"
                } else {
                    "it applies to PARTITIONED BY tables only"
                };
                return Err(options.bad(
                    key,
                    format!("'{key}' on a table without PARTITIONED BY: {why}"),
                ));
            }
        }
    }
    let d = RollingPolicy::default();
    let file_size = match options.get("sink.rolling-policy.file-size") {
        None => d.file_size,
        Some(v) => parse_memory_size(v).filter(|n| *n > 0).ok_or_else(|| {
            options.bad(
                "sink.rolling-policy.file-size",
                format!("'{v}' is not a memory size (like '128MB')"),
            )
        })?,
    };
    let ms = |key: &str, default_ms: u64| -> Result<u64> {
        let v = duration(options, key, Duration::from_millis(default_ms))?.as_millis() as u64;
        if v == 0 {
            return Err(options.bad(key, "must be positive"));
        }
        Ok(v)
    };
    let rolling = RollingPolicy {
        file_size,
        rollover_ms: ms("sink.rolling-policy.rollover-interval", d.rollover_ms)?,
        inactivity_ms: ms("sink.rolling-policy.inactivity-interval", d.inactivity_ms)?,
        check_ms: ms("sink.rolling-policy.check-interval", d.check_ms)?,
    };
    if let Some(kind) = options.get("partition.time-extractor.kind") {
        if !kind.trim().eq_ignore_ascii_case("default") {
            return Err(options.bad(
                "partition.time-extractor.kind",
                format!(
                    "'{kind}': only 'default' is supported (custom extractors are Java classes)"
                ),
            ));
        }
    }
    if let Some(tz) = options.get("sink.partition-commit.watermark-time-zone") {
        if !["UTC", "GMT", "Z", "+00:00", "UTC+0", "GMT+0"].contains(&tz.trim()) {
            return Err(options.bad(
                "sink.partition-commit.watermark-time-zone",
                format!("'{tz}': only UTC (Flink's default) is supported"),
            ));
        }
    }
    let commit_keys = [
        "sink.partition-commit.trigger",
        "sink.partition-commit.delay",
        "sink.partition-commit.success-file.name",
        "sink.partition-commit.watermark-time-zone",
    ];
    let Some(kinds) = options.get("sink.partition-commit.policy.kind") else {
        if let Some(k) = commit_keys.iter().find(|k| options.get(k).is_some()) {
            return Err(options.bad(
                k,
                format!("'{k}' without 'sink.partition-commit.policy.kind': no partition would be committed; set the policy ('success-file')"),
            ));
        }
        return Ok(SinkSettings {
            rolling,
            commit: None,
        });
    };
    for kind in kinds.split(',').map(str::trim) {
        match kind.to_ascii_lowercase().as_str() {
            "success-file" => {}
            "metastore" => {
                return Err(options.bad(
                    "sink.partition-commit.policy.kind",
                    "'metastore' is not supported: a filesystem table has no metastore (Flink allows it for Hive tables only); use 'success-file'",
                ))
            }
            "custom" => {
                return Err(options.bad(
                    "sink.partition-commit.policy.kind",
                    "'custom' is not supported: custom commit policies are Java classes; use 'success-file'",
                ))
            }
            _ => {
                return Err(options.bad(
                    "sink.partition-commit.policy.kind",
                    format!("unknown policy '{kind}' (Flink's: 'metastore', 'success-file', 'custom')"),
                ))
            }
        }
    }
    let partition_time = match options.one_of(
        "sink.partition-commit.trigger",
        &["process-time", "partition-time"],
    )? {
        None | Some("process-time") => false,
        Some(_) => true,
    };
    let delay_ms =
        duration(options, "sink.partition-commit.delay", Duration::ZERO)?.as_millis() as i64;
    let success_file = options
        .get("sink.partition-commit.success-file.name")
        .unwrap_or("_SUCCESS")
        .to_string();
    if success_file.is_empty() || success_file.contains('/') {
        return Err(options.bad(
            "sink.partition-commit.success-file.name",
            format!("'{success_file}' is not a file name"),
        ));
    }
    let formatter = match options.get("partition.time-extractor.timestamp-formatter") {
        None => None,
        Some(f) => Some((
            f.to_string(),
            sluice_sql::datetime::compile_format(f).map_err(|e| {
                options.bad(
                    "partition.time-extractor.timestamp-formatter",
                    format!("'{f}': {e}"),
                )
            })?,
        )),
    };
    let extractor = TimeExtractor {
        pattern: options
            .get("partition.time-extractor.timestamp-pattern")
            .map(str::to_string),
        formatter,
    };
    Ok(SinkSettings {
        rolling,
        commit: Some(CommitSettings {
            partition_time,
            delay_ms,
            success_file,
            extractor,
        }),
    })
}

/// Writes `rows` (full table rows) into the partition directories, exactly once.
pub(super) fn write_partitioned(
    spec: &FilesystemSpec,
    partitioning: &Partitioning,
    settings: &SinkSettings,
    rows: &DataStream<Row>,
) -> Sink<()> {
    let root = spec.path.clone();
    let committer = settings.commit.as_ref().map(|c| {
        let trigger = if c.partition_time {
            let (x, p) = (c.extractor.clone(), partitioning.clone());
            CommitTrigger::PartitionTime(Arc::new(move |rel: &str| {
                let values = p.values_of(rel)?;
                x.time_of(&p.keys, &values)
            }))
        } else {
            CommitTrigger::ProcessTime
        };
        PartitionCommitter::new(
            root.clone(),
            CommitPolicy {
                trigger,
                delay_ms: c.delay_ms,
                success_file: c.success_file.clone(),
            },
        )
    });
    let rolling = settings.rolling;
    let (spec, p) = (spec.clone(), partitioning.clone());
    rows.add_sink(
        "Filesystem",
        (),
        |_| Ok(()),
        move |ctx| {
            let (spec, p) = (spec.clone(), p.clone());
            let format = move |row: &Row, line: &mut String, dir: &mut String| {
                p.dir_of(row, dir);
                let data = Row(p.data_index.iter().map(|&i| row.0[i].clone()).collect());
                spec.format_row(&data, line);
            };
            PartitionedFileSink::new(root.clone(), rolling, committer.clone(), format, ctx)
        },
    )
}
