//! Sender-side buffer builder for one channel.

use std::sync::Arc;

use crate::{Cancelled, ChannelEvent, ChannelSender, OverdraftBudget, WaitTimes};

/// Appends records to the channel's current buffer and ships it when full (blocking for credit,
/// or going into overdraft when allowed), on [`try_flush`](Self::try_flush) (buffer timeout;
/// never blocks) and on [`finish`](Self::finish) (end of input).
///
/// A buffer is full at the configured size or at the size the receiver announced (buffer
/// debloating), whichever is smaller; the announcement is read once per shipped buffer.
pub struct ChannelWriter<T: Send + 'static> {
    sender: ChannelSender<T>,
    buffer: Vec<T>,
    /// Records per buffer now (the announced size, at most `max_capacity`).
    capacity: usize,
    max_capacity: usize,
    waits: Arc<WaitTimes>,
    overdraft: Option<Arc<OverdraftBudget>>,
}

impl<T: Send + 'static> ChannelWriter<T> {
    /// A writer for `sender`, shipping buffers of at most `capacity` records.
    pub fn new(sender: ChannelSender<T>, capacity: usize, waits: Arc<WaitTimes>) -> Self {
        let capacity = capacity.max(1);
        waits.stacks.wake_on_run_start(sender.parked_on());
        let mut w = ChannelWriter {
            sender,
            buffer: Vec::with_capacity(capacity),
            capacity,
            max_capacity: capacity,
            waits,
            overdraft: None,
        };
        // A debloating receiver announced its starting size before any record.
        w.refresh_capacity();
        w
    }

    /// Lets full buffers go out without credit under `budget` (shared by the writers of one
    /// output gate) instead of blocking; see [`crate::OutputDebt`].
    pub fn with_overdraft(mut self, budget: Arc<OverdraftBudget>) -> Self {
        if budget.limit() > 0 {
            self.waits.stacks.wake_on_run_start(budget.task_parked_on());
            self.sender.set_overdraft(budget.clone());
            self.overdraft = Some(budget);
        }
        self
    }

    /// Records per buffer (the receiver's announced size when debloating).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Picks up a size the receiver announced (once per buffer).
    #[inline]
    fn refresh_capacity(&mut self) {
        self.capacity = self
            .sender
            .announced_records()
            .map_or(self.max_capacity, |n| n.min(self.max_capacity));
    }

    /// Records appended but not shipped yet.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// The sender it writes through.
    pub fn sender(&self) -> &ChannelSender<T> {
        &self.sender
    }

    /// Appends a record, shipping the buffer when full; blocks for credit, fails once cancelled.
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
        let mid_record = self.overdraft.as_ref().is_some_and(|b| b.mid_record());
        let mut fresh = self
            .sender
            .send_or_overdraft(full, &self.waits, mid_record)?;
        if let Some(b) = &self.overdraft {
            b.shipped();
        }
        self.refresh_capacity();
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
                self.refresh_capacity();
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
