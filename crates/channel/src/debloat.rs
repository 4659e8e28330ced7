//! Buffer debloating (Flink's `BufferDebloater`, `BufferSizeEMA`, `ThroughputCalculator`,
//! see docs/src/reference/flink-formats.md#buffer-debloating): every period an input gate measures
//! its throughput over the time it was not idle,
//! wants `throughput × target` bytes in flight, divides that by the buffers in use, smooths the
//! result with an exponential moving average over `samples` periods, clamps it to
//! `[min_bytes, max_bytes]` and announces it to its senders when it moved by at least
//! `threshold_percentages` (or reached a bound). A sender's writer then ships a buffer at the
//! announced size: with typed buffers that is fewer records per buffer, never a smaller credit
//! count. Pure arithmetic here; the gate drives it ([`crate::InputGate`]).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// `taskmanager.network.memory.buffer-debloat.*` and `taskmanager.memory.min-segment-size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebloatConfig {
    /// `…buffer-debloat.enabled` (Flink: false; Sluice keeps that default, see the README).
    pub enabled: bool,
    /// `…buffer-debloat.target`: how long the data in flight before a gate should take to
    /// consume (1 s).
    pub target: Duration,
    /// `…buffer-debloat.period`: how often the size is recalculated (200 ms).
    pub period: Duration,
    /// `…buffer-debloat.samples`: the EMA's window, α = 2 / (samples + 1) (20).
    pub samples: u32,
    /// `…buffer-debloat.threshold-percentages`: smallest change announced (25 %).
    pub threshold_percentages: u32,
    /// `taskmanager.memory.min-segment-size`: the smallest debloated buffer (256 bytes); the
    /// largest is the configured buffer size.
    pub min_bytes: usize,
    /// `taskmanager.memory.starting-segment-size` (Flink 1.19+): the buffer size a debloating
    /// gate announces before its first measurement (1024 bytes), clamped to [min, configured].
    /// Starting small means the start-up does not fill every channel with full-size buffers
    /// that a slow consumer then takes seconds to drain while the EMA walks down from the top.
    pub starting_bytes: usize,
}

impl Default for DebloatConfig {
    fn default() -> Self {
        DebloatConfig {
            enabled: false,
            target: Duration::from_secs(1),
            period: Duration::from_millis(200),
            samples: 20,
            threshold_percentages: 25,
            min_bytes: 256,
            starting_bytes: 1024,
        }
    }
}

impl DebloatConfig {
    /// Rejects settings Flink refuses too, naming the option.
    pub fn validate(&self, max_bytes: usize) -> Result<(), String> {
        if self.period.is_zero() {
            return Err("taskmanager.network.memory.buffer-debloat.period must be positive".into());
        }
        if self.samples == 0 {
            return Err(
                "taskmanager.network.memory.buffer-debloat.samples must be at least 1".into(),
            );
        }
        if self.threshold_percentages > 100 {
            return Err(format!(
                "taskmanager.network.memory.buffer-debloat.threshold-percentages must be 0 to 100, got {}",
                self.threshold_percentages
            ));
        }
        if self.min_bytes == 0 || self.min_bytes > max_bytes {
            return Err(format!(
                "taskmanager.memory.min-segment-size must be between 1 byte and the buffer size ({max_bytes} bytes), got {}",
                self.min_bytes
            ));
        }
        if self.starting_bytes == 0 {
            return Err("taskmanager.memory.starting-segment-size must be at least 1 byte".into());
        }
        Ok(())
    }

    /// The size a gate starts with: the starting size within [min, `max_bytes`].
    pub fn starting_size(&self, max_bytes: usize) -> usize {
        let max = max_bytes.max(1);
        self.starting_bytes.clamp(self.min_bytes.clamp(1, max), max)
    }
}

