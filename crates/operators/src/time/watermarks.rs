//! Watermark generation (Flink's `BoundedOutOfOrdernessWatermarks` + `WatermarksWithIdleness`)
//! and the multi-input combiner (Flink's `StatusWatermarkValve` / `WatermarkOutputMultiplexer`).
//!
//! Times are milliseconds as `i64`, like Java's `long`. Clocks are explicit arguments.

/// What a generator or the combiner tells downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkEvent {
    /// A new (strictly higher, for the combiner) watermark.
    Watermark(i64),
    /// The output became idle: downstream must exclude it from its minimum.
    Idle,
    /// The output became active again without its watermark advancing (combiner only; a
    /// generator signals activity by emitting a watermark).
    Active,
}

/// Flink's idleness timer: counts activity, and on each periodic check measures how long the
/// count has not moved. Idle when `now − start_of_inactivity > timeout` (strictly), where
/// `start_of_inactivity` is the first check that saw no new activity — as `IdlenessTimer.java`.
#[derive(Debug, Clone)]
struct IdlenessTimer {
    timeout_ms: i64,
    counter: u64,
    last_counter: u64,
    start_of_inactivity: Option<i64>,
}

impl IdlenessTimer {
    fn activity(&mut self) {
        self.counter = self.counter.wrapping_add(1);
    }

    fn check_if_idle(&mut self, now_ms: i64) -> bool {
        if self.counter != self.last_counter {
            self.last_counter = self.counter;
            self.start_of_inactivity = None;
            false
        } else if let Some(start) = self.start_of_inactivity {
            now_ms.saturating_sub(start) > self.timeout_ms
        } else {
            self.start_of_inactivity = Some(now_ms);
            false
        }
    }
}

/// Flink's `WatermarkStrategy.forBoundedOutOfOrderness(d)`: tracks the maximum event timestamp;
/// the watermark is `maxTs − d − 1`. `maxTs` starts at `i64::MIN + d + 1`, so the first watermark
/// is exactly `i64::MIN` and no arithmetic can overflow. `d = 0` is `forMonotonousTimestamps`.
#[derive(Debug, Clone)]
pub struct BoundedOutOfOrderness {
    max_out_of_orderness_ms: i64,
    max_timestamp: i64,
    idleness: Option<IdlenessTimer>,
}

impl BoundedOutOfOrderness {
    /// A generator tolerating `max_out_of_orderness_ms` of disorder (clamped to `i64::MAX`;
    /// Flink rejects negative values, which `u64` rules out).
    pub fn new(max_out_of_orderness_ms: u64) -> Self {
        let d = i64::try_from(max_out_of_orderness_ms).unwrap_or(i64::MAX);
        Self {
            max_out_of_orderness_ms: d,
            // i64::MIN + d + 1 never overflows for 0 <= d <= i64::MAX.
            max_timestamp: i64::MIN + d + 1,
            idleness: None,
        }
    }

    /// Adds Flink's `withIdleness(timeout)`: [`on_periodic_emit`](Self::on_periodic_emit) reports
    /// [`WatermarkEvent::Idle`] once no event arrived for longer than `timeout_ms`.
    pub fn with_idleness(mut self, timeout_ms: u64) -> Self {
        self.idleness = Some(IdlenessTimer {
            timeout_ms: i64::try_from(timeout_ms).unwrap_or(i64::MAX),
            counter: 0,
            last_counter: 0,
            start_of_inactivity: None,
        });
        self
    }

    /// The configured out-of-orderness bound in milliseconds.
    pub fn max_out_of_orderness_ms(&self) -> i64 {
        self.max_out_of_orderness_ms
    }

    /// Observes an event's timestamp (`onEvent`).
    pub fn on_event(&mut self, timestamp: i64) {
        self.max_timestamp = self.max_timestamp.max(timestamp);
        if let Some(timer) = &mut self.idleness {
            timer.activity();
        }
    }

    /// `maxTs − d − 1`; `i64::MIN` before any event.
    pub fn current_watermark(&self) -> i64 {
        self.max_timestamp - self.max_out_of_orderness_ms - 1
    }

