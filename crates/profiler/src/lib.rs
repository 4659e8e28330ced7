//! # sluice-profiler: flame graphs and thread dumps of a job's task threads, sampled while the job
//! runs, in Flink's shapes (`/jobs/:jid/vertices/:vid/flamegraph`, `/taskmanagers/:tm/thread-dump`).
//!
//! A sampling run ([`sample_vertex`]) looks at every running subtask thread of a vertex
//! `num_samples` times, `delay` apart (Flink's `rest.flamegraph.num-samples` 100 and
//! `delay-between-samples` 50 ms). Each look ([`procfs`]) reads the thread's scheduler state:
//! - **on CPU** (`R`): while a run lasts, `pprof`'s signal-based sampler ([`native`]) collects
//!   stacks of the task threads, one per 1/`native_hz` s of CPU time (99 a second),
//!   symbolised after the window (each address once per process): the on-CPU graph is
//!   these native stacks (user functions under the engine's operator frames), from the engine's
//!   first frame on (the thread-start boilerplate of `std` is cut).
//! - **off CPU**: the task, what the task waits for (input = idle, output credit =
//!   backpressured, or neither: a call inside operator code), the system call it is blocked in
//!   (`clock_nanosleep` = a sleep, `recvfrom` = a socket read, `futex` = a contended mutex or a
//!   park/condition wait, told apart by its arguments: [`procfs::FutexWait`]) and the kernel
//!   function it sleeps in. The thread dump's Java-like states come from the same look:
//!   RUNNABLE, BLOCKED (a contended mutex), WAITING, TIMED_WAITING. A wait for input or credit
//!   also has native frames: the waiting thread unwinds itself where the wait starts while a
//!   run wants it (`sluice_channel::wait_stacks`, at most every 50 ms), and the logical frames
//!   sit under that stack.
//!
//! Why a wait *inside operator code* (a sleep, a socket read, a lock) has no native frames: a
//! thread off CPU can only be unwound by itself or by stopping it. Stopping is ptrace (a helper
//! such as `rstack` stops the thread for every sample: far above 1 %). Running on it means a
//! signal handler, and the only one we have without `unsafe` in our crates is `pprof`'s, which
//! (a) fires on CPU time (`ITIMER_PROF`), so never on a sleeping thread, and (b) with the
//! blocklist we must give it drops every sample whose interrupted address is in libc (the
//! guard against deadlocking in the loader's or allocator's locks), where a blocked thread
//! always is (the system call's wrapper).
//! Sending a signal to one thread (`tgkill`) and unwinding through libc from the handler would
//! need our own handler: `unsafe`, and unsound while the thread holds those locks. The engine
//! cannot wrap user code's blocking calls; its own waits it can, hence the wait stacks.
//!
//! Values count native samples, i.e. slices of 1/`native_hz` of thread time: a look off CPU
//! stands for `delay` of the thread's time and counts `delay × native_hz` (5 by default; 1 at
//! Flink's 20 Hz), so on- and off-CPU parts of the `full` graph keep their proportions of time
//! (Flink counts looks: 100 per thread; here a thread sampled for 5 s totals about 500).
//!
//! Frames are root first and sit under `[task] <vertex>`; Sluice's logical frames are bracketed
//! (`[wait]`, `[blocked]`, `[syscall]`, `[kernel]`, `[running]`) so nobody mistakes them for
//! functions. Nothing runs while nobody asks: the job pays for a run only while it lasts.
//!
//! Main types: [`JobProfiler`] (a job's cached flame graphs, Flink's request/refresh protocol),
//! [`VertexProfile`], [`FlameNode`], [`FlameGraphType`], [`ThreadInfo`] ([`thread_dump`]).
//!
//! Native stacks are behind the cargo feature `native` (on by default, it brings `pprof` and
//! `backtrace`); without it on-CPU samples carry no native frames and say why, and addresses
//! of wait stacks are shown unresolved.
//!
//! Invariant: the profiler only looks. It must NOT stop, slow or signal a task thread outside a
//! sampling run the user asked for, and it never changes what a job computes.
#![warn(missing_docs)]

