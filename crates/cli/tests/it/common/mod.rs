//! Shared by the CLI tests that need a live job: start `sluice run …` with its REST API on a free
//! port and fast metrics, learn the URL from its stderr, and kill it when the guard drops.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The tests that measure rates or busy time, or load the machine with a broker, a cluster and
/// several processes, take this lock: one at a time across all modules, as when each file was a
/// test binary of its own (cargo runs binaries one after another).
pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Holds [`ONE_AT_A_TIME`] (a test that panicked while holding it does not stop the others).
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running `sluice run`; killed (and reaped) on drop.
pub struct Job(Child);

impl Job {
    /// The PID of the `sluice run` process.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Sends SIGTERM (by the `kill` command) and waits for the process to exit.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -TERM {}", self.pid());
        self.0.wait().expect("waiting for the process")
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sluice run <job_args…> --rest-port 0 --metrics-interval 0.2 --metrics-window 1 --no-progress`;
/// returns the guard and the REST base URL (no trailing slash).
pub fn start_live(job_args: &[&str]) -> (Job, String) {
    let mut args = vec!["run"];
    args.extend_from_slice(job_args);
    args.extend_from_slice(&[
        "--rest-port",
        "0",
        "--metrics-interval",
        "0.2",
        "--metrics-window",
        "1",
        "--no-progress",
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sluice runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("REST API: ") {
                let url = rest
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .trim_end_matches('/')
                    .to_string();
                let _ = tx.send(url);
            }
        }
    });
    let job = Job(child);
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the job announces its REST URL");
    (job, url)
}

/// `GET url` as JSON (`null` when there is no answer or it is not JSON), through curl.
pub fn get(url: &str) -> serde_json::Value {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "5", url])
        .output()
        .expect("curl runs");
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

/// `sluice doctor --window 2 --json --no-flame-graphs`, again until it names `cause` or two
/// minutes passed (see [`doctor_with`]).
pub fn doctor(url: &str, cause: &str) -> serde_json::Value {
    doctor_with(url, "2", cause, &["--no-flame-graphs"])
}

/// `sluice doctor --window W --json EXTRA…`, again until it names `cause` or two minutes passed
/// (the window of a fresh job is still filling, and a loaded machine starves threads for a
/// while: wait for clear evidence, then assert all of it); returns the last diagnosis.
pub fn doctor_with(url: &str, window: &str, cause: &str, extra: &[&str]) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["doctor", "--url", url, "--window", window, "--json"])
            .args(extra)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        // Until the job is registered the server has no jobs: try again, up to the deadline.
        if !o.status.success() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        assert!(
            o.status.success(),
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let d: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        if d["cause"] == cause || Instant::now() > deadline {
            return d;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
