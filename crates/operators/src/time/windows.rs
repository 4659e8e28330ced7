//! Event-time windows with Flink's exact assignment, merging and lateness rules
//! (`TimeWindow.java`, `TumblingEventTimeWindows.java`, `SlidingEventTimeWindows.java`,
//! `EventTimeSessionWindows.java`, `WindowOperator.isWindowLate/isElementLate/cleanupTime`).
//!
//! Times are milliseconds as `i64`. Windows are half-open `[start, end)`.

/// Invalid assigner parameters (Flink throws `IllegalArgumentException` for the same cases).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// Tumbling: `size > 0` and `|offset| < size`.
    #[error("TumblingEventTimeWindows parameters must satisfy abs(offset) < size (size {size}, offset {offset})")]
    Tumbling {
        /// The window length given, ms.
        size: i64,
        /// The offset given, ms.
        offset: i64,
    },
    /// Sliding: `size > 0`, `slide > 0` and `|offset| < slide`.
    #[error("SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0 (size {size}, slide {slide}, offset {offset})")]
    Sliding {
        /// The window length given, ms.
        size: i64,
        /// The slide given, ms.
        slide: i64,
        /// The offset given, ms.
        offset: i64,
    },
    /// Session: `gap > 0`.
    #[error("EventTimeSessionWindows parameters must satisfy 0 < gap (gap {gap})")]
    Session {
        /// The gap given, ms.
        gap: i64,
    },
}

/// A window `[start, end)`. Ordered by `(start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimeWindow {
    /// First timestamp inside the window.
    pub start: i64,
    /// First timestamp after the window (exclusive).
    pub end: i64,
}

impl TimeWindow {
    /// `[start, end)`.
    pub fn new(start: i64, end: i64) -> Self {
        Self { start, end }
    }

    /// The largest timestamp inside the window: `end − 1`. The event-time trigger fires when the
    /// watermark reaches it.
    pub fn max_timestamp(&self) -> i64 {
        self.end - 1
    }

    /// Whether `timestamp` lies in `[start, end)`.
    pub fn contains(&self, timestamp: i64) -> bool {
        self.start <= timestamp && timestamp < self.end
    }

    /// Flink's `intersects`: `start ≤ other.end && end ≥ other.start` — true also for windows
    /// that merely touch (`[0, 5)` and `[5, 10)`), which is why touching sessions merge.
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window covering both.
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// Flink's `TimeWindow.getWindowStartWithOffset(timestamp, offset, windowSize)`:
/// `remainder = (ts − offset) % size` with Java's truncating `%`; if negative, add `size`; the
/// start is `ts − remainder`. So the remainder is always in `[0, size)` and the start never
/// exceeds `ts`, also for negative timestamps. (The older `ts − (ts − offset + size) % size` agrees
/// for `ts ≥ offset − size` and is wrong below.) `size` must be positive. Arithmetic saturates at
/// the `i64` edges, where Java would wrap.
pub fn window_start_with_offset(timestamp: i64, offset: i64, size: i64) -> i64 {
    let remainder = timestamp.wrapping_sub(offset) % size;
    if remainder < 0 {
        timestamp.saturating_sub(remainder + size)
    } else {
        timestamp.saturating_sub(remainder)
    }
}

/// Tumbling event-time windows: each timestamp belongs to exactly one `[start, start + size)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TumblingEventTimeWindows {
    size: i64,
    offset: i64,
}

impl TumblingEventTimeWindows {
    /// `TumblingEventTimeWindows.of(size)`.
    pub fn of(size: i64) -> Result<Self, WindowError> {
        Self::with_offset(size, 0)
    }

    /// `TumblingEventTimeWindows.of(size, offset)`; requires `size > 0` and `|offset| < size`.
    pub fn with_offset(size: i64, offset: i64) -> Result<Self, WindowError> {
        if size <= 0 || offset.unsigned_abs() >= size.unsigned_abs() {
            return Err(WindowError::Tumbling { size, offset });
        }
        Ok(Self { size, offset })
    }

    /// Window size in ms.
    pub fn size(&self) -> i64 {
        self.size
    }

    /// Offset in ms.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The single window containing `timestamp`.
    pub fn assign_window(&self, timestamp: i64) -> TimeWindow {
        let start = window_start_with_offset(timestamp, self.offset, self.size);
        TimeWindow::new(start, start.saturating_add(self.size))
    }
}

/// Sliding event-time windows of `size`, one starting every `slide`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingEventTimeWindows {
    size: i64,
    slide: i64,
    offset: i64,
}

impl SlidingEventTimeWindows {
    /// `SlidingEventTimeWindows.of(size, slide)`.
    pub fn of(size: i64, slide: i64) -> Result<Self, WindowError> {
        Self::with_offset(size, slide, 0)
    }

