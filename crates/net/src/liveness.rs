//! How a connection's peer is known to be alive. A peer that vanishes without closing its
//! connection (a network partition, a host gone, a process stopped by SIGSTOP) sends no reset:
//! without a rule of its own, this process would wait for it forever.
//!
//! Two rules, as Flink has:
//! - every connection has TCP keepalive on (`keepalive`): the kernel probes an idle
//!   connection and ends it when a vanished host stops answering;
//! - heartbeats ([`Liveness`]): each side of a connection sends a `Heartbeat` frame every
//!   interval, and its reader reads with a deadline: nothing at all arriving (no frame, not even
//!   a heartbeat) for the timeout makes the peer lost. This also catches a peer whose kernel
//!   still answers but whose process does not (SIGSTOP, a hung process), which keepalive cannot.
//!   A lost peer's connection is cut, so a writer blocked on it (its buffers full) wakes.

use std::net::TcpStream;
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};

use crate::NetError;

/// Keepalive: the first probe after this long without traffic (Flink's Netty sets none and
/// relies on the OS's 2 hours; this is shorter, as a partition should fail a job in minutes).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// Keepalive: between unanswered probes.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// Keepalive: unanswered probes before the kernel ends the connection (10 s + 3 × 5 s).
const KEEPALIVE_PROBES: u32 = 3;

/// Turns TCP keepalive on for `stream` (see the module's doc).
pub(crate) fn keepalive(stream: &TcpStream) -> Result<(), NetError> {
    let params = TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_PROBES);
    SockRef::from(stream).set_tcp_keepalive(&params)?;
    Ok(())
}

/// Whether a read failed because its deadline passed (`WouldBlock` on Unix, `TimedOut` on
/// Windows, for a socket with a read timeout).
pub(crate) fn is_deadline(e: &NetError) -> bool {
    matches!(e, NetError::Io(io) if matches!(
        io.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ))
}

/// The liveness rule of every connection of an endpoint (Flink's heartbeat settings): each
/// side sends a heartbeat every `heartbeat_interval`, and a connection on which nothing at all
/// arrived for `timeout` is a lost peer (its reader reports it, and the job fails).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Liveness {
    /// Flink's `heartbeat.interval` (10 s).
    pub heartbeat_interval: Duration,
    /// Flink's `heartbeat.timeout` (50 s): how long a silent peer goes unnoticed at most.
    pub timeout: Duration,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            heartbeat_interval: Duration::from_secs(10),
            timeout: Duration::from_secs(50),
        }
    }
}

impl Liveness {
    /// Refuses settings under which a live peer would be declared lost: the timeout must leave
    /// room for at least two heartbeats.
    pub fn validate(&self) -> Result<(), NetError> {
        if self.heartbeat_interval.is_zero() || self.timeout < self.heartbeat_interval * 2 {
            return Err(NetError::Config(format!(
                "heartbeat timeout {:?} must be at least twice the heartbeat interval {:?} \
                 (and the interval above zero)",
                self.timeout, self.heartbeat_interval
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepalive_is_on_with_the_short_settings() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        keepalive(&s).unwrap();
        let r = SockRef::from(&s);
        assert!(r.keepalive().unwrap());
        assert_eq!(r.tcp_keepalive_time().unwrap(), KEEPALIVE_IDLE);
        assert_eq!(r.tcp_keepalive_interval().unwrap(), KEEPALIVE_INTERVAL);
        assert_eq!(r.tcp_keepalive_retries().unwrap(), KEEPALIVE_PROBES);
    }
}
