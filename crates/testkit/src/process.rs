//! Child-process plumbing shared by the servers: free ports, readiness polling, stop by PID.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::TestkitError;

/// A loopback port that was free a moment ago (the kernel's pick for port 0).
pub fn free_port() -> Result<u16, TestkitError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|source| TestkitError::Io {
        what: "binding 127.0.0.1:0 to find a free port".into(),
        source,
    })?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|source| TestkitError::Io {
            what: "reading the free port".into(),
            source,
        })
}

/// Polls until `ready()` holds, the child exits, or `deadline` passes.
pub(crate) fn wait_ready(
    what: &str,
    child: &mut Child,
    log: &Path,
    deadline: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), TestkitError> {
    let start = Instant::now();
    loop {
        if ready() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(TestkitError::Failed {
                what: what.to_string(),
                detail: format!(
                    "exited with {status} before it was ready; its log:\n{}",
                    tail(log)
                ),
            });
        }
        if start.elapsed() > deadline {
            return Err(TestkitError::NotReady {
                what: what.to_string(),
                secs: deadline.as_secs(),
                log: tail(log),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn accepts(port: u16) -> bool {
    accepts_at(std::net::IpAddr::from([127, 0, 0, 1]), port)
}

pub(crate) fn accepts_at(host: std::net::IpAddr, port: u16) -> bool {
    TcpStream::connect_timeout(
        &std::net::SocketAddr::from((host, port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

/// Sends `signal` (a `kill` name, e.g. `INT`) to `pid`, waits up to `grace` for the child to
/// exit, then kills it. Through the `kill` command: no `unsafe` in this crate.
pub(crate) fn stop(child: &mut Child, signal: &str, grace: Duration) {
    let pid = child.id().to_string();
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status();
    let start = Instant::now();
    while start.elapsed() < grace {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

pub(crate) fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

pub(crate) fn log_file(path: &Path) -> Result<std::fs::File, TestkitError> {
    std::fs::File::create(path).map_err(|source| TestkitError::Io {
        what: format!("creating {}", path.display()),
        source,
    })
}
