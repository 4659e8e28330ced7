//! [`OutputBatch`]: what an operator emits into inside a chain.

use crate::{Collector, ControlEvent, OperatorError};

/// The output of an operator inside a chain, for one input batch: its records gather in `buf`
/// and go on to the next collector as one batch when `buf` reaches `limit` (and when the
/// chain ships it at the end of the input batch). An event first passes the gathered records
/// on, so it keeps its place.
///
/// A concrete type so that an operator's [`Operator::process_into`](crate::Operator::process_into)
/// pushes with a static, inlined call ([`push`](Self::push)) instead of a dynamic
/// [`Collector::collect`] per record.
pub struct OutputBatch<'a, T> {
    buf: &'a mut Vec<T>,
    out: &'a mut dyn Collector<T>,
    limit: usize,
}

impl<'a, T: Send> OutputBatch<'a, T> {
    /// An output gathering into `buf` and passing on to `out` every `limit` records.
    pub fn new(buf: &'a mut Vec<T>, out: &'a mut dyn Collector<T>, limit: usize) -> Self {
        OutputBatch { buf, out, limit }
    }

    /// One output record.
    #[inline]
    pub fn push(&mut self, record: T) -> Result<(), OperatorError> {
        self.buf.push(record);
        if self.buf.len() >= self.limit {
            return self.out.collect_batch(self.buf);
        }
        Ok(())
    }

    /// Passes the gathered records on (if any).
    #[inline]
    pub fn ship(&mut self) -> Result<(), OperatorError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.out.collect_batch(self.buf)
    }
}

impl<T: Send> Collector<T> for OutputBatch<'_, T> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        self.push(record)
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        self.ship()?;
        self.out.emit_event(event)
    }
}
