//! A throwaway PostgreSQL cluster: `initdb` into a fresh directory under `target/tmp/`, the
//! postmaster a child process on a free loopback port, stopped (fast shutdown by PID) and deleted
//! when dropped. PostgreSQL refuses to run as root, so as root the cluster belongs to the
//! `postgres` user (created by Debian's package) and is run through `setpriv`, which execs, so the
//! child's PID is the postmaster's. [`PostgresCluster::start_in`] runs it inside a network
//! namespace (`ip netns exec`, which execs too) on port 5432 of an address there; the test
//! reaches it through its Unix socket (a file, the same from every namespace).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::process::{free_port, log_file, stop, tail, wait_ready};
use crate::{target_dir, TestkitError};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A running cluster with user `sluice` (trust authentication) and database `sluice`.
pub struct PostgresCluster {
    child: Child,
    host: IpAddr,
    port: u16,
    dir: PathBuf,
    bin: PathBuf,
    /// In a network namespace: the test's own connections go through the Unix socket.
    namespaced: bool,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl PostgresCluster {
    /// PostgreSQL's binaries: `SLUICE_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`.
    pub fn bin_dir() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("SLUICE_PG_BIN") {
            return Some(PathBuf::from(p));
        }
        let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .filter_map(|e| {
                let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                let bin = e.path().join("bin");
                bin.join("postgres").is_file().then_some((v, bin))
            })
            .collect();
        dirs.sort();
        dirs.pop().map(|(_, p)| p)
    }

    fn command(&self, tool: &str) -> Command {
        owned_command(&self.bin.join(tool))
    }

    /// Starts a fresh server on loopback with its own data directory under `target/`; stopped when dropped.
    pub fn start() -> Result<Self, TestkitError> {
        Self::start_on(None, IpAddr::from([127, 0, 0, 1]), &[])
    }

    /// A cluster whose server settings `settings` (`name`, `value`) override the defaults
    /// above (e.g. a small `max_prepared_transactions`).
    pub fn start_with(settings: &[(&str, &str)]) -> Result<Self, TestkitError> {
        Self::start_on(None, IpAddr::from([127, 0, 0, 1]), settings)
    }

    /// A cluster inside network namespace `netns` (see [`crate::Netns`]), listening on
    /// `host`:5432, an address of that namespace (the namespace is fresh: the port is free).
    pub fn start_in(netns: &str, host: IpAddr) -> Result<Self, TestkitError> {
        Self::start_on(Some(netns), host, &[])
    }

    /// Where `pg_isready`, `createdb` and `psql` of the test connect: the socket directory in
    /// a namespace, else the TCP address.
    fn client_host(&self) -> String {
        if self.namespaced {
            self.dir.display().to_string()
        } else {
            self.host.to_string()
        }
    }

