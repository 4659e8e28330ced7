//! Per-subtask counters, written by the task thread (per buffer, not per record) and readable
//! from anywhere while the job runs.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use sluice_channel::{ChannelCounters, WaitTimes};

#[derive(Debug, Default)]
pub struct TaskMetrics {
    pub records_in: AtomicU64,
    pub records_out: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    /// Idle (waiting for input) and backpressured (waiting for output credit) time.
    pub waits: Arc<WaitTimes>,
    /// Counters of the channels this subtask reads (for the exchange-level metrics and tests).
    pub input_channels: std::sync::Mutex<Vec<Arc<ChannelCounters>>>,
    /// Counters of the channels this subtask writes.
    pub output_channels: std::sync::Mutex<Vec<Arc<ChannelCounters>>>,
}

impl TaskMetrics {
    #[inline]
    pub fn add_records_in(&self, n: u64) {
        self.records_in.fetch_add(n, Relaxed);
    }
    #[inline]
    pub fn add_records_out(&self, n: u64) {
        self.records_out.fetch_add(n, Relaxed);
    }
    pub fn records_in(&self) -> u64 {
        self.records_in.load(Relaxed)
    }
    pub fn records_out(&self) -> u64 {
        self.records_out.load(Relaxed)
    }
    pub fn idle_ns(&self) -> u64 {
        self.waits.idle_ns.load(Relaxed)
    }
    pub fn backpressured_ns(&self) -> u64 {
        self.waits.backpressured_ns.load(Relaxed)
    }
}
