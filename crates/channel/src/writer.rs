//! Sender-side buffer builder for one channel.

use std::sync::Arc;

use crate::{Cancelled, ChannelEvent, ChannelSender, WaitTimes};

/// Appends records to the channel's current buffer and ships it when full (blocking for credit),
/// on [`try_flush`](Self::try_flush) (buffer timeout; never blocks) and on
/// [`finish`](Self::finish) (end of input).
pub struct ChannelWriter<T: Send + 'static> {
    sender: ChannelSender<T>,
    buffer: Vec<T>,
    capacity: usize,
    waits: Arc<WaitTimes>,
}

impl<T: Send + 'static> ChannelWriter<T> {
    pub fn new(sender: ChannelSender<T>, capacity: usize, waits: Arc<WaitTimes>) -> Self {
        let capacity = capacity.max(1);
        ChannelWriter {
            sender,
            buffer: Vec::with_capacity(capacity),
            capacity,
            waits,
        }
    }

    /// Records per buffer.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Records appended but not shipped yet.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    pub fn sender(&self) -> &ChannelSender<T> {
        &self.sender
    }

    #[inline]
    pub fn push(&mut self, record: T) -> Result<(), Cancelled> {
        self.buffer.push(record);
        if self.buffer.len() >= self.capacity {
            self.ship()?;
        }
        Ok(())
    }

    /// Ships the current buffer, waiting for credit (backpressure) if needed.
    pub fn ship(&mut self) -> Result<(), Cancelled> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let full = std::mem::take(&mut self.buffer);
        let mut fresh = self.sender.send_blocking(full, &self.waits)?;
        if fresh.capacity() < self.capacity {
            // `reserve_exact` counts from `len()` (0 here), not from the current capacity.
            fresh.reserve_exact(self.capacity - fresh.len());
        }
        self.buffer = fresh;
        Ok(())
    }

    /// Ships a partial buffer if a credit is free now; never blocks. Returns whether it shipped.
    /// Without credit the records stay and ship with the next full buffer or flush: the receiver is
    /// busy anyway, so waiting adds no latency it would notice.
    pub fn try_flush(&mut self) -> Result<bool, Cancelled> {
        if self.buffer.is_empty() {
            return Ok(false);
        }
        let partial = std::mem::take(&mut self.buffer);
        match self.sender.try_send(partial)? {
            Ok(mut fresh) => {
                if fresh.capacity() < self.capacity {
                    fresh.reserve_exact(self.capacity - fresh.len());
                }
                self.buffer = fresh;
                Ok(true)
            }
            Err(back) => {
                self.buffer = back;
                Ok(false)
            }
        }
    }

    /// Sends a control event after everything written so far (the event keeps its place).
    pub fn send_event(&mut self, event: ChannelEvent) -> Result<(), Cancelled> {
        self.ship()?;
        self.sender.send_event(event)
    }

    /// An unaligned barrier: overtakes everything queued, takes the partial buffer along
    /// without a credit, never waits.
    pub fn send_unaligned_barrier(
        &mut self,
        barrier: sluice_types::Barrier,
    ) -> Result<(), Cancelled> {
        let partial = std::mem::take(&mut self.buffer);
        let mut fresh = self.sender.send_unaligned_barrier(barrier, partial)?;
        if fresh.capacity() < self.capacity {
            fresh.reserve_exact(self.capacity - fresh.len());
        }
        self.buffer = fresh;
        Ok(())
    }

    /// End of input: ship what is left, then end-of-partition.
    pub fn finish(&mut self) -> Result<(), Cancelled> {
        self.send_event(ChannelEvent::EndOfPartition)
    }
}
