//! The wire format: length-prefixed frames on one TCP connection per pair of processes.
//!
//! ```text
//! frame   = len:u32 LE (bytes after this field) · kind:u8 · body
//! channel = edge:u32 LE · from:u32 LE · to:u32 LE     (job edge, upstream and downstream subtask)
//! kind 0  Hello            process:u32                      first frame of each direction
//! kind 1  PartitionRequest channel · initial_credit:u32     receiver → sender
//! kind 2  AddCredit        channel · credit:u32             receiver → sender
//! kind 3  Buffer           channel · backlog:u32 · records  sender → receiver, spends 1 credit
//! kind 4  BufferNoCredit   channel · backlog:u32 · records  the partial buffer an unaligned barrier took along
//! kind 5  Event            channel · event                  needs no credit, keeps its place
//! kind 6  PriorityBarrier  channel · barrier · behind:u32   unaligned barrier, jumps the sender's queue; `behind` =
//!                                                            the channel's buffers it overtook there (they follow it)
//! kind 7  Control          bytes                            the job's control plane (checkpoints), process to process:
//!                                                            a whole message, or the last piece of one
//! kind 8  Goodbye          (empty)                          the sender closes on purpose: its end is no lost peer
//! kind 9  ControlPart      bytes                            a piece of a control message, continued by the next
//!                                                            ControlPart or ended by a Control frame
//! kind 10 Heartbeat        (empty)                          the sender is alive (sent every heartbeat interval)
//! records = the buffer's records, by the edge's record type T (both ends know it):
//!           T = u16 | u32 | u64 | u128 | i16 | i32 | i64 | i128 | f32 | f64:
//!             each value's little-endian bytes, back to back, no count (frame length ÷ width)
//!           any other T: postcard encoding of Vec<T> (varint length, then each record's serde encoding)
//! event   = 0 end-of-partition | 1 watermark:i64 | 2 idleness:u8 | 3 barrier
//! barrier = checkpoint_id:u64 · timestamp_ms:i64 · kind:u8 (0 aligned, 1 unaligned, 2 savepoint)
//! ```
//!
//! Records of a fixed-width primitive type cross as raw little-endian values, as Flink's
//! serializers write a `long` in 8 bytes: the copy costs a fraction of a nanosecond a value
//! where a postcard varint costs several to encode and decode, for more bytes on the wire when
//! the values are small (8 for a `u64` below 2^21, where the varint takes 1 to 3). Every other
//! type keeps postcard's compact encoding.
//!
//! A sender may write many frames with one system call, and a reader decodes each frame in
//! place from its read buffer ([`FrameReader`]): neither changes the bytes on the wire.
//!
//! No frame is longer than [`MAX_FRAME_BYTES`]: the encoder refuses one with an error (so a
//! length never wraps its `u32`), the reader treats one as corrupt. A control message may be
//! longer (a checkpoint acknowledgement carries operator snapshots): it crosses as
//! `ControlPart` pieces of at most [`CONTROL_PIECE_BYTES`] and a final `Control` frame, never
//! interleaved with another control message on the connection (data frames may come between
//! its pieces), and the receiver reassembles at most [`MAX_CONTROL_MESSAGE_BYTES`].

use std::io::{Read, Write};

use std::any::Any;

use serde::de::DeserializeOwned;
use serde::Serialize;

use sluice_channel::ChannelEvent;
use sluice_types::{Barrier, CheckpointKind, Watermark};

use crate::NetError;

/// Frames larger than this are refused as corrupt (a 32 KiB buffer of large records is far below).
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// A control message longer than this crosses in pieces of this many bytes (`ControlPart`
/// frames and a last `Control`): well below [`MAX_FRAME_BYTES`], and small enough that the
/// data frames of the connection's pumps are not held up long behind one piece.
pub const CONTROL_PIECE_BYTES: usize = 8 << 20;

