//! Backpressure: a fast source feeding a slow sink over a credit-based exchange never runs ahead of
//! the sink by more than the credits (plus the buffers being filled at the sender) allow, at every
//! moment of the run, and still delivers every record exactly once.
//!
//! The bound is derived from the exchange's definitions, not from timings:
//! * a sender ships a buffer only with a credit; a credit returns when the receiver *releases*
//!   the buffer, which happens after its records were counted in the receiver's `records_in`;
//!   so per gate at most `exclusive × channels + floating` buffers are shipped but not counted;
//! * a sender's `records_out` (published by its record writer) never exceeds the records it
//!   appended to its channel writers, of which at most one buffer per channel is not shipped
//!   (the partial buffer, or the full one waiting for credit);
//! * hence `records_out(sources) − records_in(sinks) ≤ Σ_gates (exclusive × channels + floating
//!   + channels) × records_per_buffer`, and per channel `buffers_in_flight ≤ exclusive + floating`.
//!
//! Counters only grow, so reading the sender side *before* the receiver side can only make the
//! observed difference smaller than the true one at the first read: the check is race-free.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use common::{guarded, spin_for, HANG_GUARD};
use sluice_channel::{ChannelCounters, ExchangeConfig};
use sluice_datastream::StreamEnv;

#[derive(Debug)]
struct Outcome {
    observations: u64,
    max_gap: u64,
    bound: u64,
    max_in_flight: u64,
    in_flight_bound: u64,
    count: u64,
    sum: u64,
    xor: u64,
    source_backpressured_ns: u64,
    source_records_out: u64,
    sink_records_in: u64,
}

struct Setup {
    upstream: usize,
    downstream: usize,
    n: u64,
    records_per_buffer: usize,
    exclusive: usize,
    floating: usize,
    per_record: Duration,
}

