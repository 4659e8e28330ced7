//! Shared by the SIGKILL tests (`exactly_once.rs`, `exactly_once_kafka.rs`): every incarnation of
//! a job writes its checkpoints into a job directory of its own under one checkpoint directory,
//! is SIGKILLed, and the next incarnation restores from the latest checkpoint of the one before
//! (`--from-checkpoint <job directory>`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// A fresh directory `sluice-<name>-<pid>` under the system's temporary directory.
pub fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Job directories under the checkpoint directory.
pub fn job_dirs(chk: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(chk)
        .map(|r| {
            r.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `job` holds a complete checkpoint (a `chk-<n>` with its `_metadata`).
pub fn has_checkpoint(job: &Path) -> bool {
    std::fs::read_dir(job).is_ok_and(|r| {
        r.flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with("chk-")
                && e.path().join("_metadata").exists()
        })
    })
}

/// The job directory not in `before` that holds a complete checkpoint: the incarnation's own.
pub fn new_job_dir(chk: &Path, before: &[PathBuf]) -> Option<PathBuf> {
    job_dirs(chk)
        .into_iter()
        .find(|d| !before.contains(d) && has_checkpoint(d))
}

/// SIGKILL (`Child::kill` on Unix): no shutdown code runs.
pub fn kill9(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for the first complete checkpoint of `child` (the incarnation started after the job
/// directories `before` were listed), lets it run a little further (60 ms × `kill + 1`, so the
/// kill lands mid-interval) and SIGKILLs it; returns its job directory, what the next
/// incarnation restores from. Panics if the job finished first (the input is too small for the
/// kills) or nothing happened before `deadline`.
pub fn kill_after_first_checkpoint(
    chk: &Path,
    before: &[PathBuf],
    mut child: Child,
    kill: usize,
    deadline: Instant,
) -> PathBuf {
    let mine = loop {
        if let Some(d) = new_job_dir(chk, before) {
            break d;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the job finished after {kill} kills: make the input larger"
        );
        assert!(Instant::now() < deadline, "no checkpoint appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(60 * (kill as u64 + 1)));
    kill9(child);
    mine
}