/// The longest control message a receiver reassembles (4 GiB), and a sender sends: a bound on
/// what a peer can make a reader hold, far above any checkpoint acknowledgement a process can
/// reasonably carry in memory (a larger state belongs in the checkpoint storage, not a message).
/// A longer message is refused with an error naming its size: by the sender before it sends a
/// byte, by the receiver as a protocol error (it stops reading the connection: a lost peer).
pub const MAX_CONTROL_MESSAGE_BYTES: u64 = 4 << 30;

/// One logical channel of a job: its edge and the upstream and downstream subtask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId {
    /// Index of the job edge.
    pub edge: u32,
    /// The upstream subtask.
    pub from: u32,
    /// The downstream subtask.
    pub to: u32,
}

/// One frame. `B` holds the bytes of records and control messages: `Vec<u8>` for a frame of
/// its own ([`Frame`]), `&[u8]` for a view into the reader's buffer ([`FrameRef`], decoded in
/// place, see [`FrameReader`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Frame<B = Vec<u8>> {
    /// The first frame on a connection: who is speaking.
    Hello {
        /// The sender's process index.
        process: u32,
    },
    /// A receiver asks for a channel's data, granting its first credits.
    PartitionRequest {
        /// The channel asked for.
        channel: ChannelId,
        /// Buffers the sender may send before more credit arrives.
        initial_credit: u32,
    },
    /// A receiver released buffers: the sender may send this many more.
    AddCredit {
        /// The channel.
        channel: ChannelId,
        /// Buffers added to the sender's credit.
        credit: u32,
    },
    /// A buffer of encoded records.
    Buffer {
        /// The channel.
        channel: ChannelId,
        /// Buffers queued behind this one at the sender (Flink's backlog).
        backlog: u32,
        /// Whether the buffer used a credit (`false`: sent in overdraft).
        with_credit: bool,
        /// The records, encoded.
        records: B,
    },
    /// A control event of a channel (watermark, barrier, end of partition).
    Event {
        /// The channel.
        channel: ChannelId,
        /// The event.
        event: ChannelEvent,
    },
    /// An unaligned checkpoint barrier, sent ahead of queued buffers.
    PriorityBarrier {
        /// The channel.
        channel: ChannelId,
        /// The barrier.
        barrier: Barrier,
        /// Buffers of the channel the barrier overtook at the sender (queued in its outbox or
        /// held by its pump): they follow it on the wire, and the receiver counts them into
        /// the checkpoint's channel state.
        behind: u32,
    },
    /// A message of the job's control plane (the bytes are the job master's own encoding):
    /// checkpoint triggers, acknowledgements and completions between process 0 and the others.
    Control {
        /// The message's bytes.
        bytes: B,
    },
    /// A piece of a control message longer than [`CONTROL_PIECE_BYTES`]: the message goes on
    /// in the next `ControlPart` or ends with the bytes of the next `Control` frame.
    ControlPart {
        /// This piece's bytes.
        bytes: B,
    },
    /// The sender is closing the connection on purpose (its job ended): the end of the
    /// stream after it is not the loss of a process.
    Goodbye,
    /// The sender is alive: sent on every connection every heartbeat interval, so a reader
    /// that hears nothing for the heartbeat timeout knows its peer is gone
    /// ([`crate::Liveness`]).
    Heartbeat,
}

/// A frame borrowing its bytes from the buffer it was read into.
pub type FrameRef<'a> = Frame<&'a [u8]>;

impl<B: AsRef<[u8]>> Frame<B> {
    /// The channel a data frame belongs to; `None` for connection-level frames.
    pub fn channel(&self) -> Option<ChannelId> {
        match self {
            Frame::Hello { .. }
            | Frame::Control { .. }
            | Frame::ControlPart { .. }
            | Frame::Goodbye
            | Frame::Heartbeat => None,
            Frame::PartitionRequest { channel, .. }
            | Frame::AddCredit { channel, .. }
            | Frame::Buffer { channel, .. }
            | Frame::Event { channel, .. }
            | Frame::PriorityBarrier { channel, .. } => Some(*channel),
        }
    }

