//! Every official Nexmark SQL file goes through the statement layer unmodified, with the
//! variables Flink's Nexmark runner substitutes.
//!
//! The files are read from `SLUICE_NEXMARK_QUERIES`, by default the byte-identical copy next to
//! the repository (`../shared/nexmark-flink/queries`). Without them the tests skip loudly, and
//! fail under `CI=true`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sluice_sql::ddl::ColumnKind;
use sluice_sql::{
    CatalogTable, LogicalType, PlannedStatement, Position, Session, SqlError, TimestampKind,
};

/// The queries folder, or `None` (after saying so) when it is missing outside CI.
fn queries_dir() -> Option<PathBuf> {
    sluice_testkit::nexmark_queries(env!("CARGO_MANIFEST_DIR"))
}

/// The variables Flink's Nexmark runner substitutes (its defaults, the datagen table).
fn flink_vars() -> BTreeMap<String, String> {
    [
        ("TPS", "10000000"),
        ("EVENTS_NUM", "100000000"),
        ("PERSON_PROPORTION", "1"),
        ("AUCTION_PROPORTION", "3"),
        ("BID_PROPORTION", "46"),
        ("NEXMARK_TABLE", "datagen"),
        ("BOOTSTRAP_SERVERS", "localhost:9092"),
        ("FLINK_HOME", "/opt/flink"),
        ("NEXMARK_DIR", "/opt/nexmark"),
        ("SUBMIT_TIME", "1700000000000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn read(dir: &std::path::Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A session with the runner's DDL and views.
fn session_with_views(dir: &std::path::Path) -> Session {
    let mut s = Session::new();
    let vars = flink_vars();
    for file in ["ddl_gen.sql", "ddl_views.sql"] {
        let out = s
            .execute_script(&read(dir, file), &vars)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(out.is_empty(), "{file} holds only DDL");
    }
    s
}

#[test]
fn the_datagen_table_has_its_rows_computed_time_and_watermark() {
    let Some(dir) = queries_dir() else { return };
    let s = session_with_views(&dir);
    let Some(CatalogTable::Table(t)) = s.catalog.get("datagen") else {
        panic!("no datagen table");
    };
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["event_type", "person", "auction", "bid", "dateTime"]
    );
    let ColumnKind::Physical(person) = &t.columns[1].kind else {
        panic!("person is physical")
    };
    let LogicalType::Row(fields) = &person.logical else {
        panic!("person is a ROW: {person}")
    };
    assert_eq!(fields.len(), 8);
    assert_eq!(
        fields[1].ty.to_string(),
        "VARCHAR(2147483647)",
        "a bare VARCHAR is STRING in Flink's DDL"
    );
    assert_eq!(
        fields[6].ty.logical,
        LogicalType::Timestamp {
            precision: 3,
            kind: TimestampKind::Regular
        }
    );
    let ColumnKind::Computed(expr) = &t.columns[4].kind else {
        panic!("dateTime is computed")
    };
    assert!(
        expr.to_string()
            .starts_with("CASE WHEN event_type = 0 THEN person.`dateTime`"),
        "{expr}"
    );
    let w = t.watermark.as_ref().expect("a watermark");
    assert_eq!(w.column, "dateTime");
    assert_eq!(w.expr.to_string(), "`dateTime` - INTERVAL '4' SECOND");
    assert_eq!(
        w.pos,
        Position {
            line: 37,
            column: 5
        }
    );
    assert_eq!(t.option("connector"), Some("nexmark"));
    assert_eq!(t.option("first-event.rate"), Some("10000000"));
    assert_eq!(t.options.len(), 7);
    for view in ["person", "auction", "bid"] {
        assert!(
            matches!(s.catalog.get(view), Some(CatalogTable::View(_))),
            "{view}"
        );
    }
}

#[test]
fn the_kafka_ddl_reads() {
    let Some(dir) = queries_dir() else { return };
    let mut s = Session::new();
    s.execute_script(&read(&dir, "ddl_kafka.sql"), &flink_vars())
        .unwrap();
    let Some(CatalogTable::Table(t)) = s.catalog.get("kafka") else {
        panic!("no kafka table")
    };
    assert_eq!(
        t.option("properties.bootstrap.servers"),
        Some("localhost:9092")
    );
}

#[test]
fn every_official_query_reads_and_q23_is_refused_as_flink_refuses_it() {
    let Some(dir) = queries_dir() else { return };
    let vars = flink_vars();
    for n in 0..=22 {
        let file = format!("q{n}.sql");
        let mut s = session_with_views(&dir);
        let out = s
            .execute_script(&read(&dir, &file), &vars)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let [PlannedStatement::Insert(insert)] = out.as_slice() else {
            panic!("{file}: one INSERT expected, got {out:?}")
        };
        assert_eq!(insert.target.to_string(), format!("nexmark_q{n}"), "{file}");
    }
    let mut s = session_with_views(&dir);
    let err = s.execute_script(&read(&dir, "q23.sql"), &vars).unwrap_err();
    let SqlError::Syntax { pos, message } = &err else {
        panic!("q23: a syntax error expected, got {err}")
    };
    assert_eq!(
        *pos,
        Position {
            line: 56,
            column: 9
        },
        "{err}"
    );
    assert!(message.starts_with("Encountered \". dateTime\""), "{err}");
    assert!(message.contains("Flink 2.3"), "{err}");
    assert!(
        s.catalog.get("nexmark_q23").is_none(),
        "a syntax error anywhere runs nothing"
    );
}

#[test]
fn q14s_function_is_the_rust_count_char() {
    let Some(dir) = queries_dir() else { return };
    let mut s = session_with_views(&dir);
    s.execute_script(&read(&dir, "q14.sql"), &flink_vars())
        .unwrap();
    let f = s.catalog.function("COUNT_CHAR").expect("count_char");
    assert_eq!(f.identifier, "com.github.nexmark.flink.udf.CountChar");
}
