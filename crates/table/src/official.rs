//! The official Nexmark SQL as the benchmark's runner runs it: `ddl_gen.sql`, `ddl_views.sql`
//! and `qN.sql` from the nexmark repository's `queries` folder (read, never copied into this
//! repository), with the runner's `${…}` variables; and what `--verify` needs: the query's
//! `blackhole` sink replaced by a csv file capture, and the captured lines in the hand-written
//! queries' CSV form (timestamps as epoch milliseconds).

use std::collections::BTreeMap;
use std::path::Path;

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
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The script the runner runs for `query` (`q0`…): the DDL, the views, the query.
pub fn runner_script(dir: &Path, query: &str) -> Result<String> {
    let mut text = String::new();
    for file in ["ddl_gen.sql", "ddl_views.sql", &format!("{query}.sql")] {
        let path = dir.join(file);
        let part = std::fs::read_to_string(&path)
            .map_err(|e| SqlError::validation(None, format!("reading {}: {e}", path.display())))?;
        text.push_str(&part);
        text.push_str("\n;\n");
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
