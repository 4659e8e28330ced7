//! `sluice run … --processes N`: the job over N local processes.
//!
//! The launcher ([`launch`]) picks a loopback port per process and starts N copies of this
//! binary with the same arguments plus the process's index and every process's address
//! (hidden flags `--process-index`, `--peers`). Each connects its [`NetEndpoint`] to the
//! others ([`join`]), builds the same job and runs the subtasks placed on it (see
//! `sluice_graph::placement`). Process 0 serves the REST API. The launcher waits for all: if
//! one fails it stops the others (by PID) and, for a job that checkpoints, starts them all
//! again from the latest completed checkpoint as long as the job's restart strategy allows
//! (Flink's full restart; all share one `--job-id`, so their checkpoints are in one place),
//! else fails naming it; a skew job's `--output` is then the merge of the processes' parts
//! (`FILE.process-I`, removed after).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use sluice_graph::{NetEndpoint, Placement};

use crate::args::RunArgs;
use crate::child_output::{self, Stream};
use crate::run::{build_job, write_csv, BuiltJob};

/// How long a process waits for the connections to every other.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// The part of a skew job's `--output` that process `index` writes.
pub fn part_path(path: &Path, index: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".process-{index}"));
    PathBuf::from(s)
}

/// The exit status of a process whose job was refused before it started (a bad flag, an
/// invalid job, an unreachable output): the same on every restart, so the launcher does not
/// restart it.
pub const REFUSED_EXIT: u8 = 3;

/// An error of a job refused before it started ([`REFUSED_EXIT`]).
#[derive(Debug)]
pub struct Refused(pub anyhow::Error);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for Refused {}

/// Marks `e` as a refusal before the start (see [`REFUSED_EXIT`]).
pub fn refused(e: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(Refused(e))
}

/// Set by the launcher in the processes it starts: its PID, which they exit without.
const LAUNCHER_PID: &str = "SLUICE_LAUNCHER_PID";

/// In a process the launcher started: exits when the launcher is gone (killed, even by
/// SIGKILL, which it cannot forward), so no process of a run outlives it.
fn exit_with_launcher(process: usize) {
    let Some(launcher) = std::env::var(LAUNCHER_PID)
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return;
    };
    let watch = move || loop {
        if std::os::unix::process::parent_id() != launcher {
            // Not `eprintln!`: the launcher read this process's stderr, so that pipe is
            // broken now and `eprintln!` would panic this thread instead of exiting.
            let _ = writeln!(
                std::io::stderr(),
                "process {process}: its launcher (PID {launcher}) is gone; exiting"
            );
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if let Err(e) = std::thread::Builder::new()
        .name("launcher-watch".into())
        .spawn(watch)
    {
        eprintln!("process {process}: cannot watch its launcher: {e}");
    }
}

/// `--process-index`: a number, or the pod ordinal in the hostname.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessIndex {
    Fixed(usize),
    FromHostname,
}

pub fn parse_process_index(s: &str) -> Result<ProcessIndex, String> {
    if s == "from-hostname" {
        return Ok(ProcessIndex::FromHostname);
    }
    s.parse()
        .map(ProcessIndex::Fixed)
        .map_err(|_| format!("'{s}' is neither a process index (0, 1, ...) nor 'from-hostname'"))
}

/// The ordinal at the end of a StatefulSet pod's hostname (`sluice-2` → 2).
fn ordinal_of(hostname: &str) -> anyhow::Result<usize> {
    hostname
        .trim()
        .rsplit_once('-')
        .and_then(|(_, n)| n.parse().ok())
        .with_context(|| {
            format!(
                "--process-index from-hostname: the hostname '{}' does not end in -N",
                hostname.trim()
            )
        })
}

fn hostname() -> anyhow::Result<String> {
    if let Ok(h) = std::env::var("HOSTNAME") {
        if !h.trim().is_empty() {
            return Ok(h);
        }
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname").context("reading the hostname")
}

/// Resolves `peer` (HOST:PORT), retrying until `deadline`: peers' names may not resolve yet.
fn resolve(peer: &str, deadline: Instant) -> anyhow::Result<SocketAddr> {
    loop {
        // IPv4 first (the launcher's and a Service's addresses), else whatever it resolves to;
        // one lookup either way.
        let found = peer.to_socket_addrs().map(|a| {
            let all: Vec<SocketAddr> = a.collect();
            all.iter().find(|a| a.is_ipv4()).or(all.first()).copied()
        });
        match found {
            Ok(Some(a)) => return Ok(a),
            Ok(None) | Err(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200))
            }
            Ok(None) => anyhow::bail!("--peers: '{peer}' resolves to no address"),
            Err(e) => anyhow::bail!("--peers: cannot resolve '{peer}': {e}"),
        }
    }
}

