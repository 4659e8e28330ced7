//! The sending process's side of remote channels: the upstream subtask writes into an ordinary
//! [`ChannelSender`] of an *outbox* gate whose own credits are the sender's buffers (Flink's
//! result-partition pool: [`SENDER_BUFFERS_PER_CHANNEL`] per channel and
//! [`SENDER_FLOATING_BUFFERS`] any channel may take), so the writer may fill that many buffers
//! ahead of the receiver. The receiver's credits arrive as its `PartitionRequest` /
//! `AddCredit` frames and are counted by the pump thread, which takes the outbox's items in the
//! gate's fair order and puts a buffer on the wire only on such a credit: a buffer ahead of the
//! receiver's credits (the writer's own buffers, or an overdraft buffer of a writer in the
//! middle of one record's outputs) waits in the pump, with everything behind it on its channel,
//! until the receiver grants one. Each buffer frame announces the channel's backlog (the
//! buffers queued in the outbox and waiting in the pump), so the receiver lends floating credit
//! as Flink's does; a shipped buffer frees the sender's buffer for the writer. Events need no
//! credit (one waits only behind a buffer of its channel that waits); an unaligned barrier
//! leaves at once, ahead of every buffer still queued or waiting.
//!
//! The pump encodes each frame straight into a batch of its own (reused, so steady state
//! allocates nothing) and writes the batch with one system call once the outbox has nothing
//! more to take right now, or once it reached 256 KiB: a burst of buffers and events costs one
//! write, and nothing waits in the batch while the pump waits for the outbox.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;
use sluice_channel::{
    ChannelCounters, ChannelSender, ExchangeConfig, GateCanceller, GateItem, GateWaker, InputGate,
    WaitTimes,
};

use crate::endpoint::{Handler, NetEndpoint, Peer};
use crate::wire::{encode_buffer, ChannelId, Frame, FrameRef};
use crate::{NetError, SerdeMetrics};

/// The pump thread of an outbox: ends once every channel sent end-of-partition.
pub type Pump = JoinHandle<Result<(), NetError>>;

/// Credits the receiver granted and the pump has not taken up yet, per channel.
struct Credits {
    pending: Vec<AtomicU64>,
    /// Set while a pump whose outbox ended waits for credit for the buffers it still holds.
    draining: AtomicBool,
    lock: Mutex<()>,
    arrived: Condvar,
}

impl Credits {
    /// Waits until some credit is pending, or [`CREDIT_WAIT`] passed (only for a pump that
    /// holds buffers and whose outbox has nothing more to give). Bounded: the pump then asks
    /// its outbox again, which says whether it was cancelled (a job that fails cancels it, and
    /// the receiver may never grant the credit).
    fn wait(&self) {
        self.draining.store(true, SeqCst);
        let g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.pending.iter().all(|p| p.load(SeqCst) == 0) {
            let _ = self
                .arrived
                .wait_timeout(g, CREDIT_WAIT)
                .unwrap_or_else(|p| p.into_inner());
        }
        self.draining.store(false, SeqCst);
    }
}

struct CreditInbox {
    index: usize,
    credits: Arc<Credits>,
    waker: GateWaker,
}

impl Handler for CreditInbox {
    fn on_frame(&self, frame: FrameRef<'_>) -> Result<(), NetError> {
        let n = match frame {
            Frame::PartitionRequest { initial_credit, .. } => initial_credit,
            Frame::AddCredit { credit, .. } => credit,
            other => return Err(NetError::Malformed(format!("{other:?} at a sender"))),
        };
        self.credits.pending[self.index].fetch_add(u64::from(n), SeqCst);
        self.waker.wake();
        if self.credits.draining.load(SeqCst) {
            let _g = self.credits.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.credits.arrived.notify_all();
        }
        Ok(())
    }
}

/// Opens remote channels from this process to `process`: returns one sender per channel (index
/// as in `channels`) and the pump thread, which ends once every channel sent end-of-partition
/// (or the outbox was cancelled, or the connection failed).
pub fn open_outputs<T: Serialize + Send + 'static>(
    endpoint: &NetEndpoint,
    process: usize,
    channels: Vec<ChannelId>,
    metrics: Arc<SerdeMetrics>,
) -> Result<(Vec<ChannelSender<T>>, Pump), NetError> {
    open_outputs_cancellable(endpoint, process, channels, metrics).map(|(s, p, _)| (s, p))
}

