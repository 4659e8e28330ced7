//! The autopilot's limits and timings.

use std::time::Duration;

/// When the autopilot may act, how long it measures and how much a change must gain.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Seconds of metrics a diagnosis and a re-measurement average over.
    pub window: Duration,
    /// After a change is applied, how long to let the job settle before re-measuring (restore,
    /// catch-up and the metric window's own memory of the old plan).
    pub stabilisation: Duration,
    /// After a decision is complete (kept or rolled back), how long before the next change.
    pub cooldown: Duration,
    /// Relative gain both the bottleneck's rate and the job's throughput must reach to keep a
    /// change: `after ≥ before × (1 + min_gain)`.
    pub min_gain: f64,
    /// A parallelism the autopilot never goes above (the job's max parallelism), if known.
    pub max_parallelism: Option<usize>,
    /// Slots (Flink) or cores (Sluice) a vertex's parallelism may use, if known.
    pub available_slots: Option<usize>,
}

impl Default for Policy {
    /// Defaults for "decision ≤ 10 s": a 5 s window (five 1 Hz samples are enough to tell a
    /// 10 % gain from noise on the doctor's busy/backpressure split), 2 s of stabilisation
    /// (a Sluice restore takes well under a second; the server's metric gauges follow within
    /// their update interval), a 10 s cooldown, a 10 % gain.
    fn default() -> Policy {
        Policy {
            window: Duration::from_secs(5),
            stabilisation: Duration::from_secs(2),
            cooldown: Duration::from_secs(10),
            min_gain: 0.10,
            max_parallelism: None,
            available_slots: None,
        }
    }
}

impl Policy {
    /// For a Flink cluster: Flink's `…PerSecond` rates are meters over 60 s (`MeterView`), so a
    /// task restarted by a rescale reports a rate too low until 60 s of it are behind it, and the
    /// REST metric fetcher caches another 10 s: the job settles 70 s after Flink reports the new
    /// parallelism (measured: 15 s in, a rescale that did not slow the job showed −35 %). The
    /// cooldown matches Flink's own `…adaptive-scheduler.executing.cooldown-after-rescaling`
    /// (30 s).
    pub fn flink() -> Policy {
        Policy {
            stabilisation: Duration::from_secs(70),
            cooldown: Duration::from_secs(30),
            ..Policy::default()
        }
    }

    /// The highest parallelism the limits allow (`usize::MAX` when none is known).
    pub fn parallelism_cap(&self) -> usize {
        let a = self.max_parallelism.unwrap_or(usize::MAX);
        let b = self.available_slots.unwrap_or(usize::MAX);
        a.min(b).max(1)
    }
}
