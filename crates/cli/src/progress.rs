//! A one-line progress bar on stderr, redrawn in place.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_graph::JobMonitor;

pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts drawing if stderr is a terminal and `enabled`.
    pub fn start(monitor: Arc<JobMonitor>, total: u64, enabled: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = (enabled && std::io::stderr().is_terminal()).then(|| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    draw(
                        monitor.records_emitted_by_sources(),
                        total,
                        started.elapsed(),
                    );
                    std::thread::park_timeout(Duration::from_millis(100));
                }
                eprint!("\r\x1b[2K");
            })
        });
        Progress { stop, thread }
    }

    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn draw(done: u64, total: u64, elapsed: Duration) {
    const WIDTH: usize = 30;
    let frac = if total == 0 {
        1.0
    } else {
        (done as f64 / total as f64).min(1.0)
    };
    let filled = (frac * WIDTH as f64) as usize;
    let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
    eprint!(
        "\r\x1b[2K[{}{}] {:>5.1}%  {} / {} records  {}/s",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        frac * 100.0,
        human(done as f64),
        human(total as f64),
        human(rate)
    );
    let _ = std::io::stderr().flush();
}

/// 12.3M, 4.5k, 999.
pub fn human(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}
