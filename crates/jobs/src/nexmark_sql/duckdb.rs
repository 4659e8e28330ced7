//! The DuckDB oracle: our own DuckDB translation of each official query
//! (`crates/jobs/oracle/duckdb/qN.sql`, compiled into the binary with their runner `run.py`), run
//! by Python's `duckdb` module over the events the Sluice run consumed. It shares no code with
//! Sluice: the events reach it as a csv file, its answer comes back as JSON lines.
//!
//! The interpreter is `SLUICE_PYTHON`, else `python3`; without an importable `duckdb` module
//! the check fails, saying how to install it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The runner script.
const RUNNER: &str = include_str!("../../oracle/duckdb/run.py");

/// Each query's translation (q12's gives per-bidder totals: its processing-time windows depend
/// on the wall clock, see [`super::proctime`]).
const TRANSLATIONS: [(&str, &str); 22] = [
    ("q0", include_str!("../../oracle/duckdb/q0.sql")),
    ("q1", include_str!("../../oracle/duckdb/q1.sql")),
    ("q2", include_str!("../../oracle/duckdb/q2.sql")),
    ("q3", include_str!("../../oracle/duckdb/q3.sql")),
    ("q4", include_str!("../../oracle/duckdb/q4.sql")),
    ("q5", include_str!("../../oracle/duckdb/q5.sql")),
    ("q7", include_str!("../../oracle/duckdb/q7.sql")),
    ("q8", include_str!("../../oracle/duckdb/q8.sql")),
    ("q9", include_str!("../../oracle/duckdb/q9.sql")),
    ("q10", include_str!("../../oracle/duckdb/q10.sql")),
    ("q11", include_str!("../../oracle/duckdb/q11.sql")),
    ("q12", include_str!("../../oracle/duckdb/q12.sql")),
    ("q13", include_str!("../../oracle/duckdb/q13.sql")),
    ("q14", include_str!("../../oracle/duckdb/q14.sql")),
    ("q15", include_str!("../../oracle/duckdb/q15.sql")),
    ("q16", include_str!("../../oracle/duckdb/q16.sql")),
    ("q17", include_str!("../../oracle/duckdb/q17.sql")),
    ("q18", include_str!("../../oracle/duckdb/q18.sql")),
    ("q19", include_str!("../../oracle/duckdb/q19.sql")),
    ("q20", include_str!("../../oracle/duckdb/q20.sql")),
    ("q21", include_str!("../../oracle/duckdb/q21.sql")),
    ("q22", include_str!("../../oracle/duckdb/q22.sql")),
];

/// The DuckDB translation of `query`, if there is one.
pub fn translation(query: &str) -> Option<&'static str> {
    TRANSLATIONS
        .iter()
        .find(|(q, _)| *q == query)
        .map(|(_, sql)| *sql)
}

/// The oracle's Python: `SLUICE_PYTHON`, else `python3`.
pub fn python() -> PathBuf {
    std::env::var_os("SLUICE_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// The Python, once it imports `duckdb`; else how to install it.
pub fn require_duckdb() -> Result<PathBuf, String> {
    let py = python();
    let how = format!(
        "--verify checks the answer with DuckDB, which needs Python's duckdb module: install it \
         with `{0} -m pip install duckdb==2.0.1` (or set SLUICE_PYTHON to a Python that has it)",
        py.display()
    );
    match Command::new(&py).args(["-c", "import duckdb"]).output() {
        Ok(o) if o.status.success() => Ok(py),
        Ok(_) => Err(format!("{} cannot import duckdb. {how}", py.display())),
        Err(e) => Err(format!("cannot run {}: {e}. {how}", py.display())),
    }
}

/// Runs `query`'s translation over `events` (a csv file of the flat event columns; `side_input`
/// for q13) with the files written under `work`; DuckDB's rows as JSON lines.
pub fn answer(
    py: &Path,
    query: &str,
    events: &Path,
    side_input: Option<&Path>,
    work: &Path,
) -> Result<Vec<String>, String> {
    let sql = translation(query).ok_or_else(|| format!("no DuckDB translation of {query}"))?;
    let write = |name: &str, text: &str| {
        let p = work.join(name);
        std::fs::write(&p, text).map_err(|e| format!("writing {}: {e}", p.display()))?;
        Ok::<PathBuf, String>(p)
    };
    let runner = write("oracle.py", RUNNER)?;
    let sql_file = write(&format!("{query}.sql"), sql)?;
    let out = work.join(format!("{query}.duckdb.jsonl"));
    let mut cmd = Command::new(py);
    cmd.arg(&runner).arg(events).arg(&sql_file).arg(&out);
    if let Some(s) = side_input {
        cmd.arg(s);
    }
    let run = cmd
        .output()
        .map_err(|e| format!("running {}: {e}", py.display()))?;
    if !run.status.success() {
        return Err(format!(
            "the DuckDB oracle failed on {query}: {}",
            String::from_utf8_lossy(&run.stderr).trim()
        ));
    }
    let text =
        std::fs::read_to_string(&out).map_err(|e| format!("reading {}: {e}", out.display()))?;
    Ok(text.lines().map(str::to_string).collect())
}
