//! `sluice run <job>`.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use sluice::processes::part_path;
use sluice_bench::profile_all::ProfileAll;
use sluice_bench::{procstat, RunStats};
use sluice_datastream::StreamEnv;
use sluice_jobs::{passthrough, scenarios, skew, sums_csv};

use crate::args::{EnvArgs, JobCmd, RunArgs};
use crate::progress::{human, Progress};

/// Dead letters printed with their location in the run summary.
const DEAD_LETTERS_SHOWN: usize = 5;

pub use sluice_jobs::built::{BuiltJob, Merged};

/// Builds the job a command line describes; `run` and `plan` share it.
pub fn build_job(job: &JobCmd) -> anyhow::Result<(StreamEnv, BuiltJob, u64)> {
    let env = match job {
        JobCmd::Passthrough(a) => a.env.stream_env()?,
        JobCmd::Skew(a) => a.env.stream_env()?,
        JobCmd::Scenario(a) => a.env.stream_env()?,
        JobCmd::Sql(a) => a.env.stream_env()?,
    };
    let (built, total) = build_on(&env, job)?;
    Ok((env, built, total))
}

/// Adds the job a command line describes to `env` (its configuration already set); the
/// built job's handles (output, counters) and the records it generates. A live run calls it
/// again for every plan change.
pub fn build_on(env: &StreamEnv, job: &JobCmd) -> anyhow::Result<(BuiltJob, u64)> {
    match job {
        JobCmd::Sql(a) => {
            let dropped = crate::sql_cmd::build(env, a)?;
            Ok((BuiltJob::Sql(dropped), 0))
        }
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
                sum_work: a.sum_work,
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
                Some(from) => sluice_jobs::connectors::skew_source(env, &cfg, from, a.bounded)
                    .map_err(anyhow::Error::msg)?,
            };
            let summed = skew::sums(&cfg, source)?;
            let j = skew::final_sums_sink(&cfg, &summed);
            let sink = match &a.to {
                None => None,
                Some(to) => Some(
                    sluice_jobs::connectors::write_to(&summed, to, "sums", &[])
                        .map_err(anyhow::Error::msg)?,
                ),
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
                let j = sluice_jobs::real_scenarios::build(
                    env,
                    &a.name,
                    a.records,
                    a.env.parallelism,
                    a.from.as_ref(),
                    a.bounded,
                    a.to.as_ref(),
                )
                .map_err(anyhow::Error::msg)?;
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

fn env_args_mut(job: &mut JobCmd) -> &mut EnvArgs {
    match job {
        JobCmd::Passthrough(a) => &mut a.env,
        JobCmd::Skew(a) => &mut a.env,
        JobCmd::Scenario(a) => &mut a.env,
        JobCmd::Sql(a) => &mut a.env,
    }
}

/// `sluice run … --processes N`: checks the command line (and the output file) before any
/// process starts, runs the processes (`sluice::processes::launch`) and merges a skew job's
/// `--output` parts (`FILE.process-I`, removed after).
fn launch_processes(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let (env, job, _) = build_job(&args.job)?;
    let output = match &job {
        BuiltJob::Skew(_, Some(path), _) => {
            crate::preflight::output_file(path, "--output")?;
            Some(path.clone())
        }
        _ => None,
    };
    drop(job);
    let launcher = sluice::processes::Launcher {
        follower_flags: if args.no_progress {
            vec![]
        } else {
            vec!["--no-progress".into()]
        },
        leader_draws: !args.no_progress,
    };
    sluice::processes::launch(&args.processes, &args.rest, &env.config(), &launcher)?;
    let n = usize::from(args.processes.processes);
    if let Some(path) = output {
        let mut all = std::collections::BTreeMap::new();
        for i in 0..n {
            let part = part_path(&path, i);
            sums_csv::read_sums_part(&part, &mut all).map_err(anyhow::Error::msg)?;
            std::fs::remove_file(&part).with_context(|| format!("removing {}", part.display()))?;
        }
        sums_csv::write_sums_csv(&path, &all)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "final sums of the {n} processes ({} keys) written to {}",
            all.len(),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    if let JobCmd::Sql(a) = &args.job {
        if a.job_index.is_none() {
            return crate::sql_cmd::run_script(args);
        }
    }
    run_one(&mut args)
}

/// Runs the one job `args` describes (a SQL script's jobs are run one by one through it).
pub fn run_one(args: &mut RunArgs) -> anyhow::Result<ExitCode> {
    if args.processes.processes > 1 {
        return launch_processes(args);
    }
    // One process of `--processes N`: connected to the others before the job is built.
    let placement = sluice::processes::join_peers(&args.processes)?;
    let cpu0 = procstat::cpu_time_ns();
    let t0 = Instant::now();
    args.processes.tune_metrics(env_args_mut(&mut args.job));
    // In a process of a split job, a refusal before the start has its own exit status (the
    // launcher does not restart it); elsewhere it is an ordinary error.
    let child = placement.is_some();
    let refused = move |e: anyhow::Error| {
        if child {
            sluice::SluiceError::Refused(format!("{e:#}")).into()
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
    let cfg = env.config();
    drop(env);
    // The build above only checked the command line (and its output file); it never runs.
    drop(job);
    let builds: Arc<Mutex<Vec<BuiltJob>>> = Arc::default();
    let build: sluice::live::BuildFn = {
        let (cmd, builds) = (args.job.clone(), builds.clone());
        Arc::new(move |env: &StreamEnv| {
            let (built, _) = build_on(env, &cmd).map_err(|e| format!("{e:#}"))?;
            builds.lock().unwrap_or_else(|p| p.into_inner()).push(built);
            Ok(())
        })
    };
    let session = sluice::Session::start(
        build,
        cfg,
        &args.rest,
        &args.processes,
        placement,
        say,
        Some(sluice::autopilot::start_default),
    )
    .map_err(|e| refused(e.into()))?;
    let placement = session.placement().cloned();
    let running = session.running();
    let monitor = running.monitor().clone();
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
        .then(|| sluice_bench::in_flight::InFlightSampler::start(monitor.clone()));
    let (outcome, finished) = session.wait();
    let profiled = profiling.map(ProfileAll::finish);
    progress.finish();
    let in_flight = in_flight.map(|s| s.finish());
    let restarts = finished.restarts;
    let recovery = finished.recovery.clone();
    let exec = match outcome {
        Ok(exec) => exec,
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
            Some(p) => part_path(path, p.process),
            None => path.clone(),
        };
        sums_csv::write_sums_csv(&path, finals)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let rate = records as f64 / wall.as_secs_f64().max(1e-9);
    let peak = procstat::peak_rss_kib();
    if args.stats_json {
        let stats = RunStats {
            job: &exec.graph.name,
            records,
            wall,
            cpu_ns,
            peak_rss_kib: peak,
            startup,
            restarts,
            in_flight: in_flight.unwrap_or_default(),
            checkpoint_durations: monitor
                .control
                .checkpoints()
                .map(|h| h.stats().durations)
                .unwrap_or_default(),
            profiled,
        };
        println!("{}", stats.json_line());
        // Not on stdout (one JSON line there), but never silent.
        for line in job.sql_dropped.iter().chain(&recovery) {
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
                part_path(path, p.process).display()
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
        for line in job.sql_dropped.iter().chain(&recovery) {
            eprintln!("{line}");
        }
    }
    if args.rest.keep_rest {
        finished.serve_forever();
    }
    Ok(ExitCode::SUCCESS)
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
    let fix = sluice_datastream::fixer::PlanChange::AsyncCapacity {
        operator: op.to_string(),
        capacity,
    };
    let diff = sluice_datastream::fixer::apply(env, &fix)
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
