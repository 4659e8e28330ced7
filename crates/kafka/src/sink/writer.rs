//! The sink's per-subtask collector: sends records, flushes or pre-commits at barriers,
//! commits transactions whose checkpoint completed (exactly-once), restores.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use sluice_runtime::checkpoint::CheckpointHub;
use sluice_runtime::{TaskMetrics, TaskServices};
use sluice_types::{Collector, ControlEvent, OperatorContext, OperatorError, ServicesHandle};

use super::config::{DeliveryGuarantee, KafkaSinkConfig, SinkPartitioner};
use super::fault;
use super::metrics::{KafkaSinkMetrics, TaskGauges};
use super::producer::{check_topic, flush, producer, send, SinkProducer};
use super::transactions::{self as txns, transactional_id, Txn};
use crate::KafkaError;

enum Mode {
    AtLeastOnce(SinkProducer),
    ExactlyOnce {
        /// The open transaction (opened at the first record after a barrier).
        current: Option<Txn>,
        /// Pre-committed transactions waiting for their checkpoint, oldest first.
        pending: Vec<Txn>,
        /// The checkpoint offset naming the next transaction: last barrier seen + 1.
        next_offset: u64,
        /// The next transaction's producer, being initialised on a thread of its own (a
        /// fresh producer takes a broker round trip or two; the task does not wait for it
        /// unless a record arrives first).
        next: Option<Opening>,
    },
}

/// A transactional producer being created and initialised in the background.
struct Opening {
    id: String,
    handle: std::thread::JoinHandle<Result<Txn, KafkaError>>,
}

impl Opening {
    fn start<T: 'static>(
        cfg: &Arc<KafkaSinkConfig<T>>,
        metrics: &Arc<KafkaSinkMetrics>,
        gauges: &TaskGauges,
        id: String,
    ) -> Option<Opening> {
        let (cfg, metrics, gauges, id2) =
            (cfg.clone(), metrics.clone(), gauges.clone(), id.clone());
        std::thread::Builder::new()
            .name("kafka-sink-open".into())
            .spawn(move || txns::open(&cfg, &metrics, &gauges, &id2))
            .ok()
            .map(|handle| Opening { id, handle })
    }

    fn finish(self) -> Result<Txn, KafkaError> {
        self.handle.join().unwrap_or_else(|_| {
            Err(KafkaError::sink(
                format!("opening transaction {}", self.id),
                "the opening thread panicked",
            ))
        })
    }
}

/// One subtask of a Kafka sink.
pub struct KafkaSinkWriter<T> {
    cfg: Arc<KafkaSinkConfig<T>>,
    subtask: usize,
    operator_id: String,
    services: ServicesHandle,
    hub: Option<Arc<CheckpointHub>>,
    metrics: Arc<KafkaSinkMetrics>,
    task_metrics: Option<Arc<TaskMetrics>>,
    gauges: TaskGauges,
    mode: Mode,
    /// The newest completed checkpoint the task told this sink of
    /// (`ControlEvent::CheckpointComplete`): what it may commit up to.
    completed: u64,
    /// Where records go: `None` for Kafka's default partitioner, else the partition count
    /// and the next partition (fixed or round-robin).
    placement: Option<(i32, i32)>,
}

