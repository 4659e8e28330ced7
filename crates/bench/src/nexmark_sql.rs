//! `sluice bench --nexmark --sql`: every official Nexmark SQL query Sluice runs beside its
//! hand-written twin (sluice-jobs) in the same session, and beside the official Flink suite's
//! figures when its harness's output is given (`--flink-results`).
//!
//! Why this shape: rows of dynamic values cost more than Rust structs, and how much more is the
//! question; the machine is shared, so only ratios of runs made side by side mean anything.
//! Each run is a fresh process (its peak RSS and CPU time are its own), and a query's SQL and
//! hand-written runs alternate (hand-written first on even runs, SQL first on odd ones) so a
//! drifting load hits both alike; the ratio is the median of the per-pair ratios.
//!
//! How each side runs: a query with a twin runs as `sluice nexmark --stats-json --query qN`
//! and `sluice nexmark --stats-json --sql --queries DIR --query qN` — the same harness, timed
//! from the launch of the built job to its end. The SQL-only queries (q12, q13, q20) run as
//! `sluice run sql -f` on the runner's script (`sluice_table::official`), timed from the job's
//! build (its SQL planned) to its end. A query Sluice refuses is a row saying why.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sluice_jobs::nexmark::Query;
use sluice_table::official::{runner_script, runner_vars};

use crate::flink_results::{self, FlinkFigures, FlinkRun};
use crate::reference::{field, median};
use crate::{human, BenchCases, BenchError};

type Result<T> = std::result::Result<T, BenchError>;

/// The official queries Sluice's SQL runs, in order: the append-only ones and the updating ones
/// (q4, q9, q15–q19: changelogs into a blackhole sink). Not q6 (Flink refuses its OVER window
/// over ROW_NUMBER's updates), q10 (its partitioned file sink) or q23 (does not parse).
pub const OFFICIAL: [&str; 21] = [
    "q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q12", "q13", "q14", "q15", "q16",
    "q17", "q18", "q19", "q20", "q21", "q22",
];

/// Rows of q13's side input (upstream's `SideInputGenerator`: key `i`, value `i` as text).
const SIDE_INPUT_ROWS: u64 = 10_000;

/// What the bench needs without `--queries`.
const WHERE: &str = "--sql reads the official query files: give --queries DIR, the `queries` folder of the nexmark repository (nexmark-flink/src/main/resources/queries, holding ddl_gen.sql, ddl_views.sql and q0.sql…)";

/// One run's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    /// Events per second of wall time.
    pub rate: f64,
    /// Process CPU-ns per event.
    pub cpu_ns: f64,
    /// Peak RSS, MiB.
    pub rss_mib: f64,
}

/// How one side of a query went.
#[derive(Clone, Debug, PartialEq)]
pub enum Side {
    /// Its runs' figures.
    Ran(Vec<Figures>),
    /// Sluice refused the query before it ran (exit status 2): the reason.
    Refused(String),
    /// The run failed: its error.
    Failed(String),
    /// Not measured (no hand-written twin).
    None,
}

impl Side {
    fn runs(&self) -> &[Figures] {
        match self {
            Side::Ran(v) => v,
            _ => &[],
        }
    }
    fn medians(&self) -> Option<Figures> {
        let v = self.runs();
        (!v.is_empty()).then(|| Figures {
            rate: median(v.iter().map(|f| f.rate).collect()),
            cpu_ns: median(v.iter().map(|f| f.cpu_ns).collect()),
            rss_mib: median(v.iter().map(|f| f.rss_mib).collect()),
        })
    }
}

/// A query's row: both sides, the load before its runs, Flink's figures if given.
#[derive(Clone, Debug)]
pub struct Row {
    /// `q5`.
    pub query: String,
    /// Events per run.
    pub events: u64,
    /// Parallelism.
    pub parallelism: usize,
    /// 1-minute load average before the query's runs.
    pub load: f64,
    /// The official SQL.
    pub sql: Side,
    /// The hand-written twin.
    pub hand: Side,
    /// Flink's medians for the same query, events and parallelism.
    pub flink: Option<FlinkFigures>,
}

