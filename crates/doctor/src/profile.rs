//! Flame graphs as evidence: the doctor reads a vertex's on-CPU and off-CPU trees (Flink's
//! `/flamegraph` JSON, from Sluice or from Flink) and sums them up into what the rules ask:
//! how much of the sampled time the busy subtasks spent blocked off CPU (and in what: a sleep,
//! socket or file I/O, a lock), how much of their CPU went to keyed state or to serialization,
//! and which frames have the most self time.
//!
//! Frames are recognised by name, for both engines: Sluice's logical frames (`[wait] input`,
//! `[syscall] clock_nanosleep (sleep)`, ...) and Rust paths (`fjall::`, `postcard::`), Flink's
//! Java frames (`TaskMailboxImpl.take`, `java.lang.Thread.sleep`, `org.rocksdb.RocksDB.get`,
//! `...TypeSerializer.serialize`, `com.esotericsoftware.kryo`).

use serde_json::Value;

/// A flame graph node (Flink's `{name, value, children}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlameTree {
    /// The frame (method) name.
    pub name: String,
    /// Samples in this frame and its callees.
    pub value: u64,
    /// The frames it called.
    pub children: Vec<FlameTree>,
}

impl FlameTree {
    /// A tree from Flink's JSON node; `None` when it is not one.
    pub fn from_json(v: &Value) -> Option<FlameTree> {
        Some(FlameTree {
            name: v.get("name")?.as_str()?.to_string(),
            value: v.get("value")?.as_u64()?,
            children: v
                .get("children")?
                .as_array()?
                .iter()
                .map(FlameTree::from_json)
                .collect::<Option<Vec<_>>>()?,
        })
    }

    /// The tree of a whole `/flamegraph` answer: `None` while sampling (`endTimestamp` < 0, no
    /// `data`) or when the answer is not one.
    pub fn from_answer(answer: &Value) -> Option<FlameTree> {
        FlameTree::from_json(answer.get("data")?)
    }

    /// Adds `other`'s samples (a graph of another subtask) into this tree, frame by frame.
    pub fn merge(&mut self, other: &FlameTree) {
        self.value += other.value;
        for c in &other.children {
            match self.children.iter_mut().find(|m| m.name == c.name) {
                Some(m) => m.merge(c),
                None => self.children.push(c.clone()),
            }
        }
    }

    fn self_value(&self) -> u64 {
        self.value
            .saturating_sub(self.children.iter().map(|c| c.value).sum())
    }

    /// Every leaf path's frames (root excluded) with its self samples.
    pub(crate) fn paths(&self) -> Vec<(Vec<&str>, u64)> {
        fn walk<'a>(n: &'a FlameTree, path: &mut Vec<&'a str>, out: &mut Vec<(Vec<&'a str>, u64)>) {
            path.push(&n.name);
            if n.self_value() > 0 {
                out.push((path.clone(), n.self_value()));
            }
            for c in &n.children {
                walk(c, path, out);
            }
            path.pop();
        }
        let mut out = Vec::new();
        for c in &self.children {
            walk(c, &mut Vec::new(), &mut out);
        }
        out
    }
}

/// The flame graphs of a vertex's busy subtasks, as fetched.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexProfile {
    /// Stacks sampled while running on a CPU.
    pub on_cpu: FlameTree,
    /// Stacks sampled while waiting (blocked, sleeping, waiting for input or credit).
    pub off_cpu: FlameTree,
}

/// What a thread waits in, off CPU, when it waits inside the operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockedIn {
    /// `Thread.sleep` and the like.
    Sleep,
    /// Socket or file reads and writes.
    Io,
    /// Monitors, locks, condition waits.
    Lock,
    /// A wait the frame names do not classify.
    Other,
}

impl BlockedIn {
    /// The wait in words, for evidence lines.
    pub fn describe(self) -> &'static str {
        match self {
            BlockedIn::Sleep => "a sleep",
            BlockedIn::Io => "socket or file I/O",
            BlockedIn::Lock => "a lock or condition wait",
            BlockedIn::Other => "a blocking call",
        }
    }
}

/// The summary the rules read (shares are 0..=1).
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileSummary {
    /// On-CPU samples, and off-CPU samples of the thread's own waits (not for input or credit:
    /// those are idle and backpressured time, which the metrics already tell).
    pub on_cpu: u64,
    /// See `on_cpu`: the off-CPU samples of the thread's own waits.
    pub blocked: u64,
    /// `blocked / (on_cpu + blocked)`: how much of the working time was spent off CPU.
    pub blocked_share: f64,
    /// What most blocked samples wait in, with the frame that says so and its share of blocked.
    pub blocked_in: Option<(BlockedIn, String, f64)>,
    /// Share of on-CPU samples inside keyed-state calls, and the outermost state frame.
    pub state: (f64, Option<String>),
    /// Share of on-CPU samples inside serialization, and its outermost frame.
    pub serialization: (f64, Option<String>),
    /// The on-CPU frames with the most self time, with their share of on-CPU samples.
    pub top_self: Vec<(String, f64)>,
    /// Flink's generic serialization: on-CPU samples in Kryo frames (see [`KryoUse`]).
    pub kryo: Option<KryoUse>,
}

