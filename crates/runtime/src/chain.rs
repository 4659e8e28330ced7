//! Binding operators into a chain of collectors.

use std::marker::PhantomData;

use sluice_types::{Collector, Data, Operator, OperatorContext, OperatorError};

/// An operator bound to the collector its output goes to. Implements `Collector<In>`, so the
/// previous operator (or the source, or the input loop) pushes records straight into it.
pub struct Link<In, Out, Op> {
    op: Op,
    out: Box<dyn Collector<Out>>,
    _types: PhantomData<fn(In) -> Out>,
}

impl<In, Out, Op> Link<In, Out, Op>
where
    In: Send + 'static,
    Out: Send + 'static,
    Op: Operator<In, Out> + 'static,
{
    /// Opens the operator (on the calling thread, which must be the task's thread) and binds it.
    pub fn open(
        mut op: Op,
        out: Box<dyn Collector<Out>>,
        ctx: &OperatorContext,
    ) -> Result<Self, OperatorError> {
        op.open(ctx)?;
        Ok(Link {
            op,
            out,
            _types: PhantomData,
        })
    }
}

impl<In, Out, Op> Collector<In> for Link<In, Out, Op>
where
    In: Send,
    Out: Send,
    Op: Operator<In, Out>,
{
    #[inline]
    fn collect(&mut self, record: In) -> Result<(), OperatorError> {
        self.op.process(record, &mut *self.out)
    }

    fn finish(&mut self) -> Result<(), OperatorError> {
        self.op.finish(&mut *self.out)?;
        self.out.finish()
    }

    fn flush(&mut self) -> Result<(), OperatorError> {
        self.out.flush()
    }
}

/// Several consumers of one output (chained successors and network edges): each gets a clone,
/// the last one gets the original.
pub struct Fanout<T> {
    outs: Vec<Box<dyn Collector<T>>>,
}

impl<T: Data> Fanout<T> {
    pub fn new(outs: Vec<Box<dyn Collector<T>>>) -> Self {
        Fanout { outs }
    }
}

impl<T: Data> Collector<T> for Fanout<T> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        if let Some((last, rest)) = self.outs.split_last_mut() {
            for o in rest {
                o.collect(record.clone())?;
            }
            last.collect(record)?;
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.finish()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), OperatorError> {
        for o in &mut self.outs {
            o.flush()?;
        }
        Ok(())
    }
}
