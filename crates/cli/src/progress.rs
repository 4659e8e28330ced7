//! The progress bar on stderr (`indicatif`), fed from the job's source counters: a bar with a
//! known record count, a spinner without one. Drawn only on a terminal and unless disabled
//! (`--no-progress`, `--stats-json`); `doctor fix`'s and the demo's proof runs
//! ([`Progress::labelled`]) print plain lines instead when stderr is not a terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        let draw = (enabled && std::io::stderr().is_terminal()).then(|| Draw::Bar(bar(total)));
        Progress::spawn(move || monitor.records_emitted_by_sources(), draw)
    }

    /// A run named `label` of `total` records: the bar on a terminal; elsewhere (a log, a CI
    /// job) a plain line every [`LINE_EVERY`] and one at the end, which no terminal rewrites.
    /// Its position is what has gone through the whole job ([`JobMonitor::records_through`]).
    pub fn labelled(label: &str, monitor: Arc<JobMonitor>, total: u64) -> Progress {
        let draw = if std::io::stderr().is_terminal() {
            let b = bar(total);
            b.set_prefix(format!("{label} run "));
            Draw::Bar(b)
        } else {
            Draw::Lines(format!("{label} run"), total, Instant::now())
        };
        Progress::spawn(move || monitor.records_through(), Some(draw))
    }

    fn spawn(pos: impl Fn() -> u64 + Send + 'static, draw: Option<Draw>) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = draw.map(|mut draw| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    draw.show(pos(), false);
                    std::thread::park_timeout(REFRESH);
                }
                draw.show(pos(), true);
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

/// How often the plain progress lines come.
const LINE_EVERY: Duration = Duration::from_secs(1);

enum Draw {
    Bar(ProgressBar),
    /// Label, total, when the last line was printed.
    Lines(String, u64, Instant),
}

impl Draw {
    fn show(&mut self, pos: u64, end: bool) {
        match self {
            Draw::Bar(b) if end => b.finish_and_clear(),
            Draw::Bar(b) => b.set_position(pos),
            Draw::Lines(label, total, last) if end || last.elapsed() >= LINE_EVERY => {
                *last = Instant::now();
                let pct = 100.0 * pos as f64 / (*total).max(1) as f64;
                let done = if end { ", done" } else { "" };
                eprintln!("{label}: {pos} / {total} records ({pct:.0}%){done}");
            }
            Draw::Lines(..) => {}
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
        "{prefix}{spinner} {records} records  {rate}/s"
    } else {
        "{prefix}[{bar:30}] {percent_1:>5}%  {records} records  {rate}/s"
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