/// Bytes per second over the time a gate was active (Flink's `ThroughputCalculator`). Times are
/// nanoseconds on [`crate::mono_ns`].
#[derive(Debug, Default)]
pub struct ThroughputCalculator {
    current: u64,
    bytes: u64,
    measured_ns: u64,
    /// Start of the running measurement; `None` while paused (the gate is idle).
    started: Option<u64>,
}

impl ThroughputCalculator {
    /// Counts `bytes` received at `now` (ns), starting a measurement if none runs.
    pub fn incoming(&mut self, bytes: u64, now: u64) {
        if self.started.is_none() {
            self.started = Some(now);
        }
        self.bytes += bytes;
    }

    /// The gate starts waiting for input: idle time does not count.
    pub fn pause(&mut self, now: u64) {
        if let Some(s) = self.started.take() {
            self.measured_ns += now.saturating_sub(s);
        }
    }

    /// The gate has input again: active time counts from `now`.
    pub fn resume(&mut self, now: u64) {
        if self.started.is_none() {
            self.started = Some(now);
        }
    }

    /// Throughput of the period that ends now, in bytes per second; the previous value when no
    /// active time passed. Starts the next period.
    pub fn calculate(&mut self, now: u64) -> u64 {
        if let Some(s) = self.started {
            self.measured_ns += now.saturating_sub(s);
            self.started = Some(now);
        }
        // Flink counts whole milliseconds; so do we, so a period under 1 ms keeps the last value.
        let ms = self.measured_ns / 1_000_000;
        if ms > 0 {
            self.current = (self.bytes as f64 / ms as f64 * 1000.0) as u64;
        }
        self.bytes = 0;
        self.measured_ns = 0;
        self.current
    }
}

/// The buffer size one gate wants (Flink's `BufferDebloater` with its `BufferSizeEMA`).
#[derive(Debug)]
pub struct BufferDebloater {
    target_ms: u64,
    min: usize,
    max: usize,
    threshold: f64,
    alpha: f64,
    ema: f64,
    last: usize,
    estimated_ms: u64,
}

impl BufferDebloater {
    /// A debloater for a gate whose buffers hold at most `max_bytes`, starting at the configured size.
    pub fn new(cfg: &DebloatConfig, max_bytes: usize) -> BufferDebloater {
        let min = cfg.min_bytes.clamp(1, max_bytes.max(1));
        let start = cfg.starting_size(max_bytes);
        BufferDebloater {
            target_ms: cfg.target.as_millis() as u64,
            min,
            max: max_bytes.max(min),
            threshold: cfg.threshold_percentages as f64 / 100.0,
            alpha: 2.0 / (cfg.samples as f64 + 1.0),
            ema: start as f64,
            last: start,
            estimated_ms: 0,
        }
    }

    /// One period: the new buffer size to announce, or `None` when the change is below the
    /// threshold. `throughput` in bytes/s; `buffers_in_use` counted over the gate's channels.
    pub fn recalculate(&mut self, throughput: u64, buffers_in_use: usize) -> Option<usize> {
        let in_use = buffers_in_use.max(1);
        let desired_total = throughput.saturating_mul(self.target_ms) / 1000;
        // The EMA's input is capped at twice the current size so that growing is as gradual as
        // shrinking (Flink's comment: an instant value far above max would jump to max at once).
        let candidate = (desired_total as f64 / in_use as f64).min(2.0 * self.ema);
        self.ema += self.alpha * (candidate - self.ema);
        self.ema = self.ema.clamp(self.min as f64, self.max as f64);
        let size = self.ema.round() as usize;
        self.estimated_ms = (size as u64 * in_use as u64).saturating_mul(1000) / throughput.max(1);
        if self.skip(size) {
            return None;
        }
        self.last = size;
        Some(size)
    }

    fn skip(&self, size: usize) -> bool {
        if size == self.last {
            return true;
        }
        if size <= self.min || size >= self.max {
            return false;
        }
        let delta = (self.last as f64 * self.threshold) as usize;
        size.abs_diff(self.last) < delta
    }

    /// The last announced size (Flink's `debloatedBufferSize`).
    pub fn buffer_size(&self) -> usize {
        self.last
    }

