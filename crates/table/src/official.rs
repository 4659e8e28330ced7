//! The official Nexmark SQL as the benchmark's runner runs it: `ddl_gen.sql`, `ddl_views.sql`
//! and `qN.sql` from the nexmark repository's `queries` folder (read, never copied into this
//! repository), with the runner's `${…}` variables; and what checking its answers needs:
//!
//! * [`capture_sinks`]: the query's `blackhole` sink becomes a csv file sink (Flink's csv text).
//! * The events as one flat csv table of [`EVENT_COLUMNS`] (the layout of Flink's event dump in
//!   `tests/fixtures/flink/nexmark-sql/`): [`dump_events_script`] writes the generator's events
//!   in it, [`runner_script_over`] runs the unmodified views and query over such a file instead of
//!   the generator, replacing only the `CREATE TABLE datagen` statement of `ddl_gen.sql`.
//!
//! `${FLINK_HOME}` is the runner's too: the official runner points it at the Flink distribution,
//! where the suite's setup (`side_input_gen.sh`: `SideInputGenerator --num 10000 --path
//! $FLINK_HOME/data/side_input.txt`) wrote q13's side input, the lines `i,i` for i in
//! 0..10000. Sluice's runner points it at a directory of its own ([`flink_home`]) and
//! [`runner_script`] writes the same file there for a script that reads `${FLINK_HOME}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_sql::plan::changelog_mode::ROW_KIND_OPTION;
use sluice_sql::{Result, SqlError};

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
        // q10's file sink writes under `${NEXMARK_DIR}/data/output/${SUBMIT_TIME}/`, as the
        // runner sets them: the suite's directory and the submission time in ms.
        ("NEXMARK_DIR", flink_home().display().to_string()),
        (
            "SUBMIT_TIME",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
                .to_string(),
        ),
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

/// The script with its `blackhole` sinks written as csv files under `dir` instead (an
/// append-only query's rows as the filesystem sink writes them).
pub fn capture_sinks(script: &str, dir: &Path) -> Result<String> {
    capture(script, dir, "")
}

/// [`capture_sinks`], each line led by its row kind (`sluice.row-kind`,
/// [`crate::connectors::filesystem`]): an updating query's changelog is captured whole, `-U`
/// included (the planner then asks its operators for `-U` as a retracting sink does, where the
/// blackhole took `+U` alone); read it with [`final_table`].
pub fn capture_changelog_sinks(script: &str, dir: &Path) -> Result<String> {
    capture(script, dir, &format!(", '{ROW_KIND_OPTION}' = 'true'"))
}

fn capture(script: &str, dir: &Path, extra: &str) -> Result<String> {
    const BLACKHOLE: &str = "'connector' = 'blackhole'";
    if !script.contains(BLACKHOLE) {
        return Err(SqlError::validation(
            None,
            format!("the query has no {BLACKHOLE} sink to capture"),
        ));
    }
    let capture = format!(
        "'connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'{extra}",
        dir.display()
    );
    Ok(script.replace(BLACKHOLE, &capture))
}

/// The final table of a captured changelog (lines `+I,…`, `-U,…`, `+U,…`, `-D,…` from any
/// number of part files, in any order): `+I` and `+U` add their row, `-U` and `-D` remove one.
/// Each row is counted, so the order of the lines does not matter; the rows left, sorted (a row
/// twice when added twice). Refused when a line has no row kind or the changelog removes a row
/// more often than it added it.
pub fn final_table(lines: &[String]) -> std::result::Result<Vec<String>, String> {
    let mut count: BTreeMap<&str, i64> = BTreeMap::new();
    for line in lines {
        let (kind, row) = line
            .split_once(',')
            .ok_or_else(|| format!("a captured line without its row kind: '{line}'"))?;
        let delta = match kind {
            "+I" | "+U" => 1,
            "-U" | "-D" => -1,
            other => return Err(format!("'{other}' is no row kind, in line '{line}'")),
        };
        *count.entry(row).or_insert(0) += delta;
    }
    let mut rows = Vec::new();
    for (row, n) in count {
        if n < 0 {
            return Err(format!(
                "the changelog removes the row '{row}' {} more time(s) than it adds it",
                -n
            ));
        }
        rows.extend(std::iter::repeat_n(row.to_string(), n as usize));
    }
    Ok(rows)
}