    /// A view of this frame borrowing its bytes.
    pub fn borrowed(&self) -> FrameRef<'_> {
        self.map_bytes(|b| b.as_ref())
    }

    /// This frame with bytes of its own (to keep it past its read buffer).
    pub fn owned(&self) -> Frame {
        self.map_bytes(|b| b.as_ref().to_vec())
    }

    fn map_bytes<'s, C>(&'s self, f: impl FnOnce(&'s B) -> C) -> Frame<C> {
        match self {
            Frame::Hello { process } => Frame::Hello { process: *process },
            Frame::PartitionRequest {
                channel,
                initial_credit,
            } => Frame::PartitionRequest {
                channel: *channel,
                initial_credit: *initial_credit,
            },
            Frame::AddCredit { channel, credit } => Frame::AddCredit {
                channel: *channel,
                credit: *credit,
            },
            Frame::Buffer {
                channel,
                backlog,
                with_credit,
                records,
            } => Frame::Buffer {
                channel: *channel,
                backlog: *backlog,
                with_credit: *with_credit,
                records: f(records),
            },
            Frame::Event { channel, event } => Frame::Event {
                channel: *channel,
                event: *event,
            },
            Frame::PriorityBarrier {
                channel,
                barrier,
                behind,
            } => Frame::PriorityBarrier {
                channel: *channel,
                barrier: *barrier,
                behind: *behind,
            },
            Frame::Control { bytes } => Frame::Control { bytes: f(bytes) },
            Frame::ControlPart { bytes } => Frame::ControlPart { bytes: f(bytes) },
            Frame::Goodbye => Frame::Goodbye,
            Frame::Heartbeat => Frame::Heartbeat,
        }
    }

    /// The whole frame, length prefix included; an error for a frame longer than
    /// [`MAX_FRAME_BYTES`].
    pub fn encode(&self) -> Result<Vec<u8>, NetError> {
        let mut b = Vec::with_capacity(32);
        self.encode_into(&mut b)?;
        Ok(b)
    }

    /// Appends the whole frame, length prefix included, to `b`; an error (and `b` as it was)
    /// for a frame longer than [`MAX_FRAME_BYTES`].
    pub fn encode_into(&self, b: &mut Vec<u8>) -> Result<(), NetError> {
        let at = b.len();
        b.extend_from_slice(&[0; 4]);
        match self {
            Frame::Hello { process } => {
                b.push(0);
                b.extend_from_slice(&process.to_le_bytes());
            }
            Frame::PartitionRequest {
                channel,
                initial_credit,
            } => {
                b.push(1);
                put_channel(b, channel);
                b.extend_from_slice(&initial_credit.to_le_bytes());
            }
            Frame::AddCredit { channel, credit } => {
                b.push(2);
                put_channel(b, channel);
                b.extend_from_slice(&credit.to_le_bytes());
            }
            Frame::Buffer {
                channel,
                backlog,
                with_credit,
                records,
            } => {
                let records = records.as_ref();
                b.reserve(records.len() + 17);
                put_buffer_header(b, channel, *backlog, *with_credit);
                b.extend_from_slice(records);
            }
            Frame::Event { channel, event } => {
                b.push(5);
                put_channel(b, channel);
                match event {
                    ChannelEvent::EndOfPartition => b.push(0),
                    ChannelEvent::Watermark(w) => {
                        b.push(1);
                        b.extend_from_slice(&w.0.to_le_bytes());
                    }
                    ChannelEvent::Idleness(i) => {
                        b.push(2);
                        b.push(u8::from(*i));
                    }
                    ChannelEvent::Barrier(bar) => {
                        b.push(3);
                        put_barrier(b, bar);
                    }
                }
            }
            Frame::PriorityBarrier {
                channel,
                barrier,
                behind,
            } => {
                b.push(6);
                put_channel(b, channel);
                put_barrier(b, barrier);
                b.extend_from_slice(&behind.to_le_bytes());
            }
            Frame::Control { bytes } | Frame::ControlPart { bytes } => {
                let bytes = bytes.as_ref();
                if bytes.len() >= MAX_FRAME_BYTES {
                    // Refused before copying it.
                    b.truncate(at);
                    return Err(too_long(bytes.len() + 1));
                }
                b.reserve(bytes.len() + 1);
                b.push(if matches!(self, Frame::Control { .. }) {
                    7
                } else {
                    9
                });
                b.extend_from_slice(bytes);
            }
            Frame::Goodbye => b.push(8),
            Frame::Heartbeat => b.push(10),
        }
        patch_len(b, at)
    }
}