pub mod native;
pub mod procfs;
mod thread_dump;
mod tree;

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use thread_dump::{thread_dump, ThreadInfo};
pub use tree::FlameNode;

use procfs::{syscall_name, FutexWait, ThreadLook, WaitKind};
use sluice_channel::{WaitPoint, WaitStack};
use sluice_metrics::{TaskMetrics, TaskState};

/// Flink's flame graph types (`?type=full|on_cpu|off_cpu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlameGraphType {
    /// Every sample: running and waiting threads in one graph.
    Full,
    /// Only the looks that found a thread running.
    OnCpu,
    /// Only the looks that found a thread waiting, under what it waits for.
    OffCpu,
}

impl FlameGraphType {
    /// Flink's names, any case.
    pub fn parse(s: &str) -> Option<FlameGraphType> {
        match s.to_ascii_lowercase().as_str() {
            "full" => Some(FlameGraphType::Full),
            "on_cpu" => Some(FlameGraphType::OnCpu),
            "off_cpu" => Some(FlameGraphType::OffCpu),
            _ => None,
        }
    }
    /// The query-string name [`FlameGraphType::parse`] reads back.
    pub fn as_str(self) -> &'static str {
        match self {
            FlameGraphType::Full => "full",
            FlameGraphType::OnCpu => "on_cpu",
            FlameGraphType::OffCpu => "off_cpu",
        }
    }
}

/// How sampling runs go (Flink's `rest.flamegraph.*` defaults).
#[derive(Clone, Debug)]
pub struct ProfilerConfig {
    /// Looks per thread in a run (`num-samples`, 100).
    pub num_samples: usize,
    /// Between looks (`delay-between-samples`, 50 ms).
    pub delay: Duration,
    /// Frames kept per stack, from the running function up (Flink's `stack-depth` is 100; 56
    /// here, so a graph's JSON nests fewer than 128 levels, the limit of common JSON readers
    /// such as serde_json's).
    pub stack_depth: usize,
    /// A vertex's graph is resampled on a request once it is older than this
    /// (`refresh-interval`, 60 s); the older graph is answered meanwhile.
    pub refresh_interval: Duration,
    /// Native stack samples per second of CPU time while a run lasts (SIGPROF on the process's
    /// CPU time: a thread on CPU all along gets this many a second); 0 = logical frames only.
    /// 99 (pprof's default): Flink's rate of 20 (a look every 50 ms) gave too few on-CPU
    /// samples on a loaded 2-core machine to show a cheap inlined user function (the skew
    /// job's reduce closure); a sample's handler is cheap, the runs' fixed costs are not.
    pub native_hz: i32,
}

impl Default for ProfilerConfig {
    fn default() -> Self {
        ProfilerConfig {
            num_samples: 100,
            delay: Duration::from_millis(50),
            stack_depth: 56,
            refresh_interval: Duration::from_secs(60),
            native_hz: 99,
        }
    }
}

/// One subtask thread to look at.
#[derive(Clone)]
pub struct ProfiledThread {
    /// The vertex's name, the start of the thread's Flink name.
    pub vertex_name: String,
    /// Subtask index, from 0.
    pub subtask: usize,
    /// Subtasks of the vertex in all.
    pub parallelism: usize,
    /// The subtask's live counters: its state, attempt and where it waits are read from here.
    pub metrics: Arc<TaskMetrics>,
}

impl ProfiledThread {
    /// Flink's task thread name: `<vertex> (<i>/<p>)#<attempt>`.
    pub fn thread_name(&self) -> String {
        format!(
            "{} ({}/{})#{}",
            self.vertex_name,
            self.subtask + 1,
            self.parallelism,
            self.metrics.attempt()
        )
    }
}

/// Root-first frame names.
pub type Stack = Vec<String>;

