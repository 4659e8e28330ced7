use std::sync::{Arc, Mutex};

use sluice_types::{Collector, ControlEvent, OperatorError};

/// Where the collect sink's subtasks deposit their records when they finish.
#[derive(Debug)]
pub struct CollectHandle<T> {
    parts: Arc<Mutex<Vec<Option<Vec<T>>>>>,
}

impl<T> Clone for CollectHandle<T> {
    fn clone(&self) -> Self {
        CollectHandle {
            parts: self.parts.clone(),
        }
    }
}

impl<T> CollectHandle<T> {
    /// A handle with no subtask slots yet ([`CollectHandle::reset`] makes them).
    pub fn new() -> Self {
        CollectHandle {
            parts: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Prepares one slot per subtask (called when the job is deployed).
    pub fn reset(&self, parallelism: usize) {
        let mut p = self.parts.lock().unwrap_or_else(|p| p.into_inner());
        p.clear();
        p.resize_with(parallelism, || None);
    }

    /// All collected records: subtask 0's in arrival order, then subtask 1's, and so on.
    pub fn take(&self) -> Vec<T> {
        let mut p = self.parts.lock().unwrap_or_else(|p| p.into_inner());
        p.iter_mut().filter_map(Option::take).flatten().collect()
    }

    /// The records per subtask.
    pub fn take_by_subtask(&self) -> Vec<Vec<T>> {
        let mut p = self.parts.lock().unwrap_or_else(|p| p.into_inner());
        p.iter_mut().map(|s| s.take().unwrap_or_default()).collect()
    }

    /// The sink of subtask `subtask`, which deposits into its slot of this handle.
    pub fn sink(&self, subtask: usize) -> CollectSink<T> {
        CollectSink {
            buf: Vec::new(),
            subtask,
            handle: self.clone(),
        }
    }
}

impl<T> Default for CollectHandle<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Keeps records in memory; hands them to its [`CollectHandle`] at end of input.
pub struct CollectSink<T> {
    buf: Vec<T>,
    subtask: usize,
    handle: CollectHandle<T>,
}

impl<T: Send> Collector<T> for CollectSink<T> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        self.buf.push(record);
        Ok(())
    }
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            // The subtask's records are handed over once, at the end.
            ControlEvent::EndOfInput => {
                let mut p = self.handle.parts.lock().unwrap_or_else(|p| p.into_inner());
                if p.len() <= self.subtask {
                    p.resize_with(self.subtask + 1, || None);
                }
                p[self.subtask] = Some(std::mem::take(&mut self.buf));
            }
            // An in-memory result: nothing to ship early, not part of checkpoints, no time.
            ControlEvent::Flush
            | ControlEvent::Barrier(_)
            | ControlEvent::Watermark(_)
            | ControlEvent::Idleness(_)
            | ControlEvent::CheckpointComplete(_) => {}
        }
        Ok(())
    }
}
