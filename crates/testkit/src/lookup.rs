//! The lookup test service (`sluice-lookup-service`, crate `sluice-lookup-service`) as a child
//! process on a free loopback port, stopped by PID when dropped.
//!
//! The binary belongs to another package, which cargo does not build for this crate's users, so
//! [`LookupService::binary`] builds it once per process with the `cargo` that runs the tests
//! (`SLUICE_LOOKUP_SERVICE` names a binary instead).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

pub use sluice_lookup_service::{Latency, ServiceOptions};

use crate::process::{free_port, stop};
use crate::TestkitError;

/// A running lookup service; stopped (by PID) when dropped.
pub struct LookupService {
    child: Child,
    port: u16,
}

static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

impl LookupService {
    /// The service binary: `SLUICE_LOOKUP_SERVICE`, else built with cargo beside the running
    /// test binary (`target/<profile>/sluice-lookup-service`).
    pub fn binary() -> Result<PathBuf, TestkitError> {
        if let Some(p) = std::env::var_os("SLUICE_LOOKUP_SERVICE") {
            return Ok(PathBuf::from(p));
        }
        BUILT
            .get_or_init(|| {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                // target/<profile>/deps/<test> → target/<profile>
                let dir = exe
                    .parent()
                    .and_then(|d| {
                        if d.ends_with("deps") {
                            d.parent()
                        } else {
                            Some(d)
                        }
                    })
                    .ok_or("no directory for the test binary")?
                    .to_path_buf();
                let release = dir.file_name().is_some_and(|n| n == "release");
                let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
                let mut cmd = Command::new(cargo);
                cmd.args([
                    "build",
                    "-q",
                    "-p",
                    "sluice-lookup-service",
                    "--bin",
                    "sluice-lookup-service",
                ]);
                if release {
                    cmd.arg("--release");
                }
                let out = cmd
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .output()
                    .map_err(|e| format!("running cargo: {e}"))?;
                if !out.status.success() {
                    return Err(String::from_utf8_lossy(&out.stderr).into_owned());
                }
                Ok(dir.join("sluice-lookup-service"))
            })
            .clone()
            .map_err(|detail| TestkitError::Failed {
                what: "building sluice-lookup-service".into(),
                detail,
            })
    }

    /// Starts the service with `opts`; returns once it listens.
    pub fn start(opts: &ServiceOptions) -> Result<Self, TestkitError> {
        let bin = Self::binary()?;
        let mut last = None;
        // A port can be taken between the probe and the bind; try a few.
        for _ in 0..5 {
            let port = free_port()?;
            let mut child = Command::new(&bin)
                .arg(format!("--port={port}"))
                .args(opts.to_args())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|source| TestkitError::Io {
                    what: format!("starting {}", bin.display()),
                    source,
                })?;
            // The binary prints one line once it listens, or exits with the reason.
            let mut line = String::new();
            if let Some(out) = child.stdout.take() {
                let _ = BufReader::new(out).read_line(&mut line);
            }
            if line.starts_with("listening on ") {
                return Ok(LookupService { child, port });
            }
            let mut err = String::new();
            if let Some(e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut BufReader::new(e), &mut err);
            }
            stop(&mut child, "TERM", Duration::from_secs(2));
            last = Some(TestkitError::Failed {
                what: "sluice-lookup-service".into(),
                detail: format!("did not start: {}", err.trim()),
            });
        }
        Err(last.unwrap_or(TestkitError::Failed {
            what: "sluice-lookup-service".into(),
            detail: "no attempt was made".into(),
        }))
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:PORT/lookup/{key}`: the URL template a lookup source takes.
    pub fn template(&self) -> String {
        format!("{}/lookup/{{key}}", self.url())
    }

    /// The port the service listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The service process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The service's request counters (`GET /stats`), as JSON text.
    pub fn stats(&self) -> Result<String, TestkitError> {
        use std::io::{Read, Write};
        let io = |source| TestkitError::Io {
            what: format!("GET {}/stats", self.url()),
            source,
        };
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).map_err(io)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(io)?;
        s.write_all(b"GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .map_err(io)?;
        let mut text = String::new();
        s.read_to_string(&mut text).map_err(io)?;
        Ok(text
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default())
    }
}

impl Drop for LookupService {
    fn drop(&mut self) {
        stop(&mut self.child, "TERM", Duration::from_secs(5));
    }
}
