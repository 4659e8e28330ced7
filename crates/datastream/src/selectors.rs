//! Flink's partitioners as runtime channel selectors
//! (docs/src/reference/flink-formats.md#channel-selection).

use sluice_channel::ChannelWriter;
use sluice_runtime::writer::{ChannelSelector, RecordWriter};
use sluice_types::{Collector, Data, OperatorError, ShipStrategy};

use crate::partition::{KeyGroupRouter, RoundRobin, SplitMix64};
use crate::typeops::WriterArgs;

/// FORWARD and GLOBAL: always local channel 0.
pub struct FirstChannel;

impl<T> ChannelSelector<T> for FirstChannel {
    #[inline]
    fn select(&mut self, _: &T) -> usize {
        0
    }
}

/// REBALANCE (random start, then round robin) and RESCALE (start at 0, round robin over the
/// local subset).
pub struct RoundRobinSelector(pub RoundRobin);

impl<T> ChannelSelector<T> for RoundRobinSelector {
    #[inline]
    fn select(&mut self, _: &T) -> usize {
        self.0.next_channel()
    }
}

/// SHUFFLE: a uniformly random channel per record.
pub struct ShuffleSelector {
    rng: SplitMix64,
    n: usize,
}

impl<T> ChannelSelector<T> for ShuffleSelector {
    #[inline]
    fn select(&mut self, _: &T) -> usize {
        self.rng.next_below(self.n)
    }
}

/// HASH: `murmur(key.hashCode()) % maxParallelism` → key group → subtask, through the edge's
/// precomputed [`KeyGroupRouter`] (no division per record).
pub struct HashSelector<H> {
    /// `key.hashCode()` of the edge's key selector, as its concrete closure (inlined).
    key_hash: H,
    router: KeyGroupRouter,
}

impl<T, H: Fn(&T) -> i32 + Send> ChannelSelector<T> for HashSelector<H> {
    #[inline]
    fn select(&mut self, r: &T) -> usize {
        self.router.subtask((self.key_hash)(r))
    }
}

pub(crate) fn record_writer<T: Data, H: Fn(&T) -> i32 + Send + 'static>(
    writers: Vec<ChannelWriter<T>>,
    a: WriterArgs,
    key_hash: Option<H>,
) -> Result<Box<dyn Collector<T>>, OperatorError> {
    let n = writers.len();
    let (control, metrics) = (a.control, a.metrics);
    Ok(match a.strategy {
        ShipStrategy::Forward | ShipStrategy::Global => {
            Box::new(RecordWriter::new(writers, FirstChannel, control, metrics))
        }
        ShipStrategy::Rebalance => {
            let mut rng = SplitMix64::new(a.seed);
            let rr = RoundRobin::rebalance(n, &mut rng);
            Box::new(RecordWriter::new(
                writers,
                RoundRobinSelector(rr),
                control,
                metrics,
            ))
        }
        ShipStrategy::Rescale => Box::new(RecordWriter::new(
            writers,
            RoundRobinSelector(RoundRobin::rescale(n)),
            control,
            metrics,
        )),
        ShipStrategy::Shuffle | ShipStrategy::Custom => Box::new(RecordWriter::new(
            writers,
            ShuffleSelector {
                rng: SplitMix64::new(a.seed),
                n,
            },
            control,
            metrics,
        )),
        ShipStrategy::Broadcast => Box::new(RecordWriter::broadcast(writers, control, metrics)),
        ShipStrategy::Hash => {
            let key_hash = key_hash.ok_or_else(|| {
                OperatorError::failed("graph wiring bug: a HASH edge without its key function")
            })?;
            Box::new(RecordWriter::new(
                writers,
                HashSelector {
                    key_hash,
                    router: KeyGroupRouter::new(
                        a.downstream_max_parallelism,
                        a.downstream_parallelism as u32,
                    ),
                },
                control,
                metrics,
            ))
        }
    })
}
