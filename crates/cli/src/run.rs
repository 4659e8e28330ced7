//! `sluice run <job>`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use sluice_graph::{EnvConfig, StreamEnv};
use sluice_jobs::{passthrough, scenarios, skew};

use crate::args::{EnvArgs, JobCmd, RunArgs};
use crate::checkpoint_log::CheckpointLog;
use crate::procstat;
use crate::progress::{human, Progress};

pub enum BuiltJob {
    Passthrough(passthrough::PassthroughJob),
    Skew(skew::SkewJob, Option<std::path::PathBuf>),
    Scenario(scenarios::ScenarioJob),
}

fn env_of(a: &EnvArgs) -> anyhow::Result<StreamEnv> {
    // Clap has bounded each flag on its own (see `args.rs`); these are the checks across flags.
    let interval = a.metrics_interval;
    if !(interval > 0.0 && a.metrics_window >= interval) {
        anyhow::bail!(
            "--metrics-window ({}) must be at least --metrics-interval ({interval})",
            a.metrics_window,
        );
    }
    let slots = (a.metrics_window / interval).round();
    let max_slots = sluice_runtime::job_master::MAX_METRICS_WINDOW_SLOTS;
    if slots > max_slots as f64 {
        anyhow::bail!(
            "--metrics-window ({}) may be at most {max_slots} times --metrics-interval ({interval}), \
             got {slots} times",
            a.metrics_window,
        );
    }
    let metrics = sluice_runtime::telemetry::MetricsConfig {
        update_interval: Duration::try_from_secs_f64(interval)
            .with_context(|| format!("--metrics-interval {interval}"))?,
        window_slots: (slots as usize).max(1),
    };
    let cfg = EnvConfig {
        metrics,
        operator_timing: !a.no_operator_timing,
        parallelism: a.parallelism,
        max_parallelism: a.max_parallelism,
        buffer_timeout: Duration::from_millis(a.buffer_timeout_ms),
        buffer_bytes: a.buffer_size,
        exclusive_credits: a.exclusive_credits,
        floating_credits: a.floating_credits,
        chaining: !a.disable_chaining,
        checkpoints: sluice_runtime::checkpoint::CheckpointConfig {
            interval: a.checkpoint_interval.map(Duration::from_millis),
            timeout: Duration::from_millis(a.checkpoint_timeout),
            tolerable_failures: a.tolerable_failed_checkpoints,
            ..Default::default()
        },
        checkpoint_dir: a.checkpoint_dir.clone(),
        restart: a.restart.clone(),
        restore_from: a
            .from_savepoint
            .clone()
            .or_else(|| a.from_checkpoint.clone()),
        allow_non_restored_state: a.allow_non_restored_state,
        faults: a.inject_failure.clone(),
        ..EnvConfig::default()
    };
    // Reject a bad configuration before anything starts.
    cfg.validate()
        .map_err(sluice_graph::GraphError::InvalidConfig)?;
    Ok(StreamEnv::with_config(cfg))
}

/// Builds the job a command line describes; `run` and `plan` share it.
pub fn build_job(job: &JobCmd) -> anyhow::Result<(StreamEnv, BuiltJob, u64)> {
    match job {
        JobCmd::Passthrough(a) => {
            let env = env_of(&a.env)?;
            let cfg = passthrough::PassthroughConfig {
                records: a.records,
                parallelism: a.env.parallelism,
                rebalance: a.rebalance,
            };
            let j = passthrough::build(&env, &cfg)?;
            Ok((env, BuiltJob::Passthrough(j), a.records))
        }
        JobCmd::Skew(a) => {
            let env = env_of(&a.env)?;
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
            let j = skew::build(&env, &cfg)?;
            Ok((env, BuiltJob::Skew(j, a.output.clone()), a.records))
        }
        JobCmd::Scenario(a) => {
            let env = env_of(&a.env)?;
            let cfg = scenarios::ScenarioConfig {
                name: a.name.clone(),
                records: a.records,
                parallelism: a.env.parallelism,
            };
            let j = scenarios::build(&env, &cfg)?;
            Ok((env, BuiltJob::Scenario(j), a.records))
        }
    }
}

/// Starts the embedded REST API unless `--no-rest`.
fn start_rest(
    args: &RunArgs,
) -> anyhow::Result<
    Option<(
        sluice_rest::RestServer,
        std::sync::Arc<sluice_rest::JobRegistry>,
    )>,
