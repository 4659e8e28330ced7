//! The receiving process's side of remote channels: each remote channel feeds an ordinary
//! [`ChannelSender`] of the downstream subtask's own [`InputGate`](sluice_channel::InputGate),
//! so the task cannot tell a remote channel from a local one.
//!
//! Credit is the gate's own: a credit thread per channel reserves an [`OwnedPermit`] on the gate
//! (its exclusive credits first, then the gate's floating pool) and announces it to the sender
//! (`PartitionRequest` with the first `exclusive` credits, then an `AddCredit` for each
//! credit it waited for together with every further one already free, in one frame).
//! It holds at most `exclusive + backlog` unused credits (Flink's rule: the initial credit plus
//! the backlog the sender announced in its latest buffer), so an idle channel does not sit on
//! floating buffers. The records are decoded straight from the connection's read buffer. Each
//! arriving buffer spends one held permit; a buffer with no permit is a protocol error. Credit
//! frees when the task releases the buffer, exactly as for a local channel, which is why bytes
//! in flight on the wire plus the gate's queue never exceed the gate's credits (plus the
//! credit-less partial buffer of an unaligned barrier).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use serde::de::DeserializeOwned;
use sluice_channel::{ChannelCounters, ChannelEvent, ChannelSender, OwnedPermit, WaitTimes};

use crate::endpoint::{Handler, NetEndpoint, Peer};
use crate::wire::{decode_records, ChannelId, Frame, FrameRef};
use crate::{NetError, SerdeMetrics};

struct InChannel<T: Send + 'static> {
    id: ChannelId,
    sender: ChannelSender<T>,
    permits: Mutex<Held<T>>,
    cv: Condvar,
    backlog: AtomicUsize,
    metrics: Arc<SerdeMetrics>,
    /// The receiving channel's counters (the downstream subtask's own): decoding time.
    counters: Arc<ChannelCounters>,
}

struct Held<T: Send + 'static> {
    permits: VecDeque<OwnedPermit<T>>,
    ended: bool,
    /// The credit thread waits on `cv` for a permit to be spent: only then is it notified.
    waiting: bool,
}

impl<T: Send + DeserializeOwned + 'static> Handler for InChannel<T> {
    fn on_frame(&self, frame: FrameRef<'_>) -> Result<(), NetError> {
        let cancelled = |_| NetError::Cancelled;
        match frame {
            Frame::Buffer {
                backlog,
                with_credit,
                records,
                ..
            } => {
                let started = Instant::now();
                // Straight from the connection's read buffer.
                let decoded: Vec<T> = decode_records(records)?;
                let took = started.elapsed();
                self.metrics
                    .record_decode(took, records.len(), decoded.len());
                self.counters
                    .deserialize_ns
                    .fetch_add(took.as_nanos() as u64, Relaxed);
                self.backlog.store(backlog as usize, Relaxed);
                if with_credit {
                    let mut held = self.permits.lock().unwrap_or_else(|p| p.into_inner());
                    let permit = held.permits.pop_front().ok_or_else(|| {
                        NetError::Protocol(format!(
                            "buffer on {:?} without an announced credit",
                            self.id
                        ))
                    })?;
                    let wake = std::mem::take(&mut held.waiting);
                    drop(held);
                    permit.send(decoded);
                    if wake {
                        self.cv.notify_all();
                    }
                } else {
                    self.sender
                        .send_without_credit(decoded)
                        .map_err(cancelled)?;
                    // The backlog it announced may ask for more credit.
                    self.cv.notify_all();
                }
            }
            Frame::Event { event, .. } => {
                self.sender.send_event(event).map_err(cancelled)?;
                if event == ChannelEvent::EndOfPartition {
                    let mut held = self.permits.lock().unwrap_or_else(|p| p.into_inner());
                    held.ended = true;
                    held.permits.clear();
                    drop(held);
                    self.cv.notify_all();
                }
            }
            Frame::PriorityBarrier {
                barrier, behind, ..
            } => {
                // The buffers it overtook at the sender follow it: the receiving task counts
                // them into the checkpoint's channel state.
                self.sender
                    .send_unaligned_barrier_behind(barrier, Vec::new(), behind as usize)
                    .map_err(cancelled)?;
            }
            other => return Err(NetError::Malformed(format!("{other:?} at a receiver"))),
        }
        Ok(())
    }
}

