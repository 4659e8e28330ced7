//! A standalone Apache Flink 2.3 session cluster for tests, through the project's harness
//! `scripts/flink/cluster.sh`: a JobManager process and TaskManager processes (each its own JVM,
//! so each reports its own GC, heap and CPU on `/taskmanagers/:tmid/metrics`), REST on a free
//! loopback port, jobs submitted through Flink's REST API (jar upload and run). Every process is
//! stopped by its pid file when the guard drops (`cluster.sh stop`), and the cluster's directory
//! under `target/tmp/` is removed.
//!
//! Needs a JDK 17 (`java`, `javac`, `jar`), python3 with the PyPI package
//! `apache-flink-libraries==2.3.0`, and curl: [`FlinkCluster::available`] says which is missing
//! (`cluster.sh check`), for [`crate::require`].

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::process::free_port;
use crate::{target_dir, TestkitError};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// One TaskManager of a [`FlinkCluster`]: its resource id (its id on `/taskmanagers`), its task
/// heap (`taskmanager.memory.task.heap.size`, e.g. `"48m"`; the JVM's heap adds Flink's 64 MB
/// framework heap) and its slots.
#[derive(Clone, Debug)]
pub struct TaskManagerSpec {
    /// Resource id: letters, digits, `_` and `-`.
    pub name: String,
    /// Task heap, a Flink memory size with a unit (`48m`, `1g`).
    pub heap: String,
    /// `taskmanager.numberOfTaskSlots`.
    pub slots: u32,
}

impl TaskManagerSpec {
    /// A TaskManager named `name` with task heap `heap` and one slot.
    pub fn new(name: &str, heap: &str) -> TaskManagerSpec {
        TaskManagerSpec {
            name: name.to_string(),
            heap: heap.to_string(),
            slots: 1,
        }
    }

    fn arg(&self) -> String {
        format!("{}={}/{}", self.name, self.heap, self.slots)
    }
}

/// A running standalone session cluster; stopped by PID when dropped.
pub struct FlinkCluster {
    dir: PathBuf,
    script: PathBuf,
    port: u16,
    taskmanagers: usize,
}

/// How long a JobManager or TaskManager is given to come up (JVM start on a loaded machine).
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

impl FlinkCluster {
    /// The harness script: `SLUICE_FLINK_CLUSTER`, else `scripts/flink/cluster.sh` of this
    /// repository.
    pub fn script() -> PathBuf {
        std::env::var_os("SLUICE_FLINK_CLUSTER")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/flink/cluster.sh")
            })
    }

    /// Whether a cluster can run here (a JDK, the Flink jars, curl): `Err` says what is missing.
    pub fn available() -> Result<(), TestkitError> {
        let script = Self::script();
        let out = Command::new("bash")
            .arg(&script)
            .arg("check")
            .output()
            .map_err(|source| TestkitError::Io {
                what: format!("running bash {}", script.display()),
                source,
            })?;
        if out.status.success() {
            Ok(())
        } else {
            Err(TestkitError::Failed {
                what: "cluster.sh check".into(),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    /// Starts a JobManager (REST on a free loopback port) and `taskmanagers`, and waits until
    /// they are all registered on `/taskmanagers`.
    pub fn start(taskmanagers: &[TaskManagerSpec]) -> Result<FlinkCluster, TestkitError> {
        Self::available()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = target_dir()
            .join("tmp")
            .join(format!("flink-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|source| TestkitError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        let port = free_port()?;
        let mut cluster = FlinkCluster {
            dir,
            script: Self::script(),
            port,
            taskmanagers: 0,
        };
        let mut args = vec![
            "start".to_string(),
            cluster.dir.display().to_string(),
            port.to_string(),
        ];
        args.extend(taskmanagers.iter().map(TaskManagerSpec::arg));
        cluster.run("cluster.sh start", &args)?;
        cluster.taskmanagers = taskmanagers.len();
        cluster.wait_for_taskmanagers()?;
        Ok(cluster)
    }

    /// Adds a TaskManager and waits until it is registered.
    pub fn add_taskmanager(&mut self, tm: &TaskManagerSpec) -> Result<(), TestkitError> {
        let args = [
            "add-tm".to_string(),
            self.dir.display().to_string(),
            tm.arg(),
        ];
        self.run("cluster.sh add-tm", &args)?;
        self.taskmanagers += 1;
        self.wait_for_taskmanagers()
    }

    /// Submits `entry_class` of the harness jar (built from `scripts/flink/src`) with `args`
    /// through Flink's REST API; returns the job id.
    pub fn submit(&self, entry_class: &str, args: &[&str]) -> Result<String, TestkitError> {
        let mut all = vec![
            "submit".to_string(),
            self.dir.display().to_string(),
            entry_class.to_string(),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        let out = self.run("cluster.sh submit", &all)?;
        out.lines()
            .find_map(|l| l.strip_prefix("JOB_ID "))
            .map(|id| id.trim().to_string())
            .ok_or_else(|| TestkitError::Failed {
                what: "cluster.sh submit".into(),
                detail: format!("no JOB_ID in its output: {out}"),
            })
    }

    /// The REST API's base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The cluster's directory (configuration, pid files, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `GET path` on the REST API: the body of a 200 answer, `None` for anything else.
    pub fn get(&self, path: &str) -> Option<String> {
        http_get(self.port, path)
    }

    /// The end of every process's log, for a failing test's message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "log") {
                    out.push_str(&format!(
                        "== {}\n{}\n",
                        p.display(),
                        crate::process::tail(&p)
                    ));
                }
            }
        }
        out
    }

    fn run(&self, what: &str, args: &[String]) -> Result<String, TestkitError> {
        let out = Command::new("bash")
            .arg(&self.script)
            .args(args)
            .output()
            .map_err(|source| TestkitError::Io {
                what: format!("running {what}"),
                source,
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(TestkitError::Failed {
                what: what.to_string(),
                detail: format!(
                    "{}\n{}",
                    String::from_utf8_lossy(&out.stderr).trim(),
                    self.logs()
                ),
            })
        }
    }

    /// Polls `/taskmanagers` until it lists as many TaskManagers as were started.
    fn wait_for_taskmanagers(&self) -> Result<(), TestkitError> {
        let start = Instant::now();
        loop {
            let listed = self
                .get("/taskmanagers")
                .map_or(0, |body| body.matches("\"slotsNumber\"").count());
            if listed >= self.taskmanagers {
                return Ok(());
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(TestkitError::NotReady {
                    what: format!("Flink cluster in {}", self.dir.display()),
                    secs: START_TIMEOUT.as_secs(),
                    log: self.logs(),
                });
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for FlinkCluster {
    fn drop(&mut self) {
        let args = ["stop".to_string(), self.dir.display().to_string()];
        if self.run("cluster.sh stop", &args).is_ok() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A plain HTTP/1.0 `GET` on 127.0.0.1:`port` (the REST API answers JSON, unchunked under
/// HTTP/1.0): the body of a 200 answer.
fn http_get(port: u16, path: &str) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?;
    (status == "200").then(|| body.to_string())
}
