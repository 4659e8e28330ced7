//! What the test broker (tansu 0.6) and librdkafka do with transactions: the facts the Kafka
//! sink's design and its tests rest on. If tansu starts sending aborted-transaction lists,
//! `librdkafka_read_committed_shows_aborted_records_on_tansu` fails: then librdkafka's own
//! `read_committed` consumer can replace `sluice_testkit::kafka_read` in the tests.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Message, Offset, TopicPartitionList};
use sluice_testkit::kafka_read::{partition_count, read_committed, ReadUntil};
use sluice_testkit::KafkaBroker;

const T: Duration = Duration::from_secs(10);

fn producer(b: &str, id: &str) -> ThreadedProducer<DefaultProducerContext> {
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", b)
        .set("transactional.id", id)
        .create()
        .unwrap();
    p.init_transactions(T).unwrap();
    p
}

fn send(p: &ThreadedProducer<DefaultProducerContext>, values: &[&str]) {
    p.begin_transaction().unwrap();
    for v in values {
        p.send(BaseRecord::<str, str>::to("tx").key("k").payload(*v))
            .unwrap();
    }
    p.flush(T).unwrap();
}

/// Every value librdkafka's `read_committed` consumer delivers (all partitions, until EOF on
/// each and 500 ms without news).
fn librdkafka_read_committed(b: &str) -> Vec<String> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", b)
        .set("group.id", "probe")
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partition_count(b, "tx").unwrap() {
        tpl.add_partition_offset("tx", p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let (mut out, mut last) = (Vec::new(), Instant::now());
    while last.elapsed() < Duration::from_millis(1500) {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            out.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).to_string());
            last = Instant::now();
        }
    }
    out
}

#[test]
fn librdkafka_read_committed_shows_aborted_records_on_tansu() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let p = producer(&b, "probe-1");
    send(&p, &["committed-1", "committed-2"]);
    p.commit_transaction(T).unwrap();
    send(&p, &["aborted-1", "aborted-2"]);
    p.abort_transaction(T).unwrap();
    // A pending transaction, then a new producer with the same transactional.id: librdkafka's
    // init_transactions fences the old producer and the broker aborts its transaction.
    send(&p, &["fenced-1", "fenced-2"]);
    let p2 = producer(&b, "probe-1");
    assert!(
        p.commit_transaction(Duration::from_secs(2)).is_err(),
        "the fenced producer cannot commit"
    );
    drop(p2);

    // The markers are there: a reader that applies them sees the committed records only.
    let r = read_committed(&b, "tx", ReadUntil::default()).unwrap();
    let got: Vec<String> = r
        .records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string())
        .collect();
    assert_eq!(got, ["committed-1", "committed-2"]);
    assert_eq!((r.aborted, r.pending), (4, 0));
    assert_eq!((r.commit_markers, r.abort_markers), (1, 2));

    // tansu's Fetch response lists no aborted transactions, so librdkafka keeps them.
    let mut seen = librdkafka_read_committed(&b);
    seen.sort();
    assert_eq!(
        seen,
        [
            "aborted-1",
            "aborted-2",
            "committed-1",
            "committed-2",
            "fenced-1",
            "fenced-2"
        ]
    );
}

#[test]
fn an_open_transaction_holds_back_read_committed_on_tansu() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let open = producer(&b, "probe-open");
    send(&open, &["open-1"]);
    let later = producer(&b, "probe-later");
    send(&later, &["later-1"]);
    later.commit_transaction(T).unwrap();
    // The committed record behind the open one waits (Kafka's last stable offset; tansu's
    // read_committed fetch stops there too).
    let r = read_committed(
        &b,
        "tx",
        ReadUntil {
            settle: Duration::from_millis(300),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(r.records.is_empty(), "{r:?}");
    assert_eq!((r.pending, r.behind_open), (1, 1));
    // Fencing the open transaction's id aborts it and releases the rest.
    drop(producer(&b, "probe-open"));
    let r = read_committed(&b, "tx", ReadUntil::default()).unwrap();
    assert_eq!(r.records.len(), 1);
    assert_eq!(r.aborted, 1);
}
