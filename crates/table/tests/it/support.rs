//! What the tests share: the official Nexmark DDL, sessions, a unique temp directory.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use sluice_sql::{CatalogTable, Session, TableDef};

/// The official Nexmark queries folder (`SLUICE_NEXMARK_QUERIES`, else the byte-identical copy
/// in `shared/nexmark-flink/queries` beside the checkout or a worktree's parent), or `None`
/// (after saying so) when it is missing outside CI.
pub fn queries_dir() -> Option<PathBuf> {
    sluice_testkit::nexmark_queries(env!("CARGO_MANIFEST_DIR"))
}

/// The runner's variables, for `events` events at `tps` events per second of event time.
pub fn nexmark_vars(events: u64, tps: u64) -> BTreeMap<String, String> {
    [
        ("TPS", tps.to_string()),
        ("EVENTS_NUM", events.to_string()),
        ("PERSON_PROPORTION", "1".into()),
        ("AUCTION_PROPORTION", "3".into()),
        ("BID_PROPORTION", "46".into()),
        ("NEXMARK_TABLE", "datagen".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A session that ran the official `ddl_gen.sql` and `ddl_views.sql`.
pub fn nexmark_session(dir: &std::path::Path, events: u64, tps: u64) -> Session {
    let mut s = Session::new();
    let vars = nexmark_vars(events, tps);
    for file in ["ddl_gen.sql", "ddl_views.sql"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let out = s.execute_script(&text, &vars).unwrap();
        assert!(out.is_empty());
    }
    s
}

/// A session's table definition.
pub fn table(s: &Session, name: &str) -> TableDef {
    match s.catalog.get(name) {
        Some(CatalogTable::Table(t)) => t.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

/// The one table a `CREATE TABLE` script defines.
pub fn create(sql: &str) -> TableDef {
    let mut s = Session::new();
    s.execute_script(sql, &BTreeMap::new()).unwrap();
    let names = s.catalog.table_names();
    table(&s, &names[0])
}

/// A fresh directory under the system's temp directory.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sluice-table-{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The workspace root.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The oracle's Python: `SLUICE_PYTHON`, else `target/venv-oracle`.
fn python() -> PathBuf {
    std::env::var_os("SLUICE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("{ROOT}/target/venv-oracle/bin/python")))
}

/// The oracle's Python, if it can import DuckDB.
pub fn duckdb() -> Option<PathBuf> {
    let py = python();
    let ok = Command::new(&py)
        .args(["-c", "import duckdb"])
        .status()
        .map_err(|e| format!("{}: {e}", py.display()))
        .and_then(|s| {
            if s.success() {
                Ok(py.clone())
            } else {
                Err(format!("{} cannot import duckdb", py.display()))
            }
        });
    sluice_testkit::require("DuckDB (target/venv-oracle, made by scripts/test.sh)", ok)
}
