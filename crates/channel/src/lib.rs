//! # sluice-channel: credit-based, bounded exchange between subtasks
//!
//! Records cross thread boundaries in **buffers** (`Vec<T>` filled to an estimated byte size,
//! 32 KiB by default). Every downstream subtask owns one [`InputGate`] with one logical channel per
//! upstream subtask. Flow control follows Flink's credit model
//! (docs/src/reference/flink-formats.md#credit-flow-control):
//!
//! - each channel owns `exclusive` credits (default 2), and the gate owns a pool of `floating`
//!   credits (default 8) any of its channels may borrow;
//! - a sender must hold a [`Permit`] (one credit) before it ships a buffer; [`ChannelSender::reserve`]
//!   parks the thread until a credit is free, it never spins;
//! - the credit returns when the receiver **releases** the buffer after processing it, so the data in
//!   flight on a channel never exceeds the credits it can hold;
//! - control events (end of partition, watermarks, barriers) need no credit and keep their place in
//!   the channel's order.
//!
//! [`ChannelWriter`] adds the sender-side buffer builder: it appends records, ships a full buffer,
//! and flushes a partial one on request (buffer timeout) or at end of input.
//!
//! [`WaitTimes`] counts a subtask's idle and backpressured time; while the profiler asks, its
//! [`WaitStacks`] keep the native stack where the latest wait of each kind started
//! ([`wait_stacks`]: the waiting thread unwinds itself, at most every 50 ms).
//!
//! What may exceed a channel's credits, and by how much: **overdraft buffers**
//! ([`OverdraftBudget`], [`OutputDebt`]; at most `max_overdraft_buffers` per writer, taken only
//! mid-record and paid back before the writer's task starts its next input record) and the
//! partial buffer an **unaligned barrier** takes along (one per barrier). Nothing else.
//!
//! **Buffer debloating** ([`debloat`]): a gate measures its throughput and announces a buffer
//! size (bytes, turned into records per buffer) to its senders, so the data in flight takes about
//! the configured target time to consume.
//!
//! Every channel keeps counters ([`ChannelCounters`]): records, bytes and buffers in and out, and
//! queued buffers. Blocking time (idle on input, backpressured on output) is added to the
//! [`WaitTimes`] the runtime hands in, which is how subtasks account their seconds.
//!
//! ```
//! use sluice_channel::{ExchangeConfig, InputGate, GateItem};
//! let cfg = ExchangeConfig { buffer_bytes: 64, exclusive_credits: 2, floating_credits: 1, ..Default::default() };
//! let (gate, senders) = InputGate::<u64>::new(2, &cfg, Default::default());
//! let mut writers: Vec<_> = senders.into_iter().map(|s| s.into_writer(&cfg, Default::default())).collect();
//! writers[0].push(7).unwrap();
//! writers[1].push(8).unwrap();
//! for w in &mut writers { w.finish().unwrap(); }
//! let mut got = vec![];
//! let mut gate = gate;
//! while let Some(item) = gate.next().unwrap() {
//!     if let GateItem::Buffer(buf) = item { got.extend(buf.records.iter().copied()); gate.release(buf); }
//! }
//! got.sort();
//! assert_eq!(got, vec![7, 8]);
//! ```

#![warn(missing_docs)]

mod config;
mod counters;
pub mod debloat;
mod gate;
mod overdraft;
mod sync;
pub mod wait_stacks;
mod writer;

pub use config::ExchangeConfig;
pub use counters::{mono_ns, ChannelCounters, WaitTimes};
pub use debloat::{DebloatConfig, DebloatGauges};
pub use gate::{
    ChannelEvent, ChannelSender, GateCanceller, GateItem, GateWaker, InputGate, OwnedPermit,
    Permit, ReceivedBuffer,
};
pub use overdraft::{OutputDebt, OverdraftBudget};
pub use wait_stacks::{WaitPoint, WaitStack, WaitStacks};
pub use writer::ChannelWriter;

/// The exchange was torn down: the job is being cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("exchange cancelled")]
pub struct Cancelled;