    /// `SlidingEventTimeWindows.of(size, slide, offset)`; requires `size > 0`, `slide > 0` and
    /// `|offset| < slide`.
    pub fn with_offset(size: i64, slide: i64, offset: i64) -> Result<Self, WindowError> {
        if size <= 0 || slide <= 0 || offset.unsigned_abs() >= slide.unsigned_abs() {
            return Err(WindowError::Sliding {
                size,
                slide,
                offset,
            });
        }
        Ok(Self {
            size,
            slide,
            offset,
        })
    }

    /// Window size in ms.
    pub fn size(&self) -> i64 {
        self.size
    }

    /// Slide in ms.
    pub fn slide(&self) -> i64 {
        self.slide
    }

    /// Offset in ms.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Every window containing `timestamp`, in Flink's order (latest start first):
    /// `last = start(ts, offset, slide)`, then `s = last, last − slide, …` while `s > ts − size`.
    /// That is `ceil(size / slide)` or `floor(size / slide)` windows.
    pub fn assign_windows(&self, timestamp: i64) -> Vec<TimeWindow> {
        let mut windows = Vec::with_capacity((self.size / self.slide + 1) as usize);
        self.assign_windows_into(timestamp, &mut windows);
        windows
    }

    /// [`assign_windows`](Self::assign_windows) appended to `out` (no allocation per element
    /// once `out` has grown).
    #[inline]
    pub fn assign_windows_into(&self, timestamp: i64, out: &mut Vec<TimeWindow>) {
        let last_start = window_start_with_offset(timestamp, self.offset, self.slide);
        let lower = timestamp.saturating_sub(self.size);
        let mut start = last_start;
        while start > lower {
            out.push(TimeWindow::new(start, start.saturating_add(self.size)));
            match start.checked_sub(self.slide) {
                Some(next) => start = next,
                None => break,
            }
        }
    }
}

/// Session windows: each element opens `[ts, ts + gap)`; overlapping or touching sessions merge
/// (see [`merge_sessions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTimeSessionWindows {
    gap: i64,
}

impl EventTimeSessionWindows {
    /// `EventTimeSessionWindows.withGap(gap)`; requires `gap > 0`.
    pub fn with_gap(gap: i64) -> Result<Self, WindowError> {
        if gap <= 0 {
            return Err(WindowError::Session { gap });
        }
        Ok(Self { gap })
    }

    /// The gap in ms.
    pub fn gap(&self) -> i64 {
        self.gap
    }

    /// The proto-session of one element: `[ts, ts + gap)`.
    pub fn assign_window(&self, timestamp: i64) -> TimeWindow {
        TimeWindow::new(timestamp, timestamp.saturating_add(self.gap))
    }
}

/// One result of [`merge_sessions`]: the covering window and the windows it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeGroup {
    /// The cover of all members.
    pub window: TimeWindow,
    /// The input windows merged into `window`, in start order (one member: nothing merged).
    pub members: Vec<TimeWindow>,
}

/// Flink's `TimeWindow.mergeWindows`: sort by start (stable), then sweep, merging a candidate
/// into the current group when `current.intersects(candidate)` (overlap *or touch*) and covering.
/// Returns every group in start order, singletons included; Flink only calls its merge callback
/// for groups with more than one member.
pub fn merge_sessions(windows: &[TimeWindow]) -> Vec<MergeGroup> {
    let mut sorted = windows.to_vec();
    sorted.sort_by_key(|w| w.start);
    let mut groups: Vec<MergeGroup> = Vec::new();
    for candidate in sorted {
        match groups.last_mut() {
            Some(current) if current.window.intersects(&candidate) => {
                current.window = current.window.cover(&candidate);
                current.members.push(candidate);
            }
            _ => groups.push(MergeGroup {
                window: candidate,
                members: vec![candidate],
            }),
        }
    }
    groups
}

/// Flink's `cleanupTime`: `max_timestamp + allowed_lateness`, or `i64::MAX` on overflow.
pub fn cleanup_time(window: &TimeWindow, allowed_lateness: i64) -> i64 {
    window
        .max_timestamp()
        .checked_add(allowed_lateness)
        .unwrap_or(i64::MAX)
}

/// Flink's `isWindowLate` (event time): `max_timestamp + allowed_lateness ≤ watermark`.
pub fn is_late(window: &TimeWindow, watermark: i64, allowed_lateness: i64) -> bool {
    cleanup_time(window, allowed_lateness) <= watermark
}

