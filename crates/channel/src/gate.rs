//! The receiving side (an input gate with one channel per upstream subtask) and the sending side
//! (one [`ChannelSender`] per channel), sharing one lock per gate.
//!
//! Locking happens once per *buffer*, never per record: with 32 KiB buffers that is one lock per
//! ~2,000 small records, which is why the exchange costs a few nanoseconds per record.
//!
//! Waiting for credit is per channel: each sender parks on its own condvar, and a freed credit
//! wakes exactly one sender that can use it — the channel's own sender for an exclusive credit,
//! the longest-waiting sender without a pending wake-up for a floating one. A sender's
//! backpressure time ends when its credit was freed, not when the scheduler ran it, so only the
//! time it could not have proceeded counts.
//!
//! The park / wake / credit logic is model-checked with loom (`gate_loom_tests.rs`): no lost
//! wake-up and no leaked credit in any interleaving (up to loom's preemption bound) of two
//! senders and a receiver on small gates.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use sluice_types::{Barrier, Watermark};

use crate::debloat::{BufferDebloater, DebloatGauges, ThroughputCalculator};
use crate::sync::{Condvar, Mutex, MutexGuard};
use crate::wait_stacks::{WaitPoint, WakeForStacks};
use crate::{mono_ns, Cancelled, ChannelCounters, ExchangeConfig, OverdraftBudget, WaitTimes};

/// Credits freed closer together than this are freed "fast": a parked sender is then woken for a
/// batch of them rather than for each. Several context switches long, far shorter than any wait
/// a checkpoint or a user would notice: a sender waits at most about `wake_batch` times this
/// beyond its first free credit while its receiver keeps releasing.
const BATCH_WAKES_WITHIN: u64 = 1_000_000;

/// Which credit a buffer holds; its release returns that credit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Credit {
    /// One of the channel's exclusive credits. An overdraft buffer counts here too: it took the
    /// channel's exclusive count below zero, and its release pays that debt back.
    Exclusive,
    Floating,
    /// No credit at all: the partial buffer an unaligned barrier takes along.
    None,
}

/// A control event travelling in a channel. Events need no credit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelEvent {
    /// The upstream subtask finished; nothing follows on this channel.
    EndOfPartition,
    /// Event-time progress of the upstream subtask.
    Watermark(Watermark),
    /// The upstream subtask became idle (`true`) or active again (`false`): Flink's
    /// `WatermarkStatus`. An idle channel does not hold back the receiver's watermark.
    Idleness(bool),
    /// A checkpoint barrier.
    Barrier(Barrier),
}

enum Entry<T> {
    Buffer {
        records: Vec<T>,
        credit: Credit,
    },
    /// An unaligned barrier, put at the front of the queue: it overtook the `overtaken`
    /// entries behind it, which belong to the checkpoint's channel state.
    Priority {
        barrier: Barrier,
        overtaken: usize,
        /// Buffers among the `overtaken` entries.
        overtaken_buffers: usize,
        /// Buffers of the channel that the barrier overtook before they reached this queue
        /// (at a remote sender); they arrive after it and belong to the channel state too.
        behind: usize,
    },
    Event(ChannelEvent),
}

struct ChannelState<T> {
    queue: VecDeque<Entry<T>>,
    /// Free exclusive credits; below zero while the channel owes overdraft buffers.
    exclusive_free: isize,
    /// Emptied buffers handed back for the sender to refill, so steady state allocates nothing.
    recycled: Vec<Vec<T>>,
    in_ready: bool,
    /// The sender is parked for credit (and listed in `State::waiters`).
    waiting: bool,
    /// A wake-up was sent to the parked sender and it has not run yet.
    notified: bool,
    /// When the credit that woke the sender was freed ([`mono_ns`]): its backpressure ends there.
    granted_at: u64,
    /// The overdraft allowance of the writer of this channel (repaid on release).
    budget: Option<Arc<OverdraftBudget>>,
}