/// The samples of one subtask in a run.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SubtaskProfile {
    /// Subtask index, from 0.
    pub subtask: usize,
    /// Stacks seen while the thread ran, with how many samples each.
    pub on_cpu: Vec<(Stack, u64)>,
    /// Stacks seen while the thread waited (what it waits on at the leaf), with their counts.
    pub off_cpu: Vec<(Stack, u64)>,
}

/// The result of a sampling run over a vertex's subtasks.
#[derive(Clone, Debug, Default)]
pub struct VertexProfile {
    /// When the run ended, ms since the Unix epoch (Flink's `endTimestamp`).
    pub end_timestamp_ms: i64,
    /// One profile per subtask sampled, ordered by subtask index.
    pub subtasks: Vec<SubtaskProfile>,
    /// Why on-CPU samples have no native frames, when they have none.
    pub native_note: Option<String>,
    /// What the run cost the sampling thread (the task threads pay for the native samples).
    pub cost: SamplingCost,
}

/// What a sampling run cost, counted (for `sluice bench --profiler`).
#[derive(Clone, Debug, Default)]
pub struct SamplingCost {
    /// Looks at task threads (`/proc` reads).
    pub looks: u64,
    /// Native samples of the sampled threads (each a SIGPROF handler unwinding on a task thread).
    pub native_samples: u64,
    /// Off-CPU looks given the stack the thread captured where its wait started.
    pub wait_stacks: u64,
    /// CPU time of the sampling thread during the window: starting the sampler, the looks.
    pub window_cpu_ns: u64,
    /// CPU time after the window: the sampler's report, symbolisation, the stacks and trees.
    pub after_cpu_ns: u64,
    /// CPU time before the window: loading the debug info for the symboliser, once per
    /// process ([`native::prepare_symbols`]).
    pub setup_cpu_ns: u64,
}

impl SamplingCost {
    /// Adds another run's costs.
    pub fn add(&mut self, o: &SamplingCost) {
        self.looks += o.looks;
        self.native_samples += o.native_samples;
        self.wait_stacks += o.wait_stacks;
        self.window_cpu_ns += o.window_cpu_ns;
        self.after_cpu_ns += o.after_cpu_ns;
        self.setup_cpu_ns += o.setup_cpu_ns;
    }
}

impl VertexProfile {
    /// The flame graph of one type, over every subtask or one.
    pub fn tree(&self, ty: FlameGraphType, subtask: Option<usize>) -> FlameNode {
        let picked = self
            .subtasks
            .iter()
            .filter(|s| subtask.is_none_or(|i| s.subtask == i));
        let mut stacks: Vec<(&[String], u64)> = Vec::new();
        for s in picked {
            if ty != FlameGraphType::OffCpu {
                stacks.extend(s.on_cpu.iter().map(|(st, n)| (&st[..], *n)));
            }
            if ty != FlameGraphType::OnCpu {
                stacks.extend(s.off_cpu.iter().map(|(st, n)| (&st[..], *n)));
            }
        }
        FlameNode::from_stacks(stacks)
    }
}

/// The logical frame of a task.
pub fn task_frame(vertex_name: &str) -> String {
    format!("[task] {vertex_name}")
}

/// The off-CPU stack of a task thread seen waiting: task, what it waits for, the call, the
/// kernel function.
fn off_cpu_stack(t: &ProfiledThread, look: &ThreadLook) -> Stack {
    let mut s = vec![task_frame(&t.vertex_name)];
    let waits = &t.metrics.waits;
    s.push(if waits.idle_since.load(Relaxed) != 0 {
        "[wait] input (idle)".to_string()
    } else if waits.backpressured_since.load(Relaxed) != 0 {
        "[wait] output credit (backpressured)".to_string()
    } else {
        "[blocked] in operator code".to_string()
    });
    if let Some(f) = call_frame(look) {
        s.push(f);
    }
    if let Some(w) = &look.wchan {
        s.push(format!("[kernel] {w}"));
    }
    s
}