impl Row {
    /// SQL / hand-written throughput of the runs made side by side: median, min, max.
    pub fn ratios(&self) -> Option<(f64, f64, f64)> {
        let r: Vec<f64> = self
            .sql
            .runs()
            .iter()
            .zip(self.hand.runs())
            .map(|(s, h)| s.rate / h.rate)
            .collect();
        let lo = r.iter().copied().reduce(f64::min)?;
        let hi = r.iter().copied().reduce(f64::max)?;
        Some((median(r), lo, hi))
    }

    /// SQL / Flink throughput (medians).
    pub fn of_flink(&self) -> Option<f64> {
        Some(self.sql.medians()?.rate / self.flink?.events_per_s)
    }

    /// The row's cells, in [`HEADER`]'s order.
    pub fn cells(&self) -> Vec<String> {
        let dash = || "-".to_string();
        let s = self.sql.medians();
        let h = self.hand.medians();
        let f = self.flink;
        let note = |side: &Side| match side {
            Side::Refused(why) => Some(format!("refused: {why}")),
            Side::Failed(why) => Some(format!("failed: {why}")),
            _ => None,
        };
        let mut cells = vec![
            self.query.clone(),
            self.parallelism.to_string(),
            human(self.events as f64),
            format!("{:.2}", self.load),
        ];
        if let Some(n) = note(&self.sql) {
            cells.push(n);
            return cells;
        }
        cells.extend([
            s.map_or_else(dash, |s| human(s.rate)),
            h.map_or_else(dash, |h| human(h.rate)),
            self.ratios().map_or_else(
                || note(&self.hand).unwrap_or_else(dash),
                |(m, lo, hi)| format!("{m:.2} [{lo:.2}, {hi:.2}]"),
            ),
            s.map_or_else(dash, |s| format!("{:.0}", s.cpu_ns)),
            h.map_or_else(dash, |h| format!("{:.0}", h.cpu_ns)),
            s.map_or_else(dash, |s| format!("{:.1}", s.rss_mib)),
            h.map_or_else(dash, |h| format!("{:.1}", h.rss_mib)),
            f.map_or_else(dash, |f| human(f.events_per_s)),
            self.of_flink().map_or_else(dash, |r| format!("{r:.1}x")),
            f.map_or_else(dash, |f| format!("{:.0}", f.cpu_ns_per_event)),
            f.map_or_else(dash, |f| format!("{:.0}", f.peak_rss_mib)),
        ]);
        cells
    }
}

/// The columns, with their widths in the aligned table.
pub const HEADER: [(&str, usize); 15] = [
    ("query", 5),
    ("p", 2),
    ("events", 7),
    ("load", 5),
    ("SQL ev/s", 9),
    ("hand ev/s", 9),
    ("SQL/hand [min, max]", 19),
    ("SQL ns/ev", 9),
    ("hand ns/ev", 10),
    ("SQL MiB", 7),
    ("hand MiB", 8),
    ("Flink ev/s", 10),
    ("SQL/Flink", 9),
    ("Flink ns/ev", 11),
    ("Flink MiB", 9),
];

/// Cells as one aligned line (a refusal's note runs to the end of the line), or as a markdown
/// table row.
pub fn render(cells: &[String], markdown: bool) -> String {
    if markdown {
        return format!("| {} |", cells.join(" | "));
    }
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        let w = HEADER.get(i).map_or(0, |h| h.1);
        if i == 0 {
            line.push_str(&format!("{c:<w$}"));
        } else if i == cells.len() - 1 && cells.len() < HEADER.len() {
            line.push_str(&format!(" {c}"));
        } else {
            line.push_str(&format!(" {c:>w$}"));
        }
    }
    line
}