/// What the flame graph shows of Kryo, Flink's fallback serializer for types it cannot analyse.
#[derive(Clone, Debug, PartialEq)]
pub struct KryoUse {
    /// Share of on-CPU samples inside Kryo frames.
    pub share: f64,
    /// Share of those that deserialize (read) rather than serialize or copy.
    pub reading: f64,
    /// Classes of user code called from inside Kryo (constructors, accessors): the type it
    /// handles, when the frames show it.
    pub types: Vec<String>,
}

fn is_kryo(f: &str) -> bool {
    f.contains("com.esotericsoftware.kryo") || f.contains(".kryo.KryoSerializer")
}

/// The class of a user-code frame (`pkg.Type$Inner.method:12` → `pkg.Type$Inner`), unless the
/// frame is the JDK's, Flink's or Kryo's own.
fn user_class(f: &str) -> Option<String> {
    let lib = [
        "java.",
        "javax.",
        "jdk.",
        "sun.",
        "org.apache.flink.",
        "com.esotericsoftware.",
        "org.objenesis.",
        "[",
    ];
    if lib.iter().any(|p| f.starts_with(p)) {
        return None;
    }
    let (class, _) = bare(f).rsplit_once('.')?;
    Some(class.to_string())
}

/// The Kryo summary of on-CPU paths (`None` without Kryo frames).
fn kryo_use(paths: &[(Vec<&str>, u64)], total: u64) -> Option<KryoUse> {
    let (mut hits, mut reads) = (0u64, 0u64);
    let mut types: Vec<(String, u64)> = Vec::new();
    for (p, n) in paths {
        let Some(at) = p.iter().position(|f| is_kryo(f)) else {
            continue;
        };
        hits += n;
        if p[at..]
            .iter()
            .any(|f| f.contains(".read") || f.contains(".deserialize"))
        {
            reads += n;
        }
        for c in p[at..].iter().filter_map(|f| user_class(f)) {
            match types.iter_mut().find(|(t, _)| *t == c) {
                Some((_, k)) => *k += n,
                None => types.push((c, *n)),
            }
        }
    }
    if hits == 0 {
        return None;
    }
    types.sort_by_key(|t| std::cmp::Reverse(t.1));
    Some(KryoUse {
        share: hits as f64 / total.max(1) as f64,
        reading: reads as f64 / hits as f64,
        types: types.into_iter().map(|(t, _)| t).take(3).collect(),
    })
}

/// Fewer on-CPU samples than this name no hot frame (their shares would be noise).
pub const MIN_ON_CPU_SAMPLES: u64 = 20;

fn is_idle_wait(f: &str) -> bool {
    f.starts_with("[wait] input") || f.contains("TaskMailboxImpl.take")
}

fn is_credit_wait(f: &str) -> bool {
    f.starts_with("[wait] output credit")
        || f.contains("requestMemorySegmentBlocking")
        || f.contains("requestBufferBuilderBlocking")
}

/// A wait that is idle (for input) or backpressure (for credit), not the thread's own.
pub(crate) fn is_idle_or_credit_wait(f: &str) -> bool {
    is_idle_wait(f) || is_credit_wait(f)
}

fn blocked_kind(f: &str) -> Option<BlockedIn> {
    if f.contains("(sleep)") || f.contains("java.lang.Thread.sleep") {
        Some(BlockedIn::Sleep)
    } else if f.contains("(socket, pipe or file I/O)")
        || f.contains("SocketInputStream")
        || f.contains("NioSocketImpl")
        || f.contains("socketRead")
        || f.contains("sun.nio.ch.")
        || f.contains("FileDispatcherImpl")
    {
        Some(BlockedIn::Io)
    } else if f.starts_with("[syscall] futex")
        || f.contains("ReentrantLock")
        || f.contains("LockSupport.park")
        || f.contains("Object.wait")
    {
        Some(BlockedIn::Lock)
    } else {
        None
    }
}

fn is_state(f: &str) -> bool {
    f.contains("sluice_runtime::state::")
        || f.contains("fjall::")
        || f.contains("lsm_tree::")
        || f.contains("org.rocksdb.")
        || f.contains("contrib.streaming.state.")
        || f.contains("runtime.state.heap.")
        || f.contains("ValueState")
        || f.contains("MapState")
        || f.contains("ListState")
}

