//! Where each partition starts and (bounded mode) ends, resolved once when the source is built,
//! so every subtask and every restart of the job agrees on them: [`StartingOffsets`] and
//! [`StoppingOffsets`], Flink's `OffsetsInitializer`s for the start and the bound.
//!
//! **End offsets and the tansu bug.** A partition's true end (the offset after its last
//! record) is taken by a *probe*: read the high watermark `h` reported by the broker, then read
//! from `h − 1` to partition EOF and take `max(h, last offset read + 1)`. On a correct broker
//! the probe reads at most one record and gives `h`. On tansu 0.6, whose high watermark is the
//! *base offset of the last batch + 1* (measured: 10 records in one batch, then 3 in another ->
//! it reports 11, the true end is 13), the fetch at `h − 1` returns that whole last batch, so
//! the probe still finds 13. `latest` uses the same probe (so it never re-reads the records of
//! the last batch that were there before the start). Records appended while the probe runs may
//! extend the end: the bound is "everything the partition held when the probe reached EOF".

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError as RdError;
use rdkafka::{Message, Offset, TopicPartitionList};

use crate::admin::TopicPartitions;
use crate::config::ClientSettings;
use crate::KafkaError;

/// Where a source starts reading partitions that no checkpoint names (Flink's
/// `OffsetsInitializer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartingOffsets {
    /// The first offset still in the log (`OffsetsInitializer.earliest()`).
    Earliest,
    /// The end of the log when the source is built (`latest()`).
    Latest,
    /// The group's committed offset, or `fallback` for a partition without one
    /// (`committedOffsets(OffsetResetStrategy)`); needs a group id.
    Committed {
        /// Where a partition without a committed offset starts.
        fallback: OffsetFallback,
    },
    /// The first offset whose record timestamp is `>=` this (ms since the epoch), or the end
    /// of the log if none is (`timestamp(ms)`).
    Timestamp(i64),
    /// These offsets by (topic, partition) (`offsets(map)`): a partition not named starts at
    /// the group's committed offset (with a group id), else at the earliest; a named offset
    /// outside the log (below its first offset or past its end) starts at the earliest, as a
    /// consumer's `auto.offset.reset=earliest` does.
    Specific(BTreeMap<(String, i32), i64>),
}

/// Where a bounded source stops (Flink's `setBounded(OffsetsInitializer)`): each partition is
/// read up to, not including, its stopping offset (never before its start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoppingOffsets {
    /// The end of the log when the source is built (`latest()`).
    Latest,
    /// The group's committed offsets (`committedOffsets()`); a partition without one is an
    /// error naming it. Needs a group id.
    Committed,
    /// The first offset whose record timestamp is `>=` this (ms since the epoch), or the end
    /// of the log if none is (`timestamp(ms)`).
    Timestamp(i64),
    /// These offsets by (topic, partition); a partition not named is not read (Flink's
    /// `scan.bounded.specific-offsets`).
    Specific(BTreeMap<(String, i32), i64>),
}

/// What [`StartingOffsets::Committed`] does for a partition the group never committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetFallback {
    /// Start at the first offset still in the log.
    Earliest,
    /// Start at the end of the log.
    Latest,
    /// Refuse to start, naming the partition (Flink's `OffsetResetStrategy.NONE`).
    Fail,
}

/// One partition's planned range: read from `start`; in bounded mode stop before `end`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionPlan {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The first offset to read.
    pub start: i64,
    /// In bounded mode, the offset to stop before.
    pub end: Option<i64>,
}