/// The events' flat columns (name, type), in order: `event_type` (0 person, 1 auction, 2 bid),
/// then each kind's fields prefixed `p_`, `a_`, `b_` (NULL for the other kinds). The layout of
/// Flink's event dump (`tests/fixtures/flink/nexmark-sql/README.md`).
pub const EVENT_COLUMNS: [(&str, &str); 26] = [
    ("event_type", "INT"),
    ("p_id", "BIGINT"),
    ("p_name", "STRING"),
    ("p_emailAddress", "STRING"),
    ("p_creditCard", "STRING"),
    ("p_city", "STRING"),
    ("p_state", "STRING"),
    ("p_dateTime", "TIMESTAMP(3)"),
    ("p_extra", "STRING"),
    ("a_id", "BIGINT"),
    ("a_itemName", "STRING"),
    ("a_description", "STRING"),
    ("a_initialBid", "BIGINT"),
    ("a_reserve", "BIGINT"),
    ("a_dateTime", "TIMESTAMP(3)"),
    ("a_expires", "TIMESTAMP(3)"),
    ("a_seller", "BIGINT"),
    ("a_category", "BIGINT"),
    ("a_extra", "STRING"),
    ("b_auction", "BIGINT"),
    ("b_bidder", "BIGINT"),
    ("b_price", "BIGINT"),
    ("b_channel", "STRING"),
    ("b_url", "STRING"),
    ("b_dateTime", "TIMESTAMP(3)"),
    ("b_extra", "STRING"),
];

/// The `datagen` table's ROW columns: (column, prefix of its flat fields).
const KINDS: [(&str, &str); 3] = [("person", "p_"), ("auction", "a_"), ("bid", "b_")];

