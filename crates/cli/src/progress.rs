//! The progress bar on stderr (`indicatif`), fed from the job's source counters: a bar with a
//! known record count, a spinner without one. Drawn only on a terminal and unless disabled
//! (`--no-progress`, `--stats-json`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use sluice_datastream::JobMonitor;

/// How often the bar reads the counters and redraws.
const REFRESH: Duration = Duration::from_millis(100);

pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts drawing if stderr is a terminal and `enabled`; `total` 0 means unknown.
    pub fn start(monitor: Arc<JobMonitor>, total: u64, enabled: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = (enabled && std::io::stderr().is_terminal()).then(|| {
            let stop = stop.clone();
            let bar = bar(total);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    bar.set_position(monitor.records_emitted_by_sources());
                    std::thread::park_timeout(REFRESH);
                }
                bar.finish_and_clear();
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

/// The same bar for a loop of the CLI's own (e.g. `sluice produce`), if stderr is a terminal
/// and `enabled`; the caller sets its position.
pub fn records_bar(total: u64, enabled: bool) -> Option<ProgressBar> {
    (enabled && std::io::stderr().is_terminal()).then(|| bar(total))
}

/// `[#####.....]  42.0%  4.20M / 10.00M records  1.23M/s`, or a spinner with the count and
/// rate when the total is unknown.
fn bar(total: u64) -> ProgressBar {
    let template = if total == 0 {
        "{spinner} {records} records  {rate}/s"
    } else {
        "[{bar:30}] {percent_1:>5}%  {records} records  {rate}/s"
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("#>.")
        .with_key(
            "records",
            |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = match s.len() {
                    Some(len) if len > 0 => {
                        write!(w, "{} / {}", human(s.pos() as f64), human(len as f64))
                    }
                    _ => write!(w, "{}", human(s.pos() as f64)),
                };
            },
        )
        .with_key(
            "percent_1",
            |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.1}", 100.0 * s.fraction());
            },
        )
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", human(s.per_sec()));
        });
    let bar = if total == 0 {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::new(total)
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
    bar.set_style(style);
    bar
}

pub use sluice_bench::human;
