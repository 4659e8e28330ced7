//! The receiving side (an input gate with one channel per upstream subtask) and the sending side
//! (one [`ChannelSender`] per channel), sharing one lock per gate.
//!
//! Locking happens once per *buffer*, never per record: with 32 KiB buffers that is one lock per
//! ~2,000 small records, which is why the exchange costs a few nanoseconds per record.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use sluice_types::{Barrier, Watermark};

use crate::{Cancelled, ChannelCounters, ExchangeConfig, WaitTimes};

/// A control event travelling in a channel. Events need no credit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelEvent {
    /// The upstream subtask finished; nothing follows on this channel.
    EndOfPartition,
    Watermark(Watermark),
    /// The upstream subtask became idle (`true`) or active again (`false`): Flink's
    /// `WatermarkStatus`. An idle channel does not hold back the receiver's watermark.
    Idleness(bool),
    Barrier(Barrier),
}

enum Entry<T> {
    Buffer {
        records: Vec<T>,
        floating: bool,
        /// Sent without a credit (the partial buffer an unaligned barrier overtakes): its
        /// release returns no credit.
        overdraft: bool,
    },
    /// An unaligned barrier, put at the front of the queue: it overtook the `overtaken`
    /// entries behind it, which belong to the checkpoint's channel state.
    Priority {
        barrier: Barrier,
        overtaken: usize,
    },
    Event(ChannelEvent),
}

struct ChannelState<T> {
    queue: VecDeque<Entry<T>>,
    exclusive_free: usize,
    /// Emptied buffers handed back for the sender to refill, so steady state allocates nothing.
    recycled: Vec<Vec<T>>,
    in_ready: bool,
}

struct State<T> {
    channels: Vec<ChannelState<T>>,
    floating_free: usize,
    /// Channels with queued entries, in the order they became non-empty (Flink's
    /// "input channels with data" queue); a channel is re-queued at the back after each entry so
    /// one busy channel cannot starve the others.
    ready: VecDeque<usize>,
    receiver_waiting: bool,
    senders_waiting: usize,
    cancelled: bool,
    /// Channels the receiver does not read for now (checkpoint barrier alignment): their
    /// entries wait in their queues and keep their credits.
    blocked: Vec<bool>,
    blocked_count: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    data_cv: Condvar,
    credit_cv: Condvar,
    counters: Vec<Arc<ChannelCounters>>,
    record_size: u64,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panicking thread never holds this lock while running user code, so a poisoned lock
        // still guards consistent state; recover it rather than cascade the panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

trait Cancel: Send + Sync {
    fn cancel(&self);
}

impl<T: Send> Cancel for Shared<T> {
    fn cancel(&self) {
        let mut st = self.lock();
        st.cancelled = true;
        drop(st);
        self.data_cv.notify_all();
        self.credit_cv.notify_all();
    }
}

/// Wakes every thread blocked on a gate and makes all further operations on it fail with
/// [`Cancelled`]. Type-erased so the runtime can hold the cancellers of all gates of a job.
#[derive(Clone)]
pub struct GateCanceller(Arc<dyn Cancel>);

impl GateCanceller {
    pub fn cancel(&self) {
        self.0.cancel()
    }
}

impl std::fmt::Debug for GateCanceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GateCanceller")
    }
}

/// A buffer taken from a gate. Hand it back with [`InputGate::release`] once its records are
/// processed: that returns the credit to the sender.
#[derive(Debug)]
pub struct ReceivedBuffer<T> {
    pub channel: usize,
    pub records: Vec<T>,
    floating: bool,
    overdraft: bool,
}