    fn start_on(
        netns: Option<&str>,
        host: IpAddr,
        settings: &[(&str, &str)],
    ) -> Result<Self, TestkitError> {
        let bin = Self::bin_dir().ok_or(TestkitError::Missing {
            what: "PostgreSQL's server binaries",
            path: PathBuf::from("/usr/lib/postgresql/*/bin/postgres"),
            hint: "apt-get install postgresql (.ci/run does), or set SLUICE_PG_BIN",
        })?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = target_dir()
            .join("tmp")
            .join(format!("pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|source| TestkitError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        if is_root() {
            run("chown", Command::new("chown").arg("postgres:").arg(&dir))?;
        }
        let log = dir.join("postgres.log");
        run(
            "initdb",
            owned_command(&bin.join("initdb"))
                .arg("-D")
                .arg(dir.join("data"))
                .args(["-U", "sluice", "--auth=trust", "-E", "UTF8", "--no-sync"]),
        )?;
        if netns.is_some() {
            // Clients come from the other namespaces on the same network: trust them too.
            let hba = dir.join("data/pg_hba.conf");
            let mut text = std::fs::read_to_string(&hba).map_err(|source| TestkitError::Io {
                what: format!("reading {}", hba.display()),
                source,
            })?;
            text.push_str("\nhost all all samenet trust\n");
            std::fs::write(&hba, text).map_err(|source| TestkitError::Io {
                what: format!("writing {}", hba.display()),
                source,
            })?;
        }
        let port = match netns {
            None => free_port()?,
            Some(_) => 5432,
        };
        let mut postmaster = owned_command(&bin.join("postgres"));
        if let Some(ns) = netns {
            let inner = postmaster;
            postmaster = crate::Netns::command(ns, inner.get_program());
            postmaster.args(inner.get_args());
        }
        let mut child = postmaster
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-p", &port.to_string(), "-k"])
            .arg(&dir)
            .arg("-c")
            .arg(format!("listen_addresses={host}"))
            .args(["-c", "max_prepared_transactions=64"])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            // Given after the defaults: the last `-c` of a name wins.
            .args(
                settings
                    .iter()
                    .flat_map(|(k, v)| ["-c".to_string(), format!("{k}={v}")]),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&log)?)
            .spawn()
            .map_err(|source| TestkitError::Io {
                what: format!("starting {}", bin.join("postgres").display()),
                source,
            })?;
        let ready_bin = bin.join("pg_isready");
        let client_host = match netns {
            None => host.to_string(),
            Some(_) => dir.display().to_string(),
        };
        let ready = wait_ready(
            "postgres",
            &mut child,
            &log,
            Duration::from_secs(60),
            || {
                Command::new(&ready_bin)
                    .args(["-q", "-h", &client_host, "-p", &port.to_string()])
                    .status()
                    .is_ok_and(|s| s.success())
            },
        );
        let cluster = PostgresCluster {
            child,
            host,
            port,
            dir,
            bin,
            namespaced: netns.is_some(),
        };
        ready?;
        run(
            "createdb",
            cluster.command("createdb").args([
                "-h",
                &cluster.client_host(),
                "-p",
                &port.to_string(),
                "-U",
                "sluice",
                "sluice",
            ]),
        )?;
        Ok(cluster)
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The postmaster's process id (to kill it in a crash test).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `postgres://sluice@127.0.0.1:PORT/sluice` (the namespace address it listens on for a
    /// cluster in a namespace)
    pub fn url(&self) -> String {
        format!("postgres://sluice@{}:{}/sluice", self.host, self.port)
    }

    /// A libpq-style connection string (`host=… port=… user=… dbname=…`).
    pub fn conn_str(&self) -> String {
        format!(
            "host={} port={} user=sluice dbname=sluice",
            self.host, self.port
        )
    }

    /// Runs SQL through `psql` (PostgreSQL's own client, an oracle that shares no code with
    /// Sluice) and returns its unaligned, tuples-only output.
    pub fn psql(&self, sql: &str) -> Result<String, TestkitError> {
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]);
        if self.namespaced {
            cmd.args(["-h", &self.client_host(), "-p", &self.port.to_string()])
                .args(["-U", "sluice", "-d", "sluice"]);
        } else {
            cmd.arg(self.url());
        }
        let out = cmd
            .args(["-c", sql])
            .output()
            .map_err(|source| TestkitError::Io {
                what: "running psql".into(),
                source,
            })?;
        if !out.status.success() {
            return Err(TestkitError::Failed {
                what: format!("psql -c {sql:?}"),
                detail: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The postmaster's log.
    pub fn log(&self) -> String {
        tail(&self.dir.join("postgres.log"))
    }

    /// The server's data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// `tool` run as the cluster's owner: as root, `setpriv` to `postgres` (exec, same PID).
fn owned_command(tool: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--init-groups"])
            .arg(tool);
        c
    } else {
        Command::new(tool)
    }
}

fn run(what: &str, cmd: &mut Command) -> Result<(), TestkitError> {
    let out = cmd.output().map_err(|source| TestkitError::Io {
        what: format!("running {what}"),
        source,
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(TestkitError::Failed {
            what: what.to_string(),
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

impl Drop for PostgresCluster {
    fn drop(&mut self) {
        // SIGINT is PostgreSQL's fast shutdown: it rolls back open transactions and exits.
        stop(&mut self.child, "INT", Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
