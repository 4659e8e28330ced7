//! Helpers shared by the integration tests of `sluice-datastream`: hang guards, temporary
//! directories and a view of this process's threads.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a job may take before a test declares it hung. Only a hang guard: no assertion
/// depends on how fast a job runs.
pub const HANG_GUARD: Duration = Duration::from_secs(10);

/// Runs `f` on its own thread and returns its result, failing the test if it does not return
/// within `limit` (a hang) or if it panics. `StreamEnv` is not `Send`, so build the job inside `f`.
pub fn guarded<T, F>(what: &str, limit: Duration, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("test-guard".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn guard thread");
    match rx.recv_timeout(limit) {
        Ok(v) => {
            handle.join().expect("guard thread");
            v
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: did not finish within {limit:?} (hang)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => panic!("{what}: guard thread ended without a result"),
        },
    }
}

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let path = std::env::temp_dir().join(format!(
            "sluice-datastream-test-{tag}-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Names (`comm`, at most 15 bytes) of every thread of this process, from `/proc/self/task`.
pub fn thread_names() -> Vec<String> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for e in dir.flatten() {
        if let Ok(s) = std::fs::read_to_string(e.path().join("comm")) {
            out.push(s.trim_end_matches('\n').to_string());
        }
    }
    out
}

/// Number of entries in `/proc/self/task`.
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Polls `cond` every millisecond until it holds or `limit` passes; returns whether it held.
/// For states that settle asynchronously (exiting threads), never for timing assertions.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Busy-waits for `d` (a precise "slow operator": `thread::sleep` rounds tiny sleeps up a lot).
pub fn spin_for(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The newest complete `chk-<id>` under a checkpoint directory (of its job directories), if any.
pub fn latest_checkpoint(dir: &Path) -> Option<PathBuf> {
    let mut best: Option<(u64, PathBuf)> = None;
    for job in std::fs::read_dir(dir).unwrap().flatten() {
        for chk in std::fs::read_dir(job.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = chk.file_name().to_string_lossy().to_string();
            let Some(id) = name
                .strip_prefix("chk-")
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if chk.path().join("_metadata").exists() && best.as_ref().is_none_or(|b| id > b.0) {
                best = Some((id, chk.path()));
            }
        }
    }
    best.map(|b| b.1)
}
