//! Running a job the way `sluice run` does: the REST API up, the job registered with it, the
//! checkpoint log followed on stderr, restarts counted, injected faults that did not fire named.
//! [`run`] does all of it in one call; [`Running`] is the same in steps, for a caller that shows
//! progress while the job runs (the CLI's progress bar).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_datastream::config::EnvConfig;
use sluice_datastream::{JobExecution, JobHandle, JobMonitor, StreamEnv};

use crate::live::{BuildFn, LiveJob};

use crate::checkpoint_log::CheckpointLog;
use crate::rest::{start_rest, RestApi};
use crate::{RestArgs, RunOptions, SluiceError};

/// What [`Running::start`] prints on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Say {
    /// The REST API's address and savepoint directory.
    pub rest: bool,
    /// The checkpoint directory, the restore point and every failed checkpoint.
    pub checkpoints: bool,
}

/// How the job was launched: once, or as a [`LiveJob`] that rebuilds itself for plan changes.
enum Launched {
    Plain(JobHandle),
    Live(Arc<LiveJob>),
}

/// A launched job with its REST API.
pub struct Running {
    launched: Launched,
    /// The first plan's monitor (a live job's plan changes replace it: see [`Running::monitor`]).
    monitor: Arc<JobMonitor>,
    rest: Option<RestApi>,
    log: CheckpointLog,
    faults: Vec<sluice_datastream::FaultSpec>,
    started: Instant,
}

impl Running {
    /// Starts the REST API (unless `--no-rest`), launches the job built on `env` and registers
    /// it with the API. `say` chooses what goes to stderr: the REST address, and the checkpoint
    /// log (directory, restore point, every failed checkpoint).
    pub fn start(env: &StreamEnv, rest: &RestArgs, say: Say) -> Result<Running, SluiceError> {
        let cfg = env.config();
        let announce = say.checkpoints;
        let rest = start_rest(rest, say.rest)?;
        let handle = env.launch()?;
        let monitor = handle.monitor();
        if let Some(api) = &rest {
            api.registry.register(monitor.clone());
        }
        let log = CheckpointLog::start(
            &monitor,
            cfg.checkpoints.interval.is_some() && announce,
            cfg.restore_from.as_deref().filter(|_| announce),
        );
        Ok(Running {
            launched: Launched::Plain(handle),
            monitor,
            rest,
            log,
            faults: cfg.faults.clone(),
            started: Instant::now(),
        })
    }

    /// Like [`Running::start`], for a job whose plan may change while it runs: the job is built
    /// by `build` on an environment with `cfg` and launched as a [`LiveJob`] registered with the
    /// REST API (so `POST /jobs/:jid/doctor/apply` and `PUT /jobs/:jid/resource-requirements`
    /// change it; savepoints for the changes go under the API's savepoint directory). Without
    /// the REST API it is launched like any job.
    pub fn start_live(
        build: BuildFn,
        cfg: EnvConfig,
        rest: &RestArgs,
        say: Say,
    ) -> Result<Running, SluiceError> {
        let announce = say.checkpoints;
        let Some(api) = start_rest(rest, say.rest)? else {
            let env = StreamEnv::with_config(cfg);
            build(&env).map_err(SluiceError::Config)?;
            return Running::start(&env, rest, say);
        };
        let job = LiveJob::start(
            build,
            cfg.clone(),
            api.server.savepoint_dir().to_path_buf(),
            Some(api.registry.clone()),
        )?;
        let monitor = job.monitor();
        let log = CheckpointLog::start(
            &monitor,
            cfg.checkpoints.interval.is_some() && announce,
            cfg.restore_from.as_deref().filter(|_| announce),
        );
        Ok(Running {
            launched: Launched::Live(job),
            monitor,
            rest: Some(api),
            log,
            faults: cfg.faults.clone(),
            started: Instant::now(),
        })
    }

    /// The live view of the job (metrics, checkpoints, control): the first plan's. A live
    /// job's plan changes replace it; [`Running::current_monitor`] is the plan running now.
    pub fn monitor(&self) -> &Arc<JobMonitor> {
        &self.monitor
    }

    /// The monitor of the plan running now (a live job's newest plan).
    pub fn current_monitor(&self) -> Arc<JobMonitor> {
        match &self.launched {
            Launched::Plain(_) => self.monitor.clone(),
            Launched::Live(j) => j.monitor(),
        }
    }

    /// Where the REST API listens, when it runs.
    pub fn rest_addr(&self) -> Option<std::net::SocketAddr> {
        self.rest.as_ref().map(|r| r.server.local_addr())
    }

    /// The job has ended (finished, failed or cancelled).
    pub fn is_finished(&self) -> bool {
        match &self.launched {
            Launched::Plain(h) => h.is_finished(),
            Launched::Live(j) => j.is_finished(),
        }
    }

    /// Cancels the job (as `PATCH /jobs/:id` does); [`Running::wait`] then returns.
    pub fn cancel(&self) {
        match &self.launched {
            Launched::Plain(h) => h.cancel(),
            Launched::Live(j) => j.cancel(),
        }
    }

