//! Offsets to the consumer group once their checkpoint completed, for monitoring only (lag
//! tools, `StartingOffsets::Committed`): recovery always uses the checkpoint's own positions.
//! The runtime tells the source's task of completed checkpoints between records
//! (`SourceContext::notify_completed`, the same notification its chain's sinks commit on, never
//! for a savepoint that does not stop the job); the reader commits the newest one it was told
//! of.

use std::collections::VecDeque;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::{Offset, TopicPartitionList};
use sluice_runtime::sources::SourceContext;

use super::metrics::SourceGauges;
use super::split::{LiveSplit, SplitPosition};

/// Commits (async, monitoring only) the offsets of the newest checkpoint that completed.
pub(crate) fn commit_completed<C: ConsumerContext>(
    ctx: &SourceContext,
    consumer: &BaseConsumer<C>,
    pending: &mut VecDeque<(u64, Vec<SplitPosition>)>,
    gauges: &SourceGauges,
    splits: &[LiveSplit],
) {
    let done = ctx.notified.get();
    let mut newest = None;
    while pending.front().is_some_and(|(id, _)| *id <= done) {
        newest = pending.pop_front();
    }
    let Some((id, positions)) = newest else {
        return;
    };
    let mut tpl = TopicPartitionList::new();
    for p in &positions {
        if tpl
            .add_partition_offset(&p.topic, p.partition, Offset::Offset(p.next))
            .is_err()
        {
            return;
        }
    }
    match consumer.commit(&tpl, CommitMode::Async) {
        Ok(()) => {
            for (s, g) in splits.iter().zip(&gauges.partitions) {
                if let Some(p) = positions
                    .iter()
                    .find(|p| p.topic == s.plan.topic && p.partition == s.plan.partition)
                {
                    g.committed_offset.set(p.next);
                }
            }
        }
        Err(e) => {
            tracing::warn!("committing the offsets of checkpoint {id} (monitoring only): {e}")
        }
    }
}