impl<'a> FrameRef<'a> {
    /// Decodes one frame body (without its length prefix), borrowing the records and control
    /// bytes from `body`.
    pub fn decode_ref(body: &'a [u8]) -> Result<FrameRef<'a>, NetError> {
        let mut r = Cursor { b: body, at: 0 };
        let kind = r.u8()?;
        let frame = match kind {
            0 => Frame::Hello { process: r.u32()? },
            1 => Frame::PartitionRequest {
                channel: r.channel()?,
                initial_credit: r.u32()?,
            },
            2 => Frame::AddCredit {
                channel: r.channel()?,
                credit: r.u32()?,
            },
            3 | 4 => Frame::Buffer {
                channel: r.channel()?,
                backlog: r.u32()?,
                with_credit: kind == 3,
                records: r.rest(),
            },
            5 => {
                let channel = r.channel()?;
                let event = match r.u8()? {
                    0 => ChannelEvent::EndOfPartition,
                    1 => ChannelEvent::Watermark(Watermark(r.i64()?)),
                    2 => ChannelEvent::Idleness(r.u8()? != 0),
                    3 => ChannelEvent::Barrier(r.barrier()?),
                    t => return Err(NetError::Malformed(format!("unknown event tag {t}"))),
                };
                Frame::Event { channel, event }
            }
            6 => Frame::PriorityBarrier {
                channel: r.channel()?,
                barrier: r.barrier()?,
                behind: r.u32()?,
            },
            7 => Frame::Control { bytes: r.rest() },
            8 => Frame::Goodbye,
            9 => Frame::ControlPart { bytes: r.rest() },
            10 => Frame::Heartbeat,
            k => return Err(NetError::Malformed(format!("unknown frame kind {k}"))),
        };
        Ok(frame)
    }
}

impl Frame {
    /// Decodes one frame body (without its length prefix).
    pub fn decode(body: &[u8]) -> Result<Frame, NetError> {
        FrameRef::decode_ref(body).map(|f| f.owned())
    }
}

/// Appends a whole `Buffer` (or `BufferNoCredit`) frame to `out`, serialising `records` straight
/// into it (no intermediate buffer): raw little-endian values for a fixed-width primitive `T`
/// (see the module's doc), postcard otherwise. Returns the bytes of the records' encoding. On
/// an error `out` is left as it was.
pub fn encode_buffer<T: Serialize + 'static>(
    out: &mut Vec<u8>,
    channel: &ChannelId,
    backlog: u32,
    with_credit: bool,
    records: &Vec<T>,
) -> Result<usize, NetError> {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    put_buffer_header(out, channel, backlog, with_credit);
    let body = out.len();
    if !encode_fixed(out, records) {
        // One byte per small record is the least postcard takes; more is reserved as it goes.
        out.reserve(records.len() + 16);
        if let Err(e) = postcard::serialize_with_flavor(records, AppendFlavor(out)) {
            out.truncate(at);
            return Err(NetError::Codec(e.to_string()));
        }
    }
    patch_len(out, at)?;
    Ok(out.len() - body)
}

/// Decodes the records of a `Buffer` frame (encoded by [`encode_buffer`]).
pub fn decode_records<T: DeserializeOwned + 'static>(bytes: &[u8]) -> Result<Vec<T>, NetError> {
    match decode_fixed(bytes) {
        Some(decoded) => decoded,
        None => postcard::from_bytes(bytes).map_err(|e| NetError::Codec(e.to_string())),
    }
}