> {
    if args.no_rest {
        return Ok(None);
    }
    let registry = std::sync::Arc::new(sluice_rest::JobRegistry::new());
    let addr = std::net::SocketAddr::new(args.rest_address, args.rest_port);
    let config = sluice_rest::RestConfig {
        addr,
        token: args.rest_token.clone(),
        allowed_hosts: args.rest_allowed_host.clone(),
        savepoint_dir: args
            .savepoint_dir
            .clone()
            .unwrap_or_else(sluice_rest::default_savepoint_dir),
    };
    let server = match sluice_rest::serve_with(config, registry.clone()) {
        Ok(s) => s,
        Err(e @ sluice_rest::RestError::Insecure(_)) => return Err(e.into()),
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "cannot start the REST API on {addr} (choose another --rest-port, or --no-rest)"
            )))
        }
    };
    if !args.stats_json {
        eprintln!(
            "REST API: http://{}/ (Flink-compatible paths); savepoints under {}",
            server.local_addr(),
            server.savepoint_dir().display()
        );
    }
    Ok(Some((server, registry)))
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let cpu0 = procstat::cpu_time_ns();
    let t0 = Instant::now();
    let (env, job, total) = build_job(&args.job)?;
    if let BuiltJob::Skew(_, Some(path)) = &job {
        crate::preflight::output_file(path, "--output")?;
    }
    let env_args = args.job.env();
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
    let rest = start_rest(&args)?;
    let restore = env.config().restore_from.clone();
    let checkpointing = env.config().checkpoints.interval.is_some();
    let handle = env.launch()?;
    let monitor = handle.monitor();
    if let Some((_, registry)) = &rest {
        registry.register(monitor.clone());
    }
    let checkpoint_log = CheckpointLog::start(&monitor, checkpointing, restore.as_deref());
    // Start-up latency: from building the job to the sources' first published batch.
    let mut startup = None;
    while startup.is_none() && !handle.is_finished() {
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
    let outcome = handle.wait();
    progress.finish();
    checkpoint_log.finish();
    let restarts = monitor.control.checkpoints().map_or(0, |h| h.attempt());
    let recovery =
        crate::run_report::recovery_lines(&env_args.inject_failure, restarts, outcome.is_ok());
    let exec = match outcome {
        Ok(exec) => exec,
        Err(e) => {
            for line in &recovery {
                eprintln!("{line}");
            }
            // Only a stop-with-savepoint is a successful end; a cancel after some earlier
            // savepoint is a cancel.
            if let Some(path) = monitor.control.stopped_with_savepoint() {
                eprintln!("job stopped with savepoint {}", path.display());
                if !args.keep_rest {
                    // Keep answering for a moment so the client that asked can read the
                    // final status.
                    if rest.is_some() {
                        std::thread::sleep(Duration::from_secs(2));
                    }
                    return Ok(ExitCode::SUCCESS);
                }
            }
            if let (Some((server, _)), true) = (&rest, args.keep_rest) {
                // Keep serving so the failed or cancelled job's final state can be inspected.
                eprintln!("error: {e}");
                eprintln!(
                    "job ended; REST API still serving at http://{}/ — Ctrl-C to stop",
                    server.local_addr()
                );
                loop {
                    std::thread::park();
                }
            }
            return Err(e.into());
        }
    };
    let wall = t0.elapsed();
    let cpu_ns = match (cpu0, procstat::cpu_time_ns()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    // Every record enters through a source; sources publish their counts as they go.
    let records = monitor.records_emitted_by_sources();
    if let BuiltJob::Skew(j, Some(path)) = &job {
        j.write_csv(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let rate = records as f64 / wall.as_secs_f64().max(1e-9);
    let peak = procstat::peak_rss_kib();
    if args.stats_json {
        println!(
            "{{\"job\":\"{}\",\"records\":{},\"wall_ms\":{:.3},\"records_per_sec\":{:.0},\"cpu_ns_per_record\":{},\"peak_rss_kib\":{},\"startup_ms\":{},\"restarts\":{}}}",
            exec.graph.name,
            records,
            wall.as_secs_f64() * 1000.0,
            rate,
            cpu_ns.map(|c| format!("{:.1}", c as f64 / records.max(1) as f64)).unwrap_or("null".into()),
            peak.map(|p| p.to_string()).unwrap_or("null".into()),
            startup.map(|s| format!("{:.3}", s.as_secs_f64() * 1000.0)).unwrap_or("null".into()),
            restarts,
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
        }
        eprintln!(
            "{}: {} records in {:.3} s = {} records/s{}",
            exec.graph.name,
            records,
            wall.as_secs_f64(),
            human(rate),
            cpu_ns
                .map(|c| format!(", {:.1} CPU-ns/record", c as f64 / records.max(1) as f64))
                .unwrap_or_default()
        );
        match &job {
            BuiltJob::Skew(_, Some(path)) => eprintln!("final sums written to {}", path.display()),
            BuiltJob::Passthrough(p) => {
                eprintln!("the sink discarded {} records", p.discarded.count())
            }
            BuiltJob::Skew(_, None) => {}
            BuiltJob::Scenario(s) => eprintln!(
                "scenario {}: the sink received {} records",
                s.name,
                s.records_sunk()
            ),
        }
        for line in &recovery {
            eprintln!("{line}");
        }
    }
    if let (Some((server, _)), true) = (&rest, args.keep_rest) {
        eprintln!(
            "job ended; REST API still serving at http://{}/ — Ctrl-C to stop",
            server.local_addr()
        );
        loop {
            std::thread::park();
        }
    }
    Ok(ExitCode::SUCCESS)
}