impl<T: 'static> KafkaSinkWriter<T> {
    /// The writer of subtask `ctx.subtask_index`; exactly-once restores first (commits what the
    /// restored checkpoint names, aborts lingering transactions of earlier attempts).
    pub(crate) fn new(
        cfg: Arc<KafkaSinkConfig<T>>,
        metrics: Arc<KafkaSinkMetrics>,
        ctx: &OperatorContext,
    ) -> Result<Self, OperatorError> {
        let services = TaskServices::of(ctx);
        let hub = services.and_then(|s| s.hub().cloned());
        let gauges = TaskGauges::of(services.map(|s| &**s.metrics()));
        let placement = match cfg.partitioner {
            SinkPartitioner::Default => None,
            SinkPartitioner::Fixed | SinkPartitioner::RoundRobin => {
                let n = check_topic(&cfg)?.max(1) as i32;
                Some((n, (ctx.subtask_index as i32) % n))
            }
        };
        let mode = match cfg.guarantee {
            DeliveryGuarantee::AtLeastOnce | DeliveryGuarantee::None => {
                Mode::AtLeastOnce(producer(&cfg, &metrics, &gauges, None)?)
            }
            DeliveryGuarantee::ExactlyOnce => {
                let next_offset = restore(&cfg, &metrics, &gauges, ctx, hub.as_deref())?;
                let id =
                    transactional_id(&cfg.transactional_id_prefix, ctx.subtask_index, next_offset);
                Mode::ExactlyOnce {
                    current: None,
                    pending: Vec::new(),
                    next_offset,
                    next: Opening::start(&cfg, &metrics, &gauges, id),
                }
            }
        };
        Ok(KafkaSinkWriter {
            subtask: ctx.subtask_index,
            operator_id: ctx.operator_id.clone(),
            services: ctx.services.clone(),
            task_metrics: services.map(|s| s.metrics().clone()),
            gauges,
            hub,
            metrics,
            mode,
            completed: 0,
            placement,
            cfg,
        })
    }

    fn topic(&self) -> &str {
        &self.cfg.topic
    }

    /// Commits the pre-committed transactions whose checkpoint completed.
    fn commit_due(&mut self) -> Result<(), KafkaError> {
        let Mode::ExactlyOnce { pending, .. } = &mut self.mode else {
            return Ok(());
        };
        let done = self.completed;
        while pending.first().is_some_and(|t| t.checkpoint_id <= done) {
            let t = pending.remove(0);
            fault::before_commit(&t.id, t.checkpoint_id, t.records);
            if let Err(e) = txns::commit(&t, self.cfg.flush_timeout, &self.metrics, &self.gauges) {
                // Kept for a restart in this process to retry through the same producer.
                pending.insert(0, t);
                return Err(e);
            }
        }
        Ok(())
    }

    /// The barrier: at-least-once flushes; exactly-once pre-commits the open transaction and
    /// snapshots the pending ones.
    fn barrier(&mut self, checkpoint_id: u64) -> Result<(), KafkaError> {
        self.commit_due()?;
        let topic = self.cfg.topic.clone();
        match &mut self.mode {
            // Flink's NONE: a checkpoint does not wait for deliveries.
            Mode::AtLeastOnce(_) if self.cfg.guarantee == DeliveryGuarantee::None => Ok(()),
            Mode::AtLeastOnce(p) => flush(p, &topic, self.cfg.flush_timeout),
            Mode::ExactlyOnce {
                current,
                pending,
                next_offset,
                next,
            } => {
                if let Some(mut t) = current.take() {
                    flush(&t.producer, &topic, self.cfg.flush_timeout)?;
                    txns::refresh_pid(&mut t);
                    t.checkpoint_id = checkpoint_id;
                    pending.push(t);
                }
                *next_offset = checkpoint_id + 1;
                // (An opening not used yet, no record since the last barrier, is kept: ids
                // only need to be unique, and offsets only grow.)
                if next.is_none() {
                    let id = transactional_id(
                        &self.cfg.transactional_id_prefix,
                        self.subtask,
                        *next_offset,
                    );
                    *next = Opening::start(&self.cfg, &self.metrics, &self.gauges, id);
                }
                if let Some(s) = self.services.get::<TaskServices>() {
                    s.record(
                        &self.operator_id,
                        txns::encode(pending, next.as_ref().map(|o| o.id.as_str())),
                    );
                }
                Ok(())
            }
        }
    }

    fn end_of_input(&mut self) -> Result<(), KafkaError> {
        self.commit_due()?;
        let topic = self.cfg.topic.clone();
        let timeout = self.cfg.flush_timeout;
        match &mut self.mode {
            Mode::AtLeastOnce(p) => flush(p, &topic, timeout),
            Mode::ExactlyOnce {
                current,
                pending,
                next,
                ..
            } => {
                if let Some(mut t) = current.take() {
                    flush(&t.producer, &topic, timeout)?;
                    t.checkpoint_id = u64::MAX;
                    pending.push(t);
                }
                // The transaction opened for records that never came.
                if let Some(o) = next.take() {
                    txns::abort(&o.finish()?, timeout)?;
                }
                let last = FinalTxns(std::mem::take(pending));
                let (metrics, gauges) = (self.metrics.clone(), self.gauges.clone());
                // Committed once every task finished (a failure before restarts from the last
                // checkpoint; if that names one of these, the restore commits it: unrun, the
                // closure parks them when the job master drops it).
                let publish = move || -> Result<(), OperatorError> {
                    let mut last = last;
                    while let Some(t) = last.0.first() {
                        fault::before_commit(&t.id, t.checkpoint_id, t.records);
                        txns::commit(t, timeout, &metrics, &gauges)?;
                        last.0.remove(0);
                    }
                    Ok(())
                };
                match &self.hub {
                    Some(h) => h.register_final_commit(Box::new(publish)),
                    None => publish().map_err(|e| KafkaError::sink("final commit", e))?,
                }
                Ok(())
            }
        }
    }
}