/// The frame of the call a thread seen off CPU is blocked in: the system call, and for a
/// `futex` what its arguments say it waits for (a contended mutex, a timed or untimed park).
pub fn call_frame(look: &ThreadLook) -> Option<String> {
    match (look.syscall, look.futex_wait()) {
        (Some(_), Some(FutexWait::Mutex { .. })) => {
            Some("[syscall] futex (lock: contended mutex)".to_string())
        }
        (Some(_), Some(FutexWait::Timed)) => {
            Some("[syscall] futex (condition or park, timed)".to_string())
        }
        (Some(_), Some(FutexWait::Untimed)) => Some("[syscall] futex (condition or park)".into()),
        (Some(nr), None) => Some(syscall_frame(nr)),
        (None, _) if look.state == 'D' => {
            Some("[syscall] (uninterruptible: disk or kernel I/O)".to_string())
        }
        (None, _) => None,
    }
}

/// `[syscall] clock_nanosleep (sleep)`: the call and what it means.
pub fn syscall_frame(nr: u64) -> String {
    let (name, kind) = syscall_name(nr);
    match kind {
        WaitKind::Sleep => format!("[syscall] {name} (sleep)"),
        WaitKind::Io => format!("[syscall] {name} (socket, pipe or file I/O)"),
        WaitKind::Futex => format!("[syscall] {name} (lock, condition or park)"),
        WaitKind::Other if name == "syscall" => format!("[syscall] #{nr}"),
        WaitKind::Other => format!("[syscall] {name}"),
    }
}

/// What one look weighs in native samples: `delay × native_hz` (1 without native stacks).
fn look_weight(cfg: &ProfilerConfig, native: bool) -> u64 {
    if native && cfg.native_hz > 0 {
        ((cfg.delay.as_secs_f64() * cfg.native_hz as f64).round() as u64).max(1)
    } else {
        1
    }
}

/// A native stack without the thread-start boilerplate before the engine's first frame, and
/// at most `depth` frames (the running function's side kept, as Flink's `stack-depth` does).
fn trim_stack(s: &[String], depth: usize) -> &[String] {
    let first_engine = s.iter().position(|f| f.starts_with("sluice_")).unwrap_or(0);
    let s = &s[first_engine..];
    &s[s.len().saturating_sub(depth)..]
}

/// The native stack a waiting task thread captured where its current kind of wait started
/// (input or output credit), while a run wants them (see `sluice_channel::wait_stacks`).
fn wait_stack(t: &ProfiledThread) -> Option<WaitStack> {
    let waits = &t.metrics.waits;
    if waits.idle_since.load(Relaxed) != 0 {
        waits.stacks.latest(WaitPoint::Input)
    } else if waits.backpressured_since.load(Relaxed) != 0 {
        waits.stacks.latest(WaitPoint::Credit)
    } else {
        None
    }
}

/// CPU time of the calling thread so far, ns (0 where unknown: costs then read 0).
fn own_cpu_ns() -> u64 {
    sluice_metrics::cpu::current_thread_id()
        .and_then(sluice_metrics::cpu::thread_cpu_ns)
        .unwrap_or(0)
}

/// Off-CPU samples of one subtask during a window: the stack its wait started with (if it
/// captured one) and the logical stack, counted.
type OffCpuLooks = HashMap<(Option<WaitStack>, Stack), u64>;

/// Samples `threads` (see the module docs); blocks for about `num_samples × delay`, less when
/// every thread has ended. Symbolisation happens after the window, on this thread.
pub fn sample_vertex(threads: &[ProfiledThread], cfg: &ProfilerConfig) -> VertexProfile {
    sample_vertex_then(threads, cfg, &mut || {})
}

