//! `sluice run --profile-all`: the profiler's cost measured in one run, sampling windows
//! between windows without sampling.

use std::time::{Duration, Instant};

/// What the job did in one window of `--profile-all`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Records the sources emitted in the window.
    pub records: u64,
    /// Process CPU time in the window, ns.
    pub cpu_ns: u64,
    /// The window's length, ns.
    pub wall_ns: u64,
}

impl Window {
    /// Records per second.
    pub fn rate(&self) -> f64 {
        self.records as f64 * 1e9 / self.wall_ns.max(1) as f64
    }
    /// Process CPU-ns per record.
    pub fn cpu_per_record(&self) -> f64 {
        self.cpu_ns as f64 / self.records.max(1) as f64
    }
}

/// What `--profile-all` measured: sampling runs that sampled something, their counted costs,
/// and per run the ratios (on / off) of throughput and of process CPU-ns per record.
#[derive(Default)]
pub struct Profiled {
    /// Sampling runs that sampled something.
    pub runs: u64,
    /// The profiler's counted costs over all runs.
    pub cost: sluice_runtime::profiler::SamplingCost,
    /// (records/s, CPU-ns/record) of each sampling window over the mean of the sampling-off
    /// windows just before and just after it.
    pub ratios: Vec<(f64, f64)>,
}

/// `--profile-all`: sampling runs over every subtask thread while the job runs, each between
/// two windows of the same length without sampling (off, on, off, on, …, off), so throughput
/// with sampling on and off is compared within one run and a drifting load or job rate hits
/// both sides alike. A window is the sampling window only: a run's work after it (stopping the
/// sampler, symbolising, the tree) finishes before the next off window starts and is reported
/// apart (`after_cpu_ms`), as the one-off cost of a flame graph answer.
pub struct ProfileAll {
    thread: std::thread::JoinHandle<Profiled>,
}

impl ProfileAll {
    /// Starts the windows on `monitor`'s job (native stacks at `hz` samples per CPU-second, the
    /// profiler's default unless given).
    pub fn start(
        monitor: &std::sync::Arc<sluice_runtime::JobMonitor>,
        hz: Option<i32>,
    ) -> ProfileAll {
        let m = monitor.clone();
        let thread = std::thread::spawn(move || {
            use sluice_runtime::profiler::{sample_vertex_then, FlameGraphType, ProfilerConfig};
            let mut cfg = ProfilerConfig::default();
            if let Some(hz) = hz {
                cfg.native_hz = hz;
            }
            let running = || m.outcome() == sluice_runtime::JobOutcome::Running;
            // Wait until the sources emit (the job has started) before the first window.
            while running() && m.records_emitted_by_sources() == 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
            let threads: Vec<_> = (0..m.graph.vertices.len())
                .flat_map(|v| m.profiled_threads(v))
                .collect();
            let mark = || {
                (
                    m.records_emitted_by_sources(),
                    crate::procstat::cpu_time_ns().unwrap_or(0),
                    Instant::now(),
                )
            };
            let since = |(r, c, t): (u64, u64, Instant)| {
                let (r1, c1, _) = mark();
                Window {
                    records: r1.saturating_sub(r),
                    cpu_ns: c1.saturating_sub(c),
                    wall_ns: t.elapsed().as_nanos() as u64,
                }
            };
            let length = cfg.delay * cfg.num_samples.max(1) as u32;
            let mut out = Profiled::default();
            // The symboliser's debug info, loaded once before any window (as the first run of
            // a flame graph request loads it before its window), counted apart.
            if cfg.native_hz > 0 {
                out.cost.setup_cpu_ns = sluice_runtime::profiler::native::prepare_symbols();
            }
            let off_window = || {
                let start = mark();
                std::thread::sleep(length);
                let w = since(start);
                running().then_some(w)
            };
            let Some(mut before) = off_window() else {
                return out;
            };
            while running() {
                let start = mark();
                let mut on = None;
                let p = sample_vertex_then(&threads, &cfg, &mut || on = Some(since(start)));
                // What an answer costs besides the sampling: the tree.
                std::hint::black_box(p.tree(FlameGraphType::Full, None));
                out.cost.add(&p.cost);
                if p.subtasks
                    .iter()
                    .all(|s| s.on_cpu.is_empty() && s.off_cpu.is_empty())
                {
                    break;
                }
                out.runs += 1;
                let Some(after) = off_window() else { break };
                if let Some(on) = on.filter(|_| running()) {
                    let off_rate = (before.rate() + after.rate()) / 2.0;
                    let off_cpu = (before.cpu_per_record() + after.cpu_per_record()) / 2.0;
                    out.ratios.push((
                        on.rate() / off_rate.max(1e-9),
                        on.cpu_per_record() / off_cpu.max(1e-9),
                    ));
                }
                before = after;
            }
            out
        });
        ProfileAll { thread }
    }

    /// Waits for the last window (the job has ended).
    pub fn finish(self) -> Profiled {
        self.thread.join().unwrap_or_default()
    }
}

/// `[[rate ratio, cpu ratio], …]` of `--stats-json`'s `profile_ratios`.
pub(crate) fn ratios_json(r: &[(f64, f64)]) -> String {
    let pairs: Vec<String> = r.iter().map(|(a, b)| format!("[{a:.4},{b:.4}]")).collect();
    format!("[{}]", pairs.join(","))
}

/// The profiler's counted costs as a JSON object (`profile_cost` of `--stats-json`).
pub(crate) fn cost_json(c: &sluice_runtime::profiler::SamplingCost) -> String {
    format!(
        "{{\"looks\":{},\"native_samples\":{},\"wait_stacks\":{},\"window_cpu_ms\":{:.1},\"after_cpu_ms\":{:.1},\"setup_cpu_ms\":{:.1}}}",
        c.looks,
        c.native_samples,
        c.wait_stacks,
        c.window_cpu_ns as f64 / 1e6,
        c.after_cpu_ns as f64 / 1e6,
        c.setup_cpu_ns as f64 / 1e6
    )
}