struct State<T> {
    channels: Vec<ChannelState<T>>,
    floating_free: usize,
    /// Channels with queued entries, in the order they became non-empty (Flink's
    /// "input channels with data" queue); a channel is re-queued at the back after each entry so
    /// one busy channel cannot starve the others.
    ready: VecDeque<usize>,
    receiver_waiting: bool,
    /// A [`GateWaker`] asked the receiver to look up from its input once (see there).
    wake_requested: bool,
    /// Channels whose sender is parked for credit, longest-waiting first (a floating credit
    /// goes to the first worth waking, see `State::worth_waking`).
    waiters: VecDeque<usize>,
    /// Free credits that make waking a parked sender worth it: half of what one channel can
    /// hold (its exclusive credits and the gate's floating ones), at least 1.
    wake_batch: usize,
    /// When a credit was last freed ([`mono_ns`]), and whether it came within
    /// [`BATCH_WAKES_WITHIN`] of the one before: only then are wake-ups batched.
    last_freed: u64,
    freeing_fast: bool,
    /// [`BATCH_WAKES_WITHIN`]; a field so that tests can fix the pace.
    batch_wakes_within: u64,
    cancelled: bool,
    /// Channels the receiver does not read for now (checkpoint barrier alignment): their
    /// entries wait in their queues and keep their credits.
    blocked: Vec<bool>,
    blocked_count: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    data_cv: Condvar,
    /// One per channel: its sender parks here for credit.
    credit_cvs: Vec<Condvar>,
    counters: Vec<Arc<ChannelCounters>>,
    /// Records per buffer the receiver announced to each channel's sender (buffer debloating);
    /// 0 = none announced, use the configured size.
    announced: Vec<AtomicUsize>,
    record_size: u64,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panicking thread never holds this lock while running user code, so a poisoned lock
        // still guards consistent state; recover it rather than cascade the panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> State<T> {
    /// A credit of `credit` kind was freed on `channel`: marks the one parked sender that can
    /// use it as notified and returns its channel (to notify once the lock is dropped), and the
    /// overdraft budget to repay when the release paid a debt instead of freeing a credit.
    fn credit_freed(
        &mut self,
        channel: usize,
        credit: Credit,
    ) -> (Option<usize>, Option<Arc<OverdraftBudget>>) {
        if credit != Credit::None {
            let now = mono_ns();
            self.freeing_fast = now.saturating_sub(self.last_freed) < self.batch_wakes_within;
            self.last_freed = now;
        }
        match credit {
            Credit::None => (None, None),
            Credit::Floating => {
                self.floating_free += 1;
                (self.wake_for_floating(), None)
            }
            Credit::Exclusive => {
                let chan = &mut self.channels[channel];
                let owed = chan.exclusive_free < 0;
                chan.exclusive_free += 1;
                // A freed credit lets the parked sender proceed once a batch is free; a repaid
                // debt wakes it at once (its writer's overdraft budget has room again).
                let wake = (owed || self.worth_waking(channel)).then(|| self.notify(channel));
                (
                    wake.flatten(),
                    if owed {
                        self.channels[channel].budget.clone()
                    } else {
                        None
                    },
                )
            }
        }
    }

    /// For a free floating credit: the longest-waiting sender, not woken yet, that is worth
    /// waking (see [`worth_waking`](Self::worth_waking)). One still short of its batch does not
    /// hold the credit back from a later one whose channel has run low.
    fn wake_for_floating(&mut self) -> Option<usize> {
        if self.floating_free == 0 {
            return None;
        }
        let ch = *self.waiters.iter().find(|&&c| self.worth_waking(c))?;
        self.notify(ch)
    }

    /// Credits the sender of `channel` could take right now.
    fn usable_credits(&self, channel: usize) -> usize {
        self.channels[channel].exclusive_free.max(0) as usize + self.floating_free
    }

    /// Whether a parked sender of `channel` should be woken now. While credits come back
    /// slowly (more than [`BATCH_WAKES_WITHIN`] apart) at once: a wake-up then costs nothing
    /// next to the wait, and a sender that waits for more credits would wait buffers' worth of a
    /// slow receiver's time (a source's checkpoint barrier with it). While they come back fast,
    /// once a batch of credits ([`State::wake_batch`]) is free for it, or once its channel is at
    /// most half full (as many credits free for it as entries still queued — an empty queue
    /// included, and a channel whose floating credits other channels hold, so it refills before
    /// it runs dry).
    /// Waking a sender for every freed buffer makes it run one buffer's worth and park again,
    /// a context switch per buffer; waking it for a batch lets it fill several while the
    /// receiver still has the rest queued. Nothing waits on this for long: a receiver that is
    /// about to park wakes every sender that has a credit
    /// ([`wake_all_with_credit`](Self::wake_all_with_credit)).
    fn worth_waking(&self, channel: usize) -> bool {
        let chan = &self.channels[channel];
        let usable = self.usable_credits(channel);
        chan.waiting
            && !chan.notified
            && (!self.freeing_fast || usable >= self.wake_batch || usable >= chan.queue.len())
    }

    /// Marks the parked sender of `channel` as woken, its backpressure ending now; returns the
    /// channel to notify once the lock is dropped.
    fn notify(&mut self, channel: usize) -> Option<usize> {
        let chan = &mut self.channels[channel];
        if !chan.waiting || chan.notified {
            return None;
        }
        chan.notified = true;
        chan.granted_at = mono_ns();
        Some(channel)
    }

