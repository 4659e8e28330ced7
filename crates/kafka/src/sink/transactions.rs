//! Exactly-once bookkeeping: transactional ids (Flink's `TransactionalIdFactory`), the
//! pre-committed transactions a checkpoint names, the producers this process still holds
//! across an in-process restart, and the abort of lingering transactions at start-up.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::producer::Producer;

use super::config::KafkaSinkConfig;
use super::coordinator::{self, EndTxnOutcome, ProducerTxn};
use super::metrics::{KafkaSinkMetrics, TaskGauges};
use super::producer::{producer, producer_id_of, SinkProducer};
use crate::KafkaError;

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
    /// The producer id and epoch librdkafka acquired for it (refreshed at pre-commit).
    pub pid: (i64, i16),
}

/// What a checkpoint holds of a pre-committed transaction (Flink's `KafkaCommittable`):
/// enough for another process to commit it through the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Committable {
    pub checkpoint_id: u64,
    pub transactional_id: String,
    pub records: u64,
    /// `(producer id, epoch)`; `None` in a checkpoint of a version that did not record them.
    pub pid: Option<(i64, i16)>,
}

/// A sink subtask's checkpoint state: the pre-committed transactions (oldest first) and the
/// transactional id of the transaction already opened for records after the barrier. That id
/// can be older than the barrier (an opening no record used yet is kept across barriers), so
/// the restore's probe of ids after the checkpoint would miss it: the restore aborts it by
/// name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SinkState {
    pub pending: Vec<Committable>,
    pub next: Option<String>,
}

pub(crate) fn encode(pending: &[Txn], next: Option<&str>) -> Vec<u8> {
    let v: Vec<serde_json::Value> = pending
        .iter()
        .map(|t| {
            serde_json::json!({"checkpoint": t.checkpoint_id, "id": t.id, "records": t.records,
                "producer_id": t.pid.0, "producer_epoch": t.pid.1})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"pending": v, "next": next})).unwrap_or_default()
}

/// Reads [`encode`]'s state, or the bare array of committables earlier versions wrote.
pub(crate) fn decode(bytes: &[u8]) -> Result<SinkState, KafkaError> {
    let bad = |d: String| KafkaError::sink("restoring the sink's checkpoint state", d);
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let (list, next) = match &v {
        serde_json::Value::Array(a) => (a.as_slice(), None),
        serde_json::Value::Object(o) => (
            o.get("pending")
                .and_then(|p| p.as_array())
                .map_or(&[][..], |a| a.as_slice()),
            o.get("next").and_then(|n| n.as_str()).map(str::to_string),
        ),
        _ => return Err(bad(format!("{v}"))),
    };
    let pending = list
        .iter()
        .map(|e| {
            Ok(Committable {
                checkpoint_id: e["checkpoint"]
                    .as_u64()
                    .ok_or_else(|| bad(format!("{e}")))?,
                transactional_id: e["id"].as_str().ok_or_else(|| bad(format!("{e}")))?.into(),
                records: e["records"].as_u64().unwrap_or(0),
                pid: match (e["producer_id"].as_i64(), e["producer_epoch"].as_i64()) {
                    (Some(id), Some(epoch)) => {
                        Some((id, i16::try_from(epoch).map_err(|_| bad(format!("{e}")))?))
                    }
                    _ => None,
                },
            })
        })
        .collect::<Result<Vec<_>, KafkaError>>()?;
    Ok(SinkState { pending, next })
}

/// Pre-committed transactions whose sink ended (failed or cancelled) while their checkpoint
/// was pending, by transactional id. A restart in the same process commits them through the
/// very producer that opened them (librdkafka's own commit, one round trip). A new process
/// starts with this empty and commits through the coordinator instead ([`recover`]).
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

/// Whether `id` is `<prefix>-<one of subtasks>-<offset>`.
fn of_subtasks(id: &str, prefix: &str, subtasks: &[usize]) -> bool {
    id.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| r.split('-').next())
        .and_then(|s| s.parse::<usize>().ok())
        .is_some_and(|s| subtasks.contains(&s))
}

