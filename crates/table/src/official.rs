//! The official Nexmark SQL as the benchmark's runner runs it: `ddl_gen.sql`, `ddl_views.sql`
//! and `qN.sql` from the nexmark repository's `queries` folder (read, never copied into this
//! repository), with the runner's `${…}` variables; and what `--verify` needs: the query's
//! `blackhole` sink replaced by a csv file capture, and the captured lines in the hand-written
//! queries' CSV form (timestamps as epoch milliseconds).
//!
//! `${FLINK_HOME}` is the runner's too: the official runner points it at the Flink distribution,
//! where the suite's setup (`side_input_gen.sh`: `SideInputGenerator --num 10000 --path
//! $FLINK_HOME/data/side_input.txt`) wrote q13's side input, the lines `i,i` for i in
//! 0..10000. Sluice's runner points it at a directory of its own ([`flink_home`]) and
//! [`runner_script`] writes the same file there for a script that reads `${FLINK_HOME}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_sql::datetime::parse_timestamp;
use sluice_sql::{DataType, LogicalType, Result, SqlError};

/// The runner's variables for `events` events at `tps` events per second of event time (the
/// proportions are the benchmark's defaults; the table is the `datagen` one).
pub fn runner_vars(events: u64, tps: u64) -> BTreeMap<String, String> {
    [
        ("TPS", tps.to_string()),
        ("EVENTS_NUM", events.to_string()),
        ("PERSON_PROPORTION", "1".to_string()),
        ("AUCTION_PROPORTION", "3".to_string()),
        ("BID_PROPORTION", "46".to_string()),
        ("NEXMARK_TABLE", "datagen".to_string()),
        ("FLINK_HOME", flink_home().display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The rows of the suite's side input (`side_input_gen.sh` runs `SideInputGenerator --num
/// 10000`).
pub const SIDE_INPUT_ROWS: u64 = 10_000;

/// What `${FLINK_HOME}` stands for: `SLUICE_NEXMARK_HOME` if set, else
/// `sluice-nexmark-home-<user>` under the system's temp directory.
pub fn flink_home() -> PathBuf {
    if let Some(dir) = std::env::var_os("SLUICE_NEXMARK_HOME") {
        return PathBuf::from(dir);
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
    std::env::temp_dir().join(format!("sluice-nexmark-home-{user}"))
}

/// Writes `home/data/side_input.txt` as the suite's `SideInputGenerator` writes it (`i,i` per
/// line, i in 0..[`SIDE_INPUT_ROWS`]) unless it already holds exactly that; returns its path.
/// The file appears whole (written aside, then renamed), so concurrent runs never read half.
pub fn prepare_side_input(home: &Path) -> Result<PathBuf> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        SqlError::validation(None, format!("{what} {}: {e}", p.display()))
    };
    let data = home.join("data");
    let path = data.join("side_input.txt");
    let text: String = (0..SIDE_INPUT_ROWS).map(|i| format!("{i},{i}\n")).collect();
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Ok(path);
    }
    std::fs::create_dir_all(&data).map_err(|e| io("creating", &data, e))?;
    let aside = data.join(format!(".side_input.txt.{}", std::process::id()));
    std::fs::write(&aside, text).map_err(|e| io("writing", &aside, e))?;
    std::fs::rename(&aside, &path).map_err(|e| io("renaming into", &path, e))?;
    Ok(path)
}

/// The script the runner runs for `query` (`q0`…): the DDL, the views, the query. A script that
/// reads `${FLINK_HOME}` (q13's side input) gets its file prepared under [`flink_home`], as the
/// suite's setup prepares it.
pub fn runner_script(dir: &Path, query: &str) -> Result<String> {
    let mut text = String::new();
    for file in ["ddl_gen.sql", "ddl_views.sql", &format!("{query}.sql")] {
        let path = dir.join(file);
        let part = std::fs::read_to_string(&path)
            .map_err(|e| SqlError::validation(None, format!("reading {}: {e}", path.display())))?;
        text.push_str(&part);
        text.push_str("\n;\n");
    }
    if text.contains("${FLINK_HOME}/data/side_input.txt") {
        prepare_side_input(&flink_home())?;
    }
    Ok(text)
}

/// The script with its `blackhole` sinks written as csv files under `dir` instead.
pub fn capture_sinks(script: &str, dir: &Path) -> Result<String> {
    const BLACKHOLE: &str = "'connector' = 'blackhole'";
    if !script.contains(BLACKHOLE) {
        return Err(SqlError::validation(
            None,
            format!("the query has no {BLACKHOLE} sink to capture"),
        ));
    }
    let capture = format!(
        "'connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'",
        dir.display()
    );
    Ok(script.replace(BLACKHOLE, &capture))
}

/// A captured csv line in the hand-written queries' form: TIMESTAMP columns as epoch
/// milliseconds (the rest as the csv format writes it).
pub fn as_handwritten(line: &str, types: &[DataType]) -> String {
    let fields: Vec<&str> = line.split(',').collect();
    if fields.len() != types.len() {
        return line.to_string();
    }
    fields
        .iter()
        .zip(types)
        .map(|(f, t)| match t.logical {
            LogicalType::Timestamp { .. } | LogicalType::TimestampLtz { .. } => {
                let text = f.trim_matches('"');
                parse_timestamp(text).map_or_else(|| f.to_string(), |ts| ts.millis.to_string())
            }
            _ => f.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}
