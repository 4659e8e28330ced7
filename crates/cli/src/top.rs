//! `sluice top`: a live, per-subtask view of where a running job spends its time (busy,
//! backpressured, idle) and its records/s, read from a Flink-compatible REST API. It uses only
//! Flink's own paths and metric names (docs/src/reference/flink-formats.md#data-skew and #web-ui),
//! so it works against Sluice's REST server and
//! a real Apache Flink cluster alike.
//!
//! Three layers: `sluice_client::top_model::fetch` fills a plain `Model` over HTTP,
//! [`render`] turns a model into a text frame (pure, unit tested), and [`top`] loops: fetch,
//! render, redraw in place.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_client::top_model::*;
use sluice_client::LiveSource;

/// Arguments of `sluice top`.
#[derive(clap::Args, Debug)]
pub struct TopArgs {
    /// REST API of the job: Sluice's, or an Apache Flink JobManager's (http:// or https://).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    pub url: String,
    #[command(flatten)]
    pub client: sluice_client::ClientArgs,
    /// Job id; default: the first RUNNING job, else the most recently started one.
    #[arg(long)]
    pub job: Option<String>,
    /// Seconds between refreshes (fractions allowed).
    #[arg(long, default_value_t = 1.0, value_name = "SECS",
          value_parser = sluice::bounds::between(0.05, 3600.0, " seconds"))]
    pub interval: f64,
    /// Print one frame, without escape codes, and exit.
    #[arg(long)]
    pub once: bool,
}

/// Frames never get wider than this.
pub const MAX_WIDTH: usize = 100;

/// Chooses the job from `/jobs/overview` ([`sluice_doctor::flink_rest::pick_job`]): `wanted` if
/// given, else the first RUNNING job, else the one started last.
pub fn pick_job(overview: &Value, wanted: Option<&str>, url: &str) -> anyhow::Result<String> {
    Ok(sluice_doctor::flink_rest::pick_job(overview, wanted, url)?)
}

/// A record count: 12.3M, 4.5k, 999.
fn count(x: f64) -> String {
    crate::progress::human(x)
}

// ---------------------------------------------------------------------------------------------
// Render (pure)
// ---------------------------------------------------------------------------------------------

const FULL: char = '█';
const EMPTY: char = '░';
const UNKNOWN: char = '·';

/// `min(round(ms / 10), 100)`: a time per second as the web UI's percentage
/// (docs/src/reference/flink-formats.md#web-ui).
fn percent(ms_per_s: f64) -> u32 {
    (ms_per_s / 10.0).round().clamp(0.0, 100.0) as u32
}

fn pct_text(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |ms| format!("{}%", percent(ms)))
}

/// A bar of `cells` for a time per second; `·` when unknown.
fn bar(v: Option<f64>, cells: usize) -> String {
    match v {
        None => UNKNOWN.to_string().repeat(cells),
        Some(ms) => {
            let filled = ((ms / 1000.0).clamp(0.0, 1.0) * cells as f64).round() as usize;
            let mut s = FULL.to_string().repeat(filled);
            s.push_str(&EMPTY.to_string().repeat(cells - filled));
            s
        }
    }
}

/// 950, 12.3k, 1.23M, 4.56G (per second values).
fn rate(v: Option<f64>) -> String {
    match v {
        None => "n/a".to_string(),
        Some(x) if x >= 1e9 => format!("{:.2}G/s", x / 1e9),
        Some(x) if x >= 1e6 => format!("{:.2}M/s", x / 1e6),
        Some(x) if x >= 1e3 => format!("{:.1}k/s", x / 1e3),
        Some(x) => format!("{x:.0}/s"),
    }
}

