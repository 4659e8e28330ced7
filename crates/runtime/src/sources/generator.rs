use std::ops::Range;
use std::sync::Arc;

use sluice_types::{Collector, OperatorError};

use super::{RangeCursor, SourceContext, SourceFunction, SOURCE_BATCH};

/// The contiguous share of `0..count` that subtask `index` of `parallelism` generates:
/// `[index*count/p, (index+1)*count/p)`. Shares differ in size by at most one and cover the range.
pub fn split_range(count: u64, index: usize, parallelism: usize) -> Range<u64> {
    let p = parallelism.max(1) as u128;
    let c = count as u128;
    let i = index as u128;
    ((i * c / p) as u64)..(((i + 1) * c / p) as u64)
}

/// Records generated per call into the chain: a barrier waits at most this many records.
const SLICE: u64 = 64;

/// `generate(count, |i| ...)`: record `i` for every `i` of this subtask's share.
pub struct GeneratorSource<F> {
    cursor: RangeCursor,
    f: Arc<F>,
}

impl<F> GeneratorSource<F> {
    /// Generates record `f(i)` for each `i` of `range` (this subtask's share).
    pub fn new(range: Range<u64>, f: Arc<F>) -> Self {
        GeneratorSource {
            cursor: RangeCursor::new(range),
            f,
        }
    }
}

impl<T, F> SourceFunction<T> for GeneratorSource<F>
where
    F: Fn(u64) -> T + Send + Sync,
{
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        let f = &*self.f;
        // Hoisted out of the record loop: a relaxed load tells whether a barrier waits (so a
        // backpressured source still injects between two records, not only between batches).
        let hub = ctx.checkpoints.clone();
        let mut slice: Vec<T> = Vec::with_capacity(SLICE as usize);
        loop {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            ctx.checkpoint_if_due(out, || self.cursor.position())?;
            let Some(batch) = self.cursor.next_batch(SOURCE_BATCH) else {
                return ctx.await_final_checkpoint(out, || self.cursor.position());
            };
            let n = batch.end - batch.start;
            let end = batch.end;
            // Slices of SLICE records with a tight inner loop: a barrier waits at most SLICE
            // records (cheaper than asking per record, measurably so on a chained pass-through;
            // 64 rather than 16: a quarter of the calls through the chain).
            let mut j = batch.start;
            while j < end {
                if hub
                    .as_deref()
                    .is_some_and(|h| h.barrier_pending(ctx.last_barrier.get()))
                {
                    let cursor = &self.cursor;
                    ctx.checkpoint_if_due(out, || cursor.position_within(j, end))?;
                }
                let stop = (j + SLICE).min(end);
                // One call into the chain per slice: it is a `dyn Collector`.
                slice.extend((j..stop).map(f));
                out.collect_batch(&mut slice)?;
                j = stop;
            }
            ctx.add_emitted(n);
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

#[cfg(test)]
mod tests {
    use super::split_range;

    #[test]
    fn shares_cover_the_range_without_overlap() {
        for count in [0u64, 1, 7, 100, 1_000_003] {
            for p in 1..=9 {
                let mut next = 0;
                for i in 0..p {
                    let r = split_range(count, i, p);
                    assert_eq!(r.start, next);
                    assert!(r.end - r.start <= count / p as u64 + 1);
                    next = r.end;
                }
                assert_eq!(next, count);
            }
        }
    }
}