/// The 1-minute load average (NaN off Linux).
pub fn load1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The queries to run: `only` (each checked against [`OFFICIAL`]) or all of them.
pub fn selected(only: &[String]) -> Result<Vec<String>> {
    if only.is_empty() {
        return Ok(OFFICIAL.iter().map(|q| q.to_string()).collect());
    }
    only.iter()
        .map(|q| {
            let q = q.trim().to_ascii_lowercase();
            if OFFICIAL.contains(&q.as_str()) {
                Ok(q)
            } else {
                Err(BenchError::Failed(format!(
                    "--query {q}: not an official query Sluice's SQL runs (these are: {})",
                    OFFICIAL.join(", ")
                )))
            }
        })
        .collect()
}

/// A scratch folder for the SQL-only queries' scripts and q13's side input, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Scratch {
    /// The folder with `data/side_input.txt` (what `${FLINK_HOME}` names in q13).
    fn new() -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("sluice-bench-sql-{}", std::process::id()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data)
            .map_err(|e| BenchError::Failed(format!("creating {}: {e}", data.display())))?;
        let rows: String = (0..SIDE_INPUT_ROWS).map(|i| format!("{i},{i}\n")).collect();
        let path = data.join("side_input.txt");
        std::fs::write(&path, rows)
            .map_err(|e| BenchError::Failed(format!("writing {}: {e}", path.display())))?;
        Ok(Scratch(dir))
    }
}

/// The settings every run of one query shares.
struct Runner<'a> {
    exe: &'a Path,
    queries: &'a Path,
    events: u64,
    rate: u64,
    parallelism: usize,
    scratch: &'a Scratch,
}

impl Runner<'_> {
    fn common(&self) -> Vec<String> {
        vec![
            "--events".into(),
            self.events.to_string(),
            "--rate".into(),
            self.rate.to_string(),
            "-p".into(),
            self.parallelism.to_string(),
        ]
    }

    /// `sluice nexmark --stats-json --query q [--sql --queries DIR]`.
    fn nexmark(&self, q: &str, sql: bool) -> Result<Side> {
        let mut cmd = Command::new(self.exe);
        cmd.args(["nexmark", "--stats-json", "--query", q]);
        if sql {
            cmd.arg("--sql").arg("--queries").arg(self.queries);
        }
        let out = cmd
            .args(self.common())
            .output()
            .map_err(|e| BenchError::Start(format!("nexmark {q}"), e))?;
        Ok(outcome(&out, |s| {
            let per_core = field(s, "events_per_core_sec")?;
            Some(Figures {
                rate: field(s, "events_per_sec")?,
                cpu_ns: 1e9 / per_core,
                rss_mib: field(s, "peak_rss_kib")? / 1024.0,
            })
        }))
    }

    /// `sluice run sql -f SCRIPT -D … --stats-json --no-rest`: the runner's script of `q`.
    fn script(&self, q: &str) -> Result<Side> {
        let text = runner_script(self.queries, q).map_err(|e| BenchError::Failed(e.to_string()))?;
        let path = self.scratch.0.join(format!("{q}.sql"));
        std::fs::write(&path, text)
            .map_err(|e| BenchError::Failed(format!("writing {}: {e}", path.display())))?;
        let mut vars = runner_vars(self.events, self.rate);
        vars.insert("FLINK_HOME".into(), self.scratch.0.display().to_string());
        let mut cmd = Command::new(self.exe);
        cmd.args(["run", "sql", "-f"]).arg(&path);
        for (k, v) in vars {
            cmd.arg("-D").arg(format!("{k}={v}"));
        }
        let out = cmd
            .args(["-p", &self.parallelism.to_string()])
            .args(["--stats-json", "--no-rest"])
            .output()
            .map_err(|e| BenchError::Start(format!("run sql {q}"), e))?;
        let events = self.events.max(1) as f64;
        let side = outcome(&out, |s| {
            let secs = field(s, "wall_ms")? / 1000.0;
            let cpu = field(s, "cpu_ns_per_record")? * field(s, "records")?;
            Some(Figures {
                rate: events / secs,
                cpu_ns: cpu / events,
                rss_mib: field(s, "peak_rss_kib")? / 1024.0,
            })
        });
        // The scratch script's path says nothing to the reader; the line and column do.
        let scratch = format!("{}: ", path.display());
        Ok(match side {
            Side::Refused(why) => Side::Refused(why.replace(&scratch, "")),
            other => other,
        })
    }
}

