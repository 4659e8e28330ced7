use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Per-channel traffic counters, updated once per buffer (never per record) so they cost nothing
/// measurable. Readers (metrics, tests) may read them at any time from any thread.
#[derive(Debug, Default)]
pub struct ChannelCounters {
    pub records_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub buffers_out: AtomicU64,
    pub records_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub buffers_in: AtomicU64,
    /// Buffers shipped and not yet released by the receiver (queued or being processed).
    pub buffers_in_flight: AtomicU64,
    /// Buffers waiting in the channel's queue (shipped, not yet taken by the receiver).
    pub buffers_queued: AtomicU64,
}

impl ChannelCounters {
    pub fn get(v: &AtomicU64) -> u64 {
        v.load(Relaxed)
    }
}

/// Time a subtask spent blocked, in nanoseconds: waiting for input (idle) and waiting for output
/// credit (backpressured). Shared by every gate and writer of one subtask.
#[derive(Debug, Default)]
pub struct WaitTimes {
    pub idle_ns: AtomicU64,
    pub backpressured_ns: AtomicU64,
}

impl WaitTimes {
    pub(crate) fn add_idle(&self, ns: u64) {
        self.idle_ns.fetch_add(ns, Relaxed);
    }
    pub(crate) fn add_backpressured(&self, ns: u64) {
        self.backpressured_ns.fetch_add(ns, Relaxed);
    }
}
