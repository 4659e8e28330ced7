//! Samples the bytes in flight on every input gate of a running job (every 10 ms), for
//! `sluice run --stats-json`: the figure buffer debloating is meant to shrink.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use sluice_runtime::job_master::JobMonitor;

/// Average and maximum of the job's total in-flight bytes over the samples taken.
#[derive(Debug, Default, Clone, Copy)]
pub struct InFlight {
    pub avg: f64,
    pub max: u64,
}

pub struct InFlightSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<InFlight>>,
}

impl InFlightSampler {
    pub fn start(monitor: Arc<JobMonitor>) -> InFlightSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("in-flight-sampler".into())
            .spawn(move || {
                let (mut sum, mut n, mut max) = (0u128, 0u64, 0u64);
                while !s.load(Relaxed) {
                    let now = total(&monitor);
                    sum += now as u128;
                    n += 1;
                    max = max.max(now);
                    std::thread::sleep(Duration::from_millis(10));
                }
                InFlight {
                    avg: sum as f64 / n.max(1) as f64,
                    max,
                }
            })
            .ok();
        InFlightSampler { stop, thread }
    }

    pub fn finish(mut self) -> InFlight {
        self.stop.store(true, Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

fn total(monitor: &JobMonitor) -> u64 {
    monitor
        .subtasks
        .iter()
        .flatten()
        .map(|m| {
            m.input_channels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|c| c.bytes_in_flight.load(Relaxed))
                .sum::<u64>()
        })
        .sum()
}