/// Calls `$m!(type)` for every record type that crosses as raw little-endian values.
macro_rules! for_fixed_width_types {
    ($m:ident) => {
        $m!(u16);
        $m!(u32);
        $m!(u64);
        $m!(u128);
        $m!(i16);
        $m!(i32);
        $m!(i64);
        $m!(i128);
        $m!(f32);
        $m!(f64);
    };
}

/// Appends `records` (a `Vec<T>`: a slice cannot be asked for its type) as raw little-endian
/// values if `T` is a fixed-width primitive; `false` (nothing appended) otherwise.
fn encode_fixed(out: &mut Vec<u8>, any: &dyn Any) -> bool {
    macro_rules! put {
        ($t:ty) => {
            if let Some(v) = any.downcast_ref::<Vec<$t>>() {
                const W: usize = std::mem::size_of::<$t>();
                let start = out.len();
                out.resize(start + v.len() * W, 0);
                for (b, x) in out[start..].chunks_exact_mut(W).zip(v) {
                    b.copy_from_slice(&x.to_le_bytes());
                }
                return true;
            }
        };
    }
    for_fixed_width_types!(put);
    false
}

/// The records of a fixed-width primitive `T` from their raw little-endian values; `None` for
/// any other `T`.
fn decode_fixed<T: 'static>(bytes: &[u8]) -> Option<Result<Vec<T>, NetError>> {
    let mut slot: Option<Vec<T>> = None;
    let any: &mut dyn Any = &mut slot;
    macro_rules! take {
        ($t:ty) => {
            if let Some(s) = any.downcast_mut::<Option<Vec<$t>>>() {
                const W: usize = std::mem::size_of::<$t>();
                if bytes.len() % W != 0 {
                    return Some(Err(NetError::Codec(format!(
                        "{} bytes of {} records: not a multiple of {W}",
                        bytes.len(),
                        stringify!($t)
                    ))));
                }
                *s = Some(
                    bytes
                        .chunks_exact(W)
                        .map(|c| {
                            let mut a = [0u8; W];
                            a.copy_from_slice(c);
                            <$t>::from_le_bytes(a)
                        })
                        .collect(),
                );
                return slot.map(Ok);
            }
        };
    }
    for_fixed_width_types!(take);
    None
}

/// Postcard's output straight into a `Vec<u8>`. A varint comes as a slice of 1 to 10 bytes:
/// each length is copied as one piece of that fixed size (a few moves, one update of the
/// vector's length), which is far cheaper than a `memcpy` call or a push per byte.
struct AppendFlavor<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for AppendFlavor<'_> {
    type Output = ();

    #[inline(always)]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        let out = &mut *self.0;
        match *data {
            [a] => out.push(a),
            [a, b] => out.extend_from_slice(&[a, b]),
            [a, b, c] => out.extend_from_slice(&[a, b, c]),
            [a, b, c, d] => out.extend_from_slice(&[a, b, c, d]),
            [a, b, c, d, e] => out.extend_from_slice(&[a, b, c, d, e]),
            [a, b, c, d, e, f] => out.extend_from_slice(&[a, b, c, d, e, f]),
            _ => out.extend_from_slice(data),
        }
        Ok(())
    }

    #[inline(always)]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

fn put_channel(b: &mut Vec<u8>, c: &ChannelId) {
    b.extend_from_slice(&c.edge.to_le_bytes());
    b.extend_from_slice(&c.from.to_le_bytes());
    b.extend_from_slice(&c.to.to_le_bytes());
}

fn put_buffer_header(b: &mut Vec<u8>, channel: &ChannelId, backlog: u32, with_credit: bool) {
    b.push(if with_credit { 3 } else { 4 });
    put_channel(b, channel);
    b.extend_from_slice(&backlog.to_le_bytes());
}

/// Writes the length of the frame that starts at `at` into its prefix; a frame longer than
/// [`MAX_FRAME_BYTES`] (which a reader would refuse, and whose length might not fit the `u32`)
/// is an error, and is taken out of `b` again.
fn patch_len(b: &mut Vec<u8>, at: usize) -> Result<(), NetError> {
    let len = b.len() - at - 4;
    match u32::try_from(len) {
        Ok(l) if len <= MAX_FRAME_BYTES => {
            b[at..at + 4].copy_from_slice(&l.to_le_bytes());
            Ok(())
        }
        _ => {
            b.truncate(at);
            Err(too_long(len))
        }
    }
}

