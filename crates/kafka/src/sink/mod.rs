//! The Kafka sink (`Sink: Kafka`): [`KafkaSink`] (built by [`KafkaSinkBuilder`]), added to a
//! stream with [`KafkaSink::add_to`] or [`KafkaSinkExt::sink_to_kafka`]; records become key and
//! value bytes through a [`Serializer`] (raw, UTF-8, JSON); keyed records are placed by Kafka's
//! default partitioner (murmur2, as Java clients) unless a [`SinkPartitioner`] says otherwise
//! (fixed per subtask, round-robin); figures in [`KafkaSinkMetrics`] (the sink's handle).
//!
//! # Guarantees
//!
//! - [`DeliveryGuarantee::None`]: records are flushed only at the end of the input.
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
//!   bounded job the last ones are committed once every task finished. Each pre-committed
//!   transaction is recorded in the checkpoint with its producer id and epoch (Flink's
//!   `KafkaCommittable`). On restore, the transactions the checkpoint names are committed:
//!   through their own producer if this process still holds it (a failed subtask parks its
//!   producers), else through the transaction coordinator by producer id and epoch (see
//!   "After a crash"). Every other transaction an earlier attempt left open is aborted:
//!   through its parked producer, or, at a subtask's first start-up in a process, by
//!   initialising every transactional id an earlier process may have used (Flink's
//!   lingering-transaction abort; librdkafka cannot tell a never-used id, Flink's stop
//!   condition, so the probe has a fixed depth: [`KafkaSinkBuilder::abort_probe`]). A process
//!   that died after more failed checkpoints in a row than that depth can leave a transaction
//!   open beyond it; `read_committed` consumers then wait at it until the broker's transaction
//!   timeout aborts it (`transaction.timeout.ms`: the flush timeout, at least 15 min).
//!
//! # After a crash: resuming by producer id and epoch
//!
//! Flink finishes a restored checkpoint's transaction by resuming it: it writes the stored
//! producer id and epoch into a new Java producer and commits. librdkafka has no such API
//! (its `init_transactions` with the same `transactional.id` bumps the epoch and *aborts* the
//! pending transaction), so the sink does the commit itself: [`coordinator`] sends Kafka's
//! `FindCoordinator` (key type transaction) and `EndTxn(committed = true)` with the recorded
//! producer id and epoch over a plain TCP connection. Committing a transaction that was
//! committed already is answered `NONE` (Kafka's retry rule; tansu too), so the restore does
//! not need to know whether the commit reached the broker before the crash.
//!
//! Where the producer id and epoch come from: librdkafka has no getter. Transactional
//! producers run with `debug=eos`, and librdkafka logs `Acquired PID{Id:<id>,Epoch:<epoch>}`
//! (facility `GETPID`, `rd_kafka_idemp_pid_update`) whenever an `InitProducerId` answer gives
//! it a producer id and epoch; the producer's [`rdkafka::client::ClientContext::log`] keeps
//! the latest. A transaction is opened only once that line arrived (else the opening fails,
//! naming it), and the pre-commit takes the latest one. `tests/sink_resume.rs` checks on tansu
//! that these are the ids the coordinator holds: an `EndTxn` with them commits the records,
//! again is harmless, and the id's next producer gets the same id with a higher epoch.
//!
//! So the SIGKILL between *checkpoint `n` completed (durable on disk)* and *the `EndTxn` of
//! its transactions reaching the coordinator* loses nothing: the restarted job restores `n`
//! and commits them (`tests/sink_crash_window.rs`: 0 lost, 0 duplicated). What remains:
//!
//! - A transaction the coordinator ended before the restore: Kafka aborts a transaction open
//!   longer than its `transaction.timeout.ms` (here the flush timeout, at least 15 min, the
//!   most a default broker allows; Flink uses 1 h) and bumps the epoch, so a process down
//!   longer than that loses the transactions of its last completed checkpoint whose commit
//!   had not been sent. The restore reports
//!   each (`PRODUCER_FENCED`/`INVALID_TXN_STATE`, an `error` event,
//!   [`KafkaSinkMetrics::unresumable_transactions`] / `unresumable_records`) and goes on, as
//!   Flink's committer does. tansu 0.6 has no such timeout; it closes the connection instead
//!   of answering a refused `EndTxn`, which the restore reports as an error (the job fails
//!   and retries rather than guess).
//! - The final commit of a bounded job is not covered by a checkpoint: if the process dies
//!   after every task finished and while the last transactions are being committed, the
//!   restart replays from the last checkpoint; subtasks whose final transaction was already
//!   committed write those records again (duplicates), the others' are aborted and written
//!   again. (Closing this needs a checkpoint after end of input, Flink's final checkpoint.)
//! - A checkpoint written by a version that recorded no producer id: its transactions are
//!   reported as unresumable (lost if their commit had not reached the broker).
//!
//! Restarts *inside* a process (a failed subtask) commit through the parked producer, as
//! before. Fault injection for the window (tests only, the `fault-injection` feature):
//! `fault.rs`.

mod config;
pub mod coordinator;
mod fault;
mod metrics;
mod producer;
mod serializer;
mod transactions;
mod writer;

use std::sync::Arc;

use sluice_datastream::{DataStream, Sink};
use sluice_types::Data;

pub use config::{DeliveryGuarantee, KafkaSinkBuilder, KafkaSinkConfig, SinkPartitioner};
#[cfg(feature = "fault-injection")]
pub use fault::{KILL_BEFORE_COMMIT_ENV, KILL_LINE};
pub use metrics::{
    KafkaSinkMetrics, COMMIT_LATENCY_MS, PENDING_DELIVERIES, TRANSACTIONS_COMMITTED,
};
pub use serializer::{KeyValue, Serializer};
pub use transactions::transactional_id;
pub use writer::KafkaSinkWriter;

/// A configured Kafka sink; add it to a stream with [`add_to`](Self::add_to). Cheap to clone
/// (the settings are shared).
pub struct KafkaSink<T> {
    config: Arc<KafkaSinkConfig<T>>,
}

impl<T> Clone for KafkaSink<T> {
    fn clone(&self) -> Self {
        KafkaSink {
            config: self.config.clone(),
        }
    }
}

impl<T: Data> KafkaSink<T> {
    /// A builder: bootstrap servers, topic and serializer are required.
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
    /// Adds `sink` as this stream's sink and returns its metrics.
    fn sink_to_kafka(&self, sink: KafkaSink<T>) -> Sink<Arc<KafkaSinkMetrics>>;
}

impl<T: Data> KafkaSinkExt<T> for DataStream<T> {
    fn sink_to_kafka(&self, sink: KafkaSink<T>) -> Sink<Arc<KafkaSinkMetrics>> {
        sink.add_to(self)
    }
}