fn columns_ddl() -> String {
    EVENT_COLUMNS
        .iter()
        .map(|(n, t)| format!("`{n}` {t}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn csv_options(path: &Path) -> String {
    format!(
        "'connector' = 'filesystem', 'path' = '{}', 'format' = 'csv', 'csv.null-literal' = ''",
        path.display()
    )
}

/// The statements that stand in for `ddl_gen.sql`'s generator table when the events come from a
/// csv file of [`EVENT_COLUMNS`] at `path` (`.gz` read decompressed): a `filesystem` table
/// `nexmark_events` with `ddl_gen.sql`'s event time (`dateTime`, the kind's time) and watermark
/// (`dateTime - 4 s`), and a view `datagen` giving it the generator table's shape
/// (`event_type`, `person`, `auction`, `bid` as named ROWs, `dateTime`), so the official views
/// read it unchanged.
pub fn events_file_ddl(path: &Path) -> String {
    let rows: Vec<String> = KINDS
        .iter()
        .map(|(kind, prefix)| {
            let fields: Vec<&(&str, &str)> = EVENT_COLUMNS
                .iter()
                .filter(|(n, _)| n.starts_with(prefix))
                .collect();
            let values: Vec<String> = fields.iter().map(|(n, _)| format!("`{n}`")).collect();
            let types: Vec<String> = fields
                .iter()
                .map(|(n, t)| format!("`{}` {t}", &n[prefix.len()..]))
                .collect();
            format!(
                "CAST(ROW({}) AS ROW<{}>) AS {kind}",
                values.join(", "),
                types.join(", ")
            )
        })
        .collect();
    format!(
        "CREATE TABLE nexmark_events ({}, \
         `dateTime` AS CASE WHEN event_type = 0 THEN p_dateTime \
         WHEN event_type = 1 THEN a_dateTime ELSE b_dateTime END, \
         WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ({});\n\
         CREATE VIEW datagen AS SELECT event_type, {}, `dateTime` FROM nexmark_events;\n",
        columns_ddl(),
        csv_options(path),
        rows.join(", ")
    )
}

/// The runner's script for `query` with `ddl_gen.sql`'s `CREATE TABLE datagen (…) WITH (…)`
/// statement replaced by `ddl` (a textual substitution of that one statement; the views and the
/// query are read unchanged). Refused when `ddl_gen.sql` has no such statement.
pub fn runner_script_over(dir: &Path, query: &str, ddl: &str) -> Result<String> {
    let text = runner_script(dir, query)?;
    let (start, end) = generator_statement(&text).ok_or_else(|| {
        SqlError::validation(
            None,
            format!(
                "{} holds no `CREATE TABLE datagen (…) WITH (…)` statement to replace",
                dir.join("ddl_gen.sql").display()
            ),
        )
    })?;
    Ok(format!("{}{ddl}{}", &text[..start], &text[end..]))
}

/// Where `CREATE TABLE datagen … WITH (…)` starts and ends (after its `;`, if any) in `text`.
fn generator_statement(text: &str) -> Option<(usize, usize)> {
    let upper = text.to_ascii_uppercase();
    let start = upper.find("CREATE TABLE DATAGEN")?;
    let with = start + upper[start..].find("WITH")?;
    // Balanced parentheses of the WITH clause, quotes skipped.
    let (mut depth, mut quoted, mut end) = (0usize, false, None);
    for (i, c) in text[with..].char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    end = Some(with + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let mut end = end?;
    let rest = &text[end..];
    if let Some(semi) = rest.find(|c: char| !c.is_whitespace()) {
        if rest[semi..].starts_with(';') {
            end += semi + 1;
        }
    }
    Some((start, end))
}

/// A script that writes the generator's events (`ddl_gen.sql`'s `datagen` table, the runner's
/// variables applied by the caller) as a csv file table of [`EVENT_COLUMNS`] under `out`: what
/// the DuckDB oracle reads.
pub fn dump_events_script(dir: &Path, out: &Path) -> Result<String> {
    let path = dir.join("ddl_gen.sql");
    let mut text = std::fs::read_to_string(&path)
        .map_err(|e| SqlError::validation(None, format!("reading {}: {e}", path.display())))?;
    let fields: Vec<String> = EVENT_COLUMNS
        .iter()
        .map(|(n, _)| {
            KINDS.iter().find(|(_, p)| n.starts_with(p)).map_or_else(
                || format!("`{n}`"),
                |(kind, p)| format!("{kind}.`{}`", &n[p.len()..]),
            )
        })
        .collect();
    text.push_str(&format!(
        "\n;\nCREATE TABLE nexmark_events ({}) WITH ({});\n\
         INSERT INTO nexmark_events SELECT {} FROM datagen;\n",
        columns_ddl(),
        csv_options(out),
        fields.join(", ")
    ));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_statement_is_found_whole() {
        let text = "-- c\nCREATE TABLE datagen (a INT, b ROW<x INT>) WITH (\n 'k' = '(v'\n);\nCREATE VIEW v AS SELECT 1;";
        let (s, e) = generator_statement(text).unwrap();
        assert_eq!(&text[..s], "-- c\n");
        assert_eq!(&text[e..], "\nCREATE VIEW v AS SELECT 1;");
    }

    #[test]
    fn a_changelog_applies_in_any_order() {
        let log = |ls: &[&str]| ls.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        // `-U` may reach its file before the `+I` it retracts reaches another.
        let lines = log(&[
            "-U,1,5",
            "+I,2,\"a,b\"",
            "+I,1,5",
            "+U,1,7",
            "+I,3,1",
            "-D,3,1",
        ]);
        assert_eq!(final_table(&lines).unwrap(), log(&["1,7", "2,\"a,b\""]));
        assert_eq!(
            final_table(&log(&["+I,1", "+I,1"])).unwrap(),
            log(&["1", "1"])
        );
        let err = final_table(&log(&["+I,1", "-D,1", "-D,1"])).unwrap_err();
        assert!(err.contains("removes the row '1' 1 more"), "{err}");
        assert!(final_table(&log(&["1,2"])).is_err());
    }
}
