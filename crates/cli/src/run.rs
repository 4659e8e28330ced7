//! `sluice run <job>`.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use sluice_graph::StreamEnv;
use sluice_jobs::{passthrough, scenarios, skew};

use crate::args::{EnvArgs, JobCmd, RunArgs};
use crate::procstat;
use crate::progress::{human, Progress};

/// Dead letters printed with their location in the run summary.
const DEAD_LETTERS_SHOWN: usize = 5;

pub enum BuiltJob {
    Passthrough(passthrough::PassthroughJob),
    /// The skew job, its `--output` and its `--to` sink.
    Skew(
        skew::SkewJob,
        Option<std::path::PathBuf>,
        Option<crate::connectors::SinkHandle>,
    ),
    Scenario(scenarios::ScenarioJob),
    /// A scenario on real systems (`--from` / `--to`).
    RealScenario(crate::real_scenarios::RealScenario),
}

fn env_of(a: &EnvArgs) -> anyhow::Result<StreamEnv> {
    Ok(a.stream_env()?)
}

/// Builds the job a command line describes; `run` and `plan` share it.
pub fn build_job(job: &JobCmd) -> anyhow::Result<(StreamEnv, BuiltJob, u64)> {
    let env = match job {
        JobCmd::Passthrough(a) => env_of(&a.env)?,
        JobCmd::Skew(a) => env_of(&a.env)?,
        JobCmd::Scenario(a) => env_of(&a.env)?,
    };
    let (built, total) = build_on(&env, job)?;
    Ok((env, built, total))
}

/// Adds the job a command line describes to `env` (its configuration already set); the
/// built job's handles (output, counters) and the records it generates. A live run calls it
/// again for every plan change.
pub fn build_on(env: &StreamEnv, job: &JobCmd) -> anyhow::Result<(BuiltJob, u64)> {
    match job {
        JobCmd::Passthrough(a) => {
            let cfg = passthrough::PassthroughConfig {
                records: a.records,
                parallelism: a.env.parallelism,
                rebalance: a.rebalance,
            };
            let j = passthrough::build(env, &cfg)?;
            Ok((BuiltJob::Passthrough(j), a.records))
        }
        JobCmd::Skew(a) => {
            let cfg = skew::SkewConfig {
                records: a.records,
                hot_key_share: a.hot_key_share,
                keys: a.keys,
                map_work: a.map_work,
                parallelism: a.env.parallelism,
                source_parallelism: a.source_parallelism,
                map_parallelism: a.map_parallelism,
                sum_parallelism: a.sum_parallelism,
                rebalance_before_map: a.rebalance_before_map,
                two_phase: a.two_phase.then_some(a.buckets),
                adaptive: a.adaptive,
            };
            let source = match &a.from {
                None => skew::generated_source(env, &cfg)?,
                Some(from) => {
                    cfg.validate()
                        .map_err(sluice_graph::GraphError::InvalidConfig)?;
                    env.set_parallelism(cfg.parallelism);
                    env.set_job_name("skew");
                    let mut s = crate::connectors::records_from(env, from, a.bounded, 0)?;
                    if let Some(p) = cfg.source_parallelism {
                        s = s.set_parallelism(p);
                    }
                    s
                }
            };
            let summed = skew::sums(&cfg, source)?;
            let j = skew::final_sums_sink(&cfg, &summed);
            let sink = match &a.to {
                None => None,
                Some(to) => Some(crate::connectors::write_to(&summed, to, "sums", &[])?),
            };
            // Read from elsewhere, the record count is what the source holds.
            let records = if a.from.is_some() { 0 } else { a.records };
            Ok((BuiltJob::Skew(j, a.output.clone(), sink), records))
        }
        JobCmd::Scenario(a) => {
            if a.from.is_some() || a.to.is_some() {
                if a.splits.is_some() {
                    anyhow::bail!(
                        "--splits shapes the generated input; with --from the source's own partitions are the splits"
                    );
                }
                if a.sink_work.is_some() || a.source_work.is_some() {
                    anyhow::bail!(
                        "--sink-work and --source-work shape the generated slow-sink job, not one with --from or --to"
                    );
                }
                let j = crate::real_scenarios::build(
                    env,
                    &a.name,
                    a.records,
                    a.env.parallelism,
                    a.from.as_ref(),
                    a.bounded,
                    a.to.as_ref(),
                )?;
                if let Some(spec) = &a.async_capacity {
                    apply_async_capacity(env, spec)?;
                }
                return Ok((BuiltJob::RealScenario(j), 0));
            }
            let cfg = scenarios::ScenarioConfig {
                name: a.name.clone(),
                records: a.records,
                parallelism: a.env.parallelism,
                sink_work: a.sink_work,
                source_work: a.source_work,
                lookup_keys: a.keys,
                lookup_table: a.lookup.clone(),
                splits: a.splits,
            };
            if a.name != "blocking" && (a.keys.is_some() || a.lookup.is_some()) {
                anyhow::bail!("--keys and --lookup are options of the blocking scenario only");
            }
            let j = scenarios::build(env, &cfg)?;
            if let Some(spec) = &a.async_capacity {
                apply_async_capacity(env, spec)?;
            }
            Ok((BuiltJob::Scenario(j), a.records))
        }
    }
}