/// Takes every parked transaction of `subtasks` under `prefix`.
pub(crate) fn take_parked_of(prefix: &str, subtasks: &[usize]) -> Vec<Txn> {
    let mut p = parked();
    let ids: Vec<String> = p
        .keys()
        .filter(|id| of_subtasks(id, prefix, subtasks))
        .cloned()
        .collect();
    ids.iter().filter_map(|id| p.remove(id)).collect()
}

/// Transactional ids this process opened and has neither committed nor aborted.
static OPEN_IDS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn open_ids() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    OPEN_IDS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The ids of `subtasks` under `prefix` this process opened and did not finish.
pub(crate) fn open_ids_of(prefix: &str, subtasks: &[usize]) -> Vec<String> {
    open_ids()
        .iter()
        .filter(|id| of_subtasks(id, prefix, subtasks))
        .cloned()
        .collect()
}

/// `(prefix, subtask)` pairs whose lingering transactions of earlier processes were probed.
static PROBED: Mutex<BTreeSet<(String, usize)>> = Mutex::new(BTreeSet::new());

/// Whether this is the first start-up of subtask `subtask` under `prefix` in this process:
/// only then can an earlier process have left transactions this one knows nothing of.
pub(crate) fn first_in_process(prefix: &str, subtask: usize) -> bool {
    PROBED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert((prefix.to_string(), subtask))
}

/// Aborts a parked transaction through its own producer (one round trip, unlike a fence).
pub(crate) fn abort(txn: &Txn, timeout: Duration) -> Result<(), KafkaError> {
    txn.producer
        .abort_transaction(timeout)
        .map_err(|e| KafkaError::sink(format!("aborting transaction {}", txn.id), e))?;
    open_ids().remove(&txn.id);
    Ok(())
}

/// How long to wait for librdkafka's `Acquired PID` log line after `init_transactions`
/// returned (it is served by the producer's polling thread, usually within microseconds).
const PID_LOG_WAIT: Duration = Duration::from_secs(10);

/// A new transaction under transactional id `id`: its producer initialised (which fences and
/// aborts whatever an earlier producer with that id left open) and inside the transaction,
/// with the producer id and epoch it acquired.
pub(crate) fn open<T>(
    cfg: &KafkaSinkConfig<T>,
    metrics: &Arc<KafkaSinkMetrics>,
    gauges: &TaskGauges,
    id: &str,
) -> Result<Txn, KafkaError> {
    let p = producer(cfg, metrics, gauges, Some(id))?;
    p.init_transactions(cfg.flush_timeout)
        .map_err(|e| KafkaError::sink(format!("initialising transactional id {id}"), e))?;
    let pid = producer_id_of(&p, PID_LOG_WAIT).ok_or_else(|| {
        KafkaError::sink(
            format!("initialising transactional id {id}"),
            "librdkafka logged no 'Acquired PID{Id:..,Epoch:..}' line (debug=eos): without its \
             producer id and epoch the transaction could not be committed after a crash",
        )
    })?;
    p.begin_transaction()
        .map_err(|e| KafkaError::sink(format!("beginning a transaction of {id}"), e))?;
    open_ids().insert(id.to_string());
    Ok(Txn {
        checkpoint_id: 0,
        id: id.to_string(),
        producer: p,
        records: 0,
        pid,
    })
}

/// Pre-commit bookkeeping: the latest producer id and epoch of `t` (librdkafka bumps the
/// epoch only after an abortable error, which fails the transaction anyway).
pub(crate) fn refresh_pid(t: &mut Txn) {
    if let Some(pid) = producer_id_of(&t.producer, Duration::ZERO) {
        t.pid = pid;
    }
}

