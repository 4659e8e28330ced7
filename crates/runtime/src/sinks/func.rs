use sluice_types::{Collector, ControlEvent, OperatorError};

/// A sink from a closure called once per record (and never concurrently within a subtask).
pub struct FnSink<F>(pub F);

impl<T, F> Collector<T> for FnSink<F>
where
    F: FnMut(T) -> Result<(), OperatorError> + Send,
{
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        (self.0)(record)
    }

    /// The function sees records only: it buffers nothing and keeps no state to snapshot.
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            ControlEvent::Watermark(_)
            | ControlEvent::Idleness(_)
            | ControlEvent::Barrier(_)
            | ControlEvent::Flush
            | ControlEvent::EndOfInput
            | ControlEvent::CheckpointComplete(_) => Ok(()),
        }
    }
}