/// [`sample_vertex`], calling `at_window_end` when the sampling window ends (before the
/// sampler stops and symbolises): what `sluice run --profile-all` measures the window with.
pub fn sample_vertex_then(
    threads: &[ProfiledThread],
    cfg: &ProfilerConfig,
    at_window_end: &mut dyn FnMut(),
) -> VertexProfile {
    let setup_cpu_ns = if cfg.native_hz > 0 {
        native::prepare_symbols()
    } else {
        0
    };
    let n = threads.len();
    let cpu_start = own_cpu_ns();
    let mut on_looks = vec![0u64; n];
    let mut off: Vec<OffCpuLooks> = vec![HashMap::new(); n];
    let mut looks = 0u64;
    let mut window_end_cpu = 0;
    let mut look_all = |on_looks: &mut Vec<u64>, off: &mut Vec<OffCpuLooks>| {
        for t in threads {
            t.metrics.waits.stacks.want(true);
        }
        for _ in 0..cfg.num_samples.max(1) {
            let tick = Instant::now();
            let mut any_running = false;
            for (i, t) in threads.iter().enumerate() {
                let tid = t.metrics.thread_id.load(Relaxed);
                if t.metrics.state() != TaskState::Running || tid == 0 {
                    continue;
                }
                any_running = true;
                looks += 1;
                match procfs::look(tid) {
                    Some(l) if l.on_cpu() => on_looks[i] += 1,
                    Some(l) => {
                        let key = (wait_stack(t), off_cpu_stack(t, &l));
                        *off[i].entry(key).or_default() += 1
                    }
                    None => {}
                }
            }
            if !any_running {
                break;
            }
            if let Some(rest) = cfg.delay.checked_sub(tick.elapsed()) {
                std::thread::sleep(rest);
            }
        }
        for t in threads {
            t.metrics.waits.stacks.want(false);
        }
        window_end_cpu = own_cpu_ns();
        at_window_end();
    };
    let pthreads: Vec<u64> = threads
        .iter()
        .map(|t| t.metrics.pthread_id.load(Relaxed))
        .collect();
    let native = if cfg.native_hz > 0 {
        native::sample_during(cfg.native_hz, &pthreads, || {
            look_all(&mut on_looks, &mut off)
        })
        .1
    } else {
        look_all(&mut on_looks, &mut off);
        Err("native stacks disabled".to_string())
    };
    let end_timestamp_ms = sluice_metrics::clock::epoch_ms() as i64;
    let mut native_note = native.as_ref().err().cloned();
    // One unit of value is one native sample's worth of thread time (1 / native_hz): a native
    // sample counts 1, a look (standing for `delay` of the thread's time) counts delay × hz.
    let look_weight = look_weight(cfg, native.is_ok());
    let mut subtasks = Vec::with_capacity(n);
    let mut wait_stacks = 0;
    for (i, t) in threads.iter().enumerate() {
        let task = task_frame(&t.vertex_name);
        let keep = |s: &Stack, depth: usize| -> Stack {
            let mut st = vec![task.clone()];
            st.extend(trim_stack(s, depth).iter().cloned());
            st
        };
        let mut on_cpu: Vec<(Stack, u64)> = native
            .as_ref()
            .ok()
            .and_then(|ns| ns.by_thread.get(&pthreads[i]))
            .map(|v| {
                v.iter()
                    .map(|(s, c)| (keep(s, cfg.stack_depth), *c))
                    .collect()
            })
            .unwrap_or_default();
        if on_cpu.is_empty() && on_looks[i] > 0 {
            if native.is_ok() {
                native_note.get_or_insert_with(|| {
                    "some threads seen on CPU had no native sample".to_string()
                });
            }
            on_cpu.push((
                vec![
                    task.clone(),
                    "[running] (no native stack sampled)".to_string(),
                ],
                on_looks[i] * look_weight,
            ));
        }
        on_cpu.sort();
        // A wait's native stack goes between the task and the logical wait frames.
        let mut merged: HashMap<Stack, u64> = HashMap::new();
        for ((ips, logical), c) in std::mem::take(&mut off[i]) {
            let stack = match ips {
                Some(ips) => {
                    wait_stacks += c;
                    let depth = cfg.stack_depth.saturating_sub(logical.len());
                    let mut names = native::symbolise(ips.iter().copied());
                    // Up to the wait's start; the capture's own frames are not the thread's.
                    if let Some(w) = names.iter().position(|f| f.contains("WaitTimes::begin_")) {
                        names.truncate(w + 1);
                    }
                    let mut st = keep(&names, depth);
                    st.extend(logical.into_iter().skip(1));
                    st
                }
                None => logical,
            };
            *merged.entry(stack).or_default() += c;
        }
        let mut off_cpu: Vec<(Stack, u64)> = merged
            .into_iter()
            .map(|(s, n)| (s, n * look_weight))
            .collect();
        off_cpu.sort();
        subtasks.push(SubtaskProfile {
            subtask: t.subtask,
            on_cpu,
            off_cpu,
        });
    }
    let cost = SamplingCost {
        looks,
        native_samples: native.as_ref().map(|ns| ns.samples).unwrap_or(0),
        wait_stacks,
        window_cpu_ns: window_end_cpu.saturating_sub(cpu_start),
        after_cpu_ns: own_cpu_ns().saturating_sub(window_end_cpu),
        setup_cpu_ns,
    };
    VertexProfile {
        end_timestamp_ms,
        subtasks,
        native_note,
        cost,
    }
}

