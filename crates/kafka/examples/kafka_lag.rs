//! A throttled Kafka job whose lag grows, served on the REST API and dashboard:
//! `cargo run -p sluice-kafka --example kafka_lag -- [PORT] [SECONDS]` (defaults 8081, 60).
//! Starts a tansu broker (a dev-dependency: `sluice-testkit`), a producer thread writing
//! ~20,000 records/s over 2 partitions, and a job reading them through a map that handles
//! ~5,000/s: open `http://127.0.0.1:PORT/`, click the source vertex and watch the lag per
//! partition grow (also `sluice top --url http://127.0.0.1:PORT`).
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use sluice_datastream::StreamEnv;
use sluice_kafka::admin::ensure_topic;
use sluice_kafka::source::{KafkaSource, Lines};
use sluice_kafka::ClientSettings;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().map_or(Ok(8081), |a| a.parse())?;
    let secs: u64 = args.next().map_or(Ok(60), |a| a.parse())?;
    let broker = sluice_testkit::KafkaBroker::start()?;
    let bs = broker.bootstrap();
    ensure_topic(&ClientSettings::new(&bs), "lag", 2)?;
    let until = Instant::now() + Duration::from_secs(secs);
    let producer_bs = bs.clone();
    std::thread::spawn(move || {
        let p: BaseProducer = match ClientConfig::new()
            .set("bootstrap.servers", &producer_bs)
            .create()
        {
            Ok(p) => p,
            Err(e) => return eprintln!("producer: {e}"),
        };
        let mut i = 0u64;
        while Instant::now() < until {
            for _ in 0..200 {
                let v = format!("{i}");
                let r = BaseRecord::<(), _>::to("lag")
                    .payload(&v)
                    .partition((i % 2) as i32);
                let _ = p.send(r);
                i += 1;
            }
            p.poll(Duration::from_millis(10));
        }
        let _ = p.flush(Duration::from_secs(5));
    });
    let env = StreamEnv::new();
    env.set_parallelism(2);
    KafkaSource::builder()
        .bootstrap_servers(&bs)
        .topics(["lag"])
        .group_id("kafka-lag-example")
        .build(Lines)?
        .add_to(&env, "lag")
        .map(|l: String| {
            std::thread::sleep(Duration::from_micros(400));
            l.len()
        })
        .discard();
    let handle = env.launch()?;
    let registry = Arc::new(sluice_rest::JobRegistry::new());
    registry.register(handle.monitor());
    let _server = sluice_rest::serve(([127, 0, 0, 1], port).into(), registry)?;
    eprintln!("dashboard on http://127.0.0.1:{port}/ for {secs} s");
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
    }
    handle.cancel();
    let _ = handle.wait();
    Ok(())
}
