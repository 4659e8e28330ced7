//! `assign_timestamps_and_watermarks`: Flink's `TimestampsAndWatermarksOperator` with a periodic
//! bounded-out-of-orderness generator.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use sluice_types::{Collector, CollectorExt, Operator, OperatorError, Watermark};

use crate::time::watermarks::{BoundedOutOfOrderness, WatermarkEvent};

/// Records between two looks at the clock on the per-record path: reading the clock per record
/// would cost more than the rest of the operator.
const CLOCK_CHECK_EVERY: u32 = 1024;

/// Extracts each record's event timestamp, tracks the maximum and emits the watermark
/// `maxTs − outOfOrderness − 1` every `interval` of processing time (Flink's
/// `pipeline.auto-watermark-interval`, 200 ms by default), only when it rose. Watermarks from
/// upstream are swallowed (this operator defines event time from here on), except the final
/// `Watermark::MAX` of a bounded input, which is forwarded so every window fires.
///
/// With idleness configured, a subtask that saw no record for the timeout tells downstream it is
/// idle, so it no longer holds their watermark back; its next record makes it active again.
pub struct WatermarkAssignerOp<T, TS> {
    timestamp_of: TS,
    generator: BoundedOutOfOrderness,
    interval: Duration,
    next_emit: Instant,
    countdown: u32,
    emitted: i64,
    idle: bool,
    started: Instant,
    _t: PhantomData<fn(T)>,
}

impl<T, TS: Fn(&T) -> i64> WatermarkAssignerOp<T, TS> {
    /// Stamps records with `timestamp_of` and emits `generator`'s watermark every `interval`
    /// (Flink's `pipeline.auto-watermark-interval`), no idleness.
    pub fn new(timestamp_of: TS, generator: BoundedOutOfOrderness, interval: Duration) -> Self {
        let now = Instant::now();
        WatermarkAssignerOp {
            timestamp_of,
            generator,
            interval,
            next_emit: now + interval,
            countdown: CLOCK_CHECK_EVERY,
            emitted: i64::MIN,
            idle: false,
            started: now,
            _t: PhantomData,
        }
    }

    fn periodic(&mut self, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let now = Instant::now();
        if now < self.next_emit {
            return Ok(());
        }
        self.next_emit = now + self.interval;
        let now_ms = now.duration_since(self.started).as_millis() as i64;
        match self.generator.on_periodic_emit(now_ms) {
            WatermarkEvent::Watermark(w) => self.emit(w, out),
            WatermarkEvent::Idle if !self.idle => {
                self.idle = true;
                out.emit_idleness(true)
            }
            _ => Ok(()),
        }
    }

    fn emit(&mut self, w: i64, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        if w > self.emitted {
            self.emitted = w;
            out.emit_watermark(Watermark(w))?;
        }
        Ok(())
    }
}

impl<T: Send, TS: Fn(&T) -> i64 + Send> Operator<T, T> for WatermarkAssignerOp<T, TS> {
    #[inline]
    fn process(&mut self, record: T, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        self.generator.on_event((self.timestamp_of)(&record));
        if self.idle {
            self.idle = false;
            out.emit_idleness(false)?;
        }
        out.collect(record)?;
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = CLOCK_CHECK_EVERY;
            self.periodic(out)?;
        }
        Ok(())
    }

    fn tick(&mut self, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        self.periodic(out)
    }

    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        if watermark == Watermark::MAX {
            self.emit(i64::MAX, out)?;
        }
        Ok(())
    }

    fn on_idleness(
        &mut self,
        _idle: bool,
        _out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_types::VecCollector;

    #[test]
    fn emits_max_minus_bound_minus_one_periodically_and_forwards_only_the_final_max() {
        let mut op =
            WatermarkAssignerOp::new(|r: &i64| *r, BoundedOutOfOrderness::new(4), Duration::ZERO);
        let mut out = VecCollector::default();
        for ts in [10, 30, 20] {
            op.process(ts, &mut out).unwrap();
        }
        op.tick(&mut out).unwrap();
        op.on_watermark(Watermark(1_000), &mut out).unwrap(); // upstream: swallowed
        op.process(25, &mut out).unwrap();
        op.tick(&mut out).unwrap(); // unchanged: not re-emitted
        op.on_watermark(Watermark::MAX, &mut out).unwrap();
        assert_eq!(out.records, vec![10, 30, 20, 25]);
        assert_eq!(out.watermarks, vec![Watermark(25), Watermark::MAX]);
    }

    #[test]
    fn checks_the_clock_every_1024_records_without_ticks() {
        let mut op =
            WatermarkAssignerOp::new(|r: &i64| *r, BoundedOutOfOrderness::new(0), Duration::ZERO);
        let mut out = VecCollector::default();
        for ts in 0..2048 {
            op.process(ts, &mut out).unwrap();
        }
        assert_eq!(out.watermarks, vec![Watermark(1022), Watermark(2046)]);
    }

    #[test]
    fn a_quiet_input_turns_idle_and_its_next_record_active_again() {
        let mut op = WatermarkAssignerOp::new(
            |r: &i64| *r,
            BoundedOutOfOrderness::new(0).with_idleness(20),
            Duration::ZERO,
        );
        let mut out = VecCollector::default();
        op.process(5, &mut out).unwrap();
        op.tick(&mut out).unwrap(); // activity seen
        op.tick(&mut out).unwrap(); // quiet from now
        std::thread::sleep(Duration::from_millis(40));
        op.tick(&mut out).unwrap(); // quiet for longer than 20 ms: idle
        op.tick(&mut out).unwrap(); // still idle: reported once
        assert_eq!(out.idleness, vec![true]);
        op.process(6, &mut out).unwrap();
        assert_eq!(out.idleness, vec![true, false]);
        assert_eq!(out.watermarks.first(), Some(&Watermark(4)));
    }
}
