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
    /// Before any event time: what a stream starts from.
    pub const MIN: Watermark = Watermark(i64::MIN);
    /// Emitted at end of input so every event-time timer fires.
    pub const MAX: Watermark = Watermark(i64::MAX);
}

/// Whether a checkpoint barrier must be aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckpointKind {
    /// The barrier waits for every input channel's barrier before the snapshot.
    Aligned,
    /// The barrier may overtake queued buffers, which are stored with the snapshot.
    Unaligned,
    /// An aligned checkpoint the user asked for, kept until deleted.
    Savepoint,
}

/// A checkpoint barrier injected at the sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Barrier {
    /// Increasing per job: which checkpoint this barrier belongs to.
    pub checkpoint_id: u64,
    /// When the coordinator triggered it (epoch milliseconds).
    pub timestamp_ms: i64,
    /// How the barrier is aligned.
    pub kind: CheckpointKind,
}
