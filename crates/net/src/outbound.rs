//! The sending process's side of remote channels: the upstream subtask writes into an ordinary
//! [`ChannelSender`] of an *outbox* gate that starts with no credit; credits arrive only as the
//! receiver's `PartitionRequest` / `AddCredit` frames. A pump thread takes the outbox's buffers
//! in the gate's fair order, serialises them with postcard, announces the channel's backlog in
//! each buffer frame and spends the credit (it comes back only from the receiver). Events need
//! no credit; an unaligned barrier leaves at once, ahead of every buffer still queued.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;
use sluice_channel::{ChannelSender, ExchangeConfig, GateItem, GateWaker, InputGate, WaitTimes};

use crate::endpoint::{Handler, NetEndpoint};
use crate::wire::{ChannelId, Frame};
use crate::{NetError, SerdeMetrics};

/// The pump thread of an outbox: ends once every channel sent end-of-partition.
pub type Pump = JoinHandle<Result<(), NetError>>;

/// Credits the receiver granted and the pump has not handed to the outbox yet.
struct CreditInbox {
    index: usize,
    pending: Arc<Vec<AtomicU64>>,
    waker: GateWaker,
}

impl Handler for CreditInbox {
    fn on_frame(&self, frame: Frame) -> Result<(), NetError> {
        let n = match frame {
            Frame::PartitionRequest { initial_credit, .. } => initial_credit,
            Frame::AddCredit { credit, .. } => credit,
            other => return Err(NetError::Malformed(format!("{other:?} at a sender"))),
        };
        self.pending[self.index].fetch_add(u64::from(n), Relaxed);
        self.waker.wake();
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
    let peer = endpoint.peer(process)?;
    // No credit of its own: everything it may ship was granted by the receiver.
    let cfg = ExchangeConfig {
        exclusive_credits: 0,
        floating_credits: 0,
        ..ExchangeConfig::default()
    };
    let (mut gate, senders) =
        InputGate::<T>::new(channels.len(), &cfg, Arc::new(WaitTimes::default()));
    gate.set_wake_interval(Some(Duration::from_millis(50)));
    let pending: Arc<Vec<AtomicU64>> =
        Arc::new(channels.iter().map(|_| AtomicU64::new(0)).collect());
    for (index, ch) in channels.iter().enumerate() {
        endpoint.register(
            false,
            *ch,
            Arc::new(CreditInbox {
                index,
                pending: pending.clone(),
                waker: gate.waker(),
            }),
        )?;
    }
    let canceller = gate.canceller();
    let name = format!("net-send-{}->{process}", endpoint.process());
    let pump = std::thread::Builder::new().name(name).spawn(move || {
        let r = pump(&mut gate, &channels, &pending, &peer, &metrics);
        if r.is_err() {
            canceller.cancel();
        }
        r
    })?;
    Ok((senders, pump))
}

fn pump<T: Serialize + Send + 'static>(
    gate: &mut InputGate<T>,
    channels: &[ChannelId],
    pending: &[AtomicU64],
    peer: &crate::endpoint::Peer,
    metrics: &SerdeMetrics,
) -> Result<(), NetError> {
    let mut scratch = Vec::new();
    loop {
        for (i, p) in pending.iter().enumerate() {
            let n = p.swap(0, Relaxed);
            if n > 0 {
                gate.grant_credits(i, n as usize);
            }
        }
        let Some(item) = gate.next().map_err(|_| NetError::Cancelled)? else {
            return Ok(());
        };
        let frame = match item {
            GateItem::Buffer(buf) => {
                let started = Instant::now();
                scratch.clear();
                let records = postcard::to_extend(&buf.records, std::mem::take(&mut scratch))
                    .map_err(|e| NetError::Codec(e.to_string()))?;
                metrics.record_encode(started.elapsed(), records.len(), buf.records.len());
                let frame = Frame::Buffer {
                    channel: channels[buf.channel],
                    backlog: gate.backlog(buf.channel) as u32,
                    with_credit: InputGate::had_credit(&buf),
                    records,
                };
                gate.release_spent(buf);
                frame
            }
            GateItem::Event { channel, event } => Frame::Event {
                channel: channels[channel],
                event,
            },
            GateItem::UnalignedBarrier {
                channel, barrier, ..
            } => Frame::PriorityBarrier {
                channel: channels[channel],
                barrier,
            },
            GateItem::Idle => continue,
        };
        let bytes = frame.encode();
        peer.send(&bytes)?;
        if let Frame::Buffer { records, .. } = frame {
            scratch = records;
        }
    }
}