/// Resolves start (and, with `stopping`, end) offsets of every partition of `topics`.
pub(crate) fn plan_partitions(
    consumer: &BaseConsumer,
    settings: &ClientSettings,
    topics: &[TopicPartitions],
    starting: &StartingOffsets,
    stopping: Option<&StoppingOffsets>,
    has_group: bool,
) -> Result<Vec<PartitionPlan>, KafkaError> {
    let bs = &settings.bootstrap;
    let t = settings.connect_timeout;
    let parts: Vec<(String, i32)> = topics
        .iter()
        .flat_map(|tp| (0..tp.partitions).map(move |p| (tp.topic.clone(), p)))
        .collect();
    let mut low_high = HashMap::new();
    for (topic, p) in &parts {
        let wm = consumer.fetch_watermarks(topic, *p, t).map_err(|e| {
            KafkaError::client(format!("reading the offsets of {topic}/{p}"), bs, e)
        })?;
        low_high.insert((topic.clone(), *p), wm);
    }
    let need_ends = stopping.is_some()
        || matches!(
            starting,
            StartingOffsets::Latest
                | StartingOffsets::Timestamp(_)
                | StartingOffsets::Specific(_)
                | StartingOffsets::Committed {
                    fallback: OffsetFallback::Latest
                }
        );
    let ends = if need_ends {
        probe_ends(settings, &low_high)?
    } else {
        HashMap::new()
    };
    let need_committed = matches!(starting, StartingOffsets::Committed { .. })
        || (has_group && matches!(starting, StartingOffsets::Specific(_)))
        || matches!(stopping, Some(StoppingOffsets::Committed));
    let committed = if need_committed {
        committed_offsets(consumer, &parts, t, bs)?
    } else {
        HashMap::new()
    };
    let start_time = match starting {
        StartingOffsets::Timestamp(ms) => offsets_for_time(consumer, &parts, *ms, t, bs)?,
        _ => HashMap::new(),
    };
    let stop_time = match stopping {
        Some(StoppingOffsets::Timestamp(ms)) => offsets_for_time(consumer, &parts, *ms, t, bs)?,
        _ => HashMap::new(),
    };
    let mut out = Vec::with_capacity(parts.len());
    for (topic, p) in parts {
        let key = (topic.clone(), p);
        let (low, _) = low_high[&key];
        let end = ends.get(&key).copied();
        let latest = || end.unwrap_or(low);
        let start = match starting {
            StartingOffsets::Earliest => low,
            StartingOffsets::Latest => latest(),
            StartingOffsets::Timestamp(_) => start_time.get(&key).copied().unwrap_or_else(latest),
            StartingOffsets::Specific(offsets) => match offsets.get(&key) {
                Some(&o) if o >= low && o <= latest() => o,
                Some(_) => low,
                None => committed.get(&key).copied().unwrap_or(low),
            },
            StartingOffsets::Committed { fallback } => match committed.get(&key) {
                Some(o) => *o,
                None => match fallback {
                    OffsetFallback::Earliest => low,
                    OffsetFallback::Latest => latest(),
                    OffsetFallback::Fail => {
                        return Err(KafkaError::Config(format!(
                            "partition {topic}/{p} has no committed offset for the group and the fallback is 'fail'"
                        )))
                    }
                },
            },
        };
        let stop = match stopping {
            None => None,
            Some(StoppingOffsets::Latest) => Some(latest()),
            Some(StoppingOffsets::Timestamp(_)) => {
                Some(stop_time.get(&key).copied().unwrap_or_else(latest))
            }
            Some(StoppingOffsets::Specific(offsets)) => {
                Some(offsets.get(&key).copied().unwrap_or(start))
            }
            Some(StoppingOffsets::Committed) => match committed.get(&key) {
                Some(o) => Some(*o),
                None => {
                    return Err(KafkaError::Config(format!(
                        "partition {topic}/{p} has no committed offset for the group to stop at"
                    )))
                }
            },
        };
        out.push(PartitionPlan {
            topic,
            partition: p,
            start,
            end: stop.map(|e| e.max(start)),
        });
    }
    Ok(out)
}

/// The group's committed offsets of `parts` (partitions without one are absent).
fn committed_offsets(
    consumer: &BaseConsumer,
    parts: &[(String, i32)],
    timeout: Duration,
    bs: &str,
) -> Result<HashMap<(String, i32), i64>, KafkaError> {
    let mut tpl = TopicPartitionList::new();
    for (topic, p) in parts {
        tpl.add_partition(topic, *p);
    }
    let got = consumer
        .committed_offsets(tpl, timeout)
        .map_err(|e| KafkaError::client("reading the group's committed offsets", bs, e))?;
    Ok(got
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some(((e.topic().to_string(), e.partition()), o)),
            _ => None,
        })
        .collect())
}