/// What [`InputGate::next`] yields.
#[derive(Debug)]
pub enum GateItem<T> {
    Buffer(ReceivedBuffer<T>),
    Event {
        channel: usize,
        event: ChannelEvent,
    },
    /// No input arrived within the gate's wake-up interval; the caller gets a chance to do
    /// periodic work (flush its outputs on the buffer timeout) and then asks again.
    Idle,
    /// An unaligned checkpoint barrier that overtook the next `overtaken` entries of
    /// `channel` (read them with [`InputGate::in_flight`] before anything else of the channel).
    UnalignedBarrier {
        channel: usize,
        barrier: Barrier,
        overtaken: usize,
    },
}

/// The receiving end for one downstream subtask.
pub struct InputGate<T> {
    shared: Arc<Shared<T>>,
    open_channels: usize,
    waits: Arc<WaitTimes>,
    wake_interval: Option<Duration>,
}

impl<T: Send + 'static> InputGate<T> {
    /// A gate with `channels` logical channels and the senders that feed them (index = channel).
    pub fn new(
        channels: usize,
        cfg: &ExchangeConfig,
        waits: Arc<WaitTimes>,
    ) -> (InputGate<T>, Vec<ChannelSender<T>>) {
        let state = State {
            channels: (0..channels)
                .map(|_| ChannelState {
                    queue: VecDeque::new(),
                    exclusive_free: cfg.exclusive_credits,
                    recycled: Vec::new(),
                    in_ready: false,
                })
                .collect(),
            floating_free: cfg.floating_credits,
            ready: VecDeque::with_capacity(channels),
            receiver_waiting: false,
            senders_waiting: 0,
            cancelled: false,
            blocked: vec![false; channels],
            blocked_count: 0,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            data_cv: Condvar::new(),
            credit_cv: Condvar::new(),
            counters: (0..channels)
                .map(|_| Arc::new(ChannelCounters::default()))
                .collect(),
            record_size: sluice_types::estimated_record_size::<T>() as u64,
        });
        let senders = (0..channels)
            .map(|channel| ChannelSender {
                shared: shared.clone(),
                channel,
            })
            .collect();
        let gate = InputGate {
            shared,
            open_channels: channels,
            waits,
            wake_interval: None,
        };
        (gate, senders)
    }

    /// Makes [`next`](Self::next) return [`GateItem::Idle`] after waiting this long without input.
    pub fn set_wake_interval(&mut self, every: Option<Duration>) {
        self.wake_interval = every;
    }

    pub fn num_channels(&self) -> usize {
        self.shared.counters.len()
    }

    /// Channels that have not delivered end-of-partition yet.
    pub fn open_channels(&self) -> usize {
        self.open_channels
    }

    pub fn counters(&self) -> Vec<Arc<ChannelCounters>> {
        self.shared.counters.clone()
    }

    pub fn canceller(&self) -> GateCanceller {
        GateCanceller(self.shared.clone())
    }

    /// Stops (`true`) or resumes reading `channel`: while blocked, [`next`](Self::next) skips
    /// it and its entries stay queued (checkpoint barrier alignment). Credits stay taken, so a
    /// long-blocked channel backpressures its sender.
    pub fn set_blocked(&mut self, channel: usize, blocked: bool) {
        let mut st = self.shared.lock();
        if st.blocked[channel] != blocked {
            st.blocked[channel] = blocked;
            if blocked {
                st.blocked_count += 1;
            } else {
                st.blocked_count -= 1;
            }
        }
    }

    /// Copies of the records in the next `entries` queued entries of `channel` (the data an
    /// unaligned barrier overtook: the checkpoint's channel state). The entries stay queued
    /// and are processed as usual.
    pub fn in_flight(&self, channel: usize, entries: usize) -> Vec<T>
    where
        T: Clone,
    {
        let st = self.shared.lock();
        let mut out = Vec::new();
        for e in st.channels[channel].queue.iter().take(entries) {
            if let Entry::Buffer { records, .. } = e {
                out.extend(records.iter().cloned());
            }
        }
        out
    }

    /// Resumes every blocked channel.
    pub fn unblock_all(&mut self) {
        let mut st = self.shared.lock();
        st.blocked.iter_mut().for_each(|b| *b = false);
        st.blocked_count = 0;
    }

    /// The next buffer or event from any channel; `Ok(None)` once every channel has ended.
    #[allow(clippy::should_implement_trait)]
    /// Blocks (parked, counted as idle time) while no channel has data.
    pub fn next(&mut self) -> Result<Option<GateItem<T>>, Cancelled> {
        let mut st = self.shared.lock();
        loop {
            if st.cancelled {
                return Err(Cancelled);
            }
            let next_ready = if st.blocked_count == 0 {
                st.ready.pop_front()
            } else {
                let blocked = &st.blocked;
                st.ready
                    .iter()
                    .position(|&c| !blocked[c])
                    .and_then(|i| st.ready.remove(i))
            };
            if let Some(ch) = next_ready {
                let chan = &mut st.channels[ch];
                let entry = chan.queue.pop_front().expect("ready channel has an entry");
                if chan.queue.is_empty() {
                    chan.in_ready = false;
                } else {
                    st.ready.push_back(ch);
                }
                return Ok(Some(match entry {
                    Entry::Priority { barrier, overtaken } => GateItem::UnalignedBarrier {
                        channel: ch,
                        barrier,
                        overtaken,
                    },
                    Entry::Buffer {
                        records,
                        floating,
                        overdraft,
                    } => {
                        let c = &self.shared.counters[ch];
                        c.records_in.fetch_add(records.len() as u64, Relaxed);
                        c.bytes_in
                            .fetch_add(records.len() as u64 * self.shared.record_size, Relaxed);
                        c.buffers_in.fetch_add(1, Relaxed);
                        c.buffers_queued.fetch_sub(1, Relaxed);
                        GateItem::Buffer(ReceivedBuffer {
                            channel: ch,
                            records,
                            floating,
                            overdraft,
                        })
                    }
                    Entry::Event(event) => {
                        if event == ChannelEvent::EndOfPartition {
                            self.open_channels -= 1;
                        }
                        GateItem::Event { channel: ch, event }
                    }
                }));
            }
            if self.open_channels == 0 {
                return Ok(None);
            }
            st.receiver_waiting = true;
            let started = self.waits.begin_idle();
            let timed_out;
            (st, timed_out) = match self.wake_interval {
                None => (
                    self.shared
                        .data_cv
                        .wait(st)
                        .unwrap_or_else(|p| p.into_inner()),
                    false,
                ),
                Some(d) => {
                    let (g, r) = self
                        .shared
                        .data_cv
                        .wait_timeout(st, d)
                        .unwrap_or_else(|p| p.into_inner());
                    (g, r.timed_out())
                }
            };
            st.receiver_waiting = false;
            self.waits.end_idle(started);
            let readable = st.ready.iter().any(|&c| !st.blocked[c]);
            if timed_out && !readable && !st.cancelled {
                return Ok(Some(GateItem::Idle));
            }
        }
    }

    /// Hands a processed buffer back: its credit returns to its channel (or the floating pool)
    /// and its allocation is kept for the sender to reuse.
    pub fn release(&mut self, buf: ReceivedBuffer<T>) {
        let ReceivedBuffer {
            channel,
            mut records,
            floating,
            overdraft,
        } = buf;
        records.clear();
        let mut st = self.shared.lock();
        if overdraft {
            // Took no credit, returns none.
        } else if floating {
            st.floating_free += 1;
        } else {
            st.channels[channel].exclusive_free += 1;
        }
        let chan = &mut st.channels[channel];
        if chan.recycled.len() < 2 && records.capacity() > 0 {
            chan.recycled.push(records);
        }
        self.shared.counters[channel]
            .buffers_in_flight
            .fetch_sub(1, Relaxed);
        let wake = st.senders_waiting > 0;
        drop(st);
        if wake {
            self.shared.credit_cv.notify_all();
        }
    }
}

