//! Exactly-once bookkeeping: transactional ids (Flink's `TransactionalIdFactory`), the
//! pre-committed transactions a checkpoint names, the producers this process still holds
//! across an in-process restart, and the abort of lingering transactions at start-up.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::producer::Producer;

use super::config::KafkaSinkConfig;
use super::error::KafkaSinkError;
use super::metrics::{KafkaSinkMetrics, TaskGauges};
use super::producer::{producer, SinkProducer};

/// `<prefix>-<subtask>-<checkpoint offset>`, as Flink's `TransactionalIdFactory`.
pub fn transactional_id(prefix: &str, subtask: usize, checkpoint_offset: u64) -> String {
    format!("{prefix}-{subtask}-{checkpoint_offset}")
}

/// One Kafka transaction of a sink subtask.
pub(crate) struct Txn {
    /// The barrier that pre-committed it (0 while it is still open).
    pub checkpoint_id: u64,
    pub id: String,
    pub producer: SinkProducer,
    pub records: u64,
}

/// What a checkpoint holds of a pre-committed transaction (Flink's `KafkaCommittable`, less
/// the producer id and epoch librdkafka cannot resume from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Committable {
    pub checkpoint_id: u64,
    pub transactional_id: String,
    pub records: u64,
}

pub(crate) fn encode(pending: &[Txn]) -> Vec<u8> {
    let v: Vec<serde_json::Value> = pending
        .iter()
        .map(|t| serde_json::json!({"checkpoint": t.checkpoint_id, "id": t.id, "records": t.records}))
        .collect();
    serde_json::to_vec(&v).unwrap_or_default()
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Committable>, KafkaSinkError> {
    let bad = |d: String| KafkaSinkError::client("restoring the sink's checkpoint state", d);
    let v: Vec<serde_json::Value> =
        serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    v.iter()
        .map(|e| {
            Ok(Committable {
                checkpoint_id: e["checkpoint"]
                    .as_u64()
                    .ok_or_else(|| bad(format!("{e}")))?,
                transactional_id: e["id"].as_str().ok_or_else(|| bad(format!("{e}")))?.into(),
                records: e["records"].as_u64().unwrap_or(0),
            })
        })
        .collect()
}

/// Pre-committed transactions whose sink ended (failed or cancelled) while their checkpoint
/// was pending, by transactional id. A restart in the same process commits them through the
/// very producer that opened them, which is the only way librdkafka can finish another
/// attempt's transaction. A new process starts with this empty (the crash window).
static PARKED: Mutex<BTreeMap<String, Txn>> = Mutex::new(BTreeMap::new());

fn parked() -> std::sync::MutexGuard<'static, BTreeMap<String, Txn>> {
    PARKED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Transactional ids this process committed (the latest [`COMMITTED_KEPT`]): a restored
/// checkpoint always names the transaction its own barrier pre-committed, usually committed
/// since; only one this process neither committed nor holds is in doubt.
static COMMITTED: Mutex<(BTreeSet<String>, VecDeque<String>)> =
    Mutex::new((BTreeSet::new(), VecDeque::new()));
const COMMITTED_KEPT: usize = 16_384;

fn committed_here(id: &str) {
    let mut c = COMMITTED.lock().unwrap_or_else(|p| p.into_inner());
    if c.0.insert(id.to_string()) {
        c.1.push_back(id.to_string());
        if c.1.len() > COMMITTED_KEPT {
            if let Some(old) = c.1.pop_front() {
                c.0.remove(&old);
            }
        }
    }
}

/// Whether this process committed transactional id `id` (recently).
pub(crate) fn was_committed_here(id: &str) -> bool {
    COMMITTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .0
        .contains(id)
}

pub(crate) fn park(txn: Txn) {
    parked().insert(txn.id.clone(), txn);
}

pub(crate) fn take_parked(id: &str) -> Option<Txn> {
    parked().remove(id)
}

/// Drops the parked transactions of `subtasks` under `prefix` (they are fenced next).
pub(crate) fn drop_parked(prefix: &str, subtasks: &[usize]) {
    let mut p = parked();
    let doomed: Vec<String> = p
        .keys()
        .filter(|id| {
            id.strip_prefix(prefix)
                .and_then(|r| r.strip_prefix('-'))
                .and_then(|r| r.split('-').next())
                .and_then(|s| s.parse::<usize>().ok())
                .is_some_and(|s| subtasks.contains(&s))
        })
        .cloned()
        .collect();
    for id in doomed {
        p.remove(&id);
    }
}

/// A producer with transactional id `id`, initialised (which fences and aborts whatever an
/// earlier producer with that id left open) and inside a new transaction.
pub(crate) fn open<T>(
    cfg: &KafkaSinkConfig<T>,
    metrics: &Arc<KafkaSinkMetrics>,
    gauges: &TaskGauges,
    id: &str,
) -> Result<SinkProducer, KafkaSinkError> {
    let p = producer(cfg, metrics, gauges, Some(id))?;
    p.init_transactions(cfg.flush_timeout)
        .map_err(|e| KafkaSinkError::client(format!("initialising transactional id {id}"), e))?;
    p.begin_transaction()
        .map_err(|e| KafkaSinkError::client(format!("beginning a transaction of {id}"), e))?;
    Ok(p)
}

/// Commits a pre-committed transaction, timing it.
pub(crate) fn commit(
    txn: &Txn,
    timeout: Duration,
    metrics: &KafkaSinkMetrics,
    gauges: &TaskGauges,
) -> Result<(), KafkaSinkError> {
    let t0 = Instant::now();
    txn.producer.commit_transaction(timeout).map_err(|e| {
        KafkaSinkError::client(
            format!(
                "committing transaction {} of checkpoint {}",
                txn.id, txn.checkpoint_id
            ),
            e,
        )
    })?;
    let ns = t0.elapsed().as_nanos() as u64;
    metrics.commit_took(ns);
    gauges.committed(ns);
    committed_here(&txn.id);
    Ok(())
}

/// Initialises every id in `ids` once, aborting any transaction left open under it (Flink's
/// lingering-transaction abort). Runs up to 8 at a time: each is a broker round trip.
pub(crate) fn fence<T>(
    cfg: &KafkaSinkConfig<T>,
    metrics: &Arc<KafkaSinkMetrics>,
    ids: &[String],
) -> Result<(), KafkaSinkError> {
    for chunk in ids.chunks(8) {
        let results: Vec<Result<(), KafkaSinkError>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|id| {
                    s.spawn(move || {
                        let p = producer(cfg, metrics, &TaskGauges::default(), Some(id))?;
                        p.init_transactions(cfg.flush_timeout).map_err(|e| {
                            KafkaSinkError::client(
                                format!("aborting lingering transaction {id}"),
                                e,
                            )
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(KafkaSinkError::client(
                            "aborting lingering transactions",
                            "panic",
                        ))
                    })
                })
                .collect()
        });
        for r in results {
            r?;
            metrics.transactional_ids_aborted.fetch_add(1, Relaxed);
        }
    }
    Ok(())
}
