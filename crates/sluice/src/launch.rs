//! [`launch`]: a user's program run as `sluice run` runs the built-in jobs, `--processes` and
//! `--autopilot` included.

use std::sync::Arc;

use sluice_datastream::StreamEnv;

use crate::processes::{self, Launcher};
use crate::run::summarize;
use crate::session::{Session, StartAutopilot};
use crate::{RunOptions, RunSummary, Say, SluiceError};

/// Runs the job `build` adds to an environment configured by `options`, as `sluice run` runs
/// the built-in jobs: with `--processes N` this process becomes the launcher of N copies of the
/// program (each runs `build` and the subtasks placed on it; `None` is returned once all ended
/// well), with `--process-index`/`--peers` it is one of them, and otherwise the job runs here
/// as [`crate::run`] runs it. `build` may run more than once (a plan change through the REST
/// API builds the job again). `--autopilot` runs [`crate::autopilot::start_default`] on it.
///
/// In a process of a split job, a job refused before it started is
/// [`SluiceError::Refused`]: exit with [`SluiceError::exit_code`] so the launcher does not
/// restart it.
pub fn launch<F>(options: &RunOptions, build: F) -> Result<Option<RunSummary>, SluiceError>
where
    F: Fn(&StreamEnv) -> Result<(), String> + Send + Sync + 'static,
{
    launch_with(options, build, Some(crate::autopilot::start_default))
}

/// [`launch`], with `autopilot` starting the autopilot's driver for `--autopilot` (`None`:
/// `--autopilot` is refused).
pub fn launch_with<F>(
    options: &RunOptions,
    build: F,
    autopilot: Option<StartAutopilot>,
) -> Result<Option<RunSummary>, SluiceError>
where
    F: Fn(&StreamEnv) -> Result<(), String> + Send + Sync + 'static,
{
    let procs = &options.processes;
    if procs.processes > 1 {
        let cfg = options.env.to_config()?;
        processes::launch(procs, &options.rest, &cfg, &Launcher::default())?;
        return Ok(None);
    }
    let placement = processes::join_peers(procs)?;
    let child = placement.is_some();
    let refused = move |e: SluiceError| {
        if child {
            SluiceError::Refused(e.to_string())
        } else {
            e
        }
    };
    let mut env = options.env.clone();
    procs.tune_metrics(&mut env);
    let cfg = env.to_config().map_err(refused)?;
    let announce = !options.quiet;
    let say = Say {
        rest: announce,
        checkpoints: announce,
    };
    let session = Session::start(
        Arc::new(build),
        cfg,
        &options.rest,
        procs,
        placement,
        say,
        autopilot,
    )
    .map_err(refused)?;
    let (outcome, finished) = session.wait();
    summarize(outcome, finished, options).map(Some)
}

impl SluiceError {
    /// The exit status a program ends with for this error: [`processes::REFUSED_EXIT`] for a
    /// refusal in a process of a split job (not restarted), 1 otherwise.
    pub fn exit_code(&self) -> std::process::ExitCode {
        match self {
            SluiceError::Refused(_) => std::process::ExitCode::from(processes::REFUSED_EXIT),
            _ => std::process::ExitCode::FAILURE,
        }
    }
}