    /// The periodic emit (every `pipeline.auto-watermark-interval`, 200 ms by default) at wall
    /// clock `now_ms`: `Idle` if idleness is configured and the input has been quiet for longer
    /// than the timeout, else the current watermark.
    pub fn on_periodic_emit(&mut self, now_ms: i64) -> WatermarkEvent {
        let idle = self
            .idleness
            .as_mut()
            .is_some_and(|timer| timer.check_if_idle(now_ms));
        if idle {
            WatermarkEvent::Idle
        } else {
            WatermarkEvent::Watermark(self.current_watermark())
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct InputState {
    watermark: i64,
    idle: bool,
}

/// Combines the watermarks of N inputs: the output is the minimum over non-idle inputs, never
/// decreases, and is emitted only when it increases. When every input is idle the output is
/// idle; it becomes active again as soon as one input is.
///
/// Each input's own watermark is also monotonic: a lower value than it already had is ignored.
#[derive(Debug, Clone)]
pub struct WatermarkCombiner {
    inputs: Vec<InputState>,
    output: i64,
    output_idle: bool,
}

impl WatermarkCombiner {
    /// A combiner over `inputs` inputs, all active at `i64::MIN`. With zero inputs the output is
    /// idle from the start.
    pub fn new(inputs: usize) -> Self {
        Self {
            inputs: vec![
                InputState {
                    watermark: i64::MIN,
                    idle: false
                };
                inputs
            ],
            output: i64::MIN,
            output_idle: inputs == 0,
        }
    }

    /// The last watermark emitted (`i64::MIN` before the first).
    pub fn current_watermark(&self) -> i64 {
        self.output
    }

    /// Whether every input is idle.
    pub fn is_idle(&self) -> bool {
        self.output_idle
    }

    /// The watermark last seen from `input`. Panics if `input` is out of range.
    pub fn input_watermark(&self, input: usize) -> i64 {
        self.inputs[input].watermark
    }

    /// A watermark from `input` (which also marks it active). Returns what to forward, if
    /// anything. Panics if `input` is out of range.
    pub fn on_watermark(&mut self, input: usize, watermark: i64) -> Option<WatermarkEvent> {
        let state = &mut self.inputs[input];
        state.idle = false;
        state.watermark = state.watermark.max(watermark);
        self.recompute()
    }

    /// `input` went idle: it no longer holds the output back.
    pub fn mark_idle(&mut self, input: usize) -> Option<WatermarkEvent> {
        self.inputs[input].idle = true;
        self.recompute()
    }

    /// `input` is active again (keeping the watermark it had).
    pub fn mark_active(&mut self, input: usize) -> Option<WatermarkEvent> {
        self.inputs[input].idle = false;
        self.recompute()
    }

    fn recompute(&mut self) -> Option<WatermarkEvent> {
        let min_active = self
            .inputs
            .iter()
            .filter(|i| !i.idle)
            .map(|i| i.watermark)
            .min();
        match min_active {
            None if self.output_idle => None,
            None => {
                self.output_idle = true;
                Some(WatermarkEvent::Idle)
            }
            Some(min) if min > self.output => {
                self.output = min;
                self.output_idle = false;
                Some(WatermarkEvent::Watermark(min))
            }
            Some(_) if self.output_idle => {
                self.output_idle = false;
                Some(WatermarkEvent::Active)
            }
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_watermark_is_long_min_for_any_bound() {
        for d in [0, 1, 5, 1_000, u64::MAX] {
            let g = BoundedOutOfOrderness::new(d);
            assert_eq!(g.current_watermark(), i64::MIN, "d = {d}");
        }
    }

    #[test]
    fn watermark_is_max_minus_bound_minus_one() {
        let mut g = BoundedOutOfOrderness::new(5);
        g.on_event(100);
        assert_eq!(g.current_watermark(), 94);
        g.on_event(90); // out of order: max unchanged
        assert_eq!(g.current_watermark(), 94);
        g.on_event(200);
        assert_eq!(g.current_watermark(), 194);
        let mut mono = BoundedOutOfOrderness::new(0);
        mono.on_event(7);
        assert_eq!(mono.current_watermark(), 6);
    }

    #[test]
    fn extreme_timestamps_do_not_overflow() {
        let mut g = BoundedOutOfOrderness::new(10);
        g.on_event(i64::MIN);
        assert_eq!(g.current_watermark(), i64::MIN);
        g.on_event(i64::MAX);
        assert_eq!(g.current_watermark(), i64::MAX - 11);
        let mut huge = BoundedOutOfOrderness::new(u64::MAX);
        huge.on_event(i64::MAX);
        assert_eq!(huge.current_watermark(), -1);
    }

    #[test]
    fn periodic_emit_without_idleness_always_emits() {
        let mut g = BoundedOutOfOrderness::new(0);
        assert_eq!(g.on_periodic_emit(0), WatermarkEvent::Watermark(i64::MIN));
        assert_eq!(
            g.on_periodic_emit(1_000_000),
            WatermarkEvent::Watermark(i64::MIN)
        );
    }

    #[test]
    fn idleness_follows_flink_timer() {
        let mut g = BoundedOutOfOrderness::new(0).with_idleness(100);
        g.on_event(10);
        // Activity since the last check: resets.
        assert_eq!(g.on_periodic_emit(0), WatermarkEvent::Watermark(9));
        // First quiet check starts the inactivity clock.
        assert_eq!(g.on_periodic_emit(50), WatermarkEvent::Watermark(9));
        // Exactly the timeout: not yet idle (strict >).
        assert_eq!(g.on_periodic_emit(150), WatermarkEvent::Watermark(9));
        assert_eq!(g.on_periodic_emit(151), WatermarkEvent::Idle);
        // An event makes it active again.
        g.on_event(20);
        assert_eq!(g.on_periodic_emit(152), WatermarkEvent::Watermark(19));
    }

    #[test]
    fn combiner_takes_min_and_emits_only_on_increase() {
        let mut c = WatermarkCombiner::new(2);
        assert_eq!(c.on_watermark(0, 10), None); // input 1 still at MIN
        assert_eq!(c.on_watermark(1, 5), Some(WatermarkEvent::Watermark(5)));
        assert_eq!(c.on_watermark(1, 5), None); // same value: nothing
        assert_eq!(c.on_watermark(1, 20), Some(WatermarkEvent::Watermark(10)));
        assert_eq!(c.on_watermark(0, 15), Some(WatermarkEvent::Watermark(15)));
        assert_eq!(c.current_watermark(), 15);
    }

    #[test]
    fn combiner_is_monotonic() {
        let mut c = WatermarkCombiner::new(2);
        c.on_watermark(0, 10);
        c.on_watermark(1, 10);
        assert_eq!(c.current_watermark(), 10);
        // A regressing input is ignored.
        assert_eq!(c.on_watermark(0, 3), None);
        assert_eq!(c.input_watermark(0), 10);
        // Idle input 1 comes back behind: the output does not go back.
        c.mark_idle(1);
        assert_eq!(c.on_watermark(0, 30), Some(WatermarkEvent::Watermark(30)));
        assert_eq!(c.mark_active(1), None); // input 1 is at 10 < 30: holds, no regression
        assert_eq!(c.current_watermark(), 30);
        assert_eq!(c.on_watermark(1, 25), None);
        // Input 1 overtakes; input 0 (at 30) now holds the minimum.
        assert_eq!(c.on_watermark(1, 40), None);
        assert_eq!(c.on_watermark(0, 50), Some(WatermarkEvent::Watermark(40)));
    }

    #[test]
    fn combiner_excludes_idle_input() {
        let mut c = WatermarkCombiner::new(3);
        c.on_watermark(0, 100);
        c.on_watermark(1, 50);
        assert_eq!(c.current_watermark(), i64::MIN); // input 2 silent at MIN
        assert_eq!(c.mark_idle(2), Some(WatermarkEvent::Watermark(50)));
        assert_eq!(c.mark_idle(1), Some(WatermarkEvent::Watermark(100)));
        assert!(!c.is_idle());
    }

    #[test]
    fn combiner_all_idle_is_idle_then_resumes() {
        let mut c = WatermarkCombiner::new(2);
        c.on_watermark(0, 10);
        c.on_watermark(1, 10);
        assert_eq!(c.mark_idle(0), None);
        assert_eq!(c.mark_idle(1), Some(WatermarkEvent::Idle));
        assert!(c.is_idle());
        assert_eq!(c.mark_idle(1), None);
        // Back with no progress: just active.
        assert_eq!(c.mark_active(0), Some(WatermarkEvent::Active));
        assert!(!c.is_idle());
        c.mark_idle(0);
        // Back with progress: the watermark says it.
        assert_eq!(c.on_watermark(1, 12), Some(WatermarkEvent::Watermark(12)));
        assert!(!c.is_idle());
        assert!(WatermarkCombiner::new(0).is_idle());
    }
}