/// Process `index` of `peers`: binds its address (its port on every interface when the
/// address is a name) and connects to every other process.
///
/// Every connection carries heartbeats every fifth of `heartbeat_timeout`; a peer silent for
/// that long is lost (Flink's `heartbeat.interval` / `heartbeat.timeout`).
pub fn join(
    index: ProcessIndex,
    peers: &[String],
    heartbeat_timeout: Duration,
) -> anyhow::Result<Placement> {
    let index = match index {
        ProcessIndex::Fixed(i) => i,
        ProcessIndex::FromHostname => ordinal_of(&hostname()?)?,
    };
    exit_with_launcher(index);
    let Some(own) = peers.get(index) else {
        anyhow::bail!(
            "--process-index {index} is not below the number of --peers ({})",
            peers.len()
        );
    };
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let addrs = peers
        .iter()
        .map(|p| resolve(p, deadline))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bind = match own
        .rsplit_once(':')
        .map(|(h, _)| h.parse::<std::net::IpAddr>())
    {
        Some(Ok(_)) => addrs[index],
        _ => SocketAddr::from(([0, 0, 0, 0], addrs[index].port())),
    };
    let listener = TcpListener::bind(bind).with_context(|| format!("binding {bind}"))?;
    let liveness = sluice_graph::Liveness {
        heartbeat_interval: heartbeat_timeout / 5,
        timeout: heartbeat_timeout,
    };
    let endpoint = NetEndpoint::start_with(index, &addrs, listener, CONNECT_TIMEOUT, liveness)
        .with_context(|| format!("process {index} connecting to its peers"))?;
    Ok(Placement {
        process: index,
        processes: peers.len(),
        endpoint,
    })
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

/// Starts the processes, waits for them and merges a skew job's output; restarts them all
/// from the latest checkpoint when one fails (see [`Restarts`]).
pub fn launch(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let n = usize::from(args.processes);
    if args.rest.keep_rest {
        anyhow::bail!(
            "--keep-rest cannot be used with --processes (the processes end with the job)"
        );
    }
    // Checks the command line (and the output file) before any process starts.
    let (env, job, _) = build_job(&args.job)?;
    let output = match &job {
        BuiltJob::Skew(_, Some(path), _) => {
            crate::preflight::output_file(path, "--output")?;
            Some(path.clone())
        }
        _ => None,
    };
    drop(job);
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
    let cfg = env.config();
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
    drop(env);
    // SIGTERM, SIGINT or SIGHUP to the launcher stops every process (by PID) and waits for
    // them before it exits: nothing of the run, its REST port included, outlives it.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .with_context(|| format!("handling signal {sig}"))?;
    }
    let exe = std::env::current_exe()?;
    let mut base = arguments_without(&["--processes", "--job-id"]);
    base.extend(["--job-id".into(), job_id.to_string().into()]);
    let mut restarted = 0u32;
    loop {
        match run_processes(n, &exe, &base, args, &stop)? {
            Outcome::Finished => break,
            Outcome::Stopped => {
                anyhow::bail!("stopped by a signal: all {n} processes were stopped and have exited")
            }
            Outcome::Failed(failure) => {
                if failure.refused {
                    anyhow::bail!(
                        "{failure}: the job was refused before it started, so it is not \
                         restarted; the others were stopped"
                    );
                }
                let Some(r) = restarts.as_mut() else {
                    anyhow::bail!("{failure}; the others were stopped");
                };
                r.failures_ms.push(r.started.elapsed().as_millis() as i64);
                let Some(delay) = r.strategy.decide(&r.failures_ms) else {
                    anyhow::bail!(
                        "{failure}; the others were stopped, and the restart strategy allows no \
                         more restarts ({restarted} so far)"
                    );
                };
                let until = Instant::now() + delay;
                while Instant::now() < until {
                    if stop.load(Ordering::SeqCst) {
                        anyhow::bail!("{failure}; stopped by a signal before the restart");
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
    if let Some(path) = output {
        let mut all = BTreeMap::new();
        for i in 0..n {
            let part = part_path(&path, i);
            read_part(&part, &mut all)?;
            std::fs::remove_file(&part).with_context(|| format!("removing {}", part.display()))?;
        }
        write_csv(&path, &all).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "final sums of the {n} processes ({} keys) written to {}",
            all.len(),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
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
    args: &RunArgs,
    stop: &AtomicBool,
) -> anyhow::Result<Outcome> {
    let mut forwarders = Vec::with_capacity(2 * n);
    let ended = start_and_wait(n, exe, base, args, stop, &mut forwarders);
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
    args: &RunArgs,
    stop: &AtomicBool,
    forwarders: &mut Vec<std::thread::JoinHandle<()>>,
) -> anyhow::Result<Outcome> {
    // Free loopback ports, one per process (released here, bound again by the processes).
    let peers = (0..n)
        .map(|_| -> anyhow::Result<SocketAddr> {
            Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .context("choosing the processes' ports")?;
    let peer_list = peers
        .iter()
        .map(SocketAddr::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut children: Vec<Option<Child>> = Vec::with_capacity(n);
    // Process 0 draws the progress bar on a terminal: it keeps the launcher's stderr there.
    let bar_on_terminal = !args.no_progress && std::io::stderr().is_terminal();
    for i in 0..n {
        let mut cmd = Command::new(exe);
        cmd.env(LAUNCHER_PID, std::process::id().to_string())
            .args(base)
            .args(["--process-index", &i.to_string(), "--peers", &peer_list]);
        if i > 0 {
            if !args.rest.no_rest {
                cmd.arg("--no-rest");
            }
            if !args.no_progress {
                cmd.arg("--no-progress");
            }
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
                return Err(e).context(format!("starting process {i}"));
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
            if let Some(status) = child.try_wait()? {
                children[i] = None;
                left -= 1;
                if !status.success() {
                    // The others notice a lost peer and fail within moments: name every
                    // process that failed by itself, the first (often the killed one) first.
                    let is_refused =
                        |st: &std::process::ExitStatus| st.code() == Some(i32::from(REFUSED_EXIT));
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
                    stop_all(&mut children);
                    return Ok(Outcome::Failed(Failure {
                        message: failed.join(", then "),
                        refused,
                    }));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Outcome::Finished)
}

/// Stops every process still running (by PID) and reaps it.
fn stop_all(children: &mut [Option<Child>]) {
    for c in children.iter_mut().flatten() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Adds a process's `key,sum` part to `all` (a key in two parts is an error: each key is
/// summed by exactly one subtask).
fn read_part(part: &Path, all: &mut BTreeMap<i64, i64>) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(part).with_context(|| format!("reading {}", part.display()))?;
    for (n, line) in text.lines().enumerate().skip(1) {
        let bad = || format!("{}:{}: not `key,sum`: {line}", part.display(), n + 1);
        let (k, s) = line.split_once(',').with_context(bad)?;
        let (k, s): (i64, i64) = (k.parse().with_context(bad)?, s.parse().with_context(bad)?);
        if all.insert(k, s).is_some() {
            anyhow::bail!("key {k} was summed by two processes ({})", part.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_indexes_parse_and_ordinals_come_from_the_hostname() {
        assert_eq!(parse_process_index("3"), Ok(ProcessIndex::Fixed(3)));
        assert_eq!(
            parse_process_index("from-hostname"),
            Ok(ProcessIndex::FromHostname)
        );
        assert!(parse_process_index("x").unwrap_err().contains("'x'"));
        assert_eq!(ordinal_of("sluice-2\n").unwrap(), 2);
        assert_eq!(ordinal_of("my-job-tm-10").unwrap(), 10);
        let e = ordinal_of("laptop").unwrap_err().to_string();
        assert!(e.contains("'laptop'"), "{e}");
    }

    #[test]
    fn a_peer_that_never_resolves_is_an_error_naming_it() {
        let e = resolve("no-such-host.invalid:6121", Instant::now())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no-such-host.invalid:6121"), "{e}");
    }
}