/// The sending end of one channel. Owned by the upstream subtask's writer.
pub struct ChannelSender<T> {
    shared: Arc<Shared<T>>,
    channel: usize,
}

/// One reserved credit: the right to ship exactly one buffer on this channel.
#[must_use = "a permit holds a credit until it is used to send"]
pub struct Permit<'a, T: Send + 'static> {
    sender: &'a ChannelSender<T>,
    floating: bool,
}

impl<T: Send + 'static> Permit<'_, T> {
    /// Ships `records` as one buffer; returns an empty buffer (recycled when possible) to refill.
    pub fn send(self, records: Vec<T>) -> Vec<T> {
        let (sender, floating) = (self.sender, self.floating);
        // The credit is used by this send: skip Drop, which would hand it back.
        std::mem::forget(self);
        let mut st = sender.shared.lock();
        sender.push_locked_raw(&mut st, records, floating)
    }
}

impl<T: Send + 'static> Drop for Permit<'_, T> {
    fn drop(&mut self) {
        // Reached only for a permit that was never sent: give its credit back.
        let mut st = self.sender.shared.lock();
        if self.floating {
            st.floating_free += 1;
        } else {
            st.channels[self.sender.channel].exclusive_free += 1;
        }
        let wake = st.senders_waiting > 0;
        drop(st);
        if wake {
            self.sender.shared.credit_cv.notify_all();
        }
    }
}

