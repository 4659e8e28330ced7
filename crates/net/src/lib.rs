//! # sluice-net: the exchange between processes (Flink's credit-based network stack)
//!
//! One TCP connection per pair of processes ([`NetEndpoint`]); every remote channel of every
//! job edge is multiplexed on it by its [`ChannelId`] (edge, upstream subtask, downstream
//! subtask). The protocol is Flink's credit-based one (see [`wire`] for the frame format):
//!
//! - the receiver asks for a channel with a `PartitionRequest` carrying its exclusive credits and
//!   announces every further credit with `AddCredit` ([`inbound`]); credits are the receiving
//!   gate's own (exclusive per channel, then the gate's floating pool), reserved as
//!   [`OwnedPermit`](sluice_channel::OwnedPermit)s and freed when the task releases the buffer;
//! - the sender ships a buffer only on a credit and announces its backlog (buffers still queued
//!   on that channel) in each buffer, so the receiver lends it floating credits ([`outbound`]);
//!   its own buffers (2 per channel, as Flink's output buffers) let its writer fill ahead;
//! - events (end of partition, watermarks, idleness, aligned barriers) need no credit and keep
//!   their place; an unaligned barrier leaves as a priority frame ahead of the queued buffers,
//!   and the partial buffer it takes along crosses without credit (the one documented excess).
//!
//! Remote channels are ordinary [`ChannelSender`](sluice_channel::ChannelSender)s on both
//! sides: [`open_outputs`] hands the upstream subtask senders of an outbox gate, [`open_inputs`]
//! feeds the downstream subtask's own `InputGate` — operators cannot tell.
//!
//! Records of a fixed-width primitive type cross as raw little-endian values, any other type
//! as a postcard-encoded `Vec<T>` (serde; see [`wire`]); [`SerdeMetrics`] counts the encoding
//! and decoding time and bytes per vertex, so serialisation cost can be named.

#![warn(missing_docs)]

pub mod bench;
pub mod endpoint;
pub mod inbound;
pub mod liveness;
pub mod outbound;
pub mod wire;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

pub use endpoint::{ControlEvent, ControlHandler, NetEndpoint};
pub use inbound::open_inputs;
pub use liveness::Liveness;
pub use outbound::{open_outputs, open_outputs_cancellable};
pub use wire::{ChannelId, Frame};

/// Why a network exchange or the control plane failed.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A socket operation failed.
    #[error("network I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A frame does not decode.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// A peer sent a frame it must not send now (unknown channel, credit overflow).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A peer was silent for longer than the heartbeat timeout.
    #[error("heartbeat timeout: {0}")]
    HeartbeatTimeout(String),
    /// A frame or message is over its size limit.
    #[error("too large: {0}")]
    TooLarge(String),
    /// Records did not encode or decode.
    #[error("record codec (postcard): {0}")]
    Codec(String),
    /// A peer could not be reached.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The addresses or settings given are invalid.
    #[error("network configuration: {0}")]
    Config(String),
    /// The job was cancelled while the exchange waited.
    #[error("exchange cancelled")]
    Cancelled,
}

/// Serialisation cost of one vertex's remote channels (a task-scope metric: the encoder side
/// counts at the sending vertex, the decoder side at the receiving one).
#[derive(Debug, Default)]
pub struct SerdeMetrics {
    /// Time spent encoding outgoing buffers, ns.
    pub encode_ns: AtomicU64,
    /// Bytes encoded.
    pub encoded_bytes: AtomicU64,
    /// Records encoded.
    pub encoded_records: AtomicU64,
    /// Time spent decoding incoming buffers, ns.
    pub decode_ns: AtomicU64,
    /// Bytes decoded.
    pub decoded_bytes: AtomicU64,
    /// Records decoded.
    pub decoded_records: AtomicU64,
    /// Buffers sent.
    pub buffers_out: AtomicU64,
    /// Buffers received.
    pub buffers_in: AtomicU64,
}

impl SerdeMetrics {
    fn record_encode(&self, took: Duration, bytes: usize, records: usize) {
        self.encode_ns.fetch_add(took.as_nanos() as u64, Relaxed);
        self.encoded_bytes.fetch_add(bytes as u64, Relaxed);
        self.encoded_records.fetch_add(records as u64, Relaxed);
        self.buffers_out.fetch_add(1, Relaxed);
    }

    fn record_decode(&self, took: Duration, bytes: usize, records: usize) {
        self.decode_ns.fetch_add(took.as_nanos() as u64, Relaxed);
        self.decoded_bytes.fetch_add(bytes as u64, Relaxed);
        self.decoded_records.fetch_add(records as u64, Relaxed);
        self.buffers_in.fetch_add(1, Relaxed);
    }
}
