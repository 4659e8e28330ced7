//! Output side of an operator.

use crate::{Barrier, OperatorError, Watermark};

/// Receives the records an operator emits. Chained operators are collectors of their upstream;
/// the last operator of a chain writes into a network writer or a sink, which are collectors too.
///
/// `collect` returns an error only when the record cannot be delivered: the downstream failed or
/// the job is cancelled. Operators propagate it with `?`.
pub trait Collector<T>: Send {
    fn collect(&mut self, record: T) -> Result<(), OperatorError>;

    /// End of input: flush what is buffered and forward end-of-input downstream. Called once.
    fn finish(&mut self) -> Result<(), OperatorError> {
        Ok(())
    }

    /// The buffer timeout elapsed while the task had nothing to process: ship partial output
    /// buffers if credit allows. Never blocks.
    fn flush(&mut self) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Event-time progress: no later record on this stream has a timestamp `<=` `watermark`.
    /// Chains pass it to each operator's [`crate::Operator::on_watermark`], network writers
    /// broadcast it to every channel after the records written before it. Sinks ignore it.
    fn emit_watermark(&mut self, _watermark: Watermark) -> Result<(), OperatorError> {
        Ok(())
    }

    /// The stream became idle (`true`: downstream must not wait for its watermark) or active
    /// again (`false`). Flink's `WatermarkStatus`.
    fn emit_idleness(&mut self, _idle: bool) -> Result<(), OperatorError> {
        Ok(())
    }

    /// A checkpoint barrier: every record before it is part of checkpoint
    /// `barrier.checkpoint_id`, none after it. Chains snapshot each operator as the barrier
    /// passes ([`crate::Operator::snapshot_state`]); network writers send it on every channel
    /// behind the records written before it.
    fn emit_barrier(&mut self, _barrier: Barrier) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// Collects into a vector. For unit tests of operators and for embedding.
#[derive(Debug)]
pub struct VecCollector<T> {
    pub records: Vec<T>,
    pub finished: bool,
    /// Watermarks received, in order.
    pub watermarks: Vec<Watermark>,
    /// Idleness changes received, in order (`true` = became idle).
    pub idleness: Vec<bool>,
}

impl<T> Default for VecCollector<T> {
    fn default() -> Self {
        VecCollector {
            records: Vec::new(),
            finished: false,
            watermarks: Vec::new(),
            idleness: Vec::new(),
        }
    }
}

impl<T: Send> Collector<T> for VecCollector<T> {
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        self.records.push(record);
        Ok(())
    }
    fn finish(&mut self) -> Result<(), OperatorError> {
        self.finished = true;
        Ok(())
    }
    fn emit_watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        self.watermarks.push(watermark);
        Ok(())
    }
    fn emit_idleness(&mut self, idle: bool) -> Result<(), OperatorError> {
        self.idleness.push(idle);
        Ok(())
    }
}

impl<T, C: Collector<T> + ?Sized> Collector<T> for Box<C> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        (**self).collect(record)
    }
    fn finish(&mut self) -> Result<(), OperatorError> {
        (**self).finish()
    }
    fn flush(&mut self) -> Result<(), OperatorError> {
        (**self).flush()
    }
    fn emit_watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        (**self).emit_watermark(watermark)
    }
    fn emit_idleness(&mut self, idle: bool) -> Result<(), OperatorError> {
        (**self).emit_idleness(idle)
    }
    fn emit_barrier(&mut self, barrier: Barrier) -> Result<(), OperatorError> {
        (**self).emit_barrier(barrier)
    }
}