/// What a flame graph request gets (Flink's `endTimestamp` sentinels besides the graph).
#[derive(Clone, Debug)]
pub enum FlameGraphAnswer {
    /// Sampling has started (or is under way) and no graph exists yet: `-3`.
    Pending,
    /// No subtask of the vertex runs and none was sampled: `-1`.
    Terminated,
    /// The latest graph (maybe being refreshed).
    Ready(Arc<VertexProfile>),
}

#[derive(Default)]
struct VertexCache {
    running: bool,
    last: Option<Arc<VertexProfile>>,
    last_done: Option<Instant>,
}

/// The subtasks of a vertex that run in other processes (a job split over processes): asked
/// for their samples when a run starts here (see `sluice-runtime`'s `job_master::inspect`).
pub trait RemoteSampler: Send + Sync {
    /// Samples of `vertex`'s subtasks elsewhere, from the processes that answer within `wait`.
    fn sample(&self, vertex: usize, wait: Duration) -> Vec<SubtaskProfile>;
}

/// A job's flame graphs, by vertex, with Flink's protocol: the first request starts a sampling
/// run on a thread of its own and answers "pending"; later requests get the latest graph, and
/// one older than the refresh interval starts a new run (the old graph is answered meanwhile).
pub struct JobProfiler {
    config: ProfilerConfig,
    vertices: Mutex<HashMap<usize, VertexCache>>,
    /// Sampling threads started (joined by [`JobProfiler::join_samplers`] when the job ends).
    samplers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// In process 0 of a split job: the other processes' part of each run.
    remote: std::sync::OnceLock<Arc<dyn RemoteSampler>>,
}

impl std::fmt::Debug for JobProfiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobProfiler")
            .field("config", &self.config)
            .finish()
    }
}

impl Default for JobProfiler {
    fn default() -> Self {
        JobProfiler::new(ProfilerConfig::default())
    }
}

impl JobProfiler {
    /// A profiler with no graphs yet; runs start on request, with `config`'s settings.
    pub fn new(config: ProfilerConfig) -> JobProfiler {
        JobProfiler {
            config,
            vertices: Mutex::new(HashMap::new()),
            samplers: Mutex::new(Vec::new()),
            remote: std::sync::OnceLock::new(),
        }
    }

    /// Makes every run also sample the vertex's subtasks in the other processes (once).
    pub fn set_remote(&self, remote: Arc<dyn RemoteSampler>) {
        let _ = self.remote.set(remote);
    }

    /// One run over `threads` here and, when set, the vertex's subtasks elsewhere, sampled at
    /// the same time; the other processes' subtasks replace their (never running) mirrors.
    fn sample_everywhere(&self, vertex: usize, threads: &[ProfiledThread]) -> VertexProfile {
        let remote = self.remote.get().cloned().map(|r| {
            // The others sample as long as this run, then symbolise: a run's length and a
            // margin for that.
            let wait = self.config.delay * self.config.num_samples as u32 + Duration::from_secs(15);
            std::thread::Builder::new()
                .name("flamegraph-remote".into())
                .spawn(move || r.sample(vertex, wait))
        });
        let mut profile = sample_vertex(threads, &self.config);
        if let Some(Ok(h)) = remote {
            for s in h.join().unwrap_or_default() {
                match profile.subtasks.iter_mut().find(|t| t.subtask == s.subtask) {
                    Some(t) => *t = s,
                    None => profile.subtasks.push(s),
                }
            }
            profile.subtasks.sort_by_key(|s| s.subtask);
        }
        profile
    }