/// What the job did in one window of `--profile-all`.
#[derive(Clone, Copy, Debug)]
struct Window {
    records: u64,
    cpu_ns: u64,
    wall_ns: u64,
}

impl Window {
    fn rate(&self) -> f64 {
        self.records as f64 * 1e9 / self.wall_ns.max(1) as f64
    }
    fn cpu_per_record(&self) -> f64 {
        self.cpu_ns as f64 / self.records.max(1) as f64
    }
}

/// What `--profile-all` measured: sampling runs that sampled something, their counted costs,
/// and per run the ratios (on / off) of throughput and of process CPU-ns per record.
#[derive(Default)]
struct Profiled {
    runs: u64,
    cost: sluice_runtime::profiler::SamplingCost,
    /// (records/s, CPU-ns/record) of each sampling window over the mean of the sampling-off
    /// windows just before and just after it.
    ratios: Vec<(f64, f64)>,
}

/// `--profile-all`: sampling runs over every subtask thread while the job runs, each between
/// two windows of the same length without sampling (off, on, off, on, …, off), so throughput
/// with sampling on and off is compared within one run and a drifting load or job rate hits
/// both sides alike. A window is the sampling window only: a run's work after it (stopping the
/// sampler, symbolising, the tree) finishes before the next off window starts and is reported
/// apart (`after_cpu_ms`), as the one-off cost of a flame graph answer.
struct ProfileAll {
    thread: std::thread::JoinHandle<Profiled>,
}

