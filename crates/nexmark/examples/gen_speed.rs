//! Generation throughput: `cargo run --release -p sluice-nexmark --example gen_speed -- [EVENTS]
//! [THREADS] [--csv]`.
//!
//! Generates EVENTS events (default 10 M) with the default configuration, split over THREADS
//! threads (default 1), touching every event so nothing is optimised away, and prints
//! events/s overall and per thread. With `--csv`, also formats every event as a CSV record (into
//! a reused buffer, no I/O).
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use sluice_nexmark::{csv::push_record, Event, GeneratorConfig, NexmarkGenerator};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let csv = args.iter().any(|a| a == "--csv");
    let mut nums = args.iter().filter(|a| !a.starts_with("--"));
    let events: u64 = nums
        .next()
        .map_or(10_000_000, |s| s.parse().expect("EVENTS"));
    let threads: usize = nums.next().map_or(1, |s| s.parse().expect("THREADS"));

    let generator = NexmarkGenerator::new(GeneratorConfig {
        events,
        ..GeneratorConfig::default()
    })
    .expect("valid config");
    // Build the fixed tables before the clock starts.
    let _ = generator.event(0);

    let start = Instant::now();
    let results: Vec<(u64, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let split = generator.split(k, threads);
                s.spawn(move || run(split, csv))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let secs = start.elapsed().as_secs_f64();

    let count: u64 = results.iter().map(|r| r.0).sum();
    let checksum = results.iter().fold(0u64, |acc, r| acc.wrapping_add(r.1));
    let rate = count as f64 / secs;
    println!(
        "generated {count} events{} in {secs:.3} s on {threads} thread(s): {:.2} M events/s total, \
         {:.2} M events/s per thread (checksum {checksum:016x})",
        if csv { " (+ CSV formatting)" } else { "" },
        rate / 1e6,
        rate / 1e6 / threads as f64,
    );
}

fn run(split: sluice_nexmark::Split, csv: bool) -> (u64, u64) {
    let mut count = 0u64;
    let mut checksum = 0u64;
    let mut buf = Vec::with_capacity(1 << 16);
    for (id, event) in split {
        count += 1;
        let v = match &event {
            Event::Person(p) => p.id as u64 ^ p.name.len() as u64,
            Event::Auction(a) => a.id as u64 ^ a.expires as u64 ^ a.description.len() as u64,
            Event::Bid(b) => {
                b.auction as u64 ^ b.bidder as u64 ^ b.price as u64 ^ b.url.len() as u64
            }
        };
        // Order-independent, so equal for every thread count.
        checksum = checksum.wrapping_add(mix(id
            ^ v
            ^ event.timestamp() as u64
            ^ event.extra().len() as u64));
        if csv {
            push_record(&mut buf, id, &event);
            if buf.len() > 1 << 16 {
                buf.clear();
            }
        }
    }
    std::hint::black_box(&buf);
    (count, checksum)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
