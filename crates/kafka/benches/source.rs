//! Kafka source throughput beside a bare rdkafka consumer loop on the same topic, same run.
//! `cargo bench -p sluice-kafka --bench source [-- RECORDS]` (default 2,000,000): starts a
//! tansu broker, writes RECORDS `key,value` lines to a one-partition topic, then reads them
//! all with both readers, alternated twice (`sluice_kafka::bench`, which `sluice bench
//! kafka-source --url …` runs on any broker). Prints records/s, CPU-ns per record (process CPU
//! time, the broker is another process), their ratio, and the peak RSS.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use sluice_kafka::bench::{compare, fill_topic};
use sluice_kafka::ClientSettings;

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let broker = sluice_testkit::KafkaBroker::start().expect("tansu (scripts/install-tansu.sh)");
    let settings = ClientSettings::new(broker.bootstrap());
    let t = Instant::now();
    fill_topic(&settings, "bench", n).unwrap();
    eprintln!("produced {n} records in {:.1} s", t.elapsed().as_secs_f64());
    let c = compare(&settings, "bench", 2).unwrap();
    print!("tansu memory broker; {}", c.report());
}