    /// Waits for the job to end: finished, failed past its restart strategy, cancelled or
    /// stopped with a savepoint. Returns the execution (per-vertex counts, hot keys, dead
    /// letters) or why the job ended otherwise, and the run's figures.
    pub fn wait(self) -> (Result<JobExecution, SluiceError>, Finished) {
        let (outcome, monitor, records) = match self.launched {
            Launched::Plain(h) => {
                let outcome = h.wait().map_err(SluiceError::from);
                let records = self.monitor.records_emitted_by_sources();
                (outcome, self.monitor, records)
            }
            Launched::Live(j) => {
                let outcome = j.wait();
                (outcome, j.monitor(), j.records_emitted())
            }
        };
        self.log.finish();
        let restarts = monitor.control.checkpoints().map_or(0, |h| h.attempt());
        let recovery = crate::run_report::recovery_lines(&self.faults, restarts, outcome.is_ok());
        let savepoint = monitor
            .control
            .stopped_with_savepoint()
            .map(|p| p.to_path_buf());
        let finished = Finished {
            savepoint,
            restarts,
            recovery,
            wall: self.started.elapsed(),
            records,
            monitor,
            rest: self.rest,
        };
        (outcome, finished)
    }
}

/// A job that ended, with what `sluice run`'s summary reports.
pub struct Finished {
    /// Set when the job was stopped with a savepoint (the outcome is then a cancellation).
    pub savepoint: Option<PathBuf>,
    /// Restarts after failures.
    pub restarts: u64,
    /// Lines about restarts and injected failures that did not fire.
    pub recovery: Vec<String>,
    /// From the start to the end.
    pub wall: Duration,
    /// Records the sources emitted (over all plans of a live job).
    pub records: u64,
    /// The job's metrics and status.
    pub monitor: Arc<JobMonitor>,
    rest: Option<RestApi>,
}

impl Finished {
    /// Where the REST API listens, when it runs.
    pub fn rest_addr(&self) -> Option<std::net::SocketAddr> {
        self.rest.as_ref().map(|r| r.server.local_addr())
    }

    /// Keeps the REST API answering (the job's final state and metrics) until the process is
    /// killed; returns at once when there is none.
    pub fn serve_forever(&self) {
        if let Some(addr) = self.rest_addr() {
            eprintln!("job ended; REST API still serving at http://{addr}/ — Ctrl-C to stop");
            loop {
                std::thread::park();
            }
        }
    }

    /// After a stop-with-savepoint, keep answering for a moment so the client that asked can
    /// read the final status.
    pub fn linger_for_savepoint_client(&self) {
        if self.rest.is_some() {
            std::thread::sleep(Duration::from_secs(2));
        }
    }
}

/// What [`run`] returns when the job ended well.
#[derive(Debug)]
pub struct RunSummary {
    /// `None` when the job was stopped with a savepoint.
    pub execution: Option<JobExecution>,
    /// The savepoint the job was stopped with, if it was.
    pub savepoint: Option<PathBuf>,
    /// Restarts after failures.
    pub restarts: u64,
    /// Records the sources emitted.
    pub records: u64,
    /// From the start to the end.
    pub wall: Duration,
}

/// Runs the job built on `env` as `sluice run` runs the built-in jobs: the REST API and
/// dashboard on `--rest-address:--rest-port` (Flink's paths, the doctor at
/// `/jobs/:id/doctor`, savepoints under `--savepoint-dir`), checkpoints, restarts and restore
/// as the flags in `options` set them (build `env` with [`RunOptions::stream_env`]), the
/// checkpoint log and a summary on stderr unless `--quiet`, and with `--keep-rest` the API kept
/// up after the job ends. A job stopped with a savepoint ends well, with the savepoint's path.
pub fn run(env: StreamEnv, options: &RunOptions) -> Result<RunSummary, SluiceError> {
    let announce = !options.quiet;
    let say = Say {
        rest: announce,
        checkpoints: announce,
    };
    let running = Running::start(&env, &options.rest, say)?;
    let (outcome, finished) = running.wait();
    summarize(outcome, finished, options)
}

/// What [`run`] says and returns once the job ended (shared with [`crate::launch`]).
pub(crate) fn summarize(
    outcome: Result<JobExecution, SluiceError>,
    finished: Finished,
    options: &RunOptions,
) -> Result<RunSummary, SluiceError> {
    let announce = !options.quiet;
    if announce {
        for line in &finished.recovery {
            eprintln!("{line}");
        }
    }
    let keep = options.rest.keep_rest;
    match &outcome {
        Ok(exec) => {
            if announce {
                for v in &exec.result.vertices {
                    eprintln!(
                        "  {:<50} p={:<3} records in {:>12}  out {:>12}",
                        v.name, v.parallelism, v.records_in, v.records_out
                    );
                }
                if exec.result.dead_letters > 0 {
                    eprintln!("  dead letters: {}", exec.result.dead_letters);
                }
                eprintln!(
                    "{}: {} records in {:.3} s",
                    exec.graph.name,
                    finished.records,
                    finished.wall.as_secs_f64()
                );
            }
        }
        Err(_) if finished.savepoint.is_some() => {
            if announce {
                if let Some(p) = &finished.savepoint {
                    eprintln!("job stopped with savepoint {}", p.display());
                }
            }
            if !keep {
                finished.linger_for_savepoint_client();
            }
        }
        Err(e) => {
            if keep {
                eprintln!("error: {e}");
                finished.serve_forever();
            }
        }
    }
    if keep {
        finished.serve_forever();
    }
    let Finished {
        savepoint,
        restarts,
        records,
        wall,
        ..
    } = finished;
    let execution = match (outcome, &savepoint) {
        (Ok(exec), _) => Some(exec),
        (Err(_), Some(_)) => None,
        (Err(e), None) => return Err(e),
    };
    Ok(RunSummary {
        execution,
        savepoint,
        restarts,
        records,
        wall,
    })
}
