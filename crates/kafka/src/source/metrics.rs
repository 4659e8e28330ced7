//! The source's FLIP-33 metrics, as operator-scope gauges of its task
//! (`<subtask>.<Source__name>.pendingRecords` on REST, `flink_taskmanager_job_task_operator_…`
//! on Prometheus): `pendingRecords` (lag: records between the next offset and the partition's
//! end), `currentFetchEventTimeLag` / `currentEmitEventTimeLag` (wall clock − Kafka record
//! timestamp of the latest record, ms; the record is emitted right after its fetch is handed
//! over, so both are measured at the same point), `sourceIdleTime` (ms since the last record),
//! `numRecordsIn`, `numBytesIn` (key + value bytes), and per partition Flink's
//! `KafkaSourceReader.topic.<t>.partition.<p>.currentOffset` / `.committedOffset` plus
//! `….pendingRecords` (a Sluice addition: lag per partition).

use std::sync::Arc;

use sluice_runtime::{GaugeKind, OperatorGauge, TaskMetrics};

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