/// Exactly-once start-up. Returns the checkpoint offset of the first transaction.
fn restore<T>(
    cfg: &KafkaSinkConfig<T>,
    metrics: &Arc<KafkaSinkMetrics>,
    gauges: &TaskGauges,
    ctx: &OperatorContext,
    hub: Option<&CheckpointHub>,
) -> Result<u64, OperatorError> {
    let restored = sluice_runtime::services::restored_parts(ctx);
    let base = restored
        .as_ref()
        .map(|r| r.checkpoint_id)
        .or_else(|| hub.and_then(|h| h.restore_point()).map(|c| c.id))
        .unwrap_or(0);
    let (me, p) = (ctx.subtask_index, ctx.parallelism.max(1));
    let old_p = restored.as_ref().map_or(p, |r| r.parallelism.max(1));
    // This subtask also cleans up after old subtasks that no longer exist (Flink's rule).
    let owned: Vec<usize> = (0..old_p.max(p)).filter(|i| i % p == me).collect();
    let mut to_fence = Vec::new();
    let mut named_open = Vec::new();
    for (old, bytes) in restored.iter().flat_map(|r| r.parts.iter()) {
        if old % p != me {
            continue;
        }
        let state = txns::decode(bytes)?;
        // The transaction opened for records after the checkpoint, whatever its offset.
        named_open.extend(state.next.filter(|id| !txns::was_committed_here(id)));
        for c in state.pending {
            if txns::was_committed_here(&c.transactional_id) {
                continue;
            }
            match txns::take_parked(&c.transactional_id) {
                Some(t) => {
                    txns::commit(&t, cfg.flush_timeout, metrics, gauges)?;
                    metrics.transactions_resumed.fetch_add(1, Relaxed);
                }
                // Not committed by this process nor held by it: an earlier process's. It
                // committed before the crash or not; committing it (again) by its producer id
                // and epoch settles it either way (crate docs, "After a crash").
                None => txns::recover(cfg, metrics, &c)?,
            }
        }
    }
    // Every other transaction an earlier attempt may have left open. Those of this process:
    // aborted through the producer it parked (one round trip), or fenced if it has none.
    let mut aborted = std::collections::BTreeSet::new();
    for t in txns::take_parked_of(&cfg.transactional_id_prefix, &owned) {
        match txns::abort(&t, cfg.flush_timeout) {
            Ok(()) => {
                metrics.transactional_ids_aborted.fetch_add(1, Relaxed);
                aborted.insert(t.id.clone());
            }
            Err(_) => to_fence.push(t.id.clone()),
        }
    }
    to_fence.extend(named_open.into_iter().filter(|id| !aborted.contains(id)));
    to_fence.extend(txns::open_ids_of(&cfg.transactional_id_prefix, &owned));
    // Those of an earlier process (first start-up here): Flink's probe, offsets after the
    // restored checkpoint up to the last barrier known plus the probe depth (librdkafka cannot
    // tell a never-used id, Flink's stop condition).
    let last = hub.map_or(0, |h| h.last_triggered()).max(base);
    for o in &owned {
        if txns::first_in_process(&cfg.transactional_id_prefix, *o) {
            for k in base + 1..=last + 1 + cfg.abort_probe {
                to_fence.push(transactional_id(&cfg.transactional_id_prefix, *o, k));
            }
        }
    }
    to_fence.sort();
    to_fence.dedup();
    txns::fence(cfg, metrics, &to_fence)?;
    Ok(base + 1)
}

