//! Resuming another producer's pre-committed transaction on the test broker (tansu 0.6): the
//! producer id and epoch librdkafka logs with `debug=eos` are the ones the coordinator holds
//! (an `EndTxn(commit)` with them commits the records), committing again is harmless, and a
//! transaction the id's next producer fenced is reported as fenced, not committed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::producer::ProducerContext;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use sluice_kafka::sink::coordinator::{
    commit_transaction, parse_acquired_pid, EndTxnOutcome, ProducerTxn,
};
use sluice_testkit::kafka_read::{read_committed, ReadUntil};
use sluice_testkit::KafkaBroker;

const T: Duration = Duration::from_secs(10);

/// Keeps the latest `Acquired PID{…}` of librdkafka's EOS debug log, as the sink's context.
#[derive(Clone, Default)]
struct PidLog(Arc<Mutex<Option<(i64, i16)>>>);

impl ClientContext for PidLog {
    fn log(&self, _: RDKafkaLogLevel, fac: &str, line: &str) {
        if fac == "GETPID" {
            if let Some(p) = parse_acquired_pid(line) {
                *self.0.lock().unwrap() = Some(p);
            }
        }
    }
}

impl ProducerContext for PidLog {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::producer::DeliveryResult<'_>, _: ()) {}
}

fn producer(b: &str, id: &str) -> (ThreadedProducer<PidLog>, PidLog) {
    let log = PidLog::default();
    let p: ThreadedProducer<PidLog> = ClientConfig::new()
        .set("bootstrap.servers", b)
        .set("transactional.id", id)
        .set("debug", "eos")
        .set_log_level(RDKafkaLogLevel::Debug)
        .create_with_context(log.clone())
        .unwrap();
    p.init_transactions(T).unwrap();
    (p, log)
}

fn pid(log: &PidLog) -> (i64, i16) {
    let start = Instant::now();
    loop {
        if let Some(p) = *log.0.lock().unwrap() {
            return p;
        }
        assert!(start.elapsed() < T, "no 'Acquired PID' log line");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Opens a transaction under `id`, writes `values` and flushes them (pre-commit); returns the
/// producer (to be "lost": never committed nor aborted by it) and its id/epoch.
fn pre_commit(b: &str, id: &str, values: &[&str]) -> (ThreadedProducer<PidLog>, ProducerTxn) {
    let (p, log) = producer(b, id);
    p.begin_transaction().unwrap();
    for v in values {
        p.send(BaseRecord::<str, str>::to("resume").key("k").payload(*v))
            .unwrap();
    }
    p.flush(T).unwrap();
    let (producer_id, producer_epoch) = pid(&log);
    (
        p,
        ProducerTxn {
            transactional_id: id.into(),
            producer_id,
            producer_epoch,
        },
    )
}

fn committed_values(b: &str) -> (Vec<String>, usize, usize) {
    let r = read_committed(b, "resume", ReadUntil::default()).unwrap();
    let mut v: Vec<String> = r
        .records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string())
        .collect();
    v.sort();
    (v, r.pending, r.aborted)
}

/// Kafka answers `PRODUCER_FENCED`; tansu 0.6 closes the connection instead of answering
/// (its storage's `txn_end` error is not turned into an `EndTxn` response): an error, never
/// `Committed`.
fn assert_fenced(r: Result<EndTxnOutcome, sluice_kafka::KafkaError>) {
    eprintln!("fenced transaction's commit: {r:?}");
    match r {
        Ok(EndTxnOutcome::Fenced(_)) => {}
        Err(e) => assert!(e.to_string().contains("EndTxn request"), "{e}"),
        Ok(o) => panic!("{o:?}: {}", o.describe()),
    }
}

#[test]
fn a_dead_producers_transaction_is_committed_by_its_id_and_epoch() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    // The topic, created by a plain producer's first record (tansu auto-creates it).
    let plain: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", &b)
        .create()
        .unwrap();
    plain
        .send(BaseRecord::<str, str>::to("resume").payload("plain"))
        .unwrap();
    plain.flush(T).unwrap();

    let (p, txn) = pre_commit(&b, "resume-1", &["a", "b", "c"]);
    // The producer "dies": it never sends EndTxn (its librdkafka handle is leaked, so not
    // even its destructor talks to the broker).
    std::mem::forget(p);
    assert_eq!(committed_values(&b).1, 3, "pending before the resume");

    let outcome = commit_transaction(&b, &txn, T).unwrap();
    assert_eq!(outcome, EndTxnOutcome::Committed, "{txn:?}");
    let (v, pending, aborted) = committed_values(&b);
    assert_eq!(v, ["a", "b", "c", "plain"]);
    assert_eq!((pending, aborted), (0, 0));

    // Again (a restore of the same checkpoint after another crash): harmless, no second marker.
    assert_eq!(
        commit_transaction(&b, &txn, T).unwrap(),
        EndTxnOutcome::Committed
    );
    let r = read_committed(&b, "resume", ReadUntil::default()).unwrap();
    assert_eq!((r.records.len(), r.commit_markers), (4, 1));

    // A wrong epoch (an older producer of the id) is fenced.
    let stale = ProducerTxn {
        producer_epoch: txn.producer_epoch - 1,
        ..txn.clone()
    };
    if txn.producer_epoch > 0 {
        assert_fenced(commit_transaction(&b, &stale, T));
    }

    // A transaction that the id's next producer fenced (init_transactions aborts it): the
    // commit reports it fenced, and its records stay aborted.
    let (p2, txn2) = pre_commit(&b, "resume-2", &["x", "y"]);
    std::mem::forget(p2);
    let (p3, log3) = producer(&b, "resume-2");
    let (id3, epoch3) = pid(&log3);
    assert_eq!(id3, txn2.producer_id, "same id, next epoch");
    assert!(
        epoch3 > txn2.producer_epoch,
        "{epoch3} > {}",
        txn2.producer_epoch
    );
    assert_fenced(commit_transaction(&b, &txn2, T));
    drop(p3);
    let (v, pending, aborted) = committed_values(&b);
    assert_eq!(v, ["a", "b", "c", "plain"]);
    assert_eq!((pending, aborted), (0, 2));

    // An id the coordinator never saw.
    let unknown = ProducerTxn {
        transactional_id: "never-used".into(),
        producer_id: 999,
        producer_epoch: 0,
    };
    let outcome = commit_transaction(&b, &unknown, T);
    eprintln!("unknown transactional id: {outcome:?}");
    assert!(
        matches!(outcome, Ok(EndTxnOutcome::Unknown(_)) | Err(_)),
        "{outcome:?}"
    );
}
