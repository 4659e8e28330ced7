//! Flink's two moving-window views. Pure: the caller supplies the per-interval amounts.

use std::collections::VecDeque;

/// Ring of per-interval time amounts, as Flink's `TimerGauge`. Each slot keeps the ms spent and
/// the interval's actual length, so a late update does not inflate the rate.
#[derive(Clone, Debug)]
pub struct TimerWindow {
    slots: VecDeque<(f64, f64)>,
    capacity: usize,
}

impl TimerWindow {
    /// An empty ring of `capacity` slots (at least 1).
    pub fn new(capacity: usize) -> Self {
        TimerWindow {
            slots: VecDeque::with_capacity(capacity.max(1)),
            capacity: capacity.max(1),
        }
    }

    /// Adds the ms spent during an interval of `interval_s` seconds that just ended.
    pub fn push(&mut self, ms: f64, interval_s: f64) {
        if self.slots.len() == self.capacity {
            self.slots.pop_front();
        }
        self.slots.push_back((ms.max(0.0), interval_s.max(0.0)));
    }

    /// ms per second over the filled slots, clamped to [0, 1000]; 0 before the first update.
    pub fn per_second(&self) -> f64 {
        let secs: f64 = self.slots.iter().map(|s| s.1).sum();
        if secs <= 0.0 {
            return 0.0;
        }
        let ms: f64 = self.slots.iter().map(|s| s.0).sum();
        (ms / secs).clamp(0.0, 1000.0)
    }
}

/// Count history for a rate, as Flink's `MeterView`: `window_slots + 1` samples initialised to 0.
#[derive(Clone, Debug)]
pub struct MeterWindow {
    values: VecDeque<u64>,
}

impl MeterWindow {
    /// A history over `window_slots` intervals (at least 1), all counts 0.
    pub fn new(window_slots: usize) -> Self {
        MeterWindow {
            values: std::iter::repeat_n(0, window_slots.max(1) + 1).collect(),
        }
    }

    /// Slots in the window (samples kept minus one).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Never true: the history always keeps at least two samples.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Records the counter's value at the end of an interval, dropping the oldest.
    pub fn push(&mut self, count: u64) {
        self.values.pop_front();
        self.values.push_back(count);
    }

    /// `(newest − oldest) / window_s`.
    pub fn per_second(&self, window_s: f64) -> f64 {
        let (Some(old), Some(new)) = (self.values.front(), self.values.back()) else {
            return 0.0;
        };
        if window_s <= 0.0 {
            return 0.0;
        }
        new.saturating_sub(*old) as f64 / window_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_window_averages_filled_slots_and_clamps() {
        let mut w = TimerWindow::new(3);
        assert_eq!(w.per_second(), 0.0);
        w.push(2500.0, 5.0); // 2.5 s of 5 s
        assert_eq!(w.per_second(), 500.0);
        w.push(5000.0, 5.0);
        assert_eq!(w.per_second(), 750.0);
        w.push(0.0, 5.0);
        w.push(0.0, 5.0); // the 2500 falls out
        assert!((w.per_second() - 1000.0 / 3.0).abs() < 1e-9);
        w.push(99_999.0, 1.0);
        assert_eq!(w.per_second(), 1000.0);
        let mut late = TimerWindow::new(2);
        late.push(3000.0, 6.0); // a tick that came 1 s late
        assert_eq!(late.per_second(), 500.0);
    }

    #[test]
    fn meter_window_divides_by_the_full_window_like_flink() {
        let mut m = MeterWindow::new(12);
        m.push(600);
        // 600 records in the first 5 s of a 60 s window read as 10/s, as Flink's MeterView does.
        assert_eq!(m.per_second(60.0), 10.0);
        for i in 2..=13 {
            m.push(600 * i);
        }
        assert_eq!(m.per_second(60.0), 120.0);
    }
}