/// Connects the gate channels behind `channels` (their senders) to remote senders in
/// `process`. `exclusive` is the gate's exclusive credits per channel. The credit threads end
/// at end of partition (or when the gate is cancelled).
pub fn open_inputs<T: DeserializeOwned + Send + 'static>(
    endpoint: &NetEndpoint,
    process: usize,
    channels: Vec<(ChannelId, ChannelSender<T>)>,
    exclusive: usize,
    metrics: Arc<SerdeMetrics>,
) -> Result<(), NetError> {
    let peer = endpoint.peer(process)?;
    for (id, sender) in channels {
        let ch = Arc::new(InChannel {
            id,
            counters: sender.counters(),
            sender,
            permits: Mutex::new(Held {
                permits: VecDeque::new(),
                ended: false,
                waiting: false,
            }),
            cv: Condvar::new(),
            backlog: AtomicUsize::new(0),
            metrics: metrics.clone(),
        });
        endpoint.register(true, id, ch.clone())?;
        let peer = peer.clone();
        let name = format!("net-credit-{}<-{process}", endpoint.process());
        let ep = endpoint.clone();
        std::thread::Builder::new().name(name).spawn(move || {
            if let Err(e) = announce_credits(&ch, &peer, exclusive.max(1)) {
                if !matches!(e, NetError::Cancelled) {
                    ep.inner_fail(format!("credit announcer of {:?}: {e}", ch.id));
                }
            }
        })?;
    }
    Ok(())
}

fn announce_credits<T: Send + 'static>(
    ch: &InChannel<T>,
    peer: &Peer,
    exclusive: usize,
) -> Result<(), NetError> {
    let waits = WaitTimes::default();
    let mut first = Vec::with_capacity(exclusive);
    for _ in 0..exclusive {
        first.push(
            ch.sender
                .reserve_owned(&waits)
                .map_err(|_| NetError::Cancelled)?,
        );
    }
    {
        let mut held = ch.permits.lock().unwrap_or_else(|p| p.into_inner());
        held.permits.extend(first);
    }
    peer.send(
        &FrameRef::PartitionRequest {
            channel: ch.id,
            initial_credit: exclusive as u32,
        }
        .encode()?,
    )?;
    loop {
        {
            let mut held = ch.permits.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if held.ended {
                    return Ok(());
                }
                let want = exclusive + ch.backlog.load(Relaxed);
                if held.permits.len() < want {
                    break;
                }
                held.waiting = true;
                held = ch.cv.wait(held).unwrap_or_else(|p| p.into_inner());
            }
        }
        let first = ch
            .sender
            .reserve_owned(&waits)
            .map_err(|_| NetError::Cancelled)?;
        let mut held = ch.permits.lock().unwrap_or_else(|p| p.into_inner());
        if held.ended {
            return Ok(());
        }
        held.permits.push_back(first);
        // Every further credit freed meanwhile (the task released several buffers while this
        // thread was waking up), up to what the channel may hold: one frame for all of them.
        let want = exclusive + ch.backlog.load(Relaxed);
        let mut credit = 1u32;
        while held.permits.len() < want {
            match ch.sender.try_reserve_owned() {
                Ok(Some(p)) => {
                    held.permits.push_back(p);
                    credit += 1;
                }
                Ok(None) => break,
                Err(_) => return Err(NetError::Cancelled),
            }
        }
        drop(held);
        peer.send(
            &FrameRef::AddCredit {
                channel: ch.id,
                credit,
            }
            .encode()?,
        )?;
    }
}