    /// The receiver is about to park: every parked sender that could take a credit is woken,
    /// so no sender stays parked below its batch while the receiver waits.
    fn wake_all_with_credit(&mut self) -> Vec<usize> {
        let parked: Vec<usize> = self
            .waiters
            .iter()
            .copied()
            .filter(|&c| !self.channels[c].notified && self.usable_credits(c) > 0)
            .collect();
        parked.into_iter().filter_map(|c| self.notify(c)).collect()
    }
}

trait Cancel: Send + Sync {
    fn cancel(&self);
}

impl<T: Send> Cancel for Shared<T> {
    fn cancel(&self) {
        let mut st = self.lock();
        st.cancelled = true;
        let budgets: Vec<_> = st
            .channels
            .iter()
            .filter_map(|c| c.budget.clone())
            .collect();
        drop(st);
        self.data_cv.notify_all();
        for cv in &self.credit_cvs {
            cv.notify_all();
        }
        // A sender waiting between records for its overdraft to be paid back waits on its
        // task's debt, not on this gate.
        for b in budgets {
            b.task().cancel();
        }
    }
}

/// Wakes every thread blocked on a gate and makes all further operations on it fail with
/// [`Cancelled`]. Type-erased so the runtime can hold the cancellers of all gates of a job.
#[derive(Clone)]
pub struct GateCanceller(Arc<dyn Cancel>);

impl GateCanceller {
    /// Cancels the gate: blocked threads wake, further operations fail.
    pub fn cancel(&self) {
        self.0.cancel()
    }
}

impl std::fmt::Debug for GateCanceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GateCanceller")
    }
}

/// A profiler run starts wanting wait stacks: the receiver and the senders parked on this gate
/// wake and park again timed (each checks its own subtask's run under the lock taken here).
impl<T: Send> WakeForStacks for Shared<T> {
    fn wake_for_stacks(&self) {
        let _st = self.lock();
        self.data_cv.notify_all();
        for cv in &self.credit_cvs {
            cv.notify_all();
        }
    }
}

trait Wake: Send + Sync {
    fn wake(&self);
}

impl<T: Send> Wake for Shared<T> {
    fn wake(&self) {
        let mut st = self.lock();
        st.wake_requested = true;
        let waiting = st.receiver_waiting;
        drop(st);
        if waiting {
            self.data_cv.notify_one();
        }
    }
}

/// Makes the gate's next [`InputGate::next`] that finds no input return [`GateItem::Idle`] at
/// once instead of waiting (a receiver already parked wakes up): for work that completes on
/// another thread and must not wait for the input's next buffer or the wake-up interval (the
/// async wait operator's completed requests). Data still comes first; a wake-up asked for while
/// the receiver is busy is served at its next wait. Type-erased, like [`GateCanceller`].
#[derive(Clone)]
pub struct GateWaker(Arc<dyn Wake>);

impl GateWaker {
    /// Makes the receiver's current or next wait return [`GateItem::Idle`].
    pub fn wake(&self) {
        self.0.wake()
    }
}

impl std::fmt::Debug for GateWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GateWaker")
    }
}

/// A buffer taken from a gate. Hand it back with [`InputGate::release`] once its records are
/// processed: that returns the credit to the sender.
#[derive(Debug)]
pub struct ReceivedBuffer<T> {
    /// Which input channel it came from.
    pub channel: usize,
    /// Its records, in the order the sender wrote them.
    pub records: Vec<T>,
    credit: Credit,
    /// Bytes the buffer held when it arrived (the records may be drained before release).
    bytes: u64,
}

/// What [`InputGate::next`] yields.
#[derive(Debug)]
pub enum GateItem<T> {
    /// A buffer of records.
    Buffer(ReceivedBuffer<T>),
    /// A control event of one channel.
    Event {
        /// The channel it came from.
        channel: usize,
        /// The event.
        event: ChannelEvent,
    },
    /// No input arrived within the gate's wake-up interval, or a [`GateWaker`] asked; the
    /// caller gets a chance to do periodic work (flush its outputs on the buffer timeout) and
    /// then asks again.
    Idle,
    /// An unaligned checkpoint barrier that overtook the next `overtaken` entries of
    /// `channel` (read them with [`InputGate::in_flight`] before anything else of the channel),
    /// `overtaken_buffers` of them buffers; and, for a channel from another process, the
    /// `behind` buffers it overtook at the sender, which arrive after it (after the overtaken
    /// ones) and belong to the checkpoint's channel state as well.
    UnalignedBarrier {
        /// The channel whose barrier this is.
        channel: usize,
        /// The barrier.
        barrier: Barrier,
        /// Entries of the channel it overtook (buffers and events).
        overtaken: usize,
        /// How many of those are buffers.
        overtaken_buffers: usize,
        /// Buffers overtaken at a remote sender, still to arrive.
        behind: usize,
    },
}

