//! Overdraft buffers in a real job: a `flat_map` fanning each input record out into several
//! buffers' worth of outputs, in front of a slow sink, with one credit per channel. The fan-out
//! finishes its records on overdraft buffers (counted on its output channels), a channel never
//! holds more than its credit plus the overdraft limit, and every record arrives exactly once.
//! With overdraft off the same job never ships a buffer without credit.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use common::{guarded, spin_for, HANG_GUARD};
use sluice_channel::ChannelCounters;
use sluice_datastream::StreamEnv;

const FANOUT: u64 = 8;
const RECORDS_PER_BUFFER: usize = 2;

struct Outcome {
    sunk: u64,
    overdraft_buffers: u64,
    max_in_flight: u64,
}

fn run(inputs: u64, overdraft: usize) -> Outcome {
    guarded("overdraft job", HANG_GUARD * 3, move || {
        let env = StreamEnv::new();
        env.set_parallelism(1)
            .set_buffer_size(std::mem::size_of::<u64>() * RECORDS_PER_BUFFER)
            .set_credits(1, 0)
            .set_max_overdraft_buffers(overdraft);
        let sunk = Arc::new(AtomicU64::new(0));
        let s = sunk.clone();
        env.generate(inputs, |i| i)
            .rebalance()
            .flat_map(|v: u64| (0..FANOUT).map(move |k| v * FANOUT + k))
            .name("fan-out")
            .rebalance()
            .sink_fn("slow", move |_v: u64| {
                spin_for(Duration::from_micros(5));
                s.fetch_add(1, Relaxed);
                Ok(())
            });
        let handle = env.launch().expect("launch");
        let monitor = handle.monitor();
        let fan = monitor
            .graph
            .vertices
            .iter()
            .position(|v| v.name == "fan-out")
            .expect("fan-out vertex");
        // Read the counters while the job runs: a finished attempt keeps them too, but take
        // them before the handle goes.
        let outs: Vec<Arc<ChannelCounters>> = loop {
            let o: Vec<_> = monitor.subtasks[fan]
                .iter()
                .flat_map(|m| m.output_channels.lock().unwrap().clone())
                .collect();
            if !o.is_empty() || handle.is_finished() {
                break o;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        handle.wait().expect("job");
        Outcome {
            sunk: sunk.load(Relaxed),
            overdraft_buffers: outs
                .iter()
                .map(|c| ChannelCounters::get(&c.overdraft_buffers))
                .sum(),
            max_in_flight: outs
                .iter()
                .map(|c| ChannelCounters::get(&c.max_buffers_in_flight))
                .max()
                .unwrap_or(0),
        }
    })
}

#[test]
fn a_fan_out_flat_map_finishes_records_on_overdraft_within_its_limit() {
    let inputs = 400;
    let limit = 3;
    let o = run(inputs, limit);
    assert_eq!(o.sunk, inputs * FANOUT, "every output record arrives once");
    assert!(
        o.overdraft_buffers > 0,
        "the fan-out (4 buffers per record, 1 credit) took overdraft buffers"
    );
    assert!(
        o.max_in_flight <= 1 + limit as u64,
        "{} buffers in flight on a channel > 1 credit + {limit} overdraft",
        o.max_in_flight
    );
    assert!(
        o.max_in_flight > 1,
        "overdraft put more than the credit in flight"
    );
}

#[test]
fn without_overdraft_no_buffer_ships_beyond_the_credit() {
    let o = run(200, 0);
    assert_eq!(o.sunk, 200 * FANOUT);
    assert_eq!(o.overdraft_buffers, 0);
    assert_eq!(
        o.max_in_flight, 1,
        "one credit, no overdraft: one buffer in flight at most"
    );
}
