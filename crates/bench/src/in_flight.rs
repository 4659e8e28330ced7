//! Samples the bytes in flight on every input gate of a running job (every 10 ms), for
//! `sluice run --stats-json`: the figure buffer debloating is meant to shrink.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use sluice_runtime::job_master::JobMonitor;

/// Average and maximum of the job's total in-flight bytes over the samples taken, and the
/// average over the second half of the run (steady state: debloating needs a few seconds to
/// converge and to drain the full-size buffers already in flight when it starts).
#[derive(Debug, Default, Clone, Copy)]
pub struct InFlight {
    /// Average over every sample, bytes.
    pub avg: f64,
    /// Largest sample, bytes.
    pub max: u64,
    /// Average over the second half of the samples, bytes.
    pub avg_second_half: f64,
}

/// A thread sampling a job's in-flight bytes until [`InFlightSampler::finish`].
pub struct InFlightSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<InFlight>>,
}

impl InFlightSampler {
    /// Starts sampling `monitor`'s job every 10 ms.
    pub fn start(monitor: Arc<JobMonitor>) -> InFlightSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("in-flight-sampler".into())
            .spawn(move || {
                let mut samples: Vec<u64> = Vec::new();
                while !s.load(Relaxed) {
                    samples.push(total(&monitor));
                    std::thread::sleep(Duration::from_millis(10));
                }
                let avg = |xs: &[u64]| xs.iter().sum::<u64>() as f64 / xs.len().max(1) as f64;
                InFlight {
                    avg: avg(&samples),
                    max: samples.iter().copied().max().unwrap_or(0),
                    avg_second_half: avg(&samples[samples.len() / 2..]),
                }
            })
            .ok();
        InFlightSampler { stop, thread }
    }

    /// Stops sampling and returns the figures.
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