fn is_serialization(f: &str) -> bool {
    f.contains("postcard::")
        || f.contains("serde_json::")
        || f.contains("serde::")
        || f.contains("com.esotericsoftware.kryo")
        || f.contains("Serializer.serialize")
        || f.contains("Serializer.deserialize")
        || f.contains("SerializationDelegate")
        || f.contains("RecordDeserializer")
}

/// A frame name without its `:line` suffix.
pub(crate) fn bare(f: &str) -> &str {
    match f.rsplit_once(':') {
        Some((head, line))
            if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit() || b == b'-') =>
        {
            head
        }
        _ => f,
    }
}

/// The share of `samples` whose path has a frame matching `family`, and the most common
/// outermost such frame.
fn family(
    paths: &[(Vec<&str>, u64)],
    total: u64,
    family: fn(&str) -> bool,
) -> (f64, Option<String>) {
    let mut hits = 0;
    let mut outer: Vec<(String, u64)> = Vec::new();
    for (p, n) in paths {
        if let Some(f) = p.iter().find(|f| family(f)) {
            hits += n;
            let f = bare(f).to_string();
            match outer.iter_mut().find(|(o, _)| *o == f) {
                Some((_, c)) => *c += n,
                None => outer.push((f, *n)),
            }
        }
    }
    outer.sort_by_key(|b| std::cmp::Reverse(b.1));
    (
        hits as f64 / total.max(1) as f64,
        outer.into_iter().next().map(|(f, _)| f),
    )
}

impl VertexProfile {
    /// The summary of the busy subtasks' graphs (see [`ProfileSummary`]); `None` with no
    /// samples at all.
    pub fn summary(&self) -> Option<ProfileSummary> {
        let on = self.on_cpu.paths();
        let on_cpu: u64 = on.iter().map(|(_, n)| n).sum();
        let mut blocked = 0;
        let mut kinds: Vec<(BlockedIn, String, u64)> = Vec::new();
        for (p, n) in self.off_cpu.paths() {
            if p.iter().any(|f| is_idle_wait(f) || is_credit_wait(f)) {
                continue;
            }
            blocked += n;
            let (kind, frame) = p
                .iter()
                .rev()
                .find_map(|f| blocked_kind(f).map(|k| (k, bare(f).to_string())))
                .unwrap_or((
                    BlockedIn::Other,
                    p.last().map(|f| bare(f).to_string()).unwrap_or_default(),
                ));
            match kinds.iter_mut().find(|(k, f, _)| *k == kind && *f == frame) {
                Some((_, _, c)) => *c += n,
                None => kinds.push((kind, frame, n)),
            }
        }
        if on_cpu + blocked == 0 {
            return None;
        }
        kinds.sort_by_key(|b| std::cmp::Reverse(b.2));
        let blocked_in = kinds
            .into_iter()
            .next()
            .map(|(k, f, n)| (k, f, n as f64 / blocked.max(1) as f64));
        let mut selfs: Vec<(String, u64)> = Vec::new();
        for (p, n) in &on {
            if let Some(leaf) = p.last() {
                let leaf = bare(leaf).to_string();
                match selfs.iter_mut().find(|(f, _)| *f == leaf) {
                    Some((_, c)) => *c += n,
                    None => selfs.push((leaf, *n)),
                }
            }
        }
        selfs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Some(ProfileSummary {
            on_cpu,
            blocked,
            blocked_share: blocked as f64 / (on_cpu + blocked) as f64,
            blocked_in,
            state: family(&on, on_cpu, is_state),
            serialization: family(&on, on_cpu, is_serialization),
            kryo: kryo_use(&on, on_cpu),
            top_self: selfs
                .into_iter()
                .take(3)
                .map(|(f, n)| (f, n as f64 / on_cpu.max(1) as f64))
                .collect(),
        })
    }
}

impl ProfileSummary {
    /// The evidence line naming the top self-time frames.
    pub fn top_self_line(&self) -> Option<String> {
        if self.on_cpu < MIN_ON_CPU_SAMPLES || self.top_self.is_empty() {
            return Some(format!(
                "flame graph: {} on-CPU samples (too few to name hot frames), {} blocked off CPU",
                self.on_cpu, self.blocked
            ));
        }
        let frames: Vec<String> = self
            .top_self
            .iter()
            .map(|(f, s)| format!("`{f}` {:.0}%", s * 100.0))
            .collect();
        Some(format!(
            "flame graph: most on-CPU self time in {} ({} on-CPU samples, {} blocked off CPU)",
            frames.join(", "),
            self.on_cpu,
            self.blocked
        ))
    }

