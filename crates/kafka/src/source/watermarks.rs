//! Event time in the Kafka source: Flink's split-level watermark generation. Each partition
//! has its own generator (bounded out-of-orderness, optional idleness); the subtask emits the
//! minimum over its non-idle partitions (`WatermarkCombiner`, Flink's
//! `WatermarkOutputMultiplexer`), so one fast partition cannot run ahead of a slow one.

use std::sync::Arc;
use std::time::Duration;

use sluice_runtime::time::watermarks::{BoundedOutOfOrderness, WatermarkCombiner, WatermarkEvent};
use sluice_types::{Collector, CollectorExt, OperatorError, Watermark};

/// Where a record's event time comes from.
pub enum EventTime<T> {
    /// Kafka's record timestamp (create or log-append time). Keep it in the record (a
    /// deserializer closure sees it) if a window downstream needs it.
    KafkaTimestamp,
    /// A field of the deserialised record.
    Record(Arc<dyn Fn(&T) -> i64 + Send + Sync>),
}

impl<T> Clone for EventTime<T> {
    fn clone(&self) -> Self {
        match self {
            EventTime::KafkaTimestamp => EventTime::KafkaTimestamp,
            EventTime::Record(f) => EventTime::Record(f.clone()),
        }
    }
}

/// The source's watermark strategy (Flink's `WatermarkStrategy` given to `fromSource`).
pub struct KafkaWatermarks<T> {
    pub(crate) out_of_orderness_ms: u64,
    pub(crate) idleness_ms: Option<u64>,
    pub(crate) interval: Duration,
    pub(crate) event_time: EventTime<T>,
}

impl<T> Clone for KafkaWatermarks<T> {
    fn clone(&self) -> Self {
        KafkaWatermarks {
            out_of_orderness_ms: self.out_of_orderness_ms,
            idleness_ms: self.idleness_ms,
            interval: self.interval,
            event_time: self.event_time.clone(),
        }
    }
}

impl<T> KafkaWatermarks<T> {
    /// Watermarks from Kafka's record timestamps, trailing the largest by
    /// `max_out_of_orderness_ms + 1`.
    pub fn kafka_timestamps(max_out_of_orderness_ms: u64) -> Self {
        KafkaWatermarks {
            out_of_orderness_ms: max_out_of_orderness_ms,
            idleness_ms: None,
            interval: sluice_datastream::DEFAULT_WATERMARK_INTERVAL,
            event_time: EventTime::KafkaTimestamp,
        }
    }

    /// Watermarks from a timestamp in the record; the source's stream also gets it as its
    /// timestamp function (windows downstream read it).
    pub fn from_record<F>(max_out_of_orderness_ms: u64, timestamp: F) -> Self
    where
        F: Fn(&T) -> i64 + Send + Sync + 'static,
    {
        KafkaWatermarks {
            event_time: EventTime::Record(Arc::new(timestamp)),
            ..Self::kafka_timestamps(max_out_of_orderness_ms)
        }
    }

    /// A partition without records for `timeout_ms` stops holding the watermark back
    /// (`withIdleness`); when all of a subtask's partitions are idle, the subtask is idle.
    pub fn with_idleness(mut self, timeout_ms: u64) -> Self {
        self.idleness_ms = Some(timeout_ms);
        self
    }

    /// How often watermarks are emitted (default 200 ms, Flink's
    /// `pipeline.auto-watermark-interval`).
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }
}

/// The running state: one generator per split plus the combiner, and what was last sent.
pub(crate) struct SplitWatermarks {
    generators: Vec<BoundedOutOfOrderness>,
    combiner: WatermarkCombiner,
    finished: Vec<bool>,
    /// Whether the subtask told downstream it is idle.
    idle_sent: bool,
}

impl SplitWatermarks {
    pub(crate) fn new<T>(strategy: &KafkaWatermarks<T>, splits: usize) -> Self {
        let make = || {
            let g = BoundedOutOfOrderness::new(strategy.out_of_orderness_ms);
            match strategy.idleness_ms {
                Some(ms) => g.with_idleness(ms),
                None => g,
            }
        };
        SplitWatermarks {
            generators: (0..splits).map(|_| make()).collect(),
            combiner: WatermarkCombiner::new(splits),
            finished: vec![false; splits],
            idle_sent: false,
        }
    }