/// A run's side from its process: refused (exit status 2), failed, or its figures.
fn outcome(out: &Output, read: impl Fn(&str) -> Option<Figures>) -> Side {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = || {
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        lines
            .iter()
            .find(|l| l.contains("error"))
            .or(lines.last())
            .map_or_else(String::new, |l| {
                l.trim().trim_start_matches("error: ").to_string()
            })
    };
    if out.status.code() == Some(2) {
        return Side::Refused(said());
    }
    if !out.status.success() {
        return Side::Failed(said());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().rev().find_map(|l| read(l.trim())) {
        Some(f) => Side::Ran(vec![f]),
        None => Side::Failed(format!("no stats line in: {}", stdout.trim())),
    }
}

/// Adds a run to `side` (a refusal or failure ends its runs).
fn add(side: &mut Side, run: Side) {
    match (side, run) {
        (Side::Ran(v), Side::Ran(r)) => v.extend(r),
        (s, r) => *s = r,
    }
}

/// `runs` of the query on both sides, alternating which goes first.
fn measure(r: &Runner<'_>, q: &str, runs: usize, flink: &[FlinkRun]) -> Result<Row> {
    let twin = Query::parse(q).is_ok();
    let mut row = Row {
        query: q.to_string(),
        events: r.events,
        parallelism: r.parallelism,
        load: load1(),
        sql: Side::Ran(Vec::new()),
        hand: if twin {
            Side::Ran(Vec::new())
        } else {
            Side::None
        },
        flink: flink_results::figures(flink, q, r.events, r.parallelism),
    };
    for i in 0..runs.max(1) {
        for sql_turn in [i % 2 == 1, i % 2 == 0] {
            if sql_turn && matches!(row.sql, Side::Ran(_)) {
                let s = if twin {
                    r.nexmark(q, true)?
                } else {
                    r.script(q)?
                };
                add(&mut row.sql, s);
            }
            if !sql_turn && twin && matches!(row.hand, Side::Ran(_)) {
                add(&mut row.hand, r.nexmark(q, false)?);
            }
        }
    }
    Ok(row)
}

/// `sluice bench --nexmark --sql`: one row per query (printed as it is measured), then what
/// fell short of the goals (SQL ≥ 0.7 of hand-written, ≥ 10× Flink).
pub fn bench_sql(exe: &Path, c: &BenchCases) -> Result<()> {
    let queries = c
        .queries
        .as_deref()
        .ok_or_else(|| BenchError::Failed(WHERE.into()))?;
    if !queries.join("ddl_gen.sql").is_file() {
        return Err(BenchError::Failed(format!(
            "{} holds no ddl_gen.sql. {WHERE}",
            queries.display()
        )));
    }
    let names = selected(&c.nexmark_queries)?;
    let flink = match &c.flink_results {
        Some(p) => flink_results::read(p)?,
        None => Vec::new(),
    };
    let scratch = Scratch::new()?;
    let runner = Runner {
        exe,
        queries,
        events: c.events,
        rate: c.rate,
        parallelism: c.parallelism,
        scratch: &scratch,
    };
    println!(
        "Nexmark, official SQL beside the hand-written queries: {} events at {} events/s of event time, parallelism {}, {} run(s) each (medians; SQL/hand: median of the side-by-side pairs [min, max]); load {:.2} at the start",
        c.events,
        c.rate,
        c.parallelism,
        c.runs.max(1),
        load1()
    );
    let header: Vec<String> = HEADER.iter().map(|h| h.0.to_string()).collect();
    println!("{}", render(&header, c.markdown));
    if c.markdown {
        println!("|{}", "---|".repeat(HEADER.len()));
    }
    let mut rows = Vec::new();
    for q in &names {
        let row = measure(&runner, q, c.runs, &flink)?;
        println!("{}", render(&row.cells(), c.markdown));
        let _ = std::io::stdout().flush();
        rows.push(row);
    }
    println!("load {:.2} at the end", load1());
    for line in summary(&rows, c.flink_results.is_some()) {
        println!("{line}");
    }
    Ok(())
}

/// What fell short of the goals, and what was not measured.
pub fn summary(rows: &[Row], with_flink: bool) -> Vec<String> {
    let list = |pick: &dyn Fn(&Row) -> Option<String>| -> String {
        let v: Vec<String> = rows.iter().filter_map(pick).collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    };
    let mut out = vec![format!(
        "SQL below 0.7 of hand-written: {}",
        list(&|r| {
            let (m, _, _) = r.ratios()?;
            (m < 0.7).then(|| format!("{} ({m:.2})", r.query))
        })
    )];
    if with_flink {
        out.push(format!(
            "SQL below 10x Flink: {}",
            list(&|r| {
                let x = r.of_flink()?;
                (x < 10.0).then(|| format!("{} ({x:.1}x)", r.query))
            })
        ));
        out.push(format!(
            "no Flink run with the same events and parallelism: {}",
            list(&|r| {
                (matches!(r.sql, Side::Ran(_)) && r.flink.is_none()).then(|| r.query.clone())
            })
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rate: f64) -> Figures {
        Figures {
            rate,
            cpu_ns: 1e9 / rate,
            rss_mib: 10.0,
        }
    }

    fn row(sql: Side, hand: Side, flink: Option<f64>) -> Row {
        Row {
            query: "q1".into(),
            events: 1_000_000,
            parallelism: 2,
            load: 1.5,
            sql,
            hand,
            flink: flink.map(|f| FlinkFigures {
                runs: 1,
                events_per_s: f,
                cpu_ns_per_event: 1e9 / f,
                peak_rss_mib: 1500.0,
            }),
        }
    }

    #[test]
    fn the_ratio_is_the_median_of_the_side_by_side_pairs() {
        let r = row(
            Side::Ran(vec![run(8e6), run(6e6), run(9e6)]),
            Side::Ran(vec![run(10e6), run(10e6), run(9e6)]),
            Some(2e5),
        );
        assert_eq!(r.ratios(), Some((0.8, 0.6, 1.0)));
        // SQL's median rate over Flink's.
        assert_eq!(r.of_flink(), Some(40.0));
        let cells = r.cells();
        assert_eq!(cells.len(), HEADER.len());
        assert_eq!(cells[6], "0.80 [0.60, 1.00]");
        assert_eq!(cells[12], "40.0x");
        assert_eq!(
            summary(std::slice::from_ref(&r), true)[0],
            "SQL below 0.7 of hand-written: none"
        );
    }

    #[test]
    fn a_refused_query_is_a_row_saying_why() {
        let r = row(
            Side::Refused("LookupJoin is not supported".into()),
            Side::None,
            None,
        );
        let line = render(&r.cells(), false);
        assert!(
            line.ends_with(" refused: LookupJoin is not supported"),
            "{line}"
        );
        assert!(r.ratios().is_none());
        let alone = row(Side::Ran(vec![run(5e6)]), Side::None, None);
        assert_eq!(alone.cells()[5], "-");
        assert_eq!(
            summary(&[alone], true)[2],
            "no Flink run with the same events and parallelism: q1"
        );
    }

    #[test]
    fn shortfalls_are_named() {
        let slow = row(
            Side::Ran(vec![run(5e6)]),
            Side::Ran(vec![run(10e6)]),
            Some(1e6),
        );
        let s = summary(&[slow], true);
        assert_eq!(s[0], "SQL below 0.7 of hand-written: q1 (0.50)");
        assert_eq!(s[1], "SQL below 10x Flink: q1 (5.0x)");
    }

    #[test]
    fn only_official_queries_sluice_runs_are_selected() {
        assert_eq!(selected(&[]).unwrap().len(), OFFICIAL.len());
        assert_eq!(selected(&["Q20".into()]).unwrap(), vec!["q20"]);
        assert_eq!(selected(&["q4".into()]).unwrap(), vec!["q4"]);
        let e = selected(&["q6".into()]).unwrap_err().to_string();
        assert!(e.contains("--query q6") && e.contains("q0, q1"), "{e}");
    }
}