impl<T: Send + 'static> ChannelSender<T> {
    pub fn channel(&self) -> usize {
        self.channel
    }

    pub fn counters(&self) -> Arc<ChannelCounters> {
        self.shared.counters[self.channel].clone()
    }

    pub fn into_writer(
        self,
        cfg: &ExchangeConfig,
        waits: Arc<WaitTimes>,
    ) -> crate::ChannelWriter<T> {
        crate::ChannelWriter::new(self, cfg.records_per_buffer::<T>(), waits)
    }

    fn take_credit(&self, st: &mut State<T>) -> Option<bool> {
        let chan = &mut st.channels[self.channel];
        if chan.exclusive_free > 0 {
            chan.exclusive_free -= 1;
            Some(false)
        } else if st.floating_free > 0 {
            st.floating_free -= 1;
            Some(true)
        } else {
            None
        }
    }

    /// Reserves one credit, parking until one is free (time counted as backpressure).
    pub fn reserve(&self, waits: &WaitTimes) -> Result<Permit<'_, T>, Cancelled> {
        let st = self.shared.lock();
        let (_st, floating) = self.wait_for_credit(st, waits);
        let floating = floating?;
        Ok(Permit {
            sender: self,
            floating,
        })
    }

    /// Reserves one credit if one is free right now.
    pub fn try_reserve(&self) -> Result<Option<Permit<'_, T>>, Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        Ok(self.take_credit(&mut st).map(|floating| Permit {
            sender: self,
            floating,
        }))
    }

    /// Takes a credit, parking on the gate's credit condvar while none is free. Takes and
    /// returns the guard because `Condvar::wait` consumes it.
    fn wait_for_credit<'g>(
        &'g self,
        mut st: MutexGuard<'g, State<T>>,
        waits: &WaitTimes,
    ) -> (MutexGuard<'g, State<T>>, Result<bool, Cancelled>) {
        let mut started: Option<u64> = None;
        let result = loop {
            if st.cancelled {
                break Err(Cancelled);
            }
            if let Some(floating) = self.take_credit(&mut st) {
                break Ok(floating);
            }
            if started.is_none() {
                started = Some(waits.begin_backpressure());
            }
            st.senders_waiting += 1;
            st = self
                .shared
                .credit_cv
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
            st.senders_waiting -= 1;
        };
        if let Some(s) = started {
            waits.end_backpressure(s);
        }
        (st, result)
    }

    /// Reserve-and-send under one lock acquisition: the hot path of [`crate::ChannelWriter`].
    pub fn send_blocking(&self, records: Vec<T>, waits: &WaitTimes) -> Result<Vec<T>, Cancelled> {
        let st = self.shared.lock();
        let (mut st, floating) = self.wait_for_credit(st, waits);
        Ok(self.push_locked_raw(&mut st, records, floating?))
    }

    /// Sends if a credit is free right now; otherwise hands the records back untouched.
    pub fn try_send(&self, records: Vec<T>) -> Result<Result<Vec<T>, Vec<T>>, Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        match self.take_credit(&mut st) {
            Some(floating) => Ok(Ok(self.push_locked_raw(&mut st, records, floating))),
            None => Ok(Err(records)),
        }
    }

    /// Sends an unaligned checkpoint barrier: the sender's partial buffer `partial` is queued
    /// without a credit (an overdraft of at most one buffer per barrier), then the barrier goes
    /// to the front of the queue, overtaking every queued buffer, and the channel to the front
    /// of the receiver's ready list. Never waits for credit. Returns an empty buffer to refill.
    pub fn send_unaligned_barrier(
        &self,
        barrier: Barrier,
        partial: Vec<T>,
    ) -> Result<Vec<T>, Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        let cap = partial.capacity();
        let mut fresh = partial;
        if !fresh.is_empty() {
            let c = &self.shared.counters[self.channel];
            c.records_out.fetch_add(fresh.len() as u64, Relaxed);
            c.bytes_out
                .fetch_add(fresh.len() as u64 * self.shared.record_size, Relaxed);
            c.buffers_out.fetch_add(1, Relaxed);
            c.buffers_in_flight.fetch_add(1, Relaxed);
            c.buffers_queued.fetch_add(1, Relaxed);
            let records = std::mem::replace(&mut fresh, Vec::with_capacity(cap));
            st.channels[self.channel].queue.push_back(Entry::Buffer {
                records,
                floating: false,
                overdraft: true,
            });
        }
        let chan = &mut st.channels[self.channel];
        let overtaken = chan.queue.len();
        chan.queue
            .push_front(Entry::Priority { barrier, overtaken });
        if chan.in_ready {
            if let Some(i) = st.ready.iter().position(|&c| c == self.channel) {
                st.ready.remove(i);
            }
        }
        st.channels[self.channel].in_ready = true;
        st.ready.push_front(self.channel);
        if st.receiver_waiting {
            self.shared.data_cv.notify_one();
        }
        Ok(fresh)
    }

    /// Sends a control event. Events need no credit and are never refused for lack of one.
    pub fn send_event(&self, event: ChannelEvent) -> Result<(), Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        st.channels[self.channel]
            .queue
            .push_back(Entry::Event(event));
        self.mark_ready(&mut st);
        Ok(())
    }

    fn push_locked_raw(&self, st: &mut State<T>, records: Vec<T>, floating: bool) -> Vec<T> {
        let cap = records.capacity();
        let c = &self.shared.counters[self.channel];
        c.records_out.fetch_add(records.len() as u64, Relaxed);
        c.bytes_out
            .fetch_add(records.len() as u64 * self.shared.record_size, Relaxed);
        c.buffers_out.fetch_add(1, Relaxed);
        c.buffers_in_flight.fetch_add(1, Relaxed);
        c.buffers_queued.fetch_add(1, Relaxed);
        let chan = &mut st.channels[self.channel];
        chan.queue.push_back(Entry::Buffer {
            records,
            floating,
            overdraft: false,
        });
        let fresh = chan
            .recycled
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(cap));
        self.mark_ready(st);
        fresh
    }

    fn mark_ready(&self, st: &mut State<T>) {
        let chan = &mut st.channels[self.channel];
        if !chan.in_ready {
            chan.in_ready = true;
            st.ready.push_back(self.channel);
        }
        if st.receiver_waiting {
            self.shared.data_cv.notify_one();
        }
    }
}
