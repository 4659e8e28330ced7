//! The operator's queue of in-flight elements (Flink's `OrderedStreamElementQueue` and
//! `UnorderedStreamElementQueue`): records waiting for their results, and the watermarks and
//! idleness changes between them. Pure data structure; the operator drives it.
//!
//! - **Ordered**: elements leave in the order they came; a completed record waits for every
//!   element before it.
//! - **Unordered**: control elements cut the stream into segments. A record of the first
//!   segment leaves as soon as it completes; a later segment's records wait until every earlier
//!   segment has left, and a segment's control element leaves after its records. So no record
//!   ever crosses a watermark, in either direction.
//!
//! Every element takes one slot of the capacity, watermarks included (as in Flink).

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use sluice_types::Watermark;

/// A control element kept in stream order with the records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// A watermark, passed on once everything before it has left.
    Watermark(Watermark),
    /// The input became idle (`true`) or active again (`false`).
    Idleness(bool),
}

/// What leaves the queue: one record's results, or a control element.
#[derive(Debug, PartialEq, Eq)]
pub enum Ready<Out> {
    /// The results of one record (possibly none).
    Results(Vec<Out>),
    /// A control element, in its place in the stream.
    Control(Control),
}

/// One element as the operator's snapshot stores it (inputs, not results: a completed record
/// not yet emitted is re-issued on restore).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stored<In> {
    /// A record's input, re-issued on restore.
    Record(In),
    /// A watermark's timestamp, ms.
    Watermark(i64),
    /// An idleness change (`true`: idle).
    Idleness(bool),
}

impl<In> Stored<In> {
    fn of_control(c: Control) -> Stored<In> {
        match c {
            Control::Watermark(w) => Stored::Watermark(w.0),
            Control::Idleness(i) => Stored::Idleness(i),
        }
    }
}

/// Emission order (Flink's `AsyncDataStream.OutputMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Results leave in input order (a slow request holds back later ones).
    Ordered,
    /// Results leave as they complete, but never across a watermark or idleness change.
    Unordered,
}

impl OutputMode {
    /// The plan option's spelling (Flink's enum names).
    pub fn as_str(self) -> &'static str {
        match self {
            OutputMode::Ordered => "ORDERED",
            OutputMode::Unordered => "UNORDERED",
        }
    }

    /// Parses the plan option (case-insensitive).
    pub fn parse(s: &str) -> Option<OutputMode> {
        match s.trim().to_ascii_uppercase().as_str() {
            "ORDERED" => Some(OutputMode::Ordered),
            "UNORDERED" | "ALLOW_UNORDERED" => Some(OutputMode::Unordered),
            _ => None,
        }
    }
}

struct Slot<In, Out> {
    input: In,
    done: Option<Vec<Out>>,
}

enum Elem<In, Out> {
    Record(Slot<In, Out>),
    Control(Control),
}

struct Segment<In, Out> {
    records: BTreeMap<u64, Slot<In, Out>>,
    /// Completed records in completion order.
    completed: VecDeque<u64>,
    /// The control element that closes the segment.
    closing: Option<Control>,
}

/// See the module docs.
pub struct ElementQueue<In, Out> {
    mode: OutputMode,
    next_seq: u64,
    len: usize,
    /// Ordered mode: elements from sequence number `front_seq` on.
    ordered: VecDeque<Elem<In, Out>>,
    front_seq: u64,
    /// Unordered mode: segments, oldest first.
    segments: VecDeque<Segment<In, Out>>,
}

impl<In, Out> ElementQueue<In, Out> {
    /// An empty queue emitting in `mode`'s order.
    pub fn new(mode: OutputMode) -> Self {
        ElementQueue {
            mode,
            next_seq: 0,
            len: 0,
            ordered: VecDeque::new(),
            front_seq: 0,
            segments: VecDeque::new(),
        }
    }

    /// The emission order this queue keeps.
    pub fn mode(&self) -> OutputMode {
        self.mode
    }