    /// The settings every run of this profiler uses.
    pub fn config(&self) -> &ProfilerConfig {
        &self.config
    }

    /// Waits for the sampling threads; once the job's tasks have ended, each stops within a
    /// look (`delay`) and the symbolisation of what it sampled. The job handle calls this, so
    /// no sampler outlives it.
    pub fn join_samplers(&self) {
        let samplers =
            std::mem::take(&mut *self.samplers.lock().unwrap_or_else(|p| p.into_inner()));
        for t in samplers {
            let _ = t.join();
        }
    }

    /// The latest graph of `vertex` without starting anything.
    pub fn cached(&self, vertex: usize) -> Option<Arc<VertexProfile>> {
        let v = self.vertices.lock().unwrap_or_else(|p| p.into_inner());
        v.get(&vertex)?.last.clone()
    }

    /// A flame graph request for `vertex`, whose subtask threads are `threads`.
    pub fn request(
        self: &Arc<Self>,
        vertex: usize,
        threads: Vec<ProfiledThread>,
    ) -> FlameGraphAnswer {
        let running = threads
            .iter()
            .any(|t| t.metrics.state() == TaskState::Running);
        let mut all = self.vertices.lock().unwrap_or_else(|p| p.into_inner());
        let cache = all.entry(vertex).or_default();
        let stale = cache
            .last_done
            .is_none_or(|t| t.elapsed() >= self.config.refresh_interval);
        if stale && running && !cache.running {
            let me = self.clone();
            let spawned = std::thread::Builder::new()
                .name("flamegraph-sampler".into())
                .spawn(move || {
                    let profile = Arc::new(me.sample_everywhere(vertex, &threads));
                    let mut all = me.vertices.lock().unwrap_or_else(|p| p.into_inner());
                    let c = all.entry(vertex).or_default();
                    c.running = false;
                    c.last = Some(profile);
                    c.last_done = Some(Instant::now());
                });
            cache.running = spawned.is_ok();
            if let Ok(h) = spawned {
                let mut samplers = self.samplers.lock().unwrap_or_else(|p| p.into_inner());
                samplers.retain(|t| !t.is_finished());
                samplers.push(h);
            }
        }
        match (&cache.last, cache.running) {
            (Some(p), _) => FlameGraphAnswer::Ready(p.clone()),
            (None, true) => FlameGraphAnswer::Pending,
            (None, false) => FlameGraphAnswer::Terminated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_weigh_their_time_in_native_samples() {
        let cfg = ProfilerConfig::default();
        assert_eq!(look_weight(&cfg, true), 5);
        let flinks_rate = ProfilerConfig {
            native_hz: 20,
            ..ProfilerConfig::default()
        };
        assert_eq!(look_weight(&flinks_rate, true), 1);
        assert_eq!(look_weight(&cfg, false), 1);
        let s: Vec<String> = ["clone3", "start_thread", "sluice_runtime::a", "b", "c"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        assert_eq!(trim_stack(&s, 100), &s[2..]);
        assert_eq!(trim_stack(&s, 2), &s[3..]);
    }

    #[test]
    fn types_parse_as_flink_names_them() {
        assert_eq!(FlameGraphType::parse("ON_CPU"), Some(FlameGraphType::OnCpu));
        assert_eq!(
            FlameGraphType::parse("off_cpu"),
            Some(FlameGraphType::OffCpu)
        );
        assert_eq!(FlameGraphType::parse("Full"), Some(FlameGraphType::Full));
        assert_eq!(FlameGraphType::parse("mixed"), None);
    }
}
