//! Control events that flow in-band with records.
//!
//! They never need a data credit: a receiver always accepts them (Flink sends events outside the
//! buffer credit budget too). An aligned barrier keeps its place in the record order; an unaligned
//! one may overtake queued buffers.

/// Event-time progress: no later record on this stream has a timestamp `<=` this value
/// (Flink semantics: a watermark `t` says records with timestamp `<= t` are complete).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Watermark(pub i64);

impl Watermark {
    pub const MIN: Watermark = Watermark(i64::MIN);
    /// Emitted at end of input so every event-time timer fires.
    pub const MAX: Watermark = Watermark(i64::MAX);
}

/// Whether a checkpoint barrier must be aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckpointKind {
    Aligned,
    Unaligned,
    Savepoint,
}

/// A checkpoint barrier injected at the sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Barrier {
    pub checkpoint_id: u64,
    pub timestamp_ms: i64,
    pub kind: CheckpointKind,
}
