//! Lookup throughput, sync against async, on the HTTP test service (in process, its own
//! thread; a request's latency is a timer there, so the service is not the limit):
//! `cargo bench -p sluice-lookup --bench lookup [-- --latency-ms 1,10 --capacity 1,8,64,256]`.
//!
//! Every record has a key of its own (no cache), parallelism 1. For each latency it runs the
//! sync lookup, then async (ordered) at each capacity, and prints records/s, the bound
//! `capacity ÷ latency`, the share of that bound reached, and the ratio to the sync lookup of
//! the same run.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use sluice_datastream::StreamEnv;
use sluice_lookup::{LookupExt, LookupOptions, LookupSource};
use sluice_lookup_service::{Latency, Service, ServiceOptions};

fn list(args: &[String], flag: &str, default: &[u64]) -> Vec<u64> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// Records per second through a lookup with `options`, over `records` records.
fn run(template: &str, records: u64, options: &LookupOptions) -> f64 {
    let source = LookupSource::http(template).expect("template");
    let env = StreamEnv::new();
    env.set_parallelism(1);
    env.generate(records, |i| i)
        .lookup_with(
            &source,
            |i: &u64| *i as i64,
            |i: &u64, row| row.map(|_| *i),
            options,
        )
        .discard();
    let t0 = Instant::now();
    env.execute().expect("bench job");
    let s = source.stats().snapshot();
    assert_eq!(s.loads, records, "every record loaded once");
    records as f64 / t0.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let latencies = list(&args, "--latency-ms", &[1, 10]);
    let capacities = list(&args, "--capacity", &[1, 8, 64, 256]);
    // Each run lasts about this long at its bound (at least 200 records).
    let secs = 2.0;
    println!("latency  mode            records   records/s   bound/s  of bound  x sync");
    for &ms in &latencies {
        let service = Service::start(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            ServiceOptions {
                keys: u64::MAX,
                latency: Latency::Fixed(Duration::from_millis(ms)),
                ..ServiceOptions::default()
            },
        )
        .expect("service");
        let template = format!("{}/lookup/{{key}}", service.url());
        let bound = |cap: u64| cap as f64 * 1000.0 / ms as f64;
        let n = |cap: u64| ((bound(cap) * secs) as u64).max(200);
        let sync = run(&template, n(1), &LookupOptions::sync());
        println!(
            "{ms:>4} ms  sync            {:>7}  {sync:>10.0}  {:>8.0}  {:>7.0}%  {:>6.2}",
            n(1),
            bound(1),
            100.0 * sync / bound(1),
            1.0
        );
        for &cap in &capacities {
            let r = run(&template, n(cap), &LookupOptions::ordered(cap as usize));
            println!(
                "{ms:>4} ms  async cap {cap:<5} {:>7}  {r:>10.0}  {:>8.0}  {:>7.0}%  {:>6.2}",
                n(cap),
                bound(cap),
                100.0 * r / bound(cap),
                r / sync
            );
        }
        println!(
            "service: max {} requests in flight at once",
            service
                .stats()
                .max_in_flight
                .load(std::sync::atomic::Ordering::Relaxed)
        );
    }
}