fn run(s: Setup) -> Outcome {
    guarded("backpressure job", HANG_GUARD, move || {
        let env = StreamEnv::new();
        let buffer_bytes = std::mem::size_of::<u64>() * s.records_per_buffer;
        env.set_parallelism(s.upstream)
            .set_buffer_size(buffer_bytes)
            .set_credits(s.exclusive, s.floating);
        let rpb = ExchangeConfig {
            buffer_bytes,
            exclusive_credits: s.exclusive,
            floating_credits: s.floating,
            ..Default::default()
        }
        .records_per_buffer::<u64>() as u64;
        assert_eq!(rpb, s.records_per_buffer as u64);

        let count = Arc::new(AtomicU64::new(0));
        let sum = Arc::new(AtomicU64::new(0));
        let xor = Arc::new(AtomicU64::new(0));
        let (c, su, x) = (count.clone(), sum.clone(), xor.clone());
        let per_record = s.per_record;
        env.generate(s.n, value)
            .rebalance()
            .sink_fn("slow", move |v: u64| {
                spin_for(per_record);
                c.fetch_add(1, Relaxed);
                su.fetch_add(v, Relaxed); // wraps, like the expected sum
                x.fetch_xor(v, Relaxed);
                Ok(())
            })
            .set_parallelism(s.downstream);

        let handle = env.launch().expect("launch");
        let monitor = handle.monitor();
        let g = &monitor.graph;
        let src = g
            .vertices
            .iter()
            .position(|v| v.name == "Source: Generator Source")
            .expect("source vertex");
        let sink = g
            .vertices
            .iter()
            .position(|v| v.name == "Sink: slow")
            .expect("sink vertex");
        assert_eq!(g.vertices[src].parallelism, s.upstream);
        assert_eq!(g.vertices[sink].parallelism, s.downstream);

        // Every downstream subtask has one gate with one channel per upstream subtask.
        let channels = s.upstream as u64;
        let gates = s.downstream as u64;
        let per_gate_credits = s.exclusive as u64 * channels + s.floating as u64;
        let bound = gates * (per_gate_credits + channels) * rpb;
        let in_flight_bound = gates * per_gate_credits;

        let mut observations = 0u64;
        let mut max_gap = 0u64;
        let mut max_in_flight = 0u64;
        loop {
            let finished = handle.is_finished();
            // Sender side first.
            let emitted = monitor.records_emitted_by_sources();
            let out: u64 = monitor.subtasks[src].iter().map(|m| m.records_out()).sum();
            let shipped: u64 = monitor.subtasks[src]
                .iter()
                .flat_map(|m| m.output_channels.lock().unwrap().clone())
                .map(|c| ChannelCounters::get(&c.records_out))
                .sum();
            // Then the receiver side.
            let consumed: u64 = monitor.subtasks[sink].iter().map(|m| m.records_in()).sum();
            let ins: Vec<Arc<ChannelCounters>> = monitor.subtasks[sink]
                .iter()
                .flat_map(|m| m.input_channels.lock().unwrap().clone())
                .collect();

            for (what, sent) in [("records_out", out), ("emitted", emitted)] {
                let gap = sent.saturating_sub(consumed);
                assert!(
                    gap <= bound,
                    "source {what} {sent} ran {gap} records ahead of the sink ({consumed}); bound {bound}"
                );
                max_gap = max_gap.max(gap);
            }
            // Shipped but not yet counted by the receiver: only the credits' worth.
            let queued = shipped.saturating_sub(consumed);
            assert!(
                queued <= gates * per_gate_credits * rpb,
                "{queued} records shipped and not consumed; credits allow {}",
                gates * per_gate_credits * rpb
            );
            let mut total_in_flight = 0;
            for c in &ins {
                let f = ChannelCounters::get(&c.buffers_in_flight);
                assert!(
                    f <= (s.exclusive + s.floating) as u64,
                    "{f} buffers in flight on one channel; exclusive {} + floating {}",
                    s.exclusive,
                    s.floating
                );
                total_in_flight += f;
            }
            assert!(
                total_in_flight <= in_flight_bound,
                "{total_in_flight} buffers in flight"
            );
            max_in_flight = max_in_flight.max(total_in_flight);
            observations += 1;
            if finished {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }

        let source_backpressured_ns = monitor.subtasks[src]
            .iter()
            .map(|m| m.backpressured_ns())
            .sum();
        let exec = handle.wait().expect("job succeeds");
        let r = &exec.result;
        Outcome {
            observations,
            max_gap,
            bound,
            max_in_flight,
            in_flight_bound,
            count: count.load(Relaxed),
            sum: sum.load(Relaxed),
            xor: xor.load(Relaxed),
            source_backpressured_ns,
            source_records_out: r.vertices[src].records_out,
            sink_records_in: r.vertices[sink].records_in,
        }
    })
}

/// The record with index `i`: scrambled, so that the sum and xor checksums catch a lost,
/// duplicated or corrupted record (the xor of `0..n` is often 0).
fn value(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i >> 7)
}

fn check_complete(o: &Outcome, n: u64) {
    eprintln!("{o:?}");
    assert!(o.observations > 0);
    assert!(o.max_gap <= o.bound && o.max_in_flight <= o.in_flight_bound);
    assert_eq!(o.count, n, "{o:?}");
    let sum = (0..n).fold(0u64, |a, i| a.wrapping_add(value(i)));
    let xor = (0..n).fold(0u64, |a, i| a ^ value(i));
    assert_ne!(xor, 0);
    assert_eq!(o.sum, sum, "{o:?}");
    assert_eq!(o.xor, xor, "{o:?}");
    assert_eq!(o.source_records_out, n);
    assert_eq!(o.sink_records_in, n);
    assert!(
        o.source_backpressured_ns > 0,
        "the source never waited for credit: {o:?}"
    );
}

#[test]
fn fast_source_slow_sink_stays_within_the_credit_bound() {
    let n = 20_000;
    let o = run(Setup {
        upstream: 2,
        downstream: 1,
        n,
        records_per_buffer: 64,
        exclusive: 2,
        floating: 1,
        per_record: Duration::from_micros(50),
    });
    check_complete(&o, n);
}

#[test]
fn several_gates_each_bounded_by_their_own_credits() {
    let n = 6_000;
    let o = run(Setup {
        upstream: 3,
        downstream: 2,
        n,
        records_per_buffer: 16,
        exclusive: 1,
        floating: 2,
        per_record: Duration::from_micros(40),
    });
    check_complete(&o, n);
}