fn too_long(len: usize) -> NetError {
    NetError::TooLarge(format!(
        "a frame of {len} bytes exceeds the frame limit of {MAX_FRAME_BYTES} bytes"
    ))
}

fn put_barrier(b: &mut Vec<u8>, bar: &Barrier) {
    b.extend_from_slice(&bar.checkpoint_id.to_le_bytes());
    b.extend_from_slice(&bar.timestamp_ms.to_le_bytes());
    b.push(match bar.kind {
        CheckpointKind::Aligned => 0,
        CheckpointKind::Unaligned => 1,
        CheckpointKind::Savepoint => 2,
    });
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], NetError> {
        let s = self
            .b
            .get(self.at..self.at + n)
            .ok_or_else(|| NetError::Malformed(format!("frame truncated at byte {}", self.at)))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, NetError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, NetError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self) -> Result<u64, NetError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    fn i64(&mut self) -> Result<i64, NetError> {
        Ok(self.u64()? as i64)
    }
    fn channel(&mut self) -> Result<ChannelId, NetError> {
        Ok(ChannelId {
            edge: self.u32()?,
            from: self.u32()?,
            to: self.u32()?,
        })
    }
    fn barrier(&mut self) -> Result<Barrier, NetError> {
        Ok(Barrier {
            checkpoint_id: self.u64()?,
            timestamp_ms: self.i64()?,
            kind: match self.u8()? {
                0 => CheckpointKind::Aligned,
                1 => CheckpointKind::Unaligned,
                2 => CheckpointKind::Savepoint,
                k => return Err(NetError::Malformed(format!("unknown checkpoint kind {k}"))),
            },
        })
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.b[self.at..];
        self.at = self.b.len();
        s
    }
}

/// Reads one frame; `Ok(None)` at a clean end of stream (the peer closed between frames).
pub fn read_frame(r: &mut impl Read, scratch: &mut Vec<u8>) -> Result<Option<Frame>, NetError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(NetError::Io(e)),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME_BYTES {
        return Err(NetError::Malformed(format!(
            "frame length {len} outside 1..={MAX_FRAME_BYTES}"
        )));
    }
    scratch.resize(len, 0);
    r.read_exact(scratch)?;
    Frame::decode(scratch).map(Some)
}

/// Encodes `frame` and writes it whole.
pub fn write_frame(w: &mut impl Write, frame: &Frame) -> Result<(), NetError> {
    w.write_all(&frame.encode()?)?;
    Ok(())
}

/// Reads frames into one buffer of its own and hands each out decoded in place (its records
/// borrow the buffer until the next call): one `read` fetches as many frames as the stream
/// holds, and a frame's bytes are not copied before its records are decoded.
pub struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
}

impl<R: Read> FrameReader<R> {
    /// A reader with a buffer of `capacity` bytes (it grows for a larger frame).
    pub fn new(inner: R, capacity: usize) -> Self {
        FrameReader {
            inner,
            buf: vec![0; capacity.max(64)],
            start: 0,
            end: 0,
        }
    }

