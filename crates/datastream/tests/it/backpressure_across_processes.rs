//! Backpressure crosses the wire: a slow consumer in process 1 holds up the source in process
//! 0 (which has a fast consumer of its own), through the credit-based protocol; the records in
//! flight stay within the credits all the while.
//!
//! The two "processes" are threads of the test, each with its own `StreamEnv` and
//! `NetEndpoint` (real loopback TCP between them); each builds the same job, process 1 with a
//! slow map (the test's instrument: every process normally builds the identical job).

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_datastream::{NetEndpoint, Placement, StreamEnv};

const RECORDS: u64 = 400_000;

#[derive(Default)]
struct Counts {
    emitted: AtomicU64,
    received: AtomicU64,
    max_in_flight: AtomicU64,
    done: AtomicBool,
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Runs process `i`'s part; returns the share of its source subtask's life spent backpressured.
fn process(i: usize, addrs: Vec<SocketAddr>, l: TcpListener, counts: Arc<Counts>) -> f64 {
    let endpoint = NetEndpoint::start(i, &addrs, l, Duration::from_secs(60)).expect("connects");
    let env = StreamEnv::new();
    env.set_parallelism(2);
    env.exchange_type::<(i64, i64)>();
    env.set_placement(Placement {
        process: i,
        processes: 2,
        endpoint,
    });
    let (c1, c2) = (counts.clone(), counts.clone());
    let slow = i == 1;
    env.generate(RECORDS, |i| (i as i64, 1i64))
        .name("numbers")
        .map(move |r: (i64, i64)| {
            c1.emitted.fetch_add(1, Relaxed);
            r
        })
        .name("count out")
        .rebalance()
        .map(move |r: (i64, i64)| {
            if slow {
                spin(Duration::from_micros(5));
            }
            c2.received.fetch_add(1, Relaxed);
            r
        })
        .name("consumer")
        .discard();
    let exec = env.execute().expect("its part runs");
    let src = exec
        .result
        .vertices
        .iter()
        .find(|v| v.name.contains("numbers"))
        .expect("source vertex");
    // One source subtask runs here: its backpressured time over the job's life.
    src.backpressured.as_secs_f64() / exec.result.wall_time.as_secs_f64().max(1e-9)
}

#[test]
fn a_slow_consumer_in_process_1_backpressures_the_source_in_process_0_within_the_credits() {
    let listeners: Vec<TcpListener> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let addrs: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr().expect("addr"))
        .collect();
    let counts = Arc::new(Counts::default());
    // Samples the records in flight (emitted by the sources, not yet through the consumers).
    let sampler = {
        let c = counts.clone();
        std::thread::spawn(move || {
            while !c.done.load(Relaxed) {
                let (e, r) = (c.emitted.load(Relaxed), c.received.load(Relaxed));
                c.max_in_flight.fetch_max(e.saturating_sub(r), Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let runs: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let (addrs, counts) = (addrs.clone(), counts.clone());
            std::thread::spawn(move || process(i, addrs, l, counts))
        })
        .collect();
    let shares: Vec<f64> = runs
        .into_iter()
        .map(|t| t.join().expect("process thread"))
        .collect();
    counts.done.store(true, Relaxed);
    sampler.join().expect("sampler");
    let max = counts.max_in_flight.load(Relaxed);
    eprintln!("backpressured shares {shares:?}, records in flight at most {max}");
    assert_eq!(
        counts.received.load(Relaxed),
        RECORDS,
        "every record arrives"
    );
    // Process 0's source has a fast local consumer: only the remote one can hold it up.
    assert!(
        shares[0] > 0.3,
        "process 0's source is backpressured by process 1's consumer: {shares:?}"
    );
    // The bound: every gate's credits (2 channels × 2 exclusive + 8 floating, 2 gates), the
    // sources' partial buffers (2 × 2), the buffers being processed (2) and the overdraft
    // (5 per gate), of 32 KiB ÷ 16-byte records each.
    let per_buffer = 32 * 1024 / 16;
    // Plus the senders' own pools of the two remote channels (one outbox each way: 2 buffers
    // per channel + 8 floating, sluice-net's SENDER_BUFFERS_PER_CHANNEL / _FLOATING_BUFFERS).
    let outboxes = 2 * (2 + 8);
    let bound = (2 * (2 * 2 + 8) + 4 + 2 + 2 * 5 + outboxes) * per_buffer;
    assert!(
        max <= bound,
        "records in flight {max} exceed what the credits allow ({bound})"
    );
    assert!(
        max < RECORDS / 2,
        "in flight {max}: the sources were held back"
    );
}
