//! The network end of a chain: route each record to a channel and append it to that channel's
//! buffer.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use sluice_channel::ChannelEvent;
use sluice_channel::{Cancelled, ChannelWriter};
use sluice_types::{Collector, ControlEvent, Data, OperatorError};

use crate::{JobControl, TaskMetrics};

/// Picks the output channel of a record. Implementations live in `sluice-datastream` (they encode
/// Flink's partitioners); the writer is generic over them so selection is inlined per record.
pub trait ChannelSelector<T>: Send {
    /// The index of the channel `record` goes to, below the number of channels.
    fn select(&mut self, record: &T) -> usize;
}

/// Every record to every channel (BROADCAST).
#[derive(Debug, Default, Clone, Copy)]
pub struct BroadcastAll;

fn cancelled(_: Cancelled) -> OperatorError {
    OperatorError::Cancelled
}

/// Records written since the last publish are added to the task's `records_out` at this
/// granularity, so the hot path touches only a local counter.
const PUBLISH_EVERY: u64 = 1024;

/// Writes records of one output edge of one subtask.
pub struct RecordWriter<T: Data, S> {
    channels: Vec<ChannelWriter<T>>,
    selector: S,
    broadcast: bool,
    control: Arc<JobControl>,
    seen_epoch: u64,
    flush_every_record: bool,
    metrics: Arc<TaskMetrics>,
    unpublished: u64,
    record_size: u64,
}

impl<T: Data, S: ChannelSelector<T>> RecordWriter<T, S> {
    /// A writer sending each record to the one channel `selector` picks.
    pub fn new(
        channels: Vec<ChannelWriter<T>>,
        selector: S,
        control: Arc<JobControl>,
        metrics: Arc<TaskMetrics>,
    ) -> Self {
        Self::build(channels, selector, false, control, metrics)
    }

    fn build(
        channels: Vec<ChannelWriter<T>>,
        selector: S,
        broadcast: bool,
        control: Arc<JobControl>,
        metrics: Arc<TaskMetrics>,
    ) -> Self {
        {
            let mut outs = metrics
                .output_channels
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            outs.extend(channels.iter().map(|c| c.sender().counters()));
        }
        let flush_every_record = control.buffer_timeout().is_zero();
        let seen_epoch = control.flush_epoch().load(Relaxed);
        RecordWriter {
            channels,
            selector,
            broadcast,
            control,
            seen_epoch,
            flush_every_record,
            metrics,
            unpublished: 0,
            record_size: sluice_types::estimated_record_size::<T>() as u64,
        }
    }

    fn publish(&mut self) {
        if self.unpublished > 0 {
            self.metrics.add_records_out(self.unpublished);
            self.metrics
                .bytes_out
                .fetch_add(self.unpublished * self.record_size, Relaxed);
            self.unpublished = 0;
        }
    }

    fn flush_all(&mut self) -> Result<(), OperatorError> {
        for c in &mut self.channels {
            c.try_flush().map_err(cancelled)?;
        }
        self.publish();
        Ok(())
    }

    #[inline]
    fn epoch(&self) -> &AtomicU64 {
        self.control.flush_epoch()
    }
}

impl<T: Data> RecordWriter<T, BroadcastAll> {
    /// A writer sending every record to all channels.
    pub fn broadcast(
        channels: Vec<ChannelWriter<T>>,
        control: Arc<JobControl>,
        metrics: Arc<TaskMetrics>,
    ) -> Self {
        Self::build(channels, BroadcastAll, true, control, metrics)
    }
}

impl<T: Data> ChannelSelector<T> for BroadcastAll {
    fn select(&mut self, _: &T) -> usize {
        0
    }
}

impl<T: Data, S: ChannelSelector<T>> Collector<T> for RecordWriter<T, S> {
    #[inline]
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        let epoch = self.epoch().load(Relaxed);
        if epoch != self.seen_epoch {
            self.seen_epoch = epoch;
            self.flush_all()?;
        }
        if self.broadcast {
            // Flink serialises a broadcast record once and copies it per subpartition; we clone
            // the value per channel.
            let n = self.channels.len();
            for (i, c) in self.channels.iter_mut().enumerate() {
                if i + 1 < n {
                    c.push(record.clone()).map_err(cancelled)?;
                }
            }
            if let Some(last) = self.channels.last_mut() {
                last.push(record).map_err(cancelled)?;
            }
            if self.flush_every_record {
                self.flush_all()?;
            }
        } else {
            let ch = self.selector.select(&record);
            let c = &mut self.channels[ch];
            c.push(record).map_err(cancelled)?;
            if self.flush_every_record {
                c.try_flush().map_err(cancelled)?;
            }
        }
        self.unpublished += 1;
        if self.unpublished >= PUBLISH_EVERY {
            self.publish();
        }
        Ok(())
    }

    /// Selection and append per record with the selector inlined; the flush clock and the
    /// published count once per batch.
    fn collect_batch(&mut self, batch: &mut Vec<T>) -> Result<(), OperatorError> {
        if self.broadcast || self.flush_every_record {
            for r in batch.drain(..) {
                self.collect(r)?;
            }
            return Ok(());
        }
        let epoch = self.epoch().load(Relaxed);
        if epoch != self.seen_epoch {
            self.seen_epoch = epoch;
            self.flush_all()?;
        }
        self.unpublished += batch.len() as u64;
        for r in batch.drain(..) {
            let ch = self.selector.select(&r);
            self.channels[ch].push(r).map_err(cancelled)?;
        }
        if self.unpublished >= PUBLISH_EVERY {
            self.publish();
        }
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            ControlEvent::EndOfInput => {
                for c in &mut self.channels {
                    c.finish().map_err(cancelled)?;
                }
                self.publish();
            }
            ControlEvent::Flush => self.flush_all()?,
            // Task-local: the receiving task learns of completed checkpoints from its own loop.
            ControlEvent::CheckpointComplete(_) => {}
            // Broadcast to every channel behind the records written before it (shipping partial
            // buffers first, which may wait for credit: the watermark must not overtake them).
            ControlEvent::Watermark(watermark) => {
                for c in &mut self.channels {
                    c.send_event(ChannelEvent::Watermark(watermark))
                        .map_err(cancelled)?;
                }
                self.publish();
                self.metrics.output_watermark.set(watermark.0);
            }
            // An aligned barrier keeps its place: ship the partial buffers, then the barrier on
            // every channel (events need no credit). An unaligned one overtakes: it goes to the
            // front of every channel, taking the partial buffer along without waiting for credit.
            ControlEvent::Barrier(barrier) => {
                let unaligned = barrier.kind == sluice_types::CheckpointKind::Unaligned;
                for c in &mut self.channels {
                    if unaligned {
                        c.send_unaligned_barrier(barrier).map_err(cancelled)?;
                    } else {
                        c.send_event(ChannelEvent::Barrier(barrier))
                            .map_err(cancelled)?;
                    }
                }
                self.publish();
            }
            ControlEvent::Idleness(idle) => {
                for c in &mut self.channels {
                    c.send_event(ChannelEvent::Idleness(idle))
                        .map_err(cancelled)?;
                }
                self.publish();
            }
        }
        Ok(())
    }
}
