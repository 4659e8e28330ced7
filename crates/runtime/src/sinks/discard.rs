use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use sluice_types::{Collector, ControlEvent, OperatorError};

/// The total count of a discard sink, across subtasks, readable while the job runs.
#[derive(Clone, Debug, Default)]
pub struct DiscardHandle {
    count: Arc<AtomicU64>,
}

impl DiscardHandle {
    /// Records discarded so far, by all subtasks (each adds its count every 4096 records
    /// and at the end, so it lags a little while the job runs).
    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }
    /// Sets the count back to 0 (before a new run).
    pub fn reset(&self) {
        self.count.store(0, Relaxed)
    }
    /// A sink (one per subtask) that adds to this handle's count.
    pub fn sink(&self) -> DiscardSink {
        DiscardSink {
            local: 0,
            total: self.count.clone(),
        }
    }
}

/// Drops records and counts them (published every 4096 records or more and at the end).
pub struct DiscardSink {
    local: u64,
    total: Arc<AtomicU64>,
}

impl<T: Send> Collector<T> for DiscardSink {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        drop(record);
        self.local += 1;
        if self.local == 4096 {
            self.total.fetch_add(self.local, Relaxed);
            self.local = 0;
        }
        Ok(())
    }
    #[inline]
    fn collect_batch(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError> {
        self.local += batch.len() as u64;
        batch.clear();
        if self.local >= 4096 {
            self.total.fetch_add(self.local, Relaxed);
            self.local = 0;
        }
        Ok(())
    }
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            // The count is published in steps of 4096; the rest at the end.
            ControlEvent::EndOfInput => {
                self.total.fetch_add(self.local, Relaxed);
                self.local = 0;
            }
            // Nothing buffered, no state, no notion of time.
            ControlEvent::Flush
            | ControlEvent::Barrier(_)
            | ControlEvent::Watermark(_)
            | ControlEvent::Idleness(_)
            | ControlEvent::CheckpointComplete(_) => {}
        }
        Ok(())
    }
}