/// [`open_outputs`], with the outbox's canceller: a job that fails or is cancelled cancels it,
/// so a writer waiting for one of the outbox's own buffers (the pump holds them while the
/// receiver grants no credit, as when the receiving process's tasks stopped) wakes up instead
/// of keeping its process alive.
pub fn open_outputs_cancellable<T: Serialize + Send + 'static>(
    endpoint: &NetEndpoint,
    process: usize,
    channels: Vec<ChannelId>,
    metrics: Arc<SerdeMetrics>,
) -> Result<(Vec<ChannelSender<T>>, Pump, GateCanceller), NetError> {
    let peer = endpoint.peer(process)?;
    // The sender's own buffers (Flink's result-partition pool: 2 per subpartition and 8
    // floating): the writer fills up to these ahead of the receiver's credits; the pump ships
    // each only on such a credit.
    let cfg = ExchangeConfig {
        exclusive_credits: SENDER_BUFFERS_PER_CHANNEL,
        floating_credits: SENDER_FLOATING_BUFFERS,
        ..ExchangeConfig::default()
    };
    let (mut gate, senders) =
        InputGate::<T>::new(channels.len(), &cfg, Arc::new(WaitTimes::default()));
    gate.set_wake_interval(Some(Duration::from_millis(50)));
    let credits = Arc::new(Credits {
        pending: channels.iter().map(|_| AtomicU64::new(0)).collect(),
        draining: AtomicBool::new(false),
        lock: Mutex::new(()),
        arrived: Condvar::new(),
    });
    for (index, ch) in channels.iter().enumerate() {
        endpoint.register(
            false,
            *ch,
            Arc::new(CreditInbox {
                index,
                credits: credits.clone(),
                waker: gate.waker(),
            }),
        )?;
    }
    let canceller = gate.canceller();
    let for_job = gate.canceller();
    let name = format!("net-send-{}->{process}", endpoint.process());
    let running = endpoint.pump_running();
    let pump = std::thread::Builder::new().name(name).spawn(move || {
        let _running = running;
        let r = Pumping::new(&channels, &peer, &metrics).run(&mut gate, &credits);
        if r.is_err() {
            canceller.cancel();
        }
        r
    })?;
    Ok((senders, pump, for_job))
}

/// The pump's state.
struct Pumping<'a> {
    channels: &'a [ChannelId],
    peer: &'a Peer,
    metrics: &'a SerdeMetrics,
    /// The outbox channels' counters (the upstream subtasks' own): encoding time per channel,
    /// so serialisation cost shows per subtask.
    counters: Vec<Arc<ChannelCounters>>,
    /// Frames encoded and not written yet: written with one system call once the outbox has
    /// nothing more to take right now (or the batch is large), never held while the pump waits.
    batch: Vec<u8>,
    /// The receiver's credits not spent yet, per channel. The outbox's own count of them can
    /// run below zero: a writer in overdraft queued a buffer ahead of the receiver's credit.
    wire: Vec<u64>,
}

impl<'a> Pumping<'a> {
    fn new(channels: &'a [ChannelId], peer: &'a Peer, metrics: &'a SerdeMetrics) -> Self {
        Pumping {
            channels,
            peer,
            metrics,
            counters: Vec::new(),
            batch: Vec::with_capacity(BATCH_BYTES + (64 << 10)),
            wire: vec![0; channels.len()],
        }
    }

