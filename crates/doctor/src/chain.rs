//! The operator inside a chain, from its flame graph. Flink reports busy and backpressured time
//! per vertex (a chain of operators), not per operator; its stack samples do tell them apart:
//! every chained operator runs under the frames of the class that wraps it (`SourceOperator`,
//! `StreamMap`, `StreamFilter`, `StreamFlatMap`, `ProcessOperator`, `KeyedProcessOperator`,
//! `StreamGroupedReduceOperator`, `WindowOperator`, `SinkWriterOperator`, …), and a chained
//! operator's frames sit under those of the operator before it (a record goes down the chain
//! by nested calls). So the k-th wrapper class on a stack, counted from the outermost, is the
//! k-th operator of the chain in plan order, and a sample belongs to the innermost one on its
//! stack. [`attribute`] counts the working samples (on CPU, and off CPU in the thread's own
//! waits) per chain position; the operator with most of them, from [`NAMING_SHARE`] of all, is
//! named.

use crate::profile::{bare, is_idle_or_credit_wait};
use crate::VertexProfile;

/// The share of the chain's working samples an operator needs to be named from them.
pub const NAMING_SHARE: f64 = 0.4;

/// Flink's operator classes that wrap a user function or a connector in a chain (simple class
/// names, `$`-suffixes of inner classes excluded).
const WRAPPERS: &[&str] = &[
    "SourceOperator",
    "StreamSource",
    "StreamMap",
    "StreamFilter",
    "StreamFlatMap",
    "StreamProject",
    "ProcessOperator",
    "KeyedProcessOperator",
    "LegacyKeyedProcessOperator",
    "StreamGroupedReduceOperator",
    "StreamGroupedReduceAsyncStateOperator",
    "WindowOperator",
    "EvictingWindowOperator",
    "AsyncWaitOperator",
    "TimestampsAndWatermarksOperator",
    "CoStreamMap",
    "CoStreamFlatMap",
    "CoProcessOperator",
    "KeyedCoProcessOperator",
    "IntervalJoinOperator",
    "PartitionAggregateOperator",
    "PartitionReduceOperator",
    "SinkWriterOperator",
    "StreamSink",
];

/// The wrapper class a frame runs in, when it is one of Flink's operator classes: a known
/// wrapper, or any class of a Flink `operators` package entered through `processElement`.
fn wrapper_of(frame: &str) -> Option<&str> {
    let f = bare(frame);
    if !f.starts_with("org.apache.flink.") {
        return None;
    }
    let (class, method) = f.rsplit_once('.')?;
    let simple = class.rsplit('.').next()?;
    if simple.contains('$') {
        return None;
    }
    let known = WRAPPERS.contains(&simple);
    let entered = class.contains(".operators.") && method.starts_with("processElement");
    (known || entered).then_some(simple)
}

/// Working samples per chain position (index = the operator's position in the chain).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainTime {
    /// On-CPU samples of each position.
    pub on_cpu: Vec<u64>,
    /// Off-CPU samples of the thread's own waits (not input or credit) of each position.
    pub blocked: Vec<u64>,
    /// Working samples under no operator (the task's own work: mailbox, checkpoints, output).
    pub outside: u64,
    /// The on-CPU part of `outside`.
    pub outside_on_cpu: u64,
    /// The wrapper class seen at each position (`StreamMap`), for the evidence.
    pub wrappers: Vec<String>,
    /// The most sampled frame of user code (outside `org.apache.flink.`, `java.`, …) directly
    /// under each position's wrapper, when there is one.
    pub user_frames: Vec<Option<String>>,
}

impl ChainTime {
    /// All working samples.
    pub fn total(&self) -> u64 {
        self.on_cpu.iter().chain(&self.blocked).sum::<u64>() + self.outside
    }

    /// Working samples of position `k`.
    pub fn at(&self, k: usize) -> u64 {
        self.on_cpu.get(k).copied().unwrap_or(0) + self.blocked.get(k).copied().unwrap_or(0)
    }

    /// The position with most working samples, and its share of all working samples.
    pub fn hottest(&self) -> Option<(usize, f64)> {
        let total = self.total();
        let k = (0..self.on_cpu.len()).max_by_key(|&k| self.at(k))?;
        (total > 0).then(|| (k, self.at(k) as f64 / total as f64))
    }

    /// Share of the on-CPU samples at position `k`.
    pub fn on_cpu_share(&self, k: usize) -> f64 {
        let on: u64 = self.on_cpu.iter().sum::<u64>() + self.outside_on_cpu;
        self.on_cpu.get(k).copied().unwrap_or(0) as f64 / on.max(1) as f64
    }

    /// Share of position `k`'s working samples spent off CPU.
    pub fn blocked_share(&self, k: usize) -> f64 {
        self.blocked.get(k).copied().unwrap_or(0) as f64 / self.at(k).max(1) as f64
    }
}

fn is_library(f: &str) -> bool {
    [
        "org.apache.flink.",
        "java.",
        "javax.",
        "jdk.",
        "sun.",
        "com.esotericsoftware.",
        "org.objenesis.",
        "scala.",
        "[",
    ]
    .iter()
    .any(|p| f.starts_with(p))
}