/// Commits a transaction of an earlier process that the restored checkpoint names, through
/// its coordinator by producer id and epoch ([`coordinator`]); counted and reported.
pub(crate) fn recover<T>(
    cfg: &KafkaSinkConfig<T>,
    metrics: &KafkaSinkMetrics,
    c: &Committable,
) -> Result<(), KafkaError> {
    let lost = |why: String| {
        metrics.unresumable_transactions.fetch_add(1, Relaxed);
        metrics.unresumable_records.fetch_add(c.records, Relaxed);
        tracing::error!(
            transactional_id = %c.transactional_id,
            checkpoint = c.checkpoint_id,
            records = c.records,
            "Kafka sink: checkpoint {} names transaction {} ({} records) that cannot be \
             committed: {why}; its records are lost",
            c.checkpoint_id, c.transactional_id, c.records
        );
    };
    let Some((producer_id, producer_epoch)) = c.pid else {
        lost("the checkpoint holds no producer id and epoch for it".into());
        return Ok(());
    };
    let txn = ProducerTxn {
        transactional_id: c.transactional_id.clone(),
        producer_id,
        producer_epoch,
    };
    match coordinator::commit_transaction(&cfg.bootstrap, &txn, cfg.flush_timeout)? {
        EndTxnOutcome::Committed => {
            metrics.transactions_recovered.fetch_add(1, Relaxed);
            metrics.recovered_records.fetch_add(c.records, Relaxed);
            committed_here(&c.transactional_id);
            tracing::info!(
                transactional_id = %c.transactional_id,
                checkpoint = c.checkpoint_id,
                records = c.records,
                producer_id,
                producer_epoch,
                "Kafka sink: committed transaction {} of checkpoint {} left by an earlier process",
                c.transactional_id,
                c.checkpoint_id
            );
        }
        other => lost(other.describe()),
    }
    Ok(())
}

/// Commits a pre-committed transaction, timing it.
pub(crate) fn commit(
    txn: &Txn,
    timeout: Duration,
    metrics: &KafkaSinkMetrics,
    gauges: &TaskGauges,
) -> Result<(), KafkaError> {
    let t0 = Instant::now();
    txn.producer.commit_transaction(timeout).map_err(|e| {
        KafkaError::sink(
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
    open_ids().remove(&txn.id);
    Ok(())
}

/// Initialises every id in `ids` once, aborting any transaction left open under it (Flink's
/// lingering-transaction abort). Runs up to 16 at a time: librdkafka takes ~0.6 s for one
/// against tansu (client start, coordinator lookup, InitProducerId and its retries).
pub(crate) fn fence<T>(
    cfg: &KafkaSinkConfig<T>,
    metrics: &Arc<KafkaSinkMetrics>,
    ids: &[String],
) -> Result<(), KafkaError> {
    for chunk in ids.chunks(16) {
        let results: Vec<Result<(), KafkaError>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|id| {
                    s.spawn(move || {
                        let p = producer(cfg, metrics, &TaskGauges::default(), Some(id))?;
                        p.init_transactions(cfg.flush_timeout).map_err(|e| {
                            KafkaError::sink(format!("aborting lingering transaction {id}"), e)
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(KafkaError::sink("aborting lingering transactions", "panic"))
                    })
                })
                .collect()
        });
        for (r, id) in results.into_iter().zip(chunk) {
            r?;
            open_ids().remove(id);
            metrics.transactional_ids_aborted.fetch_add(1, Relaxed);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_decodes_both_formats() {
        let old = br#"[{"checkpoint":3,"id":"p-0-3","records":7}]"#;
        let s = decode(old).unwrap();
        assert_eq!(s.next, None);
        assert_eq!(s.pending[0].pid, None);
        assert_eq!(s.pending[0].records, 7);
        let new = br#"{"pending":[{"checkpoint":4,"id":"p-0-2","records":9,"producer_id":12,"producer_epoch":3}],"next":"p-0-2x"}"#;
        let s = decode(new).unwrap();
        assert_eq!(s.next.as_deref(), Some("p-0-2x"));
        assert_eq!(s.pending[0].pid, Some((12, 3)));
        assert!(decode(b"7").is_err());
    }
}
