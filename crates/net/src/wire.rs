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
//! kind 6  PriorityBarrier  channel · barrier                unaligned barrier, jumps the sender's queue
//! records = postcard encoding of Vec<T> (varint length, then each record's serde encoding)
//! event   = 0 end-of-partition | 1 watermark:i64 | 2 idleness:u8 | 3 barrier
//! barrier = checkpoint_id:u64 · timestamp_ms:i64 · kind:u8 (0 aligned, 1 unaligned, 2 savepoint)
//! ```

use std::io::{Read, Write};

use sluice_channel::ChannelEvent;
use sluice_types::{Barrier, CheckpointKind, Watermark};

use crate::NetError;

/// Frames larger than this are refused as corrupt (a 32 KiB buffer of large records is far below).
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// One logical channel of a job: its edge and the upstream and downstream subtask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId {
    pub edge: u32,
    pub from: u32,
    pub to: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Hello {
        process: u32,
    },
    PartitionRequest {
        channel: ChannelId,
        initial_credit: u32,
    },
    AddCredit {
        channel: ChannelId,
        credit: u32,
    },
    Buffer {
        channel: ChannelId,
        backlog: u32,
        with_credit: bool,
        records: Vec<u8>,
    },
    Event {
        channel: ChannelId,
        event: ChannelEvent,
    },
    PriorityBarrier {
        channel: ChannelId,
        barrier: Barrier,
    },
}

impl Frame {
    pub fn channel(&self) -> Option<ChannelId> {
        match self {
            Frame::Hello { .. } => None,
            Frame::PartitionRequest { channel, .. }
            | Frame::AddCredit { channel, .. }
            | Frame::Buffer { channel, .. }
            | Frame::Event { channel, .. }
            | Frame::PriorityBarrier { channel, .. } => Some(*channel),
        }
    }

    /// The whole frame, length prefix included.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32);
        b.extend_from_slice(&[0; 4]);
        let put_ch = |b: &mut Vec<u8>, c: &ChannelId| {
            b.extend_from_slice(&c.edge.to_le_bytes());
            b.extend_from_slice(&c.from.to_le_bytes());
            b.extend_from_slice(&c.to.to_le_bytes());
        };
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
                put_ch(&mut b, channel);
                b.extend_from_slice(&initial_credit.to_le_bytes());
            }
            Frame::AddCredit { channel, credit } => {
                b.push(2);
                put_ch(&mut b, channel);
                b.extend_from_slice(&credit.to_le_bytes());
            }
            Frame::Buffer {
                channel,
                backlog,
                with_credit,
                records,
            } => {
                b.reserve(records.len() + 16);
                b.push(if *with_credit { 3 } else { 4 });
                put_ch(&mut b, channel);
                b.extend_from_slice(&backlog.to_le_bytes());
                b.extend_from_slice(records);
            }
            Frame::Event { channel, event } => {
                b.push(5);
                put_ch(&mut b, channel);
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
                        put_barrier(&mut b, bar);
                    }
                }
            }
            Frame::PriorityBarrier { channel, barrier } => {
                b.push(6);
                put_ch(&mut b, channel);
                put_barrier(&mut b, barrier);
            }
        }
        let len = (b.len() - 4) as u32;
        b[..4].copy_from_slice(&len.to_le_bytes());
        b
    }

    /// Decodes one frame body (without its length prefix).
    pub fn decode(body: &[u8]) -> Result<Frame, NetError> {
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
                records: r.rest().to_vec(),
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
            },
            k => return Err(NetError::Malformed(format!("unknown frame kind {k}"))),
        };
        Ok(frame)
    }
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

pub fn write_frame(w: &mut impl Write, frame: &Frame) -> Result<(), NetError> {
    w.write_all(&frame.encode())?;
    Ok(())
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
            },
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

    #[test]
    fn corrupt_frames_are_errors_not_panics() {
        assert!(Frame::decode(&[9]).is_err());
        assert!(Frame::decode(&[2, 1, 0]).is_err());
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut r, &mut Vec::new()).is_err());
    }
}