impl<T: Send + 'static> Collector<T> for KafkaSinkWriter<T> {
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        let (key, value) =
            self.cfg
                .serializer
                .serialize(&record)
                .map_err(|detail| KafkaError::Serialize {
                    topic: self.topic().to_string(),
                    detail,
                })?;
        let bytes = (value.len() + key.as_ref().map_or(0, Vec::len)) as u64;
        let timeout = self.cfg.flush_timeout;
        let partition = self.placement.as_mut().map(|(n, next)| {
            let p = *next;
            if self.cfg.partitioner == SinkPartitioner::RoundRobin {
                *next = (*next + 1) % *n;
            }
            p
        });
        match &mut self.mode {
            Mode::AtLeastOnce(p) => send(
                p,
                &self.cfg.topic,
                key.as_deref(),
                &value,
                partition,
                timeout,
            )?,
            Mode::ExactlyOnce {
                current,
                next_offset,
                next,
                ..
            } => {
                let t = match current {
                    Some(t) => t,
                    None => current.insert(match next.take() {
                        Some(o) => o.finish()?,
                        None => {
                            let id = transactional_id(
                                &self.cfg.transactional_id_prefix,
                                self.subtask,
                                *next_offset,
                            );
                            txns::open(&self.cfg, &self.metrics, &self.gauges, &id)?
                        }
                    }),
                };
                send(
                    &t.producer,
                    &self.cfg.topic,
                    key.as_deref(),
                    &value,
                    partition,
                    timeout,
                )?;
                t.records += 1;
            }
        }
        self.metrics.records_out.fetch_add(1, Relaxed);
        self.metrics.bytes_out.fetch_add(bytes, Relaxed);
        if let Some(m) = &self.task_metrics {
            m.add_records_out(1);
            m.bytes_out.fetch_add(bytes, Relaxed);
        }
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            // Checkpoint `id` completed: commit the transactions pre-committed up to it.
            ControlEvent::CheckpointComplete(id) => {
                self.completed = self.completed.max(id);
                Ok(self.commit_due()?)
            }
            ControlEvent::Flush => Ok(()),
            ControlEvent::Barrier(b) => Ok(self.barrier(b.checkpoint_id)?),
            ControlEvent::EndOfInput => Ok(self.end_of_input()?),
            // Transactions follow checkpoints, not event time.
            ControlEvent::Watermark(_) | ControlEvent::Idleness(_) => Ok(()),
        }
    }
}

/// The transactions of a final commit; those it did not commit are parked when it is dropped
/// (a job that failed after this subtask ended).
struct FinalTxns(Vec<Txn>);

impl Drop for FinalTxns {
    fn drop(&mut self) {
        for t in self.0.drain(..) {
            txns::park(t);
        }
    }
}

impl<T> Drop for KafkaSinkWriter<T> {
    /// A subtask that ends without end of input (failure, cancel, stop-with-savepoint) first
    /// commits the transactions whose checkpoint completed meanwhile (after a stop with a
    /// savepoint, the savepoint's own: a restore in another process could not), then parks the
    /// rest: a restart in this process commits the pre-committed ones the restored checkpoint
    /// names and aborts the others (the open one included) through their own producers.
    fn drop(&mut self) {
        if let Mode::ExactlyOnce {
            pending,
            current,
            next,
            ..
        } = &mut self.mode
        {
            // The task told the sink of every completion before it ended (also on a cancel).
            let done = self.completed;
            let opened = next.take().and_then(|o| o.finish().ok());
            for t in pending.drain(..).chain(current.take()).chain(opened) {
                if t.checkpoint_id != 0 && t.checkpoint_id <= done {
                    fault::before_commit(&t.id, t.checkpoint_id, t.records);
                    if txns::commit(&t, self.cfg.flush_timeout, &self.metrics, &self.gauges).is_ok()
                    {
                        continue;
                    }
                }
                txns::park(t);
            }
        }
    }
}
