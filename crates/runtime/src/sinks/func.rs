use sluice_types::{Collector, OperatorError};

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
}
