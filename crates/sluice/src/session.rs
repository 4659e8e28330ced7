//! One process's run of a job as `sluice run` runs it: joined to the other processes of a split
//! job, started live (its plan may change while it runs), with the autopilot on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice_datastream::{EnvConfig, JobExecution, Placement, StreamEnv};

use crate::live::BuildFn;
use crate::processes::ProcessArgs;
use crate::{EnvArgs, Finished, RestArgs, Running, Say, SluiceError};

/// Starts the autopilot on a running job through its REST API (`url`, the bearer `token` of
/// `--rest-token`, the job's id) and returns what stops it (after its current step, waiting
/// for it). The seam to the autopilot's driver, which lives outside this crate.
pub type StartAutopilot = fn(url: &str, token: Option<String>, job_id: String) -> AutopilotStop;

/// Stops a running autopilot and waits for it (see [`StartAutopilot`]).
pub type AutopilotStop = Box<dyn FnOnce() + Send>;

/// The metric settings `--autopilot` runs with unless others are given: Flink's defaults (a
/// 5 s interval, rates averaged over 60 s) would make the autopilot's 5 s windows compare
/// minute averages, so "after" would still be mostly "before".
const AUTOPILOT_METRICS_INTERVAL: f64 = 0.2;
const AUTOPILOT_METRICS_WINDOW: f64 = 1.0;

impl ProcessArgs {
    /// With `--autopilot` and the metric flags at their defaults: metrics every 0.2 s over 1 s,
    /// so the autopilot's windows see the job as it is now (said on stderr).
    pub fn tune_metrics(&self, env: &mut EnvArgs) {
        if !self.autopilot {
            return;
        }
        if (env.metrics_interval, env.metrics_window) == EnvArgs::default_metrics() {
            env.metrics_interval = AUTOPILOT_METRICS_INTERVAL;
            env.metrics_window = AUTOPILOT_METRICS_WINDOW;
            eprintln!(
                "autopilot: metrics every {AUTOPILOT_METRICS_INTERVAL} s over a \
                 {AUTOPILOT_METRICS_WINDOW} s window, so its windows see the job as it is now \
                 (--metrics-interval / --metrics-window to choose others)"
            );
        }
    }
}

/// A job running in this process: alone, or as one process of a split job.
pub struct Session {
    running: Running,
    placement: Option<Placement>,
    autopilot: Option<AutopilotStop>,
}

impl Session {
    /// Starts the job `build` builds, live ([`Running::start_live`]) with `cfg` (its job id
    /// from `--job-id` when given), placed on this process's slots when `placement` is given
    /// (see [`crate::processes::join_peers`]), and with the autopilot when `--autopilot` asks
    /// for it (started by `autopilot`; without one, `--autopilot` is refused).
    pub fn start(
        build: BuildFn,
        mut cfg: EnvConfig,
        rest: &RestArgs,
        procs: &ProcessArgs,
        placement: Option<Placement>,
        say: Say,
        autopilot: Option<StartAutopilot>,
    ) -> Result<Session, SluiceError> {
        if let Some(id) = procs.job_id {
            cfg.job_id = Some(id);
        }
        if procs.autopilot && autopilot.is_none() {
            return Err(SluiceError::Config(
                "--autopilot: this program has no autopilot to run".into(),
            ));
        }
        let build = match &placement {
            None => build,
            Some(p) => placed(build, p.clone()),
        };
        let running = Running::start_live(build, cfg, rest, say)?;
        let autopilot = match (
            procs.autopilot.then_some(autopilot).flatten(),
            running.rest_addr(),
        ) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(SluiceError::Config(
                    "--autopilot needs the REST API (drop --no-rest)".into(),
                ))
            }
            (Some(start), Some(addr)) => Some(start(
                &format!("http://{addr}"),
                rest.rest_token.clone(),
                running.monitor().job_id.to_string(),
            )),
        };
        Ok(Session {
            running,
            placement,
            autopilot,
        })
    }

    /// The running job (its monitor, whether it finished).
    pub fn running(&self) -> &Running {
        &self.running
    }

    /// This process's place in a split job.
    pub fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    /// Waits for the job to end ([`Running::wait`]) and stops the autopilot. A process of a
    /// split job whose part ended well tells its peers, so they do not take its exit for a loss.
    pub fn wait(self) -> (Result<JobExecution, SluiceError>, Finished) {
        let (outcome, finished) = self.running.wait();
        if let Some(stop) = self.autopilot {
            stop();
        }
        if let (Ok(_), Some(p)) = (&outcome, &self.placement) {
            p.endpoint.shutdown();
        }
        (outcome, finished)
    }
}

/// `build`, placing the job on this process's slots. A plan change builds the job again: its
/// channels to the other processes would be opened a second time, and the other processes
/// would not change, so a second build is refused.
fn placed(build: BuildFn, placement: Placement) -> BuildFn {
    let built_once = AtomicBool::new(false);
    Arc::new(move |env: &StreamEnv| {
        if built_once.swap(true, Ordering::Relaxed) {
            return Err(
                "plan changes of a job split over processes are not supported \
                        yet (each process would have to change with it)"
                    .into(),
            );
        }
        env.set_placement(placement.clone());
        build(env)
    })
}
