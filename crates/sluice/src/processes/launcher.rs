//! The launcher of `--processes N`: starts the processes, waits for them, stops them all when
//! one fails and restarts them from the latest checkpoint while the restart strategy allows.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_datastream::EnvConfig;

use super::child_output::{self, Stream};
use super::{ProcessArgs, LAUNCHER_PID, REFUSED_EXIT};
use crate::{RestArgs, SluiceError};

/// What the launcher adds for the program it re-runs, beyond [`ProcessArgs`] and [`RestArgs`].
#[derive(Clone, Debug, Default)]
pub struct Launcher {
    /// Flags given to every process but process 0 (e.g. `--no-progress`: one bar is enough).
    pub follower_flags: Vec<String>,
    /// Process 0 draws on the launcher's terminal (a progress bar): its stderr is left there
    /// when stderr is a terminal, instead of being forwarded line by line.
    pub leader_draws: bool,
}

/// The launcher's plan for a failed process: the whole job restarts, every process, from the
/// latest completed checkpoint (Flink's full restart), as often as the job's restart strategy
/// allows. Only a job that checkpoints restarts.
struct Restarts {
    strategy: sluice_runtime::checkpoint::RestartStrategy,
    /// Where the job's checkpoints are: `--checkpoint-dir`/job id.
    job_dir: PathBuf,
    started: Instant,
    failures_ms: Vec<i64>,
}

/// Runs the job over `args.processes` copies of this program (started with this run's arguments)
/// and waits for them all; restarts them all from the latest completed checkpoint when one fails
/// (Flink's full restart; only a job that checkpoints restarts). `cfg` is the job's configuration
/// (checked before any process starts): its checkpoint interval, directory and restart strategy
/// decide the restarts. Returns once every process ended well; files written per process
/// ([`super::part_path`]) are the caller's to merge.
pub fn launch(
    args: &ProcessArgs,
    rest: &RestArgs,
    cfg: &EnvConfig,
    launcher: &Launcher,
) -> Result<(), SluiceError> {
    let n = usize::from(args.processes);
    if rest.keep_rest {
        return Err(SluiceError::Processes(
            "--keep-rest cannot be used with --processes (the processes end with the job)".into(),
        ));
    }
    // One job id for every process and incarnation: the checkpoints' directory.
    let job_id = args.job_id.unwrap_or_else(|| {
        sluice_types::Id128::hash_of(
            format!(
                "{}:{:?}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
            )
            .as_bytes(),
        )
    });
    let mut restarts = cfg.checkpoints.interval.is_some().then(|| Restarts {
        strategy: cfg.restart_strategy(),
        job_dir: cfg
            .checkpoint_dir
            .clone()
            .unwrap_or_else(|| sluice_runtime::private_dir::default_dir("checkpoints"))
            .join(job_id.to_string()),
        started: Instant::now(),
        failures_ms: Vec::new(),
    });
    // SIGTERM, SIGINT or SIGHUP to the launcher stops every process (by PID) and waits for
    // them before it exits: nothing of the run, its REST port included, outlives it.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(SluiceError::setup(format!("handling signal {sig}")))?;
    }
    let exe = std::env::current_exe().map_err(SluiceError::setup(
        "finding this program's executable".into(),
    ))?;
    let mut base = arguments_without(&["--processes", "--job-id"]);
    base.extend(["--job-id".into(), job_id.to_string().into()]);
    let mut restarted = 0u32;
    let failed = |m: String| Err(SluiceError::Processes(m));
    loop {
        match run_processes(n, &exe, &base, rest, launcher, &stop)? {
            Outcome::Finished => break,
            Outcome::Stopped => {
                return failed(format!(
                    "stopped by a signal: all {n} processes were stopped and have exited"
                ))
            }
            Outcome::Failed(failure) => {
                if failure.refused {
                    return failed(format!(
                        "{failure}: the job was refused before it started, so it is not \
                         restarted; the others were stopped"
                    ));
                }
                let Some(r) = restarts.as_mut() else {
                    return failed(format!("{failure}; the others were stopped"));
                };
                r.failures_ms.push(r.started.elapsed().as_millis() as i64);
                let Some(delay) = r.strategy.decide(&r.failures_ms) else {
                    return failed(format!(
                        "{failure}; the others were stopped, and the restart strategy allows no \
                         more restarts ({restarted} so far)"
                    ));
                };
                let until = Instant::now() + delay;
                while Instant::now() < until {
                    if stop.load(Ordering::SeqCst) {
                        return failed(format!(
                            "{failure}; stopped by a signal before the restart"
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(20).min(delay));
                }
                restarted += 1;
                // From the latest completed checkpoint, or from the start if none completed;
                // `--inject-failure`s are one per attempt: the restarted processes get those
                // not used yet.
                base = arguments_without(&[
                    "--processes",
                    "--job-id",
                    "--from-checkpoint",
                    "--from-savepoint",
                    "--inject-failure",
                ]);
                base.extend(["--job-id".into(), job_id.to_string().into()]);
                for f in flag_values("--inject-failure")
                    .into_iter()
                    .skip(restarted as usize)
                {
                    base.extend(["--inject-failure".into(), f]);
                }
                let from = match sluice_runtime::checkpoint::storage::latest(&r.job_dir) {
                    Some(chk) => {
                        base.extend(["--from-checkpoint".into(), chk.clone().into()]);
                        chk.display().to_string()
                    }
                    None => "the start (no checkpoint had completed)".into(),
                };
                eprintln!(
                    "{failure}; restarting all {n} processes from {from} (restart {restarted})"
                );
            }
        }
    }
    if restarted > 0 {
        eprintln!(
            "the job restarted {restarted} times (every process, from its latest checkpoint)"
        );
    }
    Ok(())
}

/// The arguments of this run without the flags named in `drop` (each with its value): what
/// every process gets.
fn arguments_without(drop: &[&str]) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        let s = a.to_string_lossy();
        if drop.iter().any(|d| s == *d) {
            args.next();
        } else if !drop.iter().any(|d| s.starts_with(&format!("{d}="))) {
            out.push(a);
        }
    }
    out
}

