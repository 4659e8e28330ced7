//! The Kafka sink's start-up checks (unreachable broker, missing topic, topic creation) and
//! its placement of keyed records (Kafka's default partitioner, as Java clients), against a
//! real broker (tansu).

use std::time::{Duration, Instant};

use sluice_datastream::StreamEnv;
use sluice_kafka::{DeliveryGuarantee, KafkaSink, Serializer};
use sluice_testkit::kafka_read::{partition_count, read_committed, ReadUntil};
use sluice_testkit::{free_port, KafkaBroker};

fn sink_to(bootstrap: &str, topic: &str) -> sluice_kafka::sink::KafkaSinkBuilder<u64> {
    KafkaSink::builder()
        .bootstrap(bootstrap)
        .topic(topic)
        .serializer(Serializer::utf8(|i: &u64| {
            (Some(format!("key-{i}")), i.to_string())
        }))
}

fn launch_error(sink: KafkaSink<u64>) -> String {
    let env = StreamEnv::new();
    sink.add_to(&env.generate(10, |i| i));
    match env.launch() {
        Ok(_) => panic!("the job started"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_unreachable_broker_is_named_within_the_connect_timeout() {
    let port = free_port().unwrap();
    let addr = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    let e = launch_error(
        sink_to(&addr, "t")
            .connect_timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let took = t0.elapsed();
    eprintln!("after {took:?}: {e}");
    assert!(e.contains(&addr) && e.contains("unreachable"), "{e}");
    assert!(
        took < Duration::from_secs(2) + Duration::from_secs(5),
        "took {took:?}: {e}"
    );
}

#[test]
fn a_missing_topic_is_named_unless_the_sink_creates_it() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let e = launch_error(sink_to(&b, "no-such-topic").build().unwrap());
    eprintln!("{e}");
    assert!(e.contains("'no-such-topic' does not exist"), "{e}");
    assert!(e.contains(&b), "{e}");
    assert!(
        partition_count(&b, "no-such-topic").is_err(),
        "the check created nothing"
    );

    let env = StreamEnv::new();
    sink_to(&b, "made")
        .create_topic(3)
        .build()
        .unwrap()
        .add_to(&env.generate(10, |i| i));
    env.execute().unwrap();
    assert_eq!(partition_count(&b, "made").unwrap(), 3);
}

#[test]
fn bad_settings_are_refused_by_build() {
    let no_topic = KafkaSink::<u64>::builder().bootstrap("x:1").build();
    assert!(no_topic.is_err_and(|e| e.to_string().contains("topic is required")));
    let bad_name = sink_to("x:1", "a topic").build();
    assert!(bad_name.is_err_and(|e| e.to_string().contains("invalid topic 'a topic'")));
    let reserved = sink_to("x:1", "t")
        .property("transactional.id", "mine")
        .build();
    assert!(reserved.is_err_and(|e| e.to_string().contains("set by the sink itself")));
}

/// Kafka's `Utils.murmur2` (seed 0x9747b28c), the Java client's default partitioner hash.
fn murmur2(data: &[u8]) -> u32 {
    const M: u32 = 0x5bd1_e995;
    let mut h: u32 = 0x9747_b28c ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate().rev() {
            h ^= (*b as u32) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

#[test]
fn murmur2_matches_kafkas_utils_test_vectors() {
    for (s, want) in [
        ("21", -973_932_308),
        ("foobar", -790_332_482),
        ("a-little-bit-long-string", -985_981_536),
        ("a-little-bit-longer-string", -1_486_304_829),
        (
            "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
            -58_897_971,
        ),
        ("abc", 479_470_107),
    ] {
        assert_eq!(murmur2(s.as_bytes()) as i32, want, "{s}");
    }
}

#[test]
fn keyed_records_land_where_the_java_default_partitioner_puts_them() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let n = 500u64;
    for guarantee in [
        DeliveryGuarantee::AtLeastOnce,
        DeliveryGuarantee::ExactlyOnce,
    ] {
        let topic = format!("placed-{guarantee:?}").to_lowercase();
        let env = StreamEnv::new();
        env.set_parallelism(2);
        sink_to(&b, &topic)
            .create_topic(7)
            .guarantee(guarantee)
            .build()
            .unwrap()
            .add_to(&env.generate(n, |i| i));
        env.execute().unwrap();
        let back = read_committed(
            &b,
            &topic,
            ReadUntil {
                expect: n as usize,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(back.records.len() as u64, n);
        let mut used = std::collections::BTreeSet::new();
        for r in &back.records {
            let key = r.key.as_deref().unwrap();
            let java = (murmur2(key) & 0x7fff_ffff) % 7;
            assert_eq!(
                r.partition as u32,
                java,
                "key {}",
                String::from_utf8_lossy(key)
            );
            used.insert(r.partition);
        }
        assert_eq!(used.len(), 7, "{n} keys spread over every partition");
    }
}

#[test]
fn a_failed_delivery_fails_the_job_naming_the_topic() {
    let broker = KafkaBroker::start().unwrap();
    let b = broker.bootstrap();
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(50))
        .set_restart_strategy(sluice_datastream::RestartStrategy::NoRestart);
    let sink = sink_to(&b, "doomed")
        .create_topic(1)
        // Undelivered records expire after 1.5 s (librdkafka's message.timeout.ms).
        .property("message.timeout.ms", "1500")
        .build()
        .unwrap()
        .add_to(&env.generate(1_000_000, |i| i).map(|i: u64| {
            if i.is_multiple_of(100) {
                std::thread::sleep(Duration::from_millis(1));
            }
            i
        }));
    let metrics = sink.handle.clone();
    let handle = env.launch().unwrap();
    let t0 = Instant::now();
    while metrics.records_out() < 1_000 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the job never wrote"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(broker); // the broker goes away mid-job
    let e = match handle.wait() {
        Ok(_) => panic!("the job finished although its records could not be delivered"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("delivery to topic 'doomed' failed"), "{e}");
}
