//! What `sluice run` says about checkpoints on stderr: where they go and where the run
//! restores from (at start), and every failed checkpoint with its reason (as it happens).

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_datastream::JobMonitor;
use sluice_runtime::checkpoint::CheckpointHub;

/// Says on stderr every failed checkpoint as it happens, from a thread of its own.
pub struct CheckpointLog {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Prints the hub's log lines after the first `seen`; returns the new count.
fn print_new(hub: &CheckpointHub, seen: usize) -> usize {
    let lines = hub.log_since(seen);
    // On a terminal the progress bar may own the current line: clear it first.
    let clear = if std::io::stderr().is_terminal() {
        "\r\x1b[2K"
    } else {
        ""
    };
    for l in &lines {
        eprintln!("{clear}{l}");
    }
    seen + lines.len()
}

impl CheckpointLog {
    /// Prints the checkpoint directory (when the job checkpoints) and the restore point, then
    /// follows the job's checkpoint log.
    pub fn start(monitor: &JobMonitor, checkpointing: bool, restore: Option<&Path>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let Some(hub) = monitor.control.checkpoints().cloned() else {
            return CheckpointLog { stop, thread: None };
        };
        if let Some(p) = restore {
            match sluice_runtime::checkpoint::storage::resolve_restore_dir(p) {
                Ok(dir) => eprintln!("restoring from {}", dir.display()),
                Err(e) => eprintln!("restoring from {}: {e}", p.display()),
            }
        }
        if checkpointing {
            eprintln!(
                "checkpoints: every {} ms into {} (tolerating {} failed in a row)",
                hub.config.interval.unwrap_or_default().as_millis(),
                hub.dir.display(),
                hub.config.tolerable_failures
            );
        }
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("checkpoint-log".into())
            .spawn(move || {
                let mut seen = 0;
                while !s.load(Ordering::Relaxed) {
                    seen = print_new(&hub, seen);
                    std::thread::park_timeout(Duration::from_millis(100));
                }
                print_new(&hub, seen);
            })
            .ok();
        CheckpointLog { stop, thread }
    }

    /// Prints what is left of the log and stops following it.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
