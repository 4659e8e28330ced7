use std::sync::{Arc, Mutex};

use sluice_types::{Collector, OperatorError};

use super::{split_range, RangeCursor, SourceContext, SourceFunction, SOURCE_BATCH};

/// A shared vector; each subtask emits its contiguous share (see [`split_range`]).
pub struct VecSource<T> {
    data: Arc<Vec<T>>,
    cursor: RangeCursor,
}

impl<T> VecSource<T> {
    /// The source of subtask `index` of `parallelism` over `data`.
    pub fn new(data: Arc<Vec<T>>, index: usize, parallelism: usize) -> Self {
        let range = split_range(data.len() as u64, index, parallelism);
        VecSource {
            data,
            cursor: RangeCursor::new(range),
        }
    }
}

impl<T: Clone + Send + Sync> SourceFunction<T> for VecSource<T> {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        loop {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            ctx.checkpoint_if_due(out, || self.cursor.position())?;
            let Some(batch) = self.cursor.next_batch(SOURCE_BATCH) else {
                return ctx.await_final_checkpoint(out, || self.cursor.position());
            };
            let chunk = &self.data[batch.start as usize..batch.end as usize];
            for (k, r) in chunk.iter().enumerate() {
                if ctx.barrier_pending() {
                    let cursor = &self.cursor;
                    let at = batch.start + k as u64;
                    ctx.checkpoint_if_due(out, || cursor.position_within(at, batch.end))?;
                }
                out.collect(r.clone())?;
            }
            ctx.add_emitted(chunk.len() as u64);
        }
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        self.cursor = RangeCursor::restore(parts, op.subtask_index, op.parallelism)?;
        Ok(())
    }
}

/// Any iterator. An iterator cannot be split, so this source always runs at parallelism 1
/// (Flink's non-parallel sources behave the same way).
pub struct IterSource<I> {
    iter: Arc<Mutex<Option<I>>>,
}

impl<I> IterSource<I> {
    /// A source that takes the iterator out of `iter` when it runs: it runs once only.
    pub fn new(iter: Arc<Mutex<Option<I>>>) -> Self {
        IterSource { iter }
    }
}

impl<T, I> SourceFunction<T> for IterSource<I>
where
    I: Iterator<Item = T> + Send,
{
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        let iter = self
            .iter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                OperatorError::failed("an iterator source can run only once (it was consumed by an earlier execution)")
            })?;
        let mut n = 0u64;
        for r in iter {
            out.collect(r)?;
            n += 1;
            if n == SOURCE_BATCH {
                ctx.add_emitted(n);
                n = 0;
                if ctx.should_stop() {
                    return Err(OperatorError::Cancelled);
                }
                // Barriers flow, but an iterator cannot rewind: a restore refuses.
                ctx.checkpoint_if_due(out, || Ok(Vec::new()))?;
            }
        }
        ctx.add_emitted(n);
        ctx.await_final_checkpoint(out, || Ok(Vec::new()))
    }
}
