use std::sync::{Arc, Mutex};

use sluice_types::{Collector, OperatorError};

use super::{split_range, SourceContext, SourceFunction, SOURCE_BATCH};

/// A shared vector; each subtask emits its contiguous share (see [`split_range`]).
pub struct VecSource<T> {
    data: Arc<Vec<T>>,
    range: std::ops::Range<u64>,
}

impl<T> VecSource<T> {
    pub fn new(data: Arc<Vec<T>>, index: usize, parallelism: usize) -> Self {
        let range = split_range(data.len() as u64, index, parallelism);
        VecSource { data, range }
    }
}

impl<T: Clone + Send + Sync> SourceFunction<T> for VecSource<T> {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        let slice = &self.data[self.range.start as usize..self.range.end as usize];
        for chunk in slice.chunks(SOURCE_BATCH as usize) {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            for r in chunk {
                out.collect(r.clone())?;
            }
            ctx.add_emitted(chunk.len() as u64);
        }
        Ok(())
    }
}

/// Any iterator. An iterator cannot be split, so this source always runs at parallelism 1
/// (Flink's non-parallel sources behave the same way).
pub struct IterSource<I> {
    iter: Arc<Mutex<Option<I>>>,
}

impl<I> IterSource<I> {
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
            }
        }
        ctx.add_emitted(n);
        Ok(())
    }
}