    /// The evidence line on blocked time, when there is any.
    pub fn blocked_line(&self) -> Option<String> {
        let (kind, frame, share) = self.blocked_in.as_ref()?;
        Some(format!(
            "flame graph: {:.0}% of the busy subtasks' samples are off CPU inside the operator, {:.0}% of them in {} (`{frame}`)",
            self.blocked_share * 100.0,
            share * 100.0,
            kind.describe()
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn tree(paths: &[(&[&str], u64)]) -> FlameTree {
        let mut root = FlameTree {
            name: "root".into(),
            ..FlameTree::default()
        };
        for (p, n) in paths {
            root.value += n;
            let mut node = &mut root;
            for f in *p {
                let i = match node.children.iter().position(|c| c.name == *f) {
                    Some(i) => i,
                    None => {
                        node.children.push(FlameTree {
                            name: f.to_string(),
                            ..FlameTree::default()
                        });
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[i];
                node.value += n;
            }
        }
        root
    }

    #[test]
    fn sluice_sleeps_are_blocked_time_and_input_waits_are_not() {
        let p = VertexProfile {
            on_cpu: tree(&[(&["[task] m", "sluice::map:3"], 20)]),
            off_cpu: tree(&[
                (
                    &[
                        "[task] m",
                        "[blocked] in operator code",
                        "[syscall] clock_nanosleep (sleep)",
                        "[kernel] hrtimer_nanosleep",
                    ],
                    70,
                ),
                (
                    &[
                        "[task] m",
                        "[wait] input (idle)",
                        "[syscall] futex (lock, condition or park)",
                    ],
                    500,
                ),
            ]),
        };
        let s = p.summary().unwrap();
        assert_eq!((s.on_cpu, s.blocked), (20, 70));
        assert!((s.blocked_share - 70.0 / 90.0).abs() < 1e-9);
        let (kind, frame, share) = s.blocked_in.clone().unwrap();
        assert_eq!(kind, BlockedIn::Sleep);
        assert_eq!(frame, "[syscall] clock_nanosleep (sleep)");
        assert_eq!(share, 1.0);
        assert_eq!(s.top_self, vec![("sluice::map".to_string(), 1.0)]);
        assert!(s.blocked_line().unwrap().contains("a sleep"));
    }

    #[test]
    fn state_and_serialization_families_are_found_by_their_outermost_frame() {
        let p = VertexProfile {
            on_cpu: tree(&[
                (
                    &[
                        "op",
                        "sluice_runtime::state::handles::MapState<UK,UV>::get:104",
                        "lsm_tree::tree::Tree::get:9",
                    ],
                    71,
                ),
                (&["op", "postcard::to_vec:3"], 9),
                (&["op", "work:1"], 20),
            ]),
            off_cpu: FlameTree::default(),
        };
        let s = p.summary().unwrap();
        assert!((s.state.0 - 0.71).abs() < 1e-9);
        assert_eq!(
            s.state.1.as_deref(),
            Some("sluice_runtime::state::handles::MapState<UK,UV>::get")
        );
        assert!((s.serialization.0 - 0.09).abs() < 1e-9);
        assert_eq!(s.top_self[0].0, "lsm_tree::tree::Tree::get");
    }

    #[test]
    fn flinks_answers_parse_and_their_idle_mailbox_is_not_blocking() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/flink/flink-rest"
        );
        let read = |p: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(format!("{dir}/{p}")).unwrap()).unwrap()
        };
        let pending = read("skew/v1-sum-per-key-counting-sink-writer-flamegraph-call1.json");
        assert_eq!(FlameTree::from_answer(&pending), None);
        let on = FlameTree::from_answer(&read(
            "profiling-and-rescale/v1-flamegraph-oncpu-subtask0-call1.json",
        ))
        .unwrap();
        let off = FlameTree::from_answer(&read(
            "profiling-and-rescale/v1-flamegraph-offcpu-call2.json",
        ))
        .unwrap();
        let s = VertexProfile {
            on_cpu: on,
            off_cpu: off,
        }
        .summary()
        .unwrap();
        assert_eq!(s.blocked, 0, "the mailbox wait is idle time");
        assert_eq!(s.top_self[0].0, "bench.Common.work");
        assert!(s.top_self[0].1 > 0.8);
        assert_eq!(FlameTree::from_json(&json!({"name": "x"})), None);
        let mut a = tree(&[(&["x", "y"], 2)]);
        a.merge(&tree(&[(&["x", "z"], 3), (&["w"], 1)]));
        assert_eq!(a.value, 6);
        assert_eq!(a.children[0].value, 5);
        assert_eq!(a.children[0].children.len(), 2);
        assert_eq!(a.children[1].name, "w");
    }
}