/// The receiving end for one downstream subtask.
pub struct InputGate<T> {
    shared: Arc<Shared<T>>,
    open_channels: usize,
    waits: Arc<WaitTimes>,
    wake_interval: Option<Duration>,
    debloat: Option<GateDebloat>,
    gauges: Arc<DebloatGauges>,
}

/// The receiver-side state of buffer debloating (only when enabled).
struct GateDebloat {
    throughput: ThroughputCalculator,
    debloater: BufferDebloater,
    period_ns: u64,
    next_due: u64,
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
                    exclusive_free: cfg.exclusive_credits as isize,
                    recycled: Vec::new(),
                    in_ready: false,
                    waiting: false,
                    notified: false,
                    granted_at: 0,
                    budget: None,
                })
                .collect(),
            floating_free: cfg.floating_credits,
            ready: VecDeque::with_capacity(channels),
            receiver_waiting: false,
            wake_requested: false,
            waiters: VecDeque::with_capacity(channels),
            wake_batch: ((cfg.exclusive_credits + cfg.floating_credits) / 2).max(1),
            last_freed: 0,
            freeing_fast: false,
            batch_wakes_within: BATCH_WAKES_WITHIN,
            cancelled: false,
            blocked: vec![false; channels],
            blocked_count: 0,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            data_cv: Condvar::new(),
            credit_cvs: (0..channels).map(|_| Condvar::new()).collect(),
            counters: (0..channels)
                .map(|_| Arc::new(ChannelCounters::default()))
                .collect(),
            announced: (0..channels).map(|_| AtomicUsize::new(0)).collect(),
            record_size: sluice_types::estimated_record_size::<T>() as u64,
        });
        let gauges = Arc::new(DebloatGauges::default());
        gauges.buffer_size.store(cfg.buffer_bytes as u64, Relaxed);
        let debloat = cfg.debloat.enabled.then(|| {
            gauges.enabled.store(true, Relaxed);
            // Announced before the first record: senders start with the starting size.
            let start = cfg.debloat.starting_size(cfg.buffer_bytes);
            gauges.buffer_size.store(start as u64, Relaxed);
            let records = (start as u64 / shared.record_size.max(1)).max(1) as usize;
            for a in &shared.announced {
                a.store(records, Relaxed);
            }
            let period_ns = cfg.debloat.period.as_nanos().max(1) as u64;
            GateDebloat {
                throughput: ThroughputCalculator::default(),
                debloater: BufferDebloater::new(&cfg.debloat, cfg.buffer_bytes),
                period_ns,
                next_due: mono_ns() + period_ns,
            }
        });
        let senders = (0..channels)
            .map(|channel| ChannelSender {
                shared: shared.clone(),
                channel,
            })
            .collect();
        let parked_on: Arc<dyn WakeForStacks> = shared.clone();
        waits.stacks.wake_on_run_start(Arc::downgrade(&parked_on));
        let gate = InputGate {
            shared,
            open_channels: channels,
            waits,
            wake_interval: None,
            debloat,
            gauges,
        };
        (gate, senders)
    }

    /// Makes [`next`](Self::next) return [`GateItem::Idle`] after waiting this long without input.
    pub fn set_wake_interval(&mut self, every: Option<Duration>) {
        self.wake_interval = every;
    }

    /// How many input channels the gate has.
    pub fn num_channels(&self) -> usize {
        self.shared.counters.len()
    }

    /// Channels that have not delivered end-of-partition yet.
    pub fn open_channels(&self) -> usize {
        self.open_channels
    }

    /// Each channel's traffic counters, by channel index.
    pub fn counters(&self) -> Vec<Arc<ChannelCounters>> {
        self.shared.counters.clone()
    }

    /// A handle that cancels this gate from another thread.
    pub fn canceller(&self) -> GateCanceller {
        GateCanceller(self.shared.clone())
    }

    /// See [`GateWaker`].
    pub fn waker(&self) -> GateWaker {
        GateWaker(self.shared.clone())
    }

    /// The debloater's gauges (`debloatedBufferSize`, `estimatedTimeToConsumeBuffersMs`).
    pub fn debloat_gauges(&self) -> Arc<DebloatGauges> {
        self.gauges.clone()
    }

    /// Bytes shipped to this gate and not yet released, over all channels.
    pub fn in_flight_bytes(&self) -> u64 {
        self.shared
            .counters
            .iter()
            .map(|c| c.bytes_in_flight.load(Relaxed))
            .sum()
    }

    /// One debloating period: throughput over the active time, the new size, announced to every
    /// sender when it changed by the threshold.
    fn debloat_now(&mut self, now: u64) {
        let Some(d) = &mut self.debloat else { return };
        d.next_due = now + d.period_ns;
        let throughput = d.throughput.calculate(now);
        let in_use: u64 = self
            .shared
            .counters
            .iter()
            .map(|c| c.buffers_in_flight.load(Relaxed))
            .sum();
        let announce = d.debloater.recalculate(throughput, in_use as usize);
        self.gauges
            .estimated_time_to_consume_ms
            .store(d.debloater.estimated_time_ms(), Relaxed);
        if let Some(bytes) = announce {
            self.gauges.buffer_size.store(bytes as u64, Relaxed);
            let records = (bytes as u64 / self.shared.record_size.max(1)).max(1) as usize;
            for a in &self.shared.announced {
                a.store(records, Relaxed);
            }
        }
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
    /// Blocks (parked, counted as idle time) while no channel has data.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<GateItem<T>>, Cancelled> {
        if self.debloat.is_some() {
            let now = mono_ns();
            if self.debloat.as_ref().is_some_and(|d| now >= d.next_due) {
                self.debloat_now(now);
            }
        }
        let item = self.next_item()?;
        if let (Some(d), Some(GateItem::Buffer(b))) = (&mut self.debloat, &item) {
            d.throughput.incoming(b.bytes, mono_ns());
        }
        Ok(item)
    }

    fn next_item(&mut self) -> Result<Option<GateItem<T>>, Cancelled> {
        let mut st = self.shared.lock();
        // When the wake-up interval of this call ends (on `mono_ns`), once it parked.
        let mut idle_due: Option<u64> = None;
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
                // A ready channel has an entry; should one ever not, it is no longer ready.
                let Some(entry) = chan.queue.pop_front() else {
                    chan.in_ready = false;
                    continue;
                };
                if chan.queue.is_empty() {
                    chan.in_ready = false;
                } else {
                    st.ready.push_back(ch);
                }
                return Ok(Some(match entry {
                    Entry::Priority {
                        barrier,
                        overtaken,
                        overtaken_buffers,
                        behind,
                    } => GateItem::UnalignedBarrier {
                        channel: ch,
                        barrier,
                        overtaken,
                        overtaken_buffers,
                        behind,
                    },
                    Entry::Buffer { records, credit } => {
                        let c = &self.shared.counters[ch];
                        let bytes = records.len() as u64 * self.shared.record_size;
                        c.records_in.fetch_add(records.len() as u64, Relaxed);
                        c.bytes_in.fetch_add(bytes, Relaxed);
                        c.buffers_in.fetch_add(1, Relaxed);
                        c.buffers_queued.fetch_sub(1, Relaxed);
                        c.bytes_queued.fetch_sub(bytes, Relaxed);
                        GateItem::Buffer(ReceivedBuffer {
                            channel: ch,
                            records,
                            credit,
                            bytes,
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
            if st.wake_requested {
                st.wake_requested = false;
                return Ok(Some(GateItem::Idle));
            }
            st.receiver_waiting = true;
            if !st.waiters.is_empty() {
                for ch in st.wake_all_with_credit() {
                    self.shared.credit_cvs[ch].notify_one();
                }
            }
            let started = self.waits.begin_idle();
            if let Some(d) = &mut self.debloat {
                d.throughput.pause(started);
            }
            // The wake-up interval counts from the first park of this call: a park cut short
            // (a profiler run's capture, a spurious wake-up) does not restart it.
            let limit = self.wake_interval.map(|d| {
                let due = *idle_due.get_or_insert(started + d.as_nanos() as u64);
                Duration::from_nanos(due.saturating_sub(started))
            });
            let timed_out;
            (st, timed_out) = self.waits.stacks.park(&self.shared.data_cv, st, limit);
            st.receiver_waiting = false;
            self.waits.end_idle(started);
            let now = mono_ns();
            if let Some(d) = &mut self.debloat {
                d.throughput.resume(now);
            }
            let timed_out = timed_out && idle_due.is_some_and(|due| now >= due);
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
            credit,
            bytes,
        } = buf;
        records.clear();
        let mut st = self.shared.lock();
        let (wake, repay) = st.credit_freed(channel, credit);
        let chan = &mut st.channels[channel];
        if chan.recycled.len() < 2 && records.capacity() > 0 {
            chan.recycled.push(records);
        }
        let c = &self.shared.counters[channel];
        c.buffers_in_flight.fetch_sub(1, Relaxed);
        c.bytes_in_flight.fetch_sub(bytes, Relaxed);
        if matches!(credit, Credit::Floating) {
            c.floating_in_flight.fetch_sub(1, Relaxed);
        }
        // Repaid under the gate lock: a sender of this channel checks its budget under it, so
        // the wake-up below cannot find the budget still full.
        if let Some(b) = repay {
            b.repay();
        }
        drop(st);
        if let Some(ch) = wake {
            self.shared.credit_cvs[ch].notify_one();
        }
    }
}

impl<T: Send + 'static> InputGate<T> {
    /// Remote exchange, sender side: `n` credits the remote receiver announced for `channel`
    /// (Flink's `AddCredit`). A gate used as a network sender's outbox starts with no credits;
    /// every buffer it ships to the wire spends one (see [`release_spent`](Self::release_spent)).
    /// A credit that arrives while the channel owes overdraft buffers pays the debt first.
    pub fn grant_credits(&mut self, channel: usize, n: usize) {
        let mut st = self.shared.lock();
        let mut wake = None;
        let mut repays = Vec::new();
        for _ in 0..n {
            let (w, repay) = st.credit_freed(channel, Credit::Exclusive);
            wake = wake.or(w);
            repays.extend(repay);
        }
        for b in repays {
            b.repay();
        }
        drop(st);
        if let Some(ch) = wake {
            self.shared.credit_cvs[ch].notify_one();
        }
    }

    /// Remote exchange, sender side: a buffer went out on the wire; its credit was spent there
    /// and comes back only as a new [`grant_credits`](Self::grant_credits) from the receiver.
    pub fn release_spent(&mut self, mut buf: ReceivedBuffer<T>) {
        buf.credit = Credit::None;
        self.release(buf);
    }

    /// Buffers queued on `channel` and not taken yet, plus the full buffer its sender is parked
    /// with for lack of credit (in Flink that buffer would already sit finished in the
    /// subpartition): the backlog a network sender announces.
    pub fn backlog(&self, channel: usize) -> usize {
        let st = self.shared.lock();
        let chan = &st.channels[channel];
        chan.queue
            .iter()
            .filter(|e| matches!(e, Entry::Buffer { .. }))
            .count()
            + usize::from(chan.waiting)
    }

    /// Whether the buffer carried a credit (`false`: the partial buffer an unaligned barrier
    /// took along, which crosses the wire without credit too).
    pub fn had_credit(buf: &ReceivedBuffer<T>) -> bool {
        buf.credit != Credit::None
    }
}

/// One credit reserved on a channel and owned (not borrowed from the sender): the network
/// receiver holds one per credit it announced to the remote sender, and spends it on the buffer
/// that arrives for it. Dropping it unsent hands the credit back.
#[must_use = "an owned permit holds a credit until it is used to send"]
pub struct OwnedPermit<T: Send + 'static> {
    shared: Arc<Shared<T>>,
    channel: usize,
    credit: Option<Credit>,
}

impl<T: Send + 'static> OwnedPermit<T> {
    /// Ships `records` as one buffer on the permit's credit.
    pub fn send(mut self, records: Vec<T>) {
        let credit = self.credit.take().unwrap_or(Credit::None);
        let sender = ChannelSender {
            shared: self.shared.clone(),
            channel: self.channel,
        };
        let mut st = self.shared.lock();
        let _ = sender.push_locked_raw(&mut st, records, credit);
    }
}

impl<T: Send + 'static> Drop for OwnedPermit<T> {
    fn drop(&mut self) {
        if let Some(credit) = self.credit.take() {
            let mut st = self.shared.lock();
            let (wake, _) = st.credit_freed(self.channel, credit);
            drop(st);
            if let Some(ch) = wake {
                self.shared.credit_cvs[ch].notify_one();
            }
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
    credit: Credit,
}

impl<T: Send + 'static> Permit<'_, T> {
    /// Ships `records` as one buffer; returns an empty buffer (recycled when possible) to refill.
    pub fn send(self, records: Vec<T>) -> Vec<T> {
        let (sender, credit) = (self.sender, self.credit);
        // The credit is used by this send: skip Drop, which would hand it back.
        std::mem::forget(self);
        let mut st = sender.shared.lock();
        sender.push_locked_raw(&mut st, records, credit)
    }
}

impl<T: Send + 'static> Drop for Permit<'_, T> {
    fn drop(&mut self) {
        // Reached only for a permit that was never sent: give its credit back.
        let mut st = self.sender.shared.lock();
        let (wake, _) = st.credit_freed(self.sender.channel, self.credit);
        drop(st);
        if let Some(ch) = wake {
            self.sender.shared.credit_cvs[ch].notify_one();
        }
    }
}

impl<T: Send + 'static> ChannelSender<T> {
    /// The index of the channel this sender writes.
    pub fn channel(&self) -> usize {
        self.channel
    }

    /// The channel's traffic counters.
    pub fn counters(&self) -> Arc<ChannelCounters> {
        self.shared.counters[self.channel].clone()
    }

    /// What this sender parks on for credit, to be woken when a profiler run starts.
    pub(crate) fn parked_on(&self) -> std::sync::Weak<dyn WakeForStacks> {
        let shared: Arc<dyn WakeForStacks> = self.shared.clone();
        Arc::downgrade(&shared)
    }

    /// A writer that batches records into buffers of the configured size for this sender.
    pub fn into_writer(
        self,
        cfg: &ExchangeConfig,
        waits: Arc<WaitTimes>,
    ) -> crate::ChannelWriter<T> {
        crate::ChannelWriter::new(self, cfg.records_per_buffer::<T>(), waits)
    }

    /// Records per buffer the receiver announced (buffer debloating); `None` = not announced.
    #[inline]
    pub fn announced_records(&self) -> Option<usize> {
        match self.shared.announced[self.channel].load(Relaxed) {
            0 => None,
            n => Some(n),
        }
    }

    /// Lets this channel's sends go into overdraft under `budget` (the writer's allowance);
    /// the receiver repays the budget as the channel's debt is paid back.
    pub fn set_overdraft(&self, budget: Arc<OverdraftBudget>) {
        self.shared.lock().channels[self.channel].budget = Some(budget);
    }

    fn take_credit(&self, st: &mut State<T>) -> Option<Credit> {
        let chan = &mut st.channels[self.channel];
        if chan.exclusive_free > 0 {
            chan.exclusive_free -= 1;
            Some(Credit::Exclusive)
        } else if st.floating_free > 0 {
            st.floating_free -= 1;
            Some(Credit::Floating)
        } else {
            None
        }
    }

    /// Reserves one credit, parking until one is free (time counted as backpressure).
    pub fn reserve(&self, waits: &WaitTimes) -> Result<Permit<'_, T>, Cancelled> {
        let st = self.shared.lock();
        let (_st, credit) = self.wait_for_credit(st, waits, false);
        let credit = credit?;
        Ok(Permit {
            sender: self,
            credit,
        })
    }

    /// Reserves one credit if one is free right now.
    pub fn try_reserve(&self) -> Result<Option<Permit<'_, T>>, Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        Ok(self.take_credit(&mut st).map(|credit| Permit {
            sender: self,
            credit,
        }))
    }

    /// Takes a credit, parking on the channel's own condvar while none is free; with
    /// `overdraft`, takes an overdraft buffer of the channel's budget instead of parking when
    /// the budget has one left. Takes and returns the guard because `Condvar::wait` consumes it.
    fn wait_for_credit<'g>(
        &'g self,
        mut st: MutexGuard<'g, State<T>>,
        waits: &WaitTimes,
        overdraft: bool,
    ) -> (MutexGuard<'g, State<T>>, Result<Credit, Cancelled>) {
        let ch = self.channel;
        let mut started: Option<u64> = None;
        let result = loop {
            if st.cancelled {
                break Err(Cancelled);
            }
            if let Some(credit) = self.take_credit(&mut st) {
                break Ok(credit);
            }
            if overdraft {
                let chan = &mut st.channels[ch];
                if chan.budget.as_ref().is_some_and(|b| b.try_take()) {
                    // Into debt: the buffer's release pays it back.
                    chan.exclusive_free -= 1;
                    self.shared.counters[ch]
                        .overdraft_buffers
                        .fetch_add(1, Relaxed);
                    break Ok(Credit::Exclusive);
                }
            }
            if started.is_none() {
                started = Some(waits.begin_backpressure());
            } else {
                waits.stacks.rewait(WaitPoint::Credit);
            }
            let chan = &mut st.channels[ch];
            if !chan.waiting {
                chan.waiting = true;
                st.waiters.push_back(ch);
            }
            st = waits.stacks.park(&self.shared.credit_cvs[ch], st, None).0;
            st.channels[ch].notified = false;
        };
        let chan = &mut st.channels[ch];
        let granted_at = std::mem::take(&mut chan.granted_at);
        chan.notified = false;
        if chan.waiting {
            chan.waiting = false;
            if let Some(i) = st.waiters.iter().position(|&c| c == ch) {
                st.waiters.remove(i);
            }
            // Woken for a floating credit but served by an exclusive one (or the other way
            // round while more are free): the next waiter may proceed now.
            if let Some(next) = st.wake_for_floating() {
                self.shared.credit_cvs[next].notify_one();
            }
        }
        if let Some(s) = started {
            // Count only the time no credit was free; the scheduler's delay in running this
            // thread after its credit was freed is not backpressure.
            let end = if granted_at > s {
                granted_at
            } else {
                mono_ns()
            };
            waits.end_backpressure_at(s, end);
        }
        (st, result)
    }

    /// Reserve-and-send under one lock acquisition: the hot path of [`crate::ChannelWriter`].
    pub fn send_blocking(&self, records: Vec<T>, waits: &WaitTimes) -> Result<Vec<T>, Cancelled> {
        self.send_or_overdraft(records, waits, false)
    }

    /// [`send_blocking`](Self::send_blocking), but without a free credit the buffer goes out as
    /// an overdraft buffer when `overdraft` and the channel's budget allows
    /// ([`set_overdraft`](Self::set_overdraft)); only when neither is possible does it park.
    pub fn send_or_overdraft(
        &self,
        records: Vec<T>,
        waits: &WaitTimes,
        overdraft: bool,
    ) -> Result<Vec<T>, Cancelled> {
        let st = self.shared.lock();
        let (mut st, credit) = self.wait_for_credit(st, waits, overdraft);
        Ok(self.push_locked_raw(&mut st, records, credit?))
    }

    /// [`reserve`](Self::reserve), but the permit owns its hold on the gate (see [`OwnedPermit`]).
    pub fn reserve_owned(&self, waits: &WaitTimes) -> Result<OwnedPermit<T>, Cancelled> {
        let st = self.shared.lock();
        let (_st, credit) = self.wait_for_credit(st, waits, false);
        Ok(OwnedPermit {
            shared: self.shared.clone(),
            channel: self.channel,
            credit: Some(credit?),
        })
    }

    /// [`try_reserve`](Self::try_reserve), but the permit owns its hold on the gate: a credit
    /// if one is free right now (how the network's credit announcer takes, after one blocking
    /// reservation, every credit freed meanwhile, and announces them in one frame).
    pub fn try_reserve_owned(&self) -> Result<Option<OwnedPermit<T>>, Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        Ok(self.take_credit(&mut st).map(|credit| OwnedPermit {
            shared: self.shared.clone(),
            channel: self.channel,
            credit: Some(credit),
        }))
    }

    /// Queues a buffer without a credit: only for the partial buffer an unaligned barrier took
    /// along, arriving over the network after its barrier (the documented exception).
    pub fn send_without_credit(&self, records: Vec<T>) -> Result<(), Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        let _ = self.push_locked_raw(&mut st, records, Credit::None);
        Ok(())
    }

    /// Sends if a credit is free right now; otherwise hands the records back untouched.
    pub fn try_send(&self, records: Vec<T>) -> Result<Result<Vec<T>, Vec<T>>, Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        match self.take_credit(&mut st) {
            Some(credit) => Ok(Ok(self.push_locked_raw(&mut st, records, credit))),
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
        self.send_unaligned_barrier_behind(barrier, partial, 0)
    }

    /// [`send_unaligned_barrier`](Self::send_unaligned_barrier) for a barrier that already
    /// overtook `behind` buffers of this channel elsewhere (at the remote sender of a channel
    /// between processes): they come after it and the receiver counts them as channel state.
    pub fn send_unaligned_barrier_behind(
        &self,
        barrier: Barrier,
        partial: Vec<T>,
        behind: usize,
    ) -> Result<Vec<T>, Cancelled> {
        let mut st = self.shared.lock();
        if st.cancelled {
            return Err(Cancelled);
        }
        let cap = partial.capacity();
        let mut fresh = partial;
        if !fresh.is_empty() {
            self.count_out(fresh.len(), Credit::None);
            let records = std::mem::replace(&mut fresh, Vec::with_capacity(cap));
            st.channels[self.channel].queue.push_back(Entry::Buffer {
                records,
                credit: Credit::None,
            });
        }
        let chan = &mut st.channels[self.channel];
        let overtaken = chan.queue.len();
        let overtaken_buffers = chan
            .queue
            .iter()
            .filter(|e| matches!(e, Entry::Buffer { .. }))
            .count();
        chan.queue.push_front(Entry::Priority {
            barrier,
            overtaken,
            overtaken_buffers,
            behind,
        });
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

    fn count_out(&self, records: usize, credit: Credit) {
        let c = &self.shared.counters[self.channel];
        let bytes = records as u64 * self.shared.record_size;
        c.bytes_queued.fetch_add(bytes, Relaxed);
        if matches!(credit, Credit::Floating) {
            c.floating_in_flight.fetch_add(1, Relaxed);
        }
        c.records_out.fetch_add(records as u64, Relaxed);
        c.bytes_out.fetch_add(bytes, Relaxed);
        c.buffers_out.fetch_add(1, Relaxed);
        let in_flight = c.buffers_in_flight.fetch_add(1, Relaxed) + 1;
        c.max_buffers_in_flight.fetch_max(in_flight, Relaxed);
        c.bytes_in_flight.fetch_add(bytes, Relaxed);
        c.buffers_queued.fetch_add(1, Relaxed);
    }

    fn push_locked_raw(&self, st: &mut State<T>, records: Vec<T>, credit: Credit) -> Vec<T> {
        let cap = records.capacity();
        self.count_out(records.len(), credit);
        let chan = &mut st.channels[self.channel];
        chan.queue.push_back(Entry::Buffer { records, credit });
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

// Real threads and timing: not under loom, whose primitives work only inside a model.
#[cfg(all(test, not(loom)))]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a failed unwrap fails the test"
)]
#[path = "gate_wake_tests.rs"]
mod wake_tests;

#[cfg(all(test, loom))]
#[path = "gate_loom_tests.rs"]
mod loom_tests;