    /// Buffers at least `n` unread bytes; `false` at a clean end of the stream (no unread
    /// byte), an error when it ends inside a frame.
    fn fill(&mut self, n: usize) -> Result<bool, NetError> {
        while self.end - self.start < n {
            if self.start + n > self.buf.len() {
                // Room for the whole frame: its start moves to the front, the buffer grows if
                // the frame is larger than it.
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if n > self.buf.len() {
                    self.buf.resize(n, 0);
                }
            }
            let got = match self.inner.read(&mut self.buf[self.end..]) {
                Ok(got) => got,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(NetError::Io(e)),
            };
            if got == 0 {
                if self.start == self.end {
                    return Ok(false);
                }
                return Err(NetError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the connection ended inside a frame",
                )));
            }
            self.end += got;
        }
        Ok(true)
    }

    /// The next frame; `Ok(None)` at a clean end of stream (the peer closed between frames).
    pub fn next_frame(&mut self) -> Result<Option<FrameRef<'_>>, NetError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if !self.fill(4)? {
            return Ok(None);
        }
        let mut len = [0u8; 4];
        len.copy_from_slice(&self.buf[self.start..self.start + 4]);
        let len = u32::from_le_bytes(len) as usize;
        if len == 0 || len > MAX_FRAME_BYTES {
            return Err(NetError::Malformed(format!(
                "frame length {len} outside 1..={MAX_FRAME_BYTES}"
            )));
        }
        self.fill(4 + len)?;
        let body = self.start + 4..self.start + 4 + len;
        self.start = body.end;
        FrameRef::decode_ref(&self.buf[body]).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_kind_round_trips() {
        let ch = ChannelId {
            edge: 3,
            from: 1,
            to: 7,
        };
        let bar = Barrier {
            checkpoint_id: 9,
            timestamp_ms: -5,
            kind: CheckpointKind::Unaligned,
        };
        let frames = vec![
            Frame::Hello { process: 4 },
            Frame::PartitionRequest {
                channel: ch,
                initial_credit: 2,
            },
            Frame::AddCredit {
                channel: ch,
                credit: 1,
            },
            Frame::Buffer {
                channel: ch,
                backlog: 5,
                with_credit: true,
                records: vec![1, 2, 3],
            },
            Frame::Buffer {
                channel: ch,
                backlog: 0,
                with_credit: false,
                records: vec![],
            },
            Frame::Event {
                channel: ch,
                event: ChannelEvent::Watermark(Watermark(-1)),
            },
            Frame::Event {
                channel: ch,
                event: ChannelEvent::Barrier(bar),
            },
            Frame::Event {
                channel: ch,
                event: ChannelEvent::Idleness(true),
            },
            Frame::Event {
                channel: ch,
                event: ChannelEvent::EndOfPartition,
            },
            Frame::PriorityBarrier {
                channel: ch,
                barrier: bar,
                behind: 3,
            },
            Frame::Control {
                bytes: vec![7, 0, 1],
            },
            Frame::ControlPart { bytes: vec![9, 9] },
            Frame::Goodbye,
            Frame::Heartbeat,
        ];
        let mut wire = Vec::new();
        for f in &frames {
            write_frame(&mut wire, f).unwrap();
        }
        let mut r = &wire[..];
        let mut scratch = Vec::new();
        for f in &frames {
            assert_eq!(read_frame(&mut r, &mut scratch).unwrap().as_ref(), Some(f));
        }
        assert_eq!(read_frame(&mut r, &mut scratch).unwrap(), None);
    }

    fn buffer_round_trip<T>(records: Vec<T>) -> Vec<T>
    where
        T: Serialize + serde::de::DeserializeOwned + 'static,
    {
        let ch = ChannelId {
            edge: 1,
            from: 2,
            to: 3,
        };
        let mut wire = vec![9, 9];
        let n = encode_buffer(&mut wire, &ch, 4, true, &records).unwrap();
        let mut r = FrameReader::new(&wire[2..], 64);
        match r.next_frame().unwrap() {
            Some(Frame::Buffer {
                channel,
                backlog: 4,
                with_credit: true,
                records: bytes,
            }) => {
                assert_eq!(channel, ch);
                assert_eq!(bytes.len(), n);
                decode_records(bytes).unwrap()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn buffers_round_trip_raw_and_postcard() {
        let big: Vec<u64> = (0..5000).map(|i| i * 0x0123_4567_89ab).collect();
        assert_eq!(buffer_round_trip(big.clone()), big);
        let signed: Vec<i64> = vec![i64::MIN, -1, 0, 1, i64::MAX];
        assert_eq!(buffer_round_trip(signed.clone()), signed);
        let floats = vec![0.5f64, -1e300, f64::INFINITY];
        assert_eq!(buffer_round_trip(floats.clone()), floats);
        assert_eq!(buffer_round_trip(vec![u128::MAX, 7]), vec![u128::MAX, 7]);
        assert_eq!(buffer_round_trip(Vec::<u32>::new()), Vec::<u32>::new());
        let pairs: Vec<(u32, u64)> = (0..300).map(|i| (i, u64::from(i) << 40)).collect();
        assert_eq!(buffer_round_trip(pairs.clone()), pairs);
        let words = vec!["a".to_string(), String::new(), "ü".repeat(40)];
        assert_eq!(buffer_round_trip(words.clone()), words);
    }

    #[test]
    fn fixed_width_records_are_raw_little_endian_others_postcard() {
        let ch = ChannelId {
            edge: 0,
            from: 0,
            to: 0,
        };
        let mut wire = Vec::new();
        encode_buffer(&mut wire, &ch, 0, true, &vec![1u64, 256]).unwrap();
        assert_eq!(
            &wire[21..],
            &[1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        );
        let pairs = vec![(1u32, 300u64)];
        let mut wire = Vec::new();
        encode_buffer(&mut wire, &ch, 0, true, &pairs).unwrap();
        assert_eq!(&wire[21..], &postcard::to_allocvec(&pairs).unwrap()[..]);
        assert!(decode_records::<u32>(&[1, 2, 3]).is_err());
    }

    /// Hands out at most `step` bytes per read.
    struct Trickle<'a> {
        b: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.b.len());
            out[..n].copy_from_slice(&self.b[..n]);
            self.b = &self.b[n..];
            Ok(n)
        }
    }

    #[test]
    fn the_frame_reader_reassembles_frames_split_anywhere() {
        let ch = ChannelId {
            edge: 5,
            from: 0,
            to: 1,
        };
        let mut frames = Vec::new();
        for i in 0..40u32 {
            frames.push(Frame::Buffer {
                channel: ch,
                backlog: i,
                with_credit: i % 3 != 0,
                records: vec![i as u8; (i as usize * 37) % 300],
            });
            frames.push(Frame::AddCredit {
                channel: ch,
                credit: i,
            });
        }
        frames.push(Frame::Goodbye);
        let mut wire = Vec::new();
        for f in &frames {
            f.encode_into(&mut wire).unwrap();
        }
        for (step, capacity) in [(1, 64), (7, 64), (1000, 100), (usize::MAX, 1 << 16)] {
            let mut r = FrameReader::new(Trickle { b: &wire, step }, capacity);
            for f in &frames {
                assert_eq!(r.next_frame().unwrap().map(|g| g.owned()).as_ref(), Some(f));
            }
            assert_eq!(r.next_frame().unwrap(), None);
        }
        // Ending inside a frame is an error, not a clean end.
        let mut r = FrameReader::new(&wire[..wire.len() - 1], 64);
        let mut result = Ok(Some(()));
        while let Ok(Some(())) = result {
            result = r.next_frame().map(|f| f.map(|_| ()));
        }
        assert!(result.is_err());
    }

    #[test]
    fn no_frame_longer_than_the_limit_is_encoded() {
        let mut b = vec![1, 2];
        let big = Frame::Control {
            bytes: vec![0u8; MAX_FRAME_BYTES],
        };
        assert!(matches!(
            big.encode_into(&mut b),
            Err(NetError::TooLarge(_))
        ));
        assert_eq!(b, vec![1, 2], "left as it was");
        let fits = Frame::Control {
            bytes: vec![0u8; MAX_FRAME_BYTES - 1],
        };
        fits.encode_into(&mut b).unwrap();
        assert_eq!(b.len(), 2 + 4 + MAX_FRAME_BYTES);
    }

    #[test]
    fn corrupt_frames_are_errors_not_panics() {
        assert!(Frame::decode(&[11]).is_err());
        assert!(Frame::decode(&[2, 1, 0]).is_err());
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut r, &mut Vec::new()).is_err());
    }
}
