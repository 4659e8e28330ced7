//! One process of a split job: finds its index, resolves its peers and connects to them.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::time::{Duration, Instant};

use sluice_datastream::{NetEndpoint, Placement};

use super::{ProcessArgs, ProcessIndex, LAUNCHER_PID};
use crate::SluiceError;

/// How long a process waits for the connections to every other.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// This process's place in a split job when `--process-index` is given (connected to every
/// other process before the job is built), `None` for a job that runs in one process.
pub fn join_peers(args: &ProcessArgs) -> Result<Option<Placement>, SluiceError> {
    match args.process_index {
        Some(i) => join(i, &args.peers, args.heartbeat_timeout()).map(Some),
        None => Ok(None),
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
) -> Result<Placement, SluiceError> {
    let index = match index {
        ProcessIndex::Fixed(i) => i,
        ProcessIndex::FromHostname => ordinal_of(&hostname()?)?,
    };
    exit_with_launcher(index);
    let Some(own) = peers.get(index) else {
        return Err(SluiceError::Processes(format!(
            "--process-index {index} is not below the number of --peers ({})",
            peers.len()
        )));
    };
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let addrs = peers
        .iter()
        .map(|p| resolve(p, deadline))
        .collect::<Result<Vec<_>, _>>()?;
    let bind = match own
        .rsplit_once(':')
        .map(|(h, _)| h.parse::<std::net::IpAddr>())
    {
        Some(Ok(_)) => addrs[index],
        _ => SocketAddr::from(([0, 0, 0, 0], addrs[index].port())),
    };
    let listener =
        TcpListener::bind(bind).map_err(SluiceError::setup(format!("binding {bind}")))?;
    let liveness = sluice_datastream::Liveness {
        heartbeat_interval: heartbeat_timeout / 5,
        timeout: heartbeat_timeout,
    };
    let endpoint = NetEndpoint::start_with(index, &addrs, listener, CONNECT_TIMEOUT, liveness)
        .map_err(SluiceError::setup(format!(
            "process {index} connecting to its peers"
        )))?;
    Ok(Placement {
        process: index,
        processes: peers.len(),
        endpoint,
    })
}

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

/// The ordinal at the end of a StatefulSet pod's hostname (`sluice-2` → 2).
fn ordinal_of(hostname: &str) -> Result<usize, SluiceError> {
    hostname
        .trim()
        .rsplit_once('-')
        .and_then(|(_, n)| n.parse().ok())
        .ok_or_else(|| {
            SluiceError::Processes(format!(
                "--process-index from-hostname: the hostname '{}' does not end in -N",
                hostname.trim()
            ))
        })
}

fn hostname() -> Result<String, SluiceError> {
    if let Ok(h) = std::env::var("HOSTNAME") {
        if !h.trim().is_empty() {
            return Ok(h);
        }
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_err(SluiceError::setup("reading the hostname".into()))
}

/// Resolves `peer` (HOST:PORT), retrying until `deadline`: peers' names may not resolve yet.
fn resolve(peer: &str, deadline: Instant) -> Result<SocketAddr, SluiceError> {
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
            Ok(None) => {
                return Err(SluiceError::Processes(format!(
                    "--peers: '{peer}' resolves to no address"
                )))
            }
            Err(e) => {
                return Err(SluiceError::Processes(format!(
                    "--peers: cannot resolve '{peer}': {e}"
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_come_from_the_hostname() {
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