    /// Elements in the queue (each takes a slot of the capacity).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued (records or control elements).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a record waiting for its results; returns its sequence number.
    pub fn push_record(&mut self, input: In) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        let slot = Slot { input, done: None };
        match self.mode {
            OutputMode::Ordered => self.ordered.push_back(Elem::Record(slot)),
            OutputMode::Unordered => match self.segments.back_mut() {
                Some(seg) if seg.closing.is_none() => {
                    seg.records.insert(seq, slot);
                }
                _ => self.segments.push_back(Segment {
                    records: BTreeMap::from([(seq, slot)]),
                    completed: VecDeque::new(),
                    closing: None,
                }),
            },
        }
        seq
    }

    /// Adds a control element after everything queued.
    pub fn push_control(&mut self, c: Control) {
        self.next_seq += 1;
        self.len += 1;
        match self.mode {
            OutputMode::Ordered => self.ordered.push_back(Elem::Control(c)),
            OutputMode::Unordered => match self.segments.back_mut() {
                Some(seg) if seg.closing.is_none() => seg.closing = Some(c),
                _ => self.segments.push_back(Segment {
                    records: BTreeMap::new(),
                    completed: VecDeque::new(),
                    closing: Some(c),
                }),
            },
        }
    }

    /// The input of the record `seq`, while it waits.
    pub fn input(&self, seq: u64) -> Option<&In> {
        match self.mode {
            OutputMode::Ordered => {
                let i = seq.checked_sub(self.front_seq)? as usize;
                match self.ordered.get(i)? {
                    Elem::Record(s) => Some(&s.input),
                    Elem::Control(_) => None,
                }
            }
            OutputMode::Unordered => self
                .segments
                .iter()
                .find_map(|s| s.records.get(&seq))
                .map(|s| &s.input),
        }
    }

    /// Record `seq` has its results. Returns false when no such record waits.
    pub fn complete(&mut self, seq: u64, results: Vec<Out>) -> bool {
        match self.mode {
            OutputMode::Ordered => {
                let Some(i) = seq.checked_sub(self.front_seq) else {
                    return false;
                };
                match self.ordered.get_mut(i as usize) {
                    Some(Elem::Record(s)) if s.done.is_none() => {
                        s.done = Some(results);
                        true
                    }
                    _ => false,
                }
            }
            OutputMode::Unordered => {
                for seg in self.segments.iter_mut() {
                    if let Some(s) = seg.records.get_mut(&seq) {
                        if s.done.is_some() {
                            return false;
                        }
                        s.done = Some(results);
                        seg.completed.push_back(seq);
                        return true;
                    }
                }
                false
            }
        }
    }

    /// The next element that may leave now, if any.
    pub fn pop_ready(&mut self) -> Option<Ready<Out>> {
        let ready = match self.mode {
            OutputMode::Ordered => {
                let front_ready = match self.ordered.front()? {
                    Elem::Record(s) => s.done.is_some(),
                    Elem::Control(_) => true,
                };
                if !front_ready {
                    return None;
                }
                self.front_seq += 1;
                match self.ordered.pop_front()? {
                    Elem::Record(s) => Ready::Results(s.done.unwrap_or_default()),
                    Elem::Control(c) => Ready::Control(c),
                }
            }
            OutputMode::Unordered => {
                let seg = self.segments.front_mut()?;
                if let Some(seq) = seg.completed.pop_front() {
                    // `complete` queues a sequence number only for a record of this segment,
                    // and only this removes it: a missing one is a bug, which must fail the
                    // task rather than drop a record silently.
                    #[allow(
                        clippy::expect_used,
                        reason = "invariant of `complete`; a panic fails the task"
                    )]
                    let slot = seg
                        .records
                        .remove(&seq)
                        .expect("completed record is queued");
                    Ready::Results(slot.done.unwrap_or_default())
                } else if seg.records.is_empty() && seg.closing.is_some() {
                    let c = seg.closing.take()?;
                    self.segments.pop_front();
                    Ready::Control(c)
                } else {
                    return None;
                }
            }
        };
        self.len -= 1;
        Some(ready)
    }

    /// Every element still queued, in stream order, as a snapshot stores it.
    pub fn stored(&self) -> Vec<Stored<In>>
    where
        In: Clone,
    {
        let mut out = Vec::with_capacity(self.len);
        match self.mode {
            OutputMode::Ordered => {
                for e in &self.ordered {
                    out.push(match e {
                        Elem::Record(s) => Stored::Record(s.input.clone()),
                        Elem::Control(c) => Stored::of_control(*c),
                    });
                }
            }
            OutputMode::Unordered => {
                for seg in &self.segments {
                    out.extend(
                        seg.records
                            .values()
                            .map(|s| Stored::Record(s.input.clone())),
                    );
                    if let Some(c) = seg.closing {
                        out.push(Stored::of_control(c));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut ElementQueue<u32, u32>) -> Vec<Ready<u32>> {
        std::iter::from_fn(|| q.pop_ready()).collect()
    }

    #[test]
    fn ordered_waits_for_the_head() {
        let mut q = ElementQueue::new(OutputMode::Ordered);
        let a = q.push_record(1);
        q.push_control(Control::Watermark(Watermark(5)));
        let b = q.push_record(2);
        assert_eq!(q.len(), 3);
        assert!(q.complete(b, vec![20]));
        assert!(drain(&mut q).is_empty());
        assert_eq!(q.input(a), Some(&1));
        assert!(q.complete(a, vec![10, 11]));
        assert!(!q.complete(a, vec![]));
        assert_eq!(
            drain(&mut q),
            vec![
                Ready::Results(vec![10, 11]),
                Ready::Control(Control::Watermark(Watermark(5))),
                Ready::Results(vec![20])
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn unordered_emits_on_completion_within_a_segment_only() {
        let mut q = ElementQueue::new(OutputMode::Unordered);
        let a = q.push_record(1);
        let b = q.push_record(2);
        q.push_control(Control::Watermark(Watermark(5)));
        let c = q.push_record(3);
        assert!(q.complete(c, vec![30]));
        assert!(q.complete(b, vec![20]));
        // b leaves before a; c must wait for the watermark.
        assert_eq!(drain(&mut q), vec![Ready::Results(vec![20])]);
        assert_eq!(
            q.stored(),
            vec![Stored::Record(1), Stored::Watermark(5), Stored::Record(3)]
        );
        assert!(q.complete(a, vec![]));
        assert_eq!(
            drain(&mut q),
            vec![
                Ready::Results(vec![]),
                Ready::Control(Control::Watermark(Watermark(5))),
                Ready::Results(vec![30])
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn unordered_back_to_back_controls_keep_their_order() {
        let mut q = ElementQueue::<u32, u32>::new(OutputMode::Unordered);
        q.push_control(Control::Watermark(Watermark(1)));
        q.push_control(Control::Idleness(true));
        let a = q.push_record(7);
        assert_eq!(q.len(), 3);
        assert_eq!(
            drain(&mut q),
            vec![
                Ready::Control(Control::Watermark(Watermark(1))),
                Ready::Control(Control::Idleness(true))
            ]
        );
        assert!(q.complete(a, vec![70]));
        assert_eq!(drain(&mut q), vec![Ready::Results(vec![70])]);
    }

    #[test]
    fn modes_parse_as_flink_spells_them() {
        assert_eq!(OutputMode::parse("ordered"), Some(OutputMode::Ordered));
        assert_eq!(OutputMode::parse("UNORDERED"), Some(OutputMode::Unordered));
        assert_eq!(OutputMode::parse("sideways"), None);
        assert_eq!(OutputMode::Unordered.as_str(), "UNORDERED");
    }
}
