//! The source's FLIP-33 metrics, as operator-scope gauges of its task
//! (`<subtask>.<Source__name>.pendingRecords` on REST, `flink_taskmanager_job_task_operator_…`
//! on Prometheus): `pendingRecords` (lag: records between the next offset and the partition's
//! end), `currentFetchEventTimeLag` / `currentEmitEventTimeLag` (wall clock − Kafka record
//! timestamp of the latest record, ms; the record is emitted right after its fetch is handed
//! over, so both are measured at the same point), `sourceIdleTime` (ms since the last record),
//! `numRecordsIn`, `numBytesIn` (key + value bytes), and per partition Flink's
//! `KafkaSourceReader.topic.<t>.partition.<p>.currentOffset` / `.committedOffset` plus
//! `….pendingRecords` (a Sluice addition: lag per partition), and `assignedSplits` (Sluice: the
//! partitions the subtask owns, for the doctor's source ceiling).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::statistics::Statistics;
use sluice_runtime::{GaugeKind, OperatorGauge, TaskMetrics};

use super::split::LiveSplit;

pub(crate) struct PartitionGauges {
    pub current_offset: Arc<OperatorGauge>,
    pub committed_offset: Arc<OperatorGauge>,
    pub pending: Arc<OperatorGauge>,
}

pub(crate) struct SourceGauges {
    pub pending_records: Arc<OperatorGauge>,
    pub fetch_lag: Arc<OperatorGauge>,
    pub emit_lag: Arc<OperatorGauge>,
    pub idle_time: Arc<OperatorGauge>,
    pub records_in: Arc<OperatorGauge>,
    pub bytes_in: Arc<OperatorGauge>,
    pub partitions: Vec<PartitionGauges>,
}

impl SourceGauges {
    pub(crate) fn register(
        metrics: &TaskMetrics,
        operator: &str,
        splits: &[(String, i32)],
    ) -> SourceGauges {
        let g = |name: &str, kind, help: &str, init| {
            metrics.register_gauge(operator, name, kind, help, init)
        };
        use GaugeKind::{Counter, Gauge};
        // Sluice's `assignedSplits`: the partitions this subtask owns (0: an idle subtask), so
        // the doctor can tell a source at its partition ceiling from an uneven load.
        g(
            "assignedSplits",
            Gauge,
            "Partitions (splits) assigned to this subtask",
            splits.len() as i64,
        );
        SourceGauges {
            pending_records: g(
                "pendingRecords",
                Gauge,
                "Records not yet fetched (lag) over the subtask's partitions",
                0,
            ),
            fetch_lag: g(
                "currentFetchEventTimeLag",
                Gauge,
                "Fetch time - Kafka timestamp of the latest record, ms",
                0,
            ),
            emit_lag: g(
                "currentEmitEventTimeLag",
                Gauge,
                "Emit time - Kafka timestamp of the latest record, ms",
                0,
            ),
            idle_time: g(
                "sourceIdleTime",
                Gauge,
                "Time since the source last emitted a record, ms",
                0,
            ),
            records_in: g(
                "numRecordsIn",
                Counter,
                "Records the source read from Kafka",
                0,
            ),
            bytes_in: g(
                "numBytesIn",
                Counter,
                "Key + value bytes the source read from Kafka",
                0,
            ),
            partitions: splits
                .iter()
                .map(|(t, p)| {
                    let base = format!("KafkaSourceReader.topic.{t}.partition.{p}");
                    PartitionGauges {
                        current_offset: g(
                            &format!("{base}.currentOffset"),
                            Gauge,
                            "Offset of the latest record read",
                            -1,
                        ),
                        committed_offset: g(
                            &format!("{base}.committedOffset"),
                            Gauge,
                            "Offset last committed to the group (monitoring only)",
                            -1,
                        ),
                        pending: g(
                            &format!("{base}.pendingRecords"),
                            Gauge,
                            "Records of the partition not yet fetched (lag)",
                            0,
                        ),
                    }
                })
                .collect(),
        }
    }
}

/// The broker's high watermarks, from librdkafka's statistics (no extra request).
#[derive(Default)]
pub(crate) struct StatsContext {
    high: Mutex<HashMap<(String, i32), i64>>,
}

impl ClientContext for StatsContext {
    fn stats(&self, statistics: Statistics) {
        let mut high = self.high.lock().unwrap_or_else(|p| p.into_inner());
        for (topic, t) in statistics.topics {
            for (p, s) in t.partitions {
                if p >= 0 && s.hi_offset >= 0 {
                    high.insert((topic.clone(), p), s.hi_offset);
                }
            }
        }
    }
}

impl ConsumerContext for StatsContext {}

/// Publishes lag, event-time lags, idle time and offsets.
pub(crate) fn publish<C: ConsumerContext + AsHigh>(
    consumer: &BaseConsumer<C>,
    splits: &[LiveSplit],
    gauges: &SourceGauges,
    last_ts: Option<i64>,
    last_record: Instant,
    bounded: bool,
) {
    let high = consumer.context().highs();
    let mut total = 0i64;
    for (s, g) in splits.iter().zip(&gauges.partitions) {
        g.current_offset.set(s.next - 1);
        // Lag: to the bounded end (exact), else to the broker's high watermark (tansu's may
        // understate it by up to the last batch's size - 1; never below 0).
        let end = match s.plan.end {
            Some(e) if bounded => e,
            _ => high
                .get(&(s.plan.topic.clone(), s.plan.partition))
                .copied()
                .unwrap_or(s.next),
        };
        let lag = if s.finished { 0 } else { (end - s.next).max(0) };
        g.pending.set(lag);
        total += lag;
    }
    gauges.pending_records.set(total);
    if let Some(ts) = last_ts {
        let lag = (now_ms() - ts).max(0);
        gauges.fetch_lag.set(lag);
        gauges.emit_lag.set(lag);
    }
    gauges
        .idle_time
        .set(last_record.elapsed().as_millis() as i64);
}

pub(crate) trait AsHigh {
    fn highs(&self) -> HashMap<(String, i32), i64>;
}

impl AsHigh for StatsContext {
    fn highs(&self) -> HashMap<(String, i32), i64> {
        self.high.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Wall clock, ms since the epoch (Kafka timestamps are).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