/// 27s, 4m07s, 2h03m, 3d04h.
fn duration(ms: Option<f64>) -> String {
    let Some(ms) = ms else {
        return "n/a".to_string();
    };
    let s = (ms / 1000.0).floor() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

fn width_of(s: &str) -> usize {
    s.chars().count()
}

/// Cuts a line to `width` characters, marking the cut with `…`.
fn fit(s: &str, width: usize) -> String {
    if width_of(s) <= width {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Word-wraps `s` into lines of at most `width` characters (words longer than that are cut).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in s.split_whitespace() {
        if !current.is_empty() && width_of(&current) + 1 + width_of(word) > width {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
        while width_of(&current) > width {
            lines.push(current.chars().take(width).collect());
            current = current.chars().skip(width).collect();
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// Renders a frame: a header (job name, id, state, duration), then per vertex its name, a summary
/// line (parallelism, backpressure level, busy max, data skew, records/s) and one line per
/// subtask with labelled busy / backpressured / idle (and CPU, when the server reports it) bars
/// and percentages, so nothing depends on colour. Lines are at most `width` characters, with
/// `width` taken between 40 and 100.
pub fn render(m: &Model, width: usize) -> String {
    let width = width.clamp(40, MAX_WIDTH);
    let mut lines: Vec<String> = Vec::new();
    let job = &m.job;
    lines.push(format!(
        "{}  {}  {}  duration {}",
        if job.name.is_empty() {
            "(unnamed job)"
        } else {
            &job.name
        },
        job.id,
        if job.state.is_empty() {
            "?"
        } else {
            &job.state
        },
        duration(job.duration_ms)
    ));
    lines.push(format!(
        "{}  ·  time per second: busy, bp = backpressured (output full), idle (no input)",
        m.url
    ));
    let show_cpu = m
        .vertices
        .iter()
        .flat_map(|v| &v.subtasks)
        .any(|s| s.cpu.is_some());
    // Fixed part of a subtask line, without the label and the bars (which share the rest):
    // "busy " + " 100%" | "  bp " + " 100%" | "  idle " + " 100%" | ["  cpu " + " 100%"]
    // | "  in " + 8 | "  out " + 8
    // The TaskManager of each subtask, only when a vertex's subtasks run on more than one.
    let tm_width = m
        .vertices
        .iter()
        .filter(|v| {
            let mut eps: Vec<&String> = v
                .subtasks
                .iter()
                .filter_map(|s| s.endpoint.as_ref())
                .collect();
            eps.sort();
            eps.dedup();
            eps.len() > 1
        })
        .flat_map(|v| v.subtasks.iter().filter_map(|s| s.endpoint.as_ref()))
        .map(|e| width_of(e) + 5)
        .max();
    let bars = if show_cpu { 4 } else { 3 };
    let fixed = 10 + 10 + 12 + if show_cpu { 11 } else { 0 } + 13 + 14 + tm_width.unwrap_or(0);
    for v in &m.vertices {
        lines.push(String::new());
        lines.push(fit(&v.name, width));
        let bp = match (v.backpressure_level(), v.max_backpressured()) {
            (Some(level), Some(ms)) => format!("{} (max {}%)", level.as_str(), percent(ms)),
            _ => "n/a".to_string(),
        };
        let skew = v
            .data_skew
            .map_or_else(|| "n/a".to_string(), |s| format!("{}%", s.round()));
        let lag = v
            .pending_records
            .map_or_else(String::new, |l| format!("  lag {}", count(l)));
        lines.push(fit(
            &format!(
                "  parallelism {}{lag}  backpressure {}  busy max {}  data skew {}  in {}  out {}",
                v.parallelism,
                bp,
                pct_text(v.max_busy()),
                skew,
                rate(v.records_in),
                rate(v.records_out)
            ),
            width,
        ));
        let p = v.parallelism.max(v.subtasks.len());
        let label_width = 2 + width_of(&format!("({p}/{p})")) + 1;
        let cells = (width.saturating_sub(fixed + label_width) / bars).clamp(3, 10);
        for s in &v.subtasks {
            let label = format!("({}/{p})", s.index + 1);
            let mut line = format!("  {label:>w$} ", w = label_width - 3);
            let mut seg = |name: &str, value: Option<f64>, first: bool| {
                if !first {
                    line.push_str("  ");
                }
                line.push_str(&format!(
                    "{name} {} {:>4}",
                    bar(value, cells),
                    pct_text(value)
                ));
            };
            seg("busy", s.busy, true);
            seg("bp", s.backpressured, false);
            seg("idle", s.idle, false);
            if show_cpu {
                seg("cpu", s.cpu, false);
            }
            line.push_str(&format!(
                "  in {:>8}  out {:>8}",
                rate(s.records_in),
                rate(s.records_out)
            ));
            if let (Some(_), Some(e)) = (tm_width, &s.endpoint) {
                line.push_str(&format!("  on {e}"));
            }
            lines.push(fit(line.trim_end(), width));
        }
        if v.subtasks.is_empty() {
            lines.push("  (no subtasks reported)".to_string());
        }
    }
    if let Some(f) = &m.footer {
        lines.push(String::new());
        lines.extend(wrap(f, width).into_iter().take(4));
    }
    let mut out = String::new();
    for l in lines {
        out.push_str(&fit(&l, width));
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------------------------

/// Frame width: `$COLUMNS` when set (at most 100), else 100.
fn frame_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .map_or(MAX_WIDTH, |c| c.min(MAX_WIDTH))
}

/// Redraws in place: cursor home, each line cleared to its end, the rest of the screen cleared
/// (the whole screen is cleared once, first), so frames do not flicker.
fn draw(frame: &str, first: bool) -> std::io::Result<()> {
    let mut out = String::with_capacity(frame.len() + 256);
    if first {
        out.push_str("\x1b[2J");
    }
    out.push_str("\x1b[H");
    for line in frame.lines() {
        out.push_str(line);
        out.push_str("\x1b[K\n");
    }
    out.push_str("\x1b[J");
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()
}

pub fn top(args: TopArgs) -> anyhow::Result<ExitCode> {
    let source = LiveSource::with(&args.url, &args.client).map_err(anyhow::Error::msg)?;
    if !(0.05..=3600.0).contains(&args.interval) {
        anyhow::bail!("--interval must be between 0.05 and 3600 seconds");
    }
    let interval = Duration::from_secs_f64(args.interval);
    let width = frame_width();
    let job = args.job.as_deref();
    if args.once {
        let frame = render(&fetch(&source, job)?, width);
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(frame.as_bytes())?;
        stdout.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let hint = format!("refresh every {}s  ·  Ctrl-C to quit", args.interval);
    let mut last: Option<Model> = None;
    let mut first = true;
    loop {
        let started = Instant::now();
        let model = match fetch(&source, job) {
            Ok(mut m) => {
                m.footer = Some(hint.clone());
                last = Some(m.clone());
                m
            }
            // The first frame must work: otherwise the server or job is not there.
            Err(e) => match &last {
                None => return Err(e.into()),
                Some(prev) => Model {
                    footer: Some(format!("refresh failed, retrying: {e:#}")),
                    ..prev.clone()
                },
            },
        };
        draw(&render(&model, width), first)?;
        first = false;
        std::thread::sleep(interval.saturating_sub(started.elapsed()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flink_model() -> Model {
        captured_flink_model().unwrap()
    }

    #[test]
    fn renders_the_flink_frame() {
        let frame = render(&flink_model(), 100);
        let expected = "\
RestScenario-skew  3ae16f48a563821c4f57820703ba6b0f  RUNNING  duration 27s
http://127.0.0.1:8081  ·  time per second: busy, bp = backpressured (output full), idle (no input)

Source: generator -> map
  parallelism 2  backpressure high (max 80%)  busy max 22%  data skew n/a  in n/a  out n/a
  (1/2) busy ██░░░░░░░░  20%  bp ████████░░  80%  idle ░░░░░░░░░░   0%  in      0/s  out 113.9k/s
  (2/2) busy ██░░░░░░░░  22%  bp ████████░░  79%  idle ░░░░░░░░░░   0%  in      0/s  out 113.8k/s

sum-per-key -> counting-sink: Writer
  parallelism 2  backpressure ok (max 0%)  busy max 100%  data skew n/a  in n/a  out n/a
  (1/2) busy ██░░░░░░░░  18%  bp ░░░░░░░░░░   0%  idle ████████░░  82%  in  22.8k/s  out      0/s
  (2/2) busy ██████████ 100%  bp ░░░░░░░░░░   0%  idle ░░░░░░░░░░   0%  in 204.6k/s  out      0/s
";
        assert_eq!(frame, expected);
    }

    #[test]
    fn subtasks_on_several_taskmanagers_show_theirs() {
        let mut m = flink_model();
        assert!(
            !render(&m, 100).contains(" on "),
            "one TaskManager: no column"
        );
        for (i, s) in m.vertices[1].subtasks.iter_mut().enumerate() {
            s.endpoint = Some(format!("127.0.0.1:{}", 6121 + i));
        }
        let frame = render(&m, 100);
        let lines: Vec<&str> = frame.lines().filter(|l| l.contains("(2/2)")).collect();
        assert!(lines[1].ends_with("on 127.0.0.1:6122"), "{frame}");
        assert!(frame.lines().all(|l| width_of(l) <= 100), "{frame}");
        let vertex = serde_json::json!({"subtasks": [{"endpoint": "a:1"}, {"endpoint": "b:2"}]});
        assert_eq!(
            subtask_endpoints(&vertex),
            vec![Some("a:1".to_string()), Some("b:2".to_string())]
        );
    }

    fn sluice_like_model() -> Model {
        let sub = |index, busy, bp, idle, cpu, rin, rout| SubtaskView {
            index,
            busy,
            backpressured: bp,
            idle,
            cpu,
            records_in: rin,
            records_out: rout,
            endpoint: None,
        };
        Model {
            url: "http://127.0.0.1:8081".into(),
            job: JobSummary {
                id: "0123456789abcdef0123456789abcdef".into(),
                name: "skew".into(),
                state: "RUNNING".into(),
                duration_ms: Some(3_725_000.0),
            },
            vertices: vec![VertexView {
                id: "v".into(),
                name: format!("{} -> Sink", "Map -> Filter -> Map".repeat(8)),
                parallelism: 12,
                data_skew: Some(69.46),
                records_in: Some(1.5e9),
                records_out: Some(2.5e6),
                busy_max: Some(1000.0),
                backpressured_max: Some(400.0),
                pending_records: None,
                subtasks: (0..12)
                    .map(|i| {
                        if i == 11 {
                            sub(i, None, None, None, None, None, None)
                        } else {
                            let b = i as f64 * 90.0;
                            sub(
                                i,
                                Some(b),
                                Some(400.0 - b.min(400.0)),
                                Some(600.0),
                                Some(b * 0.9),
                                Some(1234.0),
                                Some(5e5),
                            )
                        }
                    })
                    .collect(),
            }],
            footer: Some(format!("refresh failed, retrying: {}", "word ".repeat(60))),
        }
    }

    #[test]
    fn cpu_column_only_when_reported_and_lines_fit() {
        let m = sluice_like_model();
        for width in [100, 80, 60, 40] {
            let frame = render(&m, width);
            for line in frame.lines() {
                assert!(width_of(line) <= width, "{width}: {line:?}");
            }
        }
        let frame = render(&m, 200);
        assert!(
            frame.lines().all(|l| width_of(l) <= MAX_WIDTH),
            "never wider than 100"
        );
        let lines: Vec<&str> = frame.lines().collect();
        assert_eq!(
            lines[0],
            "skew  0123456789abcdef0123456789abcdef  RUNNING  duration 1h02m"
        );
        assert!(lines[3].ends_with('…'), "long names are cut: {}", lines[3]);
        assert_eq!(
            lines[4],
            "  parallelism 12  backpressure low (max 40%)  busy max 90%  data skew 69%  in 1.50G/s  out 2.50M/s"
        );
        // Labels are right-aligned to the widest, "( 1/12)" .. "(12/12)"; cpu shows up.
        assert!(lines[5].starts_with("   (1/12) busy "), "{}", lines[5]);
        assert!(lines[5].contains(" cpu "), "{}", lines[5]);
        assert!(
            lines[5].contains("in   1.2k/s  out 500.0k/s"),
            "{}",
            lines[5]
        );
        let unknown = lines[16];
        assert!(unknown.starts_with("  (12/12) busy ·"), "{unknown}");
        assert_eq!(unknown.matches("n/a").count(), 6, "{unknown}");
        // The footer wraps over lines instead of being cut.
        assert!(lines[18].starts_with("refresh failed, retrying: word"));
        assert!(lines.len() > 19);
        // Without CPU values there is no cpu column.
        let mut no_cpu = m.clone();
        no_cpu.vertices[0]
            .subtasks
            .iter_mut()
            .for_each(|s| s.cpu = None);
        assert!(!render(&no_cpu, 100).contains(" cpu "));
    }

    #[test]
    fn source_lag_is_asked_for_and_shown() {
        assert_eq!(
            pending_records_id("Source: clicks -> Map").as_deref(),
            Some("Source__clicks.pendingRecords")
        );
        assert_eq!(pending_records_id("Map -> Sink: x"), None);
        let mut m = sluice_like_model();
        m.vertices[0].pending_records = Some(12_345.0);
        assert!(render(&m, 100).contains("lag 12.3k"), "{}", render(&m, 100));
        assert!(!render(&sluice_like_model(), 100).contains(" lag "));
    }

    #[test]
    fn small_formatters() {
        assert_eq!(percent(999.0), 100);
        assert_eq!(percent(994.9), 99);
        assert_eq!(percent(4.9), 0);
        assert_eq!(percent(1500.0), 100);
        assert_eq!(bar(Some(720.0), 10), "███████░░░");
        assert_eq!(bar(Some(0.0), 4), "░░░░");
        assert_eq!(bar(None, 3), "···");
        assert_eq!(rate(Some(999.4)), "999/s");
        assert_eq!(rate(Some(1234.0)), "1.2k/s");
        assert_eq!(rate(Some(1.2e6)), "1.20M/s");
        assert_eq!(rate(None), "n/a");
        assert_eq!(duration(Some(59_999.0)), "59s");
        assert_eq!(duration(Some(247_000.0)), "4m07s");
        assert_eq!(duration(Some(90_061_000.0)), "1d01h");
        assert_eq!(duration(None), "n/a");
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(fit("abcdef", 4), "abc…");
    }
}