/// Flink's `isElementLate` (event time): `ts + allowed_lateness ≤ watermark`.
pub fn is_element_late(timestamp: i64, watermark: i64, allowed_lateness: i64) -> bool {
    timestamp.saturating_add(allowed_lateness) <= watermark
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(start: i64, end: i64) -> TimeWindow {
        TimeWindow::new(start, end)
    }

    #[test]
    fn window_start_matches_spec_formula() {
        assert_eq!(window_start_with_offset(0, 0, 10), 0);
        assert_eq!(window_start_with_offset(9, 0, 10), 0);
        assert_eq!(window_start_with_offset(10, 0, 10), 10);
        assert_eq!(window_start_with_offset(-1, 0, 10), -10);
        assert_eq!(window_start_with_offset(-10, 0, 10), -10);
        assert_eq!(window_start_with_offset(-11, 0, 10), -20);
        assert_eq!(window_start_with_offset(7, 3, 10), 3);
        assert_eq!(window_start_with_offset(2, 3, 10), -7);
        assert_eq!(window_start_with_offset(2, -3, 10), -3);
        assert_eq!(window_start_with_offset(7, -3, 10), 7);
        // The older form agrees where it is valid (ts >= offset - size).
        for ts in -20..100 {
            for (offset, size) in [(0, 10), (3, 10), (-3, 10), (0, 7)] {
                if ts >= offset - size {
                    assert_eq!(
                        window_start_with_offset(ts, offset, size),
                        ts - (ts - offset + size) % size
                    );
                }
            }
        }
    }

    #[test]
    fn window_start_at_extremes_does_not_panic() {
        let s = window_start_with_offset(i64::MIN, 0, 1000);
        assert!(s <= i64::MIN + 1000);
        assert_eq!(
            window_start_with_offset(i64::MAX, 0, 1000),
            i64::MAX - i64::MAX % 1000
        );
    }

    #[test]
    fn tumbling_end_goes_to_next_window() {
        let t = TumblingEventTimeWindows::of(10).unwrap();
        assert_eq!(t.assign_window(9), w(0, 10));
        assert_eq!(t.assign_window(10), w(10, 20));
        assert_eq!(t.assign_window(0), w(0, 10));
        assert_eq!(t.assign_window(9).max_timestamp(), 9);
    }

    #[test]
    fn tumbling_negative_and_offset() {
        let t = TumblingEventTimeWindows::of(10).unwrap();
        assert_eq!(t.assign_window(-1), w(-10, 0));
        assert_eq!(t.assign_window(-10), w(-10, 0));
        assert_eq!(t.assign_window(-11), w(-20, -10));
        let o = TumblingEventTimeWindows::with_offset(3_600_000, 900_000).unwrap();
        assert_eq!(o.assign_window(900_000), w(900_000, 4_500_000));
        assert_eq!(o.assign_window(899_999), w(-2_700_000, 900_000));
        let neg = TumblingEventTimeWindows::with_offset(10, -3).unwrap();
        assert_eq!(neg.assign_window(0), w(-3, 7));
        assert_eq!(neg.assign_window(7), w(7, 17));
    }

    #[test]
    fn invalid_parameters_rejected() {
        assert!(TumblingEventTimeWindows::of(0).is_err());
        assert!(TumblingEventTimeWindows::with_offset(10, 10).is_err());
        assert!(TumblingEventTimeWindows::with_offset(10, -10).is_err());
        assert!(TumblingEventTimeWindows::with_offset(10, i64::MIN).is_err());
        assert!(SlidingEventTimeWindows::of(0, 5).is_err());
        assert!(SlidingEventTimeWindows::of(10, 0).is_err());
        assert!(SlidingEventTimeWindows::with_offset(10, 5, 5).is_err());
        assert!(SlidingEventTimeWindows::with_offset(10, 5, 4).is_ok());
        assert!(EventTimeSessionWindows::with_gap(0).is_err());
    }

    #[test]
    fn sliding_divisible() {
        let s = SlidingEventTimeWindows::of(10, 5).unwrap();
        assert_eq!(s.assign_windows(7), vec![w(5, 15), w(0, 10)]);
        // At a slide boundary the element starts a new window and leaves the oldest.
        assert_eq!(s.assign_windows(10), vec![w(10, 20), w(5, 15)]);
        assert_eq!(s.assign_windows(-1), vec![w(-5, 5), w(-10, 0)]);
    }

    #[test]
    fn sliding_size_not_multiple_of_slide() {
        let s = SlidingEventTimeWindows::of(10, 3).unwrap();
        // last = 12; starts 12, 9, 6, 3 (3 > 12 - 10), stop at 0: four windows.
        assert_eq!(
            s.assign_windows(12),
            vec![w(12, 22), w(9, 19), w(6, 16), w(3, 13)]
        );
        // last = 12; 3 is not > 13 - 10 ([3, 13) excludes 13): three windows.
        assert_eq!(s.assign_windows(13), vec![w(12, 22), w(9, 19), w(6, 16)]);
        // last = 9; starts 9, 6, 3 (0 is not > 0: [0, 10) excludes 10).
        assert_eq!(s.assign_windows(10), vec![w(9, 19), w(6, 16), w(3, 13)]);
        let with_offset = SlidingEventTimeWindows::with_offset(10, 4, 1).unwrap();
        assert_eq!(
            with_offset.assign_windows(5),
            vec![w(5, 15), w(1, 11), w(-3, 7)]
        );
    }

    #[test]
    fn intersects_and_cover() {
        assert!(w(0, 5).intersects(&w(5, 10)));
        assert!(w(5, 10).intersects(&w(0, 5)));
        assert!(!w(0, 5).intersects(&w(6, 10)));
        assert!(w(0, 10).intersects(&w(2, 3)));
        assert_eq!(w(0, 5).cover(&w(3, 12)), w(0, 12));
    }

    #[test]
    fn touching_sessions_merge_gap_of_one_does_not() {
        let s = EventTimeSessionWindows::with_gap(5).unwrap();
        // [0,5) and [5,10) touch: merged.
        let g = merge_sessions(&[s.assign_window(5), s.assign_window(0)]);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].window, w(0, 10));
        assert_eq!(g[0].members, vec![w(0, 5), w(5, 10)]);
        // [0,5) and [6,11): 1 ms gap, separate.
        let g = merge_sessions(&[s.assign_window(0), s.assign_window(6)]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].members, vec![w(0, 5)]);
        assert_eq!(g[1].window, w(6, 11));
    }

    #[test]
    fn merge_chains_and_nested() {
        let g = merge_sessions(&[w(20, 25), w(0, 10), w(2, 4), w(9, 15), w(30, 31), w(15, 16)]);
        let windows: Vec<_> = g.iter().map(|m| m.window).collect();
        assert_eq!(windows, vec![w(0, 16), w(20, 25), w(30, 31)]);
        assert_eq!(g[0].members, vec![w(0, 10), w(2, 4), w(9, 15), w(15, 16)]);
        assert!(merge_sessions(&[]).is_empty());
    }

    #[test]
    fn lateness() {
        let win = w(0, 10); // max_timestamp 9
        assert!(!is_late(&win, 8, 0));
        assert!(is_late(&win, 9, 0));
        assert!(!is_late(&win, 9, 5));
        assert!(!is_late(&win, 13, 5));
        assert!(is_late(&win, 14, 5));
        assert_eq!(cleanup_time(&win, i64::MAX), i64::MAX);
        assert!(!is_late(&win, i64::MAX - 1, i64::MAX));
        assert!(is_element_late(5, 5, 0));
        assert!(!is_element_late(5, 4, 0));
        assert!(!is_element_late(5, 9, 5));
        assert!(is_element_late(5, 10, 5));
    }

    proptest! {
        #[test]
        fn sliding_assigns_size_over_slide_windows_each_containing_ts(
            ts in -1_000_000_000_000i64..1_000_000_000_000,
            slide in 1i64..1_000,
            factor in 1i64..20,
            offset_frac in 0.0f64..1.0,
            negative_offset in any::<bool>(),
        ) {
            let size = slide * factor;
            let mut offset = (offset_frac * slide as f64) as i64 % slide;
            if negative_offset { offset = -offset; }
            let s = SlidingEventTimeWindows::with_offset(size, slide, offset).unwrap();
            let windows = s.assign_windows(ts);
            prop_assert_eq!(windows.len() as i64, factor);
            for win in &windows {
                prop_assert!(win.contains(ts), "{:?} does not contain {}", win, ts);
                prop_assert_eq!(win.end - win.start, size);
                prop_assert_eq!((win.start - offset).rem_euclid(slide), 0);
            }
        }

        #[test]
        fn sliding_any_ratio_windows_contain_ts(
            ts in -1_000_000i64..1_000_000,
            size in 1i64..500,
            slide in 1i64..500,
        ) {
            let s = SlidingEventTimeWindows::of(size, slide).unwrap();
            let windows = s.assign_windows(ts);
            let n = windows.len() as i64;
            prop_assert!(n == size / slide || n == (size + slide - 1) / slide);
            for win in &windows {
                prop_assert!(win.contains(ts));
            }
        }

        #[test]
        fn tumbling_window_contains_ts(
            ts in any::<i64>().prop_map(|t| t / 4),
            size in 1i64..1_000_000,
        ) {
            let win = TumblingEventTimeWindows::of(size).unwrap().assign_window(ts);
            prop_assert!(win.contains(ts));
            prop_assert_eq!(win.start.rem_euclid(size), 0);
        }
    }
}