impl ProfileAll {
    fn start(monitor: &std::sync::Arc<sluice_runtime::JobMonitor>, hz: Option<i32>) -> ProfileAll {
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
                    procstat::cpu_time_ns().unwrap_or(0),
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
    fn finish(self) -> Profiled {
        self.thread.join().unwrap_or_default()
    }
}

/// `[[rate ratio, cpu ratio], …]` of `--stats-json`'s `profile_ratios`.
fn ratios_json(r: &[(f64, f64)]) -> String {
    let pairs: Vec<String> = r.iter().map(|(a, b)| format!("[{a:.4},{b:.4}]")).collect();
    format!("[{}]", pairs.join(","))
}

/// The profiler's counted costs as a JSON object (`profile_cost` of `--stats-json`).
fn cost_json(c: &sluice_runtime::profiler::SamplingCost) -> String {
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

/// The metric settings `--autopilot` runs with unless others are given: Flink's defaults (a
/// 5 s interval, rates averaged over 60 s) would make the autopilot's 5 s windows compare
/// minute averages, so "after" would still be mostly "before".
const AUTOPILOT_METRICS_INTERVAL: f64 = 0.2;
const AUTOPILOT_METRICS_WINDOW: f64 = 1.0;

fn env_args_mut(job: &mut JobCmd) -> &mut EnvArgs {
    match job {
        JobCmd::Passthrough(a) => &mut a.env,
        JobCmd::Skew(a) => &mut a.env,
        JobCmd::Scenario(a) => &mut a.env,
    }
}

pub fn run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.processes > 1 {
        return crate::processes::launch(&args);
    }
    // One process of `--processes N`: connected to the others before the job is built.
    let placement = match args.process_index {
        Some(i) => Some(crate::processes::join(
            i,
            &args.peers,
            std::time::Duration::from_millis(args.heartbeat_timeout),
        )?),
        None => None,
    };
    let cpu0 = procstat::cpu_time_ns();
    let t0 = Instant::now();
    if args.autopilot {
        let e = env_args_mut(&mut args.job);
        let defaults = EnvArgs::default_metrics();
        if (e.metrics_interval, e.metrics_window) == defaults {
            e.metrics_interval = AUTOPILOT_METRICS_INTERVAL;
            e.metrics_window = AUTOPILOT_METRICS_WINDOW;
            eprintln!(
                "autopilot: metrics every {AUTOPILOT_METRICS_INTERVAL} s over a \
                 {AUTOPILOT_METRICS_WINDOW} s window, so its windows see the job as it is now \
                 (--metrics-interval / --metrics-window to choose others)"
            );
        }
    }
    // In a process of a split job, a refusal before the start has its own exit status (the
    // launcher does not restart it); elsewhere it is an ordinary error.
    let child = placement.is_some();
    let refused = move |e: anyhow::Error| {
        if child {
            crate::processes::refused(e)
        } else {
            e
        }
    };
    let (env, job, total) = build_job(&args.job).map_err(refused)?;
    if let BuiltJob::Skew(_, Some(path), _) = &job {
        crate::preflight::output_file(path, "--output").map_err(refused)?;
    }
    // A restored source continues from its position in the savepoint: what it reads is the rest
    // of the savepoint's job's input, whatever --records says now. Said up front, and the
    // progress bar has no total.
    let total = match &env.config().restore_from {
        Some(p) => {
            eprintln!(
                "resuming from {}: the sources continue from their positions in it and read the \
                 rest of that job's input; --records does not change what they read",
                p.display()
            );
            0
        }
        None => total,
    };
    let say = sluice::Say {
        rest: !args.stats_json,
        checkpoints: true,
    };
    // The job runs live (its plan can change while it runs: `doctor/apply`, `PUT
    // resource-requirements`, `--autopilot`): built again on a fresh environment for every
    // change. Every build's handles are kept; the summary merges them (a build that never ran
    // holds nothing).
    let mut cfg = env.config();
    if let Some(id) = args.job_id {
        cfg.job_id = Some(id);
    }
    drop(env);
    // The build above only checked the command line (and its output file); it never runs.
    drop(job);
    let builds: Arc<Mutex<Vec<BuiltJob>>> = Arc::default();
    let build: sluice::live::BuildFn = {
        let (cmd, builds) = (args.job.clone(), builds.clone());
        let placement = placement.clone();
        let built_once = std::sync::atomic::AtomicBool::new(false);
        Arc::new(move |env: &StreamEnv| {
            if let Some(p) = &placement {
                // A plan change builds the job again: its channels to the other processes
                // would be opened a second time, and the other processes would not change.
                if built_once.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    return Err(
                        "plan changes of a job split over processes are not supported \
                                yet (each process would have to change with it)"
                            .into(),
                    );
                }
                env.set_placement(p.clone());
            }
            let (built, _) = build_on(env, &cmd).map_err(|e| format!("{e:#}"))?;
            builds.lock().unwrap_or_else(|p| p.into_inner()).push(built);
            Ok(())
        })
    };
    let running =
        sluice::Running::start_live(build, cfg, &args.rest, say).map_err(|e| refused(e.into()))?;
    let monitor = running.monitor().clone();
    let autopilot = match (args.autopilot, running.rest_addr()) {
        (false, _) => None,
        (true, None) => anyhow::bail!("--autopilot needs the REST API (drop --no-rest)"),
        (true, Some(addr)) => Some(crate::autopilot_cmd::InProcess::start(
            &format!("http://{addr}"),
            args.rest.rest_token.clone(),
            monitor.job_id.to_string(),
        )),
    };
    let profiling = args
        .profile_all
        .then(|| ProfileAll::start(&monitor, args.profile_hz));
    // Start-up latency: from building the job to the sources' first published batch.
    let mut startup = None;
    while startup.is_none() && !running.is_finished() {
        if monitor.records_emitted_by_sources() > 0 {
            startup = Some(t0.elapsed());
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    let progress = Progress::start(
        monitor.clone(),
        total,
        !args.no_progress && !args.stats_json,
    );
    let in_flight = args
        .stats_json
        .then(|| crate::in_flight::InFlightSampler::start(monitor.clone()));
    let (outcome, finished) = running.wait();
    if let Some(a) = autopilot {
        a.stop();
    }
    let profiled = profiling.map(ProfileAll::finish);
    progress.finish();
    let in_flight = in_flight.map(|s| s.finish());
    let restarts = finished.restarts;
    let recovery = finished.recovery.clone();
    let exec = match outcome {
        Ok(exec) => {
            // This process's part ended well: its peers must not take its exit for a loss.
            if let Some(p) = &placement {
                p.endpoint.shutdown();
            }
            exec
        }
        Err(e) => {
            for line in &recovery {
                eprintln!("{line}");
            }
            // Only a stop-with-savepoint is a successful end; a cancel after some earlier
            // savepoint is a cancel.
            if let Some(path) = &finished.savepoint {
                eprintln!("job stopped with savepoint {}", path.display());
                if !args.rest.keep_rest {
                    finished.linger_for_savepoint_client();
                    return Ok(ExitCode::SUCCESS);
                }
            }
            if args.rest.keep_rest {
                // Keep serving so the failed or cancelled job's final state can be inspected.
                eprintln!("error: {e}");
                finished.serve_forever();
            }
            return Err(e.into());
        }
    };
    let wall = t0.elapsed();
    let cpu_ns = match (cpu0, procstat::cpu_time_ns()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    // Every record enters through a source; sources publish their counts as they go (each
    // plan of a live job counts from 0: the sum over plans is the job's).
    let records = finished.records;
    let monitor = finished.monitor.clone();
    let builds = std::mem::take(&mut *builds.lock().unwrap_or_else(|p| p.into_inner()));
    let job = Merged::of(builds);
    if let (Some(path), Some(finals)) = (&job.output, &job.finals) {
        // A process of `--processes N` writes its part; the launcher merges them.
        let path = match &placement {
            Some(p) => crate::processes::part_path(path, p.process),
            None => path.clone(),
        };
        write_csv(&path, finals).with_context(|| format!("writing {}", path.display()))?;
    }
    let rate = records as f64 / wall.as_secs_f64().max(1e-9);
    let peak = procstat::peak_rss_kib();
    if args.stats_json {
        let f = in_flight.unwrap_or_default();
        let durations = monitor
            .control
            .checkpoints()
            .map(|h| h.stats().durations)
            .unwrap_or_default();
        let ckpt_avg = durations.iter().sum::<i64>() as f64 / durations.len().max(1) as f64;
        let ckpt_max = durations.iter().copied().max().unwrap_or(0);
        println!(
            "{{\"job\":\"{}\",\"records\":{},\"wall_ms\":{:.3},\"records_per_sec\":{:.0},\"cpu_ns_per_record\":{},\"peak_rss_kib\":{},\"startup_ms\":{},\"restarts\":{},\"in_flight_bytes_avg\":{:.0},\"in_flight_bytes_max\":{},\"in_flight_bytes_avg_second_half\":{:.0},\"checkpoints_completed\":{},\"checkpoint_ms_avg\":{:.1},\"checkpoint_ms_max\":{},\"profile_runs\":{},\"profile_cost\":{},\"profile_ratios\":{}}}",
            exec.graph.name,
            records,
            wall.as_secs_f64() * 1000.0,
            rate,
            cpu_ns.map(|c| format!("{:.1}", c as f64 / records.max(1) as f64)).unwrap_or("null".into()),
            peak.map(|p| p.to_string()).unwrap_or("null".into()),
            startup.map(|s| format!("{:.3}", s.as_secs_f64() * 1000.0)).unwrap_or("null".into()),
            restarts,
            f.avg,
            f.max,
            f.avg_second_half,
            durations.len(),
            ckpt_avg,
            ckpt_max,
            profiled.as_ref().map(|p| p.runs.to_string()).unwrap_or("null".into()),
            profiled.as_ref().map(|p| cost_json(&p.cost)).unwrap_or("null".into()),
            profiled.as_ref().map(|p| ratios_json(&p.ratios)).unwrap_or("null".into()),
        );
        // Not on stdout (one JSON line there), but never silent.
        for line in &recovery {
            eprintln!("{line}");
        }
    } else {
        let metrics = monitor.vertex_metrics();
        for (i, v) in exec.result.vertices.iter().enumerate() {
            // Share of each subtask's life spent busy (neither idle nor backpressured).
            let busy: Vec<String> = metrics
                .get(i)
                .map(|m| {
                    m.subtasks
                        .iter()
                        .map(|s| {
                            let life = (s.accumulated_busy_ms
                                + s.accumulated_idle_ms
                                + s.accumulated_backpressured_ms)
                                .max(1.0);
                            format!("{:.0}%", 100.0 * s.accumulated_busy_ms / life)
                        })
                        .collect()
                })
                .unwrap_or_default();
            eprintln!(
                "  {:<50} p={:<3} records in {:>12}  out {:>12}  busy {}",
                v.name,
                v.parallelism,
                v.records_in,
                v.records_out,
                busy.join(" ")
            );
            if let Some(h) = v.hot_keys.first() {
                eprintln!(
                    "      hottest key {} = {:.1}% of the vertex's records (subtask {})",
                    h.key,
                    100.0 * h.share_of_vertex,
                    h.subtask + 1
                );
            }
        }
        if exec.result.dead_letters > 0 {
            eprintln!("  dead letters: {}", exec.result.dead_letters);
            // The first few, with where they were found (all are counted; up to 1000 kept).
            for d in exec
                .result
                .dead_letter_samples
                .iter()
                .take(DEAD_LETTERS_SHOWN)
            {
                eprintln!("    {} at {}: {}", d.origin, d.location, d.reason);
            }
        }
        eprintln!(
            "{}: {} records in {:.3} s = {} records/s{}",
            exec.graph.name,
            records,
            wall.as_secs_f64(),
            human(rate),
            cpu_ns
                .filter(|_| records > 0)
                .map(|c| format!(", {:.1} CPU-ns/record", c as f64 / records as f64))
                .unwrap_or_default()
        );
        match (&job.output, &placement) {
            (Some(path), Some(p)) => eprintln!(
                "process {} of {}: its final sums written to {}",
                p.process,
                p.processes,
                crate::processes::part_path(path, p.process).display()
            ),
            (Some(path), None) => eprintln!("final sums written to {}", path.display()),
            _ => {}
        }
        if let Some(n) = job.discarded {
            eprintln!("the sink discarded {n} records")
        }
        if let Some((name, n)) = &job.scenario_sunk {
            eprintln!("scenario {name}: the sink received {n} records");
        }
        for sink in &job.sinks {
            eprintln!("{}", sink.summary());
        }
        for line in &recovery {
            eprintln!("{line}");
        }
    }
    if args.rest.keep_rest {
        finished.serve_forever();
    }
    Ok(ExitCode::SUCCESS)
}

/// What the summary reports of a run's builds (one per plan of a live job, plus the builds a
/// plan change checked and never ran, which hold nothing): counters summed, final sums merged
/// with the later plan's figure winning.
struct Merged {
    output: Option<std::path::PathBuf>,
    finals: Option<std::collections::BTreeMap<i64, i64>>,
    discarded: Option<u64>,
    scenario_sunk: Option<(String, u64)>,
    sinks: Vec<crate::connectors::SinkHandle>,
}

impl Merged {
    fn of(builds: Vec<BuiltJob>) -> Merged {
        let mut m = Merged {
            output: None,
            finals: None,
            discarded: None,
            scenario_sunk: None,
            sinks: Vec::new(),
        };
        let mut counted = 0;
        let mut name = None;
        let mut sinks = Vec::new();
        for b in builds {
            match b {
                BuiltJob::Skew(j, output, sink) => {
                    m.finals.get_or_insert_default().extend(j.final_sums());
                    m.output = output;
                    sinks.extend(sink);
                }
                BuiltJob::Passthrough(p) => {
                    *m.discarded.get_or_insert(0) += p.discarded.count();
                }
                BuiltJob::Scenario(s) => {
                    match s.skew_job() {
                        Some(j) => m.finals.get_or_insert_default().extend(j.final_sums()),
                        None => counted += s.records_sunk(),
                    }
                    name = Some(s.name.clone());
                }
                BuiltJob::RealScenario(s) => {
                    counted += s.sunk.load(std::sync::atomic::Ordering::Relaxed);
                    name = Some(s.name.clone());
                    sinks.extend(s.sink);
                }
            }
        }
        if let Some(name) = name {
            // For skew and under-provisioned the sink's figure is the keys in the final sums.
            let n = counted + m.finals.as_ref().map_or(0, |f| f.len() as u64);
            m.scenario_sunk = Some((name, n));
        }
        // The newest build's sink (with no plan change, the only one).
        m.sinks = sinks.pop().into_iter().collect();
        m
    }
}

/// Writes `key,sum` CSV sorted by key, with a header line (as `SkewJob::write_csv`).
pub(crate) fn write_csv(
    path: &std::path::Path,
    finals: &std::collections::BTreeMap<i64, i64>,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "key,sum")?;
    for (k, s) in finals {
        writeln!(w, "{k},{s}")?;
    }
    w.flush()
}

/// `--async-capacity OPERATOR=N`: the fixer's async change (lookup async mode, ordered, or an
/// async operator's capacity), applied to the plan before the job starts.
fn apply_async_capacity(env: &StreamEnv, spec: &str) -> anyhow::Result<()> {
    let (op, n) = spec
        .rsplit_once('=')
        .with_context(|| format!("--async-capacity expects OPERATOR=N, got '{spec}'"))?;
    let capacity: usize = n
        .parse()
        .with_context(|| format!("--async-capacity: '{n}' is not a capacity"))?;
    let fix = sluice_graph::fixer::Fix::AsyncCapacity {
        operator: op.to_string(),
        capacity,
    };
    let diff = sluice_graph::fixer::apply(env, &fix)
        .with_context(|| format!("--async-capacity {spec}"))?;
    eprintln!("plan diff (--async-capacity):\n{diff}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn async_capacity_flag_errors_name_the_flag_and_the_operator() {
        let env = StreamEnv::new();
        let e = apply_async_capacity(&env, "blocking-call").unwrap_err();
        assert!(format!("{e:#}").contains("OPERATOR=N"), "{e:#}");
        let e = apply_async_capacity(&env, "blocking-call=lots").unwrap_err();
        assert!(
            format!("{e:#}").contains("'lots' is not a capacity"),
            "{e:#}"
        );
        let e = apply_async_capacity(&env, "nope=4").unwrap_err();
        assert!(format!("{e:#}").contains("nope"), "{e:#}");
    }
}