    fn run<T: Serialize + Send + 'static>(
        &mut self,
        gate: &mut InputGate<T>,
        credits: &Credits,
    ) -> Result<(), NetError> {
        // Items taken from the outbox and not sent: a buffer ahead of the receiver's credits
        // (an overdraft buffer) and everything behind it on its channel, in order.
        let mut held: Vec<VecDeque<GateItem<T>>> =
            self.channels.iter().map(|_| VecDeque::new()).collect();
        let mut holding = 0usize;
        let poll = gate.waker();
        self.counters = gate.counters();
        loop {
            for (i, p) in credits.pending.iter().enumerate() {
                let n = p.swap(0, SeqCst);
                if n == 0 {
                    continue;
                }
                self.wire[i] += n;
                while let Some(item) = held[i].pop_front() {
                    if self.needs_credit(&item) && self.wire[i] == 0 {
                        held[i].push_front(item);
                        break;
                    }
                    holding -= 1;
                    self.emit(gate, item, &held)?;
                }
            }
            if !self.batch.is_empty() {
                // Makes `next` return `Idle` at once instead of parking when nothing is queued.
                poll.wake();
            }
            let Some(item) = gate.next().map_err(|_| NetError::Cancelled)? else {
                self.flush()?;
                if holding == 0 {
                    return Ok(());
                }
                // Back to the top: credits taken up, and `next` fails if it was cancelled.
                credits.wait();
                continue;
            };
            let channel = match &item {
                GateItem::Buffer(b) => b.channel,
                GateItem::Event { channel, .. } | GateItem::UnalignedBarrier { channel, .. } => {
                    *channel
                }
                GateItem::Idle => {
                    // Nothing more queued: what was taken goes on the wire now.
                    self.flush()?;
                    continue;
                }
            };
            let priority = matches!(item, GateItem::UnalignedBarrier { .. });
            if !priority
                && (!held[channel].is_empty()
                    || (self.needs_credit(&item) && self.wire[channel] == 0))
            {
                held[channel].push_back(item);
                holding += 1;
            } else {
                self.emit(gate, item, &held)?;
            }
            if self.batch.len() >= BATCH_BYTES {
                self.flush()?;
            }
        }
    }

    /// A buffer that crosses on a credit of the receiver (all but the partial buffer an
    /// unaligned barrier takes along).
    fn needs_credit<T: Send + 'static>(&self, item: &GateItem<T>) -> bool {
        matches!(item, GateItem::Buffer(b) if InputGate::had_credit(b))
    }

    /// Encodes `item` into the batch (a buffer spends a credit of the receiver).
    fn emit<T: Serialize + Send + 'static>(
        &mut self,
        gate: &mut InputGate<T>,
        item: GateItem<T>,
        held: &[VecDeque<GateItem<T>>],
    ) -> Result<(), NetError> {
        match item {
            GateItem::Buffer(buf) => {
                let ch = buf.channel;
                let with_credit = InputGate::had_credit(&buf);
                if with_credit {
                    self.wire[ch] -= 1;
                }
                // Buffers still queued in the outbox and held here behind this one.
                let held_buffers = held[ch]
                    .iter()
                    .filter(|i| matches!(i, GateItem::Buffer(_)))
                    .count();
                let backlog = (gate.backlog(ch) + held_buffers) as u32;
                let started = Instant::now();
                let bytes = encode_buffer(
                    &mut self.batch,
                    &self.channels[ch],
                    backlog,
                    with_credit,
                    &buf.records,
                )?;
                let took = started.elapsed();
                self.metrics.record_encode(took, bytes, buf.records.len());
                if let Some(c) = self.counters.get(ch) {
                    c.serialize_ns.fetch_add(took.as_nanos() as u64, Relaxed);
                }
                // The sender's buffer is free again (or pays an overdraft debt back).
                gate.release(buf);
            }
            GateItem::Event { channel, event } => FrameRef::Event {
                channel: self.channels[channel],
                event,
            }
            .encode_into(&mut self.batch)?,
            GateItem::UnalignedBarrier {
                channel,
                barrier,
                overtaken_buffers,
                behind,
                ..
            } => {
                // It jumps every buffer of its channel still here: those queued in the outbox
                // (and any it overtook before), and those held for the receiver's credit.
                let held_buffers = held[channel]
                    .iter()
                    .filter(|i| matches!(i, GateItem::Buffer(_)))
                    .count();
                FrameRef::PriorityBarrier {
                    channel: self.channels[channel],
                    barrier,
                    behind: (overtaken_buffers + behind + held_buffers) as u32,
                }
                .encode_into(&mut self.batch)?
            }
            GateItem::Idle => {}
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NetError> {
        if !self.batch.is_empty() {
            self.peer.send(&self.batch)?;
            self.batch.clear();
        }
        Ok(())
    }
}

/// Buffers of its own each channel of an outbox has (Flink's `buffers-per-channel`, 2).
pub const SENDER_BUFFERS_PER_CHANNEL: usize = 2;

/// Buffers an outbox lends any of its channels beyond their own, as the floating part of
/// Flink's result-partition pool (`floating-buffers-per-gate`, 8): a writer fills ahead while
/// the pump is busy writing (with 2 per channel alone, it waited for the pump after every
/// other buffer: a median 31 % of the bare TCP loop's bytes/s, against 54 % with these; see
/// `sluice-net`'s bench).
pub const SENDER_FLOATING_BUFFERS: usize = 8;

/// The longest a pump waits for credit before it looks whether its outbox was cancelled.
const CREDIT_WAIT: Duration = Duration::from_millis(50);

/// A pump writes its batch once it holds this many bytes, even while more is queued.
const BATCH_BYTES: usize = 256 << 10;