    /// Flink's `estimatedTimeToConsumeBuffersMs`: size × buffers in use / throughput.
    pub fn estimated_time_ms(&self) -> u64 {
        self.estimated_ms
    }
}

/// What a gate's debloater reports, readable from any thread (the task's metrics).
#[derive(Debug, Default)]
pub struct DebloatGauges {
    /// The announced buffer size in bytes (the configured size until debloating changes it).
    pub buffer_size: AtomicU64,
    /// Flink's `estimatedTimeToConsumeBuffersMs`, as last computed.
    pub estimated_time_to_consume_ms: AtomicU64,
    /// Whether the gate runs the debloater at all.
    pub enabled: std::sync::atomic::AtomicBool,
}

impl DebloatGauges {
    /// The announced buffer size in bytes.
    pub fn buffer_size(&self) -> u64 {
        self.buffer_size.load(Relaxed)
    }
    /// The last estimated time to consume the buffers in flight, ms.
    pub fn estimated_time_to_consume_ms(&self) -> u64 {
        self.estimated_time_to_consume_ms.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn throughput_counts_only_active_time() {
        let mut t = ThroughputCalculator::default();
        t.incoming(1000, 0);
        t.pause(100 * MS);
        // 900 ms idle, not counted.
        t.resume(1000 * MS);
        t.incoming(1000, 1000 * MS);
        assert_eq!(t.calculate(1100 * MS), 10_000);
        // No active time since: the last value stays.
        t.pause(1100 * MS);
        assert_eq!(t.calculate(5000 * MS), 10_000);
    }

    #[test]
    fn ema_moves_as_flinks_and_clamps() {
        let cfg = DebloatConfig {
            enabled: true,
            samples: 20,
            starting_bytes: 32768,
            ..Default::default()
        };
        let mut d = BufferDebloater::new(&cfg, 32768);
        // Throughput 0: the size falls by α of the way each period (Flink's documented example
        // shrinks 32768 → 29647 → 26823 …); the first steps are under 25 % and not announced.
        assert_eq!(d.recalculate(0, 10), None);
        assert!((d.ema - 29647.0).abs() < 1.0, "{}", d.ema);
        d.recalculate(0, 10);
        assert!((d.ema - 26823.0).abs() < 1.0, "{}", d.ema);
        let mut announced = None;
        for _ in 0..200 {
            if let Some(s) = d.recalculate(0, 10) {
                announced = Some(s);
            }
        }
        assert_eq!(announced, Some(256), "reaches the minimum and announces it");
        assert_eq!(d.buffer_size(), 256);
        // High throughput: grows back, at most doubling the EMA's input per period.
        for _ in 0..400 {
            d.recalculate(1 << 40, 1);
        }
        assert_eq!(d.buffer_size(), 32768);
    }

    #[test]
    fn small_changes_are_not_announced() {
        let mut d = BufferDebloater::new(&DebloatConfig::default(), 32768);
        assert_eq!(
            d.buffer_size(),
            1024,
            "starts at Flink's starting segment size"
        );
        d.last = 10_000;
        assert!(d.skip(10_000));
        assert!(d.skip(12_000), "20 % < 25 %");
        assert!(!d.skip(12_600), "26 %");
        assert!(!d.skip(256), "the minimum is always announced");
        assert!(!d.skip(32768), "the maximum is always announced");
    }

    #[test]
    fn estimated_time_is_size_times_buffers_over_throughput() {
        let cfg = DebloatConfig {
            starting_bytes: 32768,
            ..Default::default()
        };
        let mut d = BufferDebloater::new(&cfg, 32768);
        // 1 MB/s, 4 buffers in use: wants 1 MB in flight / 4 = 256 KB a buffer → clamped 32 KiB.
        d.recalculate(1_000_000, 4);
        assert_eq!(d.estimated_time_ms(), 32768 * 4 * 1000 / 1_000_000);
    }
}
