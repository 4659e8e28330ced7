use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crate::wait_stacks::{WaitPoint, WaitStacks};

/// Per-channel traffic counters, updated once per buffer (never per record) so they cost nothing
/// measurable. Readers (metrics, tests) may read them at any time from any thread.
#[derive(Debug, Default)]
pub struct ChannelCounters {
    /// Records shipped by the sender.
    pub records_out: AtomicU64,
    /// Estimated bytes shipped by the sender.
    pub bytes_out: AtomicU64,
    /// Buffers shipped by the sender.
    pub buffers_out: AtomicU64,
    /// Records taken by the receiver.
    pub records_in: AtomicU64,
    /// Estimated bytes taken by the receiver.
    pub bytes_in: AtomicU64,
    /// Buffers taken by the receiver.
    pub buffers_in: AtomicU64,
    /// Buffers shipped and not yet released by the receiver (queued or being processed).
    pub buffers_in_flight: AtomicU64,
    /// Buffers waiting in the channel's queue (shipped, not yet taken by the receiver).
    pub buffers_queued: AtomicU64,
    /// Bytes of the buffers in flight (shipped, not yet released).
    pub bytes_in_flight: AtomicU64,
    /// Bytes of the buffers waiting in the channel's queue (Flink's `inputQueueSize` /
    /// `outputQueueSize`).
    pub bytes_queued: AtomicU64,
    /// Buffers in flight that hold one of the gate's floating credits (the rest hold the
    /// channel's exclusive ones): Flink's floating / exclusive buffers usage.
    pub floating_in_flight: AtomicU64,
    /// Buffers shipped without a credit because the writer was mid-record (overdraft).
    pub overdraft_buffers: AtomicU64,
    /// The most buffers ever in flight at once (checked against the credit bounds in tests).
    pub max_buffers_in_flight: AtomicU64,
    /// The channel's other end is in another process (its buffers cross the network): Flink's
    /// remote channel, counted apart in `numBytesInRemote` and the like. Set once at deployment.
    pub remote: AtomicBool,
    /// Time the network exchange spent encoding this channel's buffers for the wire (the
    /// sending process's pump thread; 0 for a local channel), ns.
    pub serialize_ns: AtomicU64,
    /// Time the network exchange spent decoding this channel's buffers off the wire (the
    /// receiving process's connection thread; 0 for a local channel), ns.
    pub deserialize_ns: AtomicU64,
}

impl ChannelCounters {
    /// Reads a counter (relaxed: counters are statistics, not synchronization).
    pub fn get(v: &AtomicU64) -> u64 {
        v.load(Relaxed)
    }
}

/// Nanoseconds on a monotonic clock shared by the whole process (0 is the first call). Used for
/// wait accounting so that a reader can add the part of a wait that is still in progress.
pub fn mono_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    // +1 so that a real timestamp is never 0, which means "not waiting".
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
        + 1
}

/// Time a subtask spent blocked, in nanoseconds: waiting for input (idle) and waiting for output
/// credit (backpressured). Shared by every gate and writer of one subtask.
///
/// A wait in progress is visible through `*_since` (its start on [`mono_ns`], 0 when not waiting),
/// so a metrics sampler counts the part of a long wait that already happened, as Flink's timer
/// gauges do.
#[derive(Debug, Default)]
pub struct WaitTimes {
    /// Total time spent waiting for input, ns.
    pub idle_ns: AtomicU64,
    /// Total time spent waiting for output credit, ns.
    pub backpressured_ns: AtomicU64,
    /// Start of the input wait in progress on [`mono_ns`]; 0 when not waiting.
    pub idle_since: AtomicU64,
    /// Start of the credit wait in progress on [`mono_ns`]; 0 when not waiting.
    pub backpressured_since: AtomicU64,
    /// Longest single backpressure wait, reset by the reader (Flink's `maxHardBackPressureTimeMs`).
    pub max_backpressured_ns: AtomicU64,
    /// Native stacks where the waits start, while the profiler wants them.
    pub stacks: WaitStacks,
}

impl WaitTimes {
    /// Starts an idle wait (returns its start for [`end_idle`](Self::end_idle)). Public so a
    /// source that waits on an external system for data (a Kafka poll) counts that wait as
    /// idle, as Flink counts a source with no data available.
    pub fn begin_idle(&self) -> u64 {
        let now = mono_ns();
        self.idle_since.store(now, Relaxed);
        self.stacks.at_wait(WaitPoint::Input, now);
        now
    }
    /// Ends the idle wait that [`begin_idle`](Self::begin_idle) started, adding its length.
    pub fn end_idle(&self, started: u64) {
        self.idle_since.store(0, Relaxed);
        self.idle_ns
            .fetch_add(mono_ns().saturating_sub(started), Relaxed);
    }
    pub(crate) fn begin_backpressure(&self) -> u64 {
        let now = mono_ns();
        self.backpressured_since.store(now, Relaxed);
        self.stacks.at_wait(WaitPoint::Credit, now);
        now
    }
    pub(crate) fn end_backpressure(&self, started: u64) {
        self.end_backpressure_at(started, mono_ns());
    }
    /// Ends a backpressure wait that really ended at `end` (when its credit was freed).
    pub(crate) fn end_backpressure_at(&self, started: u64, end: u64) {
        self.backpressured_since.store(0, Relaxed);
        let d = end.saturating_sub(started);
        self.backpressured_ns.fetch_add(d, Relaxed);
        self.max_backpressured_ns.fetch_max(d, Relaxed);
    }

    /// Idle time so far, including a wait in progress, as of `now` (on [`mono_ns`]).
    pub fn idle_ns_at(&self, now: u64) -> u64 {
        let since = self.idle_since.load(Relaxed);
        let acc = self.idle_ns.load(Relaxed);
        acc + if since > 0 {
            now.saturating_sub(since)
        } else {
            0
        }
    }

    /// Backpressured time so far, including a wait in progress.
    pub fn backpressured_ns_at(&self, now: u64) -> u64 {
        let since = self.backpressured_since.load(Relaxed);
        let acc = self.backpressured_ns.load(Relaxed);
        acc + if since > 0 {
            now.saturating_sub(since)
        } else {
            0
        }
    }
}
