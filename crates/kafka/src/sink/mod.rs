//! The Kafka sink (`Sink: Kafka`): [`KafkaSink`] (built by [`KafkaSinkBuilder`]), added to a
//! stream with [`KafkaSink::add_to`] or [`KafkaSinkExt::sink_to_kafka`]; records become key and
//! value bytes through a [`Serializer`] (raw, UTF-8, JSON); keyed records are placed by Kafka's
//! default partitioner (murmur2, as Java clients); figures in [`KafkaSinkMetrics`] (the sink's
//! handle).
//!
//! # Guarantees
//!
//! - [`DeliveryGuarantee::AtLeastOnce`]: at every checkpoint barrier the subtask waits until
//!   the broker acknowledged everything sent before it (flush); a failed delivery fails the
//!   job, which restarts from the last checkpoint and writes what followed it again
//!   (duplicates, never loss).
//! - [`DeliveryGuarantee::ExactlyOnce`], as Flink's `KafkaSink`: one Kafka transaction per
//!   subtask and checkpoint interval, transactional id `<prefix>-<subtask>-<checkpoint
//!   offset>` (Flink's `TransactionalIdFactory`; prefix = Flink's
//!   `sink.transactional-id-prefix`). At the barrier the transaction is flushed
//!   (pre-commit) and named in the subtask's snapshot; when the checkpoint completes (it is
//!   durable on disk by then) it is committed (Flink's `KafkaCommitter`); at the end of a
//!   bounded job the last ones are committed once every task finished. On restore,
//!   transactions the checkpoint names are committed if this process still holds their
//!   producer (a failed subtask parks its producers); every other transaction an earlier
//!   attempt left open is aborted: through its parked producer, or, at a subtask's first
//!   start-up in a process, by initialising every transactional id an earlier process may have
//!   used (Flink's lingering-transaction abort; librdkafka cannot tell a never-used id, Flink's
//!   stop condition, so the probe has a fixed depth: [`KafkaSinkBuilder::abort_probe`]). A
//!   process that died after more failed checkpoints in a row than that depth can leave a
//!   transaction open beyond it; `read_committed` consumers then wait at it until the broker's
//!   transaction timeout aborts it (`transaction.timeout.ms`: the flush timeout, at least 60 s).
//!
//! # The crash window
//!
//! Flink finishes a restored checkpoint's transaction by resuming it: it writes the stored
//! producer id and epoch into a new Java producer by reflection and commits. librdkafka has no
//! such API: `init_transactions` with the same `transactional.id` bumps the epoch and
//! *aborts* the pending transaction. So after the **process** dies between *checkpoint `n`
//! completed (durable on disk)* and *the `EndTxn(commit)` of checkpoint `n`'s transaction
//! reaching the transaction coordinator* (the sink's task notices a completion at its next
//! 256th record or buffer-timeout tick, then commits: one round trip), that transaction cannot be committed by anyone: the
//! restarted job restores checkpoint `n`, its sources resume after the records of that
//! transaction, and the transaction is aborted. Those records — one checkpoint interval of the
//! subtasks whose commit had not reached the broker — are **lost** (never duplicated). The
//! restore reports each such transaction and its record count (an `error` log event,
//! [`KafkaSinkMetrics::unresumable_transactions`] / `unresumable_records`; it cannot tell
//! whether the commit made it, so this is an upper bound). The final commit at the end of a
//! bounded job has the same window. Restarts *inside* a process (a failed subtask) do not
//! lose anything: the failed writer parks its pre-committed producers and the restore commits
//! them through the same librdkafka handle.
//!
//! Closing the window would need either committing before the checkpoint is acknowledged
//! (then a checkpoint that fails leaves committed records that the restore writes again:
//! duplicates, the at-least-once contract) or recording the transaction's records in the
//! checkpoint and a commit marker in Kafka (e.g. offsets committed inside the transaction) so
//! that a restore can tell an uncommitted transaction and write its records again; neither is
//! done. Fault injection for the window: [`KILL_BEFORE_COMMIT_ENV`].

mod config;
pub mod coordinator;
mod fault;
mod metrics;
mod producer;
mod serializer;
mod transactions;
mod writer;

use std::sync::Arc;

use sluice_graph::{DataStream, Sink};
use sluice_types::Data;

pub use config::{DeliveryGuarantee, KafkaSinkBuilder, KafkaSinkConfig};
pub use fault::{KILL_BEFORE_COMMIT_ENV, KILL_LINE};
pub use metrics::{
    KafkaSinkMetrics, COMMIT_LATENCY_MS, PENDING_DELIVERIES, TRANSACTIONS_COMMITTED,
};
pub use serializer::{KeyValue, Serializer};
pub use transactions::transactional_id;
pub use writer::KafkaSinkWriter;

/// A configured Kafka sink; add it to a stream with [`add_to`](Self::add_to).
pub struct KafkaSink<T> {
    config: Arc<KafkaSinkConfig<T>>,
}

impl<T: Data> KafkaSink<T> {
    pub fn builder() -> KafkaSinkBuilder<T> {
        KafkaSinkBuilder::new()
    }

    /// Adds the sink (operator `Sink: Kafka`) to `stream`. When the job starts, the broker must
    /// answer within the connect timeout and the topic must exist (or is created, when
    /// configured), else the job is refused with an error naming the address or the topic.
    pub fn add_to(self, stream: &DataStream<T>) -> Sink<Arc<KafkaSinkMetrics>> {
        let metrics = Arc::new(KafkaSinkMetrics::default());
        let (cfg1, cfg2, m) = (self.config.clone(), self.config, metrics.clone());
        stream.add_sink(
            "Kafka",
            metrics,
            move |_| {
                producer::check_topic(&cfg1)?;
                Ok(())
            },
            move |ctx| KafkaSinkWriter::new(cfg2.clone(), m.clone(), ctx),
        )
    }
}

/// `stream.sink_to_kafka(sink)`: the same as [`KafkaSink::add_to`].
pub trait KafkaSinkExt<T: Data> {
    fn sink_to_kafka(&self, sink: KafkaSink<T>) -> Sink<Arc<KafkaSinkMetrics>>;
}

impl<T: Data> KafkaSinkExt<T> for DataStream<T> {
    fn sink_to_kafka(&self, sink: KafkaSink<T>) -> Sink<Arc<KafkaSinkMetrics>> {
        sink.add_to(self)
    }
}