/// The first offset of each of `parts` whose record timestamp is `>= ms` (partitions without
/// such a record are absent).
fn offsets_for_time(
    consumer: &BaseConsumer,
    parts: &[(String, i32)],
    ms: i64,
    timeout: Duration,
    bs: &str,
) -> Result<HashMap<(String, i32), i64>, KafkaError> {
    let mut tpl = TopicPartitionList::new();
    for (topic, p) in parts {
        tpl.add_partition_offset(topic, *p, Offset::Offset(ms))
            .map_err(|e| KafkaError::client("building an offset request", bs, e))?;
    }
    let got = consumer
        .offsets_for_times(tpl, timeout)
        .map_err(|e| KafkaError::client(format!("looking up offsets for time {ms}"), bs, e))?;
    Ok(got
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) if o >= 0 => Some(((e.topic().to_string(), e.partition()), o)),
            _ => None,
        })
        .collect())
}

/// The true end of every partition (see the module docs): `max(h, last offset read from
/// h − 1 to EOF, + 1)`.
fn probe_ends(
    settings: &ClientSettings,
    low_high: &HashMap<(String, i32), (i64, i64)>,
) -> Result<HashMap<(String, i32), i64>, KafkaError> {
    let bs = &settings.bootstrap;
    let mut ends: HashMap<(String, i32), i64> = low_high
        .iter()
        .map(|(k, &(_, high))| (k.clone(), high))
        .collect();
    let mut tpl = TopicPartitionList::new();
    let mut waiting: Vec<(String, i32)> = Vec::new();
    for ((topic, p), &(low, high)) in low_high {
        if high > low {
            tpl.add_partition_offset(topic, *p, Offset::Offset(high - 1))
                .map_err(|e| KafkaError::client("building an offset request", bs, e))?;
            waiting.push((topic.clone(), *p));
        }
    }
    if waiting.is_empty() {
        return Ok(ends);
    }
    let probe: BaseConsumer = settings
        .client_config(&[
            ("group.id", "sluice-end-offset-probe"),
            ("enable.auto.commit", "false"),
            ("enable.partition.eof", "true"),
            ("auto.offset.reset", "earliest"),
        ])
        .create()
        .map_err(|e| KafkaError::client("creating a consumer", bs, e))?;
    probe
        .assign(&tpl)
        .map_err(|e| KafkaError::client("assigning partitions", bs, e))?;
    // EOF carries only the partition number: count EOFs per partition number and finish a
    // partition number once every topic holding it reached EOF.
    let mut eof_needed: HashMap<i32, usize> = HashMap::new();
    for (_, p) in &waiting {
        *eof_needed.entry(*p).or_default() += 1;
    }
    let deadline = Instant::now() + settings.connect_timeout.max(Duration::from_secs(5));
    while !eof_needed.is_empty() {
        if Instant::now() >= deadline {
            let mut missing: Vec<String> = waiting
                .iter()
                .filter(|(_, p)| eof_needed.contains_key(p))
                .map(|(t, p)| format!("{t}/{p}"))
                .collect();
            missing.sort();
            return Err(KafkaError::Config(format!(
                "could not read to the end of partition(s) {} on {bs} within {} ms",
                missing.join(", "),
                settings
                    .connect_timeout
                    .max(Duration::from_secs(5))
                    .as_millis()
            )));
        }
        match probe.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let e = ends
                    .entry((m.topic().to_string(), m.partition()))
                    .or_insert(0);
                *e = (*e).max(m.offset() + 1);
            }
            Some(Err(RdError::PartitionEOF(p))) => {
                if let Some(n) = eof_needed.get_mut(&p) {
                    *n -= 1;
                    if *n == 0 {
                        eof_needed.remove(&p);
                    }
                }
            }
            Some(Err(e)) => tracing::debug!("end-offset probe on {bs}: {e}"),
            None => {}
        }
    }
    Ok(ends)
}