/// Where a stack's samples go: the innermost wrapper's position and the user frame under it. A
/// new position starts at a wrapper frame of another class than the last one, or of the same
/// class after a record crossed into the next operator (`ChainingOutput`: a map chained to a
/// map); frames of one operator (`WindowOperator.processElement` → `.emitWindowContents`) count
/// once.
fn place<'a>(path: &[&'a str]) -> Option<(usize, &'a str, Option<&'a str>)> {
    let mut k: Option<usize> = None;
    let mut last: Option<&str> = None;
    let mut crossed = false;
    let mut at = 0;
    for (i, f) in path.iter().enumerate() {
        if f.contains("ChainingOutput.") {
            crossed = true;
        }
        if let Some(w) = wrapper_of(f) {
            if last != Some(w) || crossed {
                k = Some(k.map_or(0, |k| k + 1));
                last = Some(w);
            }
            crossed = false;
            at = i;
        }
    }
    let k = k?;
    let user = path[at + 1..].iter().find(|f| !is_library(f)).copied();
    Some((k, last?, user))
}

/// Attributes the profile's working samples to the `chain_len` operators of the vertex, in
/// plan order. `None` when the stacks show no operator, or more nested operators than the chain
/// has (then the frames do not map onto the plan).
pub fn attribute(profile: &VertexProfile, chain_len: usize) -> Option<ChainTime> {
    let mut t = ChainTime {
        on_cpu: vec![0; chain_len],
        blocked: vec![0; chain_len],
        wrappers: vec![String::new(); chain_len],
        user_frames: vec![None; chain_len],
        ..ChainTime::default()
    };
    let mut users: Vec<(usize, String, u64)> = Vec::new();
    let mut seen = false;
    let off = profile.off_cpu.paths();
    let stacks = profile.on_cpu.paths().into_iter().map(|p| (p, true));
    let stacks = stacks.chain(off.into_iter().map(|p| (p, false)));
    for ((path, n), on_cpu) in stacks {
        if !on_cpu && path.iter().any(|f| is_idle_or_credit_wait(f)) {
            continue;
        }
        let Some((k, wrapper, user)) = place(&path) else {
            t.outside += n;
            if on_cpu {
                t.outside_on_cpu += n;
            }
            continue;
        };
        if k >= chain_len {
            return None;
        }
        seen = true;
        if on_cpu {
            t.on_cpu[k] += n;
        } else {
            t.blocked[k] += n;
        }
        if t.wrappers[k].is_empty() {
            t.wrappers[k] = wrapper.to_string();
        }
        if let Some(u) = user.map(|u| bare(u).to_string()) {
            match users.iter_mut().find(|(j, f, _)| *j == k && *f == u) {
                Some((_, _, c)) => *c += n,
                None => users.push((k, u, n)),
            }
        }
    }
    users.sort_by_key(|u| std::cmp::Reverse(u.2));
    for (k, f, _) in users {
        t.user_frames[k].get_or_insert(f);
    }
    seen.then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::tests::tree;

    #[test]
    fn the_innermost_wrapper_on_a_stack_is_the_operator_at_that_depth() {
        let src = "org.apache.flink.streaming.api.operators.SourceOperator.emitNext:1";
        let out = "org.apache.flink.streaming.runtime.tasks.ChainingOutput.collect:2";
        let map = "org.apache.flink.streaming.api.operators.StreamMap.processElement:3";
        let user = "sluice.harness.SkewWorkload$Work.map:4";
        let sink =
            "org.apache.flink.streaming.runtime.operators.sink.SinkWriterOperator.processElement:5";
        let p = VertexProfile {
            on_cpu: tree(&[
                (&[src, "gen.next:1"], 20),
                (
                    &[src, out, map, user, "sluice.harness.SkewWorkload.burn:9"],
                    60,
                ),
                (&[src, out, map, out, sink, "x.Writer.write:1"], 10),
                (&["org.apache.flink.runtime.Mailbox.run:1"], 10),
            ]),
            off_cpu: tree(&[
                (&[src, out, map, out, sink, "java.lang.Thread.sleep:1"], 100),
                (
                    &["org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl.take:1"],
                    900,
                ),
            ]),
        };
        let t = attribute(&p, 3).unwrap();
        assert_eq!(t.on_cpu, vec![20, 60, 10]);
        assert_eq!(t.blocked, vec![0, 0, 100]);
        assert_eq!(t.outside, 10);
        assert_eq!(
            t.wrappers,
            vec!["SourceOperator", "StreamMap", "SinkWriterOperator"]
        );
        assert_eq!(
            t.user_frames[1].as_deref(),
            Some("sluice.harness.SkewWorkload$Work.map")
        );
        assert_eq!(t.hottest(), Some((2, 0.55)));
        assert!((t.on_cpu_share(1) - 0.6).abs() < 1e-9);
        assert_eq!(t.blocked_share(2), 100.0 / 110.0);
        // Two nested operators do not map onto a chain of one.
        assert_eq!(attribute(&p, 1), None);
    }

    #[test]
    fn two_chained_maps_are_two_operators_and_one_operators_frames_count_once() {
        let head = "org.apache.flink.streaming.api.operators.StreamMap.processElement:37";
        let out = "org.apache.flink.streaming.runtime.tasks.ChainingOutput.pushToOperator:75";
        let win = "org.apache.flink.streaming.runtime.operators.windowing.WindowOperator.processElement:1";
        let emit = "org.apache.flink.streaming.runtime.operators.windowing.WindowOperator.emitWindowContents:2";
        let p = VertexProfile {
            on_cpu: tree(&[
                (&[head, "a.A.map:1"], 30),
                (&[head, out, head, "b.B.map:1"], 70),
            ]),
            off_cpu: tree(&[]),
        };
        let t = attribute(&p, 2).unwrap();
        assert_eq!(t.on_cpu, vec![30, 70]);
        assert_eq!(t.user_frames[1].as_deref(), Some("b.B.map"));
        let p = VertexProfile {
            on_cpu: tree(&[(&[win, emit, "c.C.apply:1"], 10)]),
            off_cpu: tree(&[]),
        };
        assert_eq!(attribute(&p, 1).unwrap().on_cpu, vec![10]);
    }
}