/// The values given to flag `name` on this run's command line, in order.
fn flag_values(name: &str) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        let s = a.to_string_lossy();
        if s == name {
            out.extend(args.next());
        } else if let Some(v) = s.strip_prefix(&format!("{name}=")) {
            out.push(v.into());
        }
    }
    out
}

/// Why an incarnation of the job ended badly.
struct Failure {
    /// Every process that failed by itself, the first first.
    message: String,
    /// One was refused before its job started ([`REFUSED_EXIT`]).
    refused: bool,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// How an incarnation of the job ended.
enum Outcome {
    /// Every process exited successfully.
    Finished,
    /// One failed; the others were stopped.
    Failed(Failure),
    /// The launcher was told to stop (a signal); every process was stopped.
    Stopped,
}

/// One incarnation of the job: starts the N processes and waits for all, or stops them all
/// when one fails or `stop` is set. Returns once every line the processes wrote has been
/// forwarded (see [`child_output`]).
fn run_processes(
    n: usize,
    exe: &Path,
    base: &[OsString],
    rest: &RestArgs,
    launcher: &Launcher,
    stop: &AtomicBool,
) -> Result<Outcome, SluiceError> {
    let mut forwarders = Vec::with_capacity(2 * n);
    let ended = start_and_wait(n, exe, base, rest, launcher, stop, &mut forwarders);
    // Every process has exited or was killed and reaped: their pipes are at their end.
    for f in forwarders {
        let _ = f.join();
    }
    ended
}

fn start_and_wait(
    n: usize,
    exe: &Path,
    base: &[OsString],
    rest: &RestArgs,
    launcher: &Launcher,
    stop: &AtomicBool,
    forwarders: &mut Vec<std::thread::JoinHandle<()>>,
) -> Result<Outcome, SluiceError> {
    // Free loopback ports, one per process (released here, bound again by the processes).
    let peers = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0")?.local_addr())
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(SluiceError::setup("choosing the processes' ports".into()))?;
    let peer_list = peers
        .iter()
        .map(SocketAddr::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut children: Vec<Option<Child>> = Vec::with_capacity(n);
    // Process 0 draws the progress bar on a terminal: it keeps the launcher's stderr there.
    let bar_on_terminal = launcher.leader_draws && std::io::stderr().is_terminal();
    for i in 0..n {
        let mut cmd = Command::new(exe);
        cmd.env(LAUNCHER_PID, std::process::id().to_string())
            .args(base)
            .args(["--process-index", &i.to_string(), "--peers", &peer_list]);
        if i > 0 {
            if !rest.no_rest {
                cmd.arg("--no-rest");
            }
            cmd.args(&launcher.follower_flags);
        }
        cmd.stdout(Stdio::piped());
        if i > 0 || !bar_on_terminal {
            cmd.stderr(Stdio::piped());
        }
        match cmd.spawn() {
            Ok(mut c) => {
                if let Some(out) = c.stdout.take() {
                    forwarders.push(child_output::forward(out, i, Stream::Stdout));
                }
                if let Some(err) = c.stderr.take() {
                    forwarders.push(child_output::forward(err, i, Stream::Stderr));
                }
                children.push(Some(c));
            }
            Err(e) => {
                stop_all(&mut children);
                return Err(SluiceError::setup(format!("starting process {i}"))(e));
            }
        }
    }
    eprintln!("{n} processes started: {peer_list}");
    let mut left = n;
    while left > 0 {
        if stop.load(Ordering::SeqCst) {
            stop_all(&mut children);
            return Ok(Outcome::Stopped);
        }
        for i in 0..n {
            let Some(child) = children[i].as_mut() else {
                continue;
            };
            let status = child
                .try_wait()
                .map_err(SluiceError::setup(format!("waiting for process {i}")))?;
            if let Some(status) = status {
                children[i] = None;
                left -= 1;
                if !status.success() {
                    return Ok(Outcome::Failed(failure(i, n, status, &mut children)));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Outcome::Finished)
}

/// Process `i` exited with `status`: the others notice a lost peer and fail within moments, so
/// name every process that failed by itself, the first (often the killed one) first; then
/// stop the rest.
fn failure(
    i: usize,
    n: usize,
    status: std::process::ExitStatus,
    children: &mut [Option<Child>],
) -> Failure {
    let is_refused = |st: &std::process::ExitStatus| st.code() == Some(i32::from(REFUSED_EXIT));
    let mut refused = is_refused(&status);
    let mut failed = vec![format!("process {i} of {n} failed ({status})")];
    let grace = Instant::now() + Duration::from_millis(300);
    while Instant::now() < grace && children.iter().any(Option::is_some) {
        for (j, c) in children.iter_mut().enumerate() {
            if let Some(st) = c.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                *c = None;
                if !st.success() {
                    refused |= is_refused(&st);
                    failed.push(format!("process {j} failed ({st})"));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    stop_all(children);
    Failure {
        message: failed.join(", then "),
        refused,
    }
}

/// Stops every process still running (by PID) and reaps it.
fn stop_all(children: &mut [Option<Child>]) {
    for c in children.iter_mut().flatten() {
        let _ = c.kill();
        let _ = c.wait();
    }
}