    /// A record of split `i` with event time `ts`; wakes the subtask up if it was idle.
    #[inline]
    pub(crate) fn on_event<T>(
        &mut self,
        i: usize,
        ts: i64,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        self.generators[i].on_event(ts);
        if self.idle_sent {
            self.idle_sent = false;
            let _ = self.combiner.mark_active(i);
            out.emit_idleness(false)?;
        }
        Ok(())
    }

    /// Split `i` reached its end (bounded): it no longer holds the watermark back. When it was
    /// the last, the subtask's event time is over: it emits the maximal watermark then, as
    /// Flink's source does at the end of its input (before its final checkpoint). Marking the
    /// subtask idle instead would let a downstream operator fed by other subtasks run its
    /// watermark to the end before an operator chained here (a local pre-aggregation) sent
    /// what it holds, which then arrives late.
    pub(crate) fn finish_split<T>(
        &mut self,
        i: usize,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        self.finished[i] = true;
        if self.finished.iter().all(|f| *f) {
            if self.idle_sent {
                self.idle_sent = false;
                out.emit_idleness(false)?;
            }
            return out.emit_watermark(Watermark(i64::MAX));
        }
        let ev = self.combiner.mark_idle(i);
        self.forward(ev, out)
    }

    /// The periodic emit: every live split's generator reports, the combiner decides.
    pub(crate) fn periodic<T>(
        &mut self,
        now_ms: i64,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        for i in 0..self.generators.len() {
            if self.finished[i] {
                continue;
            }
            let ev = match self.generators[i].on_periodic_emit(now_ms) {
                WatermarkEvent::Idle => self.combiner.mark_idle(i),
                WatermarkEvent::Watermark(w) => self.combiner.on_watermark(i, w),
                WatermarkEvent::Active => self.combiner.mark_active(i),
            };
            self.forward(ev, out)?;
        }
        Ok(())
    }

    fn forward<T>(
        &mut self,
        ev: Option<WatermarkEvent>,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        match ev {
            Some(WatermarkEvent::Watermark(w)) => {
                if self.idle_sent {
                    self.idle_sent = false;
                    out.emit_idleness(false)?;
                }
                if w > i64::MIN {
                    out.emit_watermark(Watermark(w))?;
                }
                Ok(())
            }
            Some(WatermarkEvent::Idle) if !self.idle_sent => {
                self.idle_sent = true;
                out.emit_idleness(true)
            }
            Some(WatermarkEvent::Active) if self.idle_sent => {
                self.idle_sent = false;
                out.emit_idleness(false)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_types::VecCollector;

    #[test]
    fn the_subtask_watermark_is_the_minimum_over_its_active_partitions() {
        let s = KafkaWatermarks::<u8>::kafka_timestamps(0).with_idleness(100);
        let mut w = SplitWatermarks::new(&s, 2);
        let mut out = VecCollector::<u8>::default();
        w.on_event(0, 1_000, &mut out).unwrap();
        w.on_event(1, 5_000, &mut out).unwrap();
        w.periodic(0, &mut out).unwrap();
        assert_eq!(out.watermarks, vec![Watermark(999)]);
        // Partition 0 goes quiet: after the timeout it is idle and 1 alone decides.
        w.on_event(1, 6_000, &mut out).unwrap();
        w.periodic(10, &mut out).unwrap();
        w.on_event(1, 7_000, &mut out).unwrap();
        w.periodic(200, &mut out).unwrap();
        assert_eq!(out.watermarks.last(), Some(&Watermark(6_999)));
        // Both quiet: the subtask is idle; a record makes it active again.
        w.periodic(300, &mut out).unwrap();
        w.periodic(500, &mut out).unwrap();
        assert_eq!(out.idleness, vec![true]);
        w.on_event(0, 8_000, &mut out).unwrap();
        assert_eq!(out.idleness, vec![true, false]);
    }

    #[test]
    fn the_last_split_to_finish_ends_event_time_rather_than_idling() {
        let s = KafkaWatermarks::<u8>::kafka_timestamps(0);
        let mut w = SplitWatermarks::new(&s, 2);
        let mut out = VecCollector::<u8>::default();
        w.on_event(0, 1_000, &mut out).unwrap();
        w.finish_split(0, &mut out).unwrap();
        // Split 1 has sent nothing yet: it holds the watermark back.
        assert_eq!(out.watermarks, vec![]);
        w.on_event(1, 500, &mut out).unwrap();
        w.finish_split(1, &mut out).unwrap();
        assert_eq!(out.watermarks, vec![Watermark(i64::MAX)]);
        assert!(out.idleness.is_empty(), "{:?}", out.idleness);
    }
}
