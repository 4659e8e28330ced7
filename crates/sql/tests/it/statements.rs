//! The statement layer: each kind of statement, and each class of refusal with its place.

use std::collections::BTreeMap;

use sluice_sql::ddl::ColumnKind;
use sluice_sql::{
    parse_script, ExplainDetail, Explained, LogicalType, PlannedStatement, Position, Session,
    SqlError, Statement,
};

fn no_vars() -> BTreeMap<String, String> {
    BTreeMap::new()
}

fn run(script: &str) -> Result<Vec<PlannedStatement>, SqlError> {
    Session::new().execute_script(script, &no_vars())
}

fn err(script: &str) -> SqlError {
    match run(script) {
        Ok(out) => panic!("expected an error, got {out:?}"),
        Err(e) => e,
    }
}

fn at(line: u64, column: u64) -> Position {
    Position { line, column }
}

const T: &str =
    "CREATE TABLE t (a BIGINT, b STRING, ts TIMESTAMP(3)) WITH ('connector' = 'blackhole');\n";

#[test]
fn a_syntax_error_names_its_line_and_column_in_the_whole_script() {
    let script =
        format!("{T}SET 'parallelism.default' = '2';\n\nINSERT INTO t\nSELECT a,, b FROM t;");
    let e = err(&script);
    let SqlError::Syntax { pos, message } = &e else {
        panic!("{e}")
    };
    assert_eq!(*pos, at(5, 10), "{e}");
    assert!(message.starts_with("Expected: an expression"), "{e}");
    // The same error on a line of its own after a substituted variable longer than its name.
    let vars = BTreeMap::from([("T".to_string(), "a_long_table_name".to_string())]);
    let e = parse_script("SELECT a FROM ${T} WHERE ) ", &vars).unwrap_err();
    assert_eq!(
        e.to_string().split(':').next(),
        Some("SQL syntax error at line 1, column 26"),
        "{e}"
    );
}

#[test]
fn statements_of_every_kind_read() {
    let script = format!(
        "{T}
         SET 'execution.checkpointing.interval' = '10 s';
         CREATE TEMPORARY VIEW v (x, y) AS SELECT a, b FROM t;
         CREATE TEMPORARY SYSTEM FUNCTION cc AS 'com.github.nexmark.flink.udf.CountChar' LANGUAGE JAVA;
         EXPLAIN ESTIMATED_COST, CHANGELOG_MODE, JSON_EXECUTION_PLAN SELECT * FROM v;
         EXPLAIN PLAN FOR INSERT INTO t SELECT * FROM t;
         SELECT cc(b, 'c') FROM t;
         BEGIN STATEMENT SET;
         INSERT INTO t SELECT * FROM t;
         INSERT INTO t (a, b, ts) SELECT a, b, ts FROM t;
         END;
         EXECUTE STATEMENT SET BEGIN INSERT INTO t SELECT * FROM t; END;
         SHOW TABLES;
         DESCRIBE v;
         SET;
         RESET 'execution.checkpointing.interval';
         DROP TEMPORARY VIEW v;"
    );
    let mut s = Session::new();
    let out = s.execute_script(&script, &no_vars()).unwrap();
    assert_eq!(out.len(), 8, "{out:#?}");
    let PlannedStatement::Explain(e) = &out[0] else {
        panic!()
    };
    assert_eq!(
        e.details,
        [
            ExplainDetail::EstimatedCost,
            ExplainDetail::ChangelogMode,
            ExplainDetail::JsonExecutionPlan
        ]
    );
    assert!(matches!(e.target.as_ref(), Explained::Query(_)));
    let PlannedStatement::Explain(e) = &out[1] else {
        panic!()
    };
    assert!(e.details.is_empty());
    assert!(matches!(e.target.as_ref(), Explained::Insert(_)));
    assert!(matches!(&out[2], PlannedStatement::Query(_)));
    let PlannedStatement::StatementSet(set) = &out[3] else {
        panic!()
    };
    assert_eq!(set.inserts.len(), 2);
    assert_eq!(set.inserts[1].columns, ["a", "b", "ts"]);
    assert_eq!(set.pos, at(9, 10));
    let PlannedStatement::StatementSet(set) = &out[4] else {
        panic!()
    };
    assert_eq!(set.inserts.len(), 1);
    assert!(matches!(out[5], PlannedStatement::ShowTables { .. }));
    assert!(matches!(out[6], PlannedStatement::Describe { .. }));
    assert!(matches!(out[7], PlannedStatement::ShowConfig { .. }));
    assert_eq!(s.config.checkpoint_interval(), None, "RESET took it back");
    assert!(s.catalog.get("v").is_none(), "dropped");
    assert!(s.catalog.function("CC").is_some());
}

#[test]
fn create_table_reads_every_kind_of_column_and_clause() {
    let stmts = parse_script(
        "CREATE TEMPORARY TABLE IF NOT EXISTS default_catalog.default_database.orders (
           id BIGINT NOT NULL COMMENT 'the key',
           price DECIMAL(10, 2),
           d DEC, n NUMERIC(5),
           tags ARRAY<STRING>, m MAP<STRING, ARRAY<INT>>, nested ROW(x INT, y ROW<z DOUBLE>),
           legacy INT ARRAY,
           c CHAR, c5 CHAR(5), v VARCHAR(10), bin BYTES, vb VARBINARY,
           t TIME, t3 TIME(3), ts TIMESTAMP, ltz TIMESTAMP(3) WITH LOCAL TIME ZONE, ltz2 TIMESTAMP_LTZ(3),
           i1 INTERVAL DAY TO SECOND(3), i2 INTERVAL YEAR TO MONTH, dt DATE,
           kafka_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
           part INT METADATA,
           total AS price * 2 COMMENT 'computed',
           proc AS PROCTIME(),
           WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
           PRIMARY KEY (id) NOT ENFORCED
         ) COMMENT 'orders' PARTITIONED BY (dt) WITH ('connector' = 'kafka', 'topic' = 'o')",
        &no_vars(),
    )
    .unwrap();
    let [Statement::CreateTable(t)] = stmts.as_slice() else {
        panic!("{stmts:?}")
    };
    assert!(t.temporary && t.if_not_exists);
    assert_eq!(t.name.resolve().unwrap(), "orders");
    let ty = |name: &str| match &t.column(name).unwrap().kind {
        ColumnKind::Physical(ty) | ColumnKind::Metadata { ty, .. } => ty.to_string(),
        ColumnKind::Computed(e) => format!("AS {e}"),
    };
    assert_eq!(ty("id"), "BIGINT NOT NULL");
    assert_eq!(ty("price"), "DECIMAL(10, 2)");
    assert_eq!(ty("d"), "DECIMAL(10, 0)");
    assert_eq!(ty("n"), "DECIMAL(5, 0)");
    assert_eq!(ty("tags"), "ARRAY<VARCHAR(2147483647)>");
    assert_eq!(ty("m"), "MAP<VARCHAR(2147483647), ARRAY<INTEGER>>");
    assert_eq!(ty("nested"), "ROW<`x` INTEGER, `y` ROW<`z` DOUBLE>>");
    assert_eq!(ty("legacy"), "ARRAY<INTEGER>");
    assert_eq!(ty("c"), "CHAR(1)");
    assert_eq!(ty("c5"), "CHAR(5)");
    assert_eq!(ty("v"), "VARCHAR(10)");
    assert_eq!(ty("bin"), "VARBINARY(2147483647)");
    assert_eq!(ty("vb"), "VARBINARY(2147483647)");
    assert_eq!(ty("t"), "TIME(0)");
    assert_eq!(ty("t3"), "TIME(3)");
    assert_eq!(ty("ts"), "TIMESTAMP(6)");
    assert_eq!(ty("ltz"), "TIMESTAMP_LTZ(3)");
    assert_eq!(ty("ltz2"), "TIMESTAMP_LTZ(3)");
    assert_eq!(
        t.column("i1").map(|c| &c.kind),
        Some(&ColumnKind::Physical(sluice_sql::DataType::new(
            LogicalType::IntervalDayTime
        )))
    );
    assert_eq!(ty("total"), "AS price * 2");
    assert_eq!(
        t.column("total").unwrap().comment.as_deref(),
        Some("computed")
    );
    assert_eq!(ty("proc"), "AS PROCTIME()");
    let ColumnKind::Metadata { key, virtual_, .. } = &t.column("kafka_ts").unwrap().kind else {
        panic!()
    };
    assert_eq!((key.as_deref(), *virtual_), (Some("timestamp"), true));
    assert_eq!(t.primary_key, ["id"]);
    assert_eq!(t.partition_keys, ["dt"]);
    assert_eq!(t.comment.as_deref(), Some("orders"));
    assert_eq!(
        t.options,
        [
            ("connector".into(), "kafka".into()),
            ("topic".into(), "o".into())
        ]
    );
    assert_eq!(
        t.watermark.as_ref().unwrap().expr.to_string(),
        "ts - INTERVAL '5' SECOND"
    );
}

#[test]
fn a_column_primary_key_makes_its_column_not_null() {
    let stmts = parse_script(
        "CREATE TABLE k (id INT PRIMARY KEY NOT ENFORCED, v STRING)",
        &no_vars(),
    )
    .unwrap();
    let [Statement::CreateTable(t)] = stmts.as_slice() else {
        panic!()
    };
    assert_eq!(t.primary_key, ["id"]);
    assert_eq!(
        t.columns[0].kind,
        ColumnKind::Physical(sluice_sql::DataType::int().not_null())
    );
}

#[test]
fn malformed_ddl_is_refused_with_its_place() {
    let cases: &[(&str, Position, &str)] = &[
        (
            "CREATE TABLE t (a, b INT)",
            at(1, 18),
            "Expected: a data type for column 'a'",
        ),
        (
            "CREATE TABLE t (a INT) WITH ('connector' = blackhole)",
            at(1, 44),
            "Expected: the value of option 'connector' in quotes",
        ),
        (
            "CREATE TABLE t (a INT) WITH (connector = 'x')",
            at(1, 30),
            "Expected: an option key in quotes",
        ),
        (
            "CREATE TABLE t (a INT) WITH ('k' = 'v', 'k' = 'w')",
            at(1, 41),
            "Option 'k' is given twice",
        ),
        (
            "CREATE TABLE t (a INT, PRIMARY KEY (a))",
            at(1, 24),
            "Flink doesn't support ENFORCED mode",
        ),
        (
            "CREATE TABLE t (\n  a INT,\n  a STRING)",
            at(3, 3),
            "A column named 'a' already exists",
        ),
        (
            "CREATE TABLE t (a INT, WATERMARK FOR b AS b)",
            at(1, 24),
            "Column 'b' not found",
        ),
        (
            "CREATE TABLE t (a INTT)",
            at(1, 19),
            "Type 'INTT' not found",
        ),
        (
            "CREATE TABLE t (a DECIMAL(40, 2))",
            at(1, 19),
            "Decimal precision must be between 1 and 38",
        ),
        (
            "CREATE TABLE t (a INT, b AS a +)",
            at(1, 32),
            "Expected: an expression",
        ),
        ("CREATE TABLE t (a INT) LIKE s", at(1, 24), "Unsupported"),
        ("CREATE TABLE t (a MULTISET<INT>)", at(1, 19), "Unsupported"),
        (
            "CREATE TABLE t (a ROW<x INT, y ARRAY<INT>>, b INT",
            at(1, 50),
            "Expected: , or )",
        ),
    ];
    for (sql, pos, says) in cases {
        let e = err(sql);
        let got = match &e {
            SqlError::Syntax { pos, .. } => Some(*pos),
            SqlError::Validation { pos, .. }
            | SqlError::Unsupported { pos, .. }
            | SqlError::UnknownName { pos, .. } => *pos,
            _ => None,
        };
        assert_eq!(got, Some(*pos), "{sql}: {e}");
        assert!(e.to_string().contains(says), "{sql}: {e}");
    }
}

#[test]
fn an_unknown_set_key_is_named_with_the_nearest_known_ones() {
    let e = err("SET 'table.exec.source.idle-timout' = '1 s';");
    assert_eq!(
        e.to_string(),
        "Configuration key 'table.exec.source.idle-timout' not found at line 1, column 1. Did you mean 'table.exec.source.idle-timeout'?"
    );
    let e = err("SET 'parallelism.default' = 'many';");
    assert!(e.to_string().contains("'parallelism.default'"), "{e}");
    run("SET 'state.backend.type' = 'rocksdb';").unwrap();
}

#[test]
fn duplicates_follow_flinks_rules() {
    let e = err(&format!("{T}{T}"));
    assert_eq!(
        e.to_string(),
        "SQL validation failed at line 2, column 14: Table (or view) default_database.t already exists in Catalog default_catalog."
    );
    run(&format!(
        "{T}{}",
        T.replace("TABLE t", "TABLE IF NOT EXISTS t")
    ))
    .unwrap();
    // A temporary table shadows a permanent one; two temporary ones collide.
    let temp = T.replace("TABLE", "TEMPORARY TABLE");
    run(&format!("{T}{temp}")).unwrap();
    let e = err(&format!("{temp}{temp}"));
    assert!(
        e.to_string()
            .contains("Temporary table '`default_catalog`.`default_database`.`t`' already exists"),
        "{e}"
    );
    let e = err("CREATE VIEW v AS SELECT 1; CREATE VIEW v AS SELECT 2;");
    assert!(e.to_string().contains("already exists"), "{e}");
    let f = "CREATE FUNCTION f AS 'com.github.nexmark.flink.udf.CountChar';";
    let e = err(&format!("{f}{}", f.replace(" f ", " F ")));
    assert!(
        e.to_string()
            .contains("Function default_database.f already exists"),
        "{e}"
    );
}

#[test]
fn unknown_names_come_with_the_nearest_known_ones() {
    let e = err(&format!("{T}INSERT INTO tt SELECT * FROM t;"));
    assert_eq!(
        e.to_string(),
        "Table 'tt' not found at line 2, column 13. Did you mean 't'?"
    );
    let e = err("CREATE FUNCTION f AS 'com.github.nexmark.flink.udf.CountChars';");
    assert!(
        e.to_string()
            .contains("Did you mean 'com.github.nexmark.flink.udf.CountChar'?"),
        "{e}"
    );
    let e = parse_script(
        "SELECT '${TSP}'",
        &BTreeMap::from([("TPS".to_string(), "1".to_string())]),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Variable '${TSP}' not found at line 1, column 9. Did you mean '${TPS}'?"
    );
}

#[test]
fn unsupported_statements_are_named_with_their_place() {
    for (sql, says) in [
        ("ALTER TABLE t RENAME TO u", "the statement ALTER TABLE …"),
        ("USE CATALOG c", "the statement USE CATALOG …"),
        ("CREATE CATALOG c WITH ()", "the statement CREATE CATALOG …"),
        ("INSERT OVERWRITE t SELECT 1", "INSERT OVERWRITE"),
        (
            "CREATE FUNCTION p AS 'm.f' LANGUAGE PYTHON",
            "LANGUAGE PYTHON",
        ),
    ] {
        let e = err(&format!("\n  {sql}"));
        let SqlError::Unsupported { pos, what } = &e else {
            panic!("{sql}: {e}")
        };
        assert!(what.contains(says), "{sql}: {e}");
        assert_eq!(pos.map(|p| p.line), Some(2), "{sql}: {e}");
    }
}

#[test]
fn statement_sets_hold_only_inserts_and_must_close() {
    let e = err(&format!("{T}BEGIN STATEMENT SET;\nSELECT 1;\nEND;"));
    assert!(
        matches!(&e, SqlError::Syntax { pos, .. } if *pos == at(3, 1)),
        "{e}"
    );
    let e = err(&format!(
        "{T}BEGIN STATEMENT SET;\nINSERT INTO t SELECT * FROM t;"
    ));
    assert!(e.to_string().contains("END is missing"), "{e}");
    let e = err("END;");
    assert!(e.to_string().contains("No Statement Set to submit"), "{e}");
    let out = run(&format!(
        "{T}EXPLAIN STATEMENT SET BEGIN INSERT INTO t SELECT * FROM t; END;"
    ))
    .unwrap();
    let [PlannedStatement::Explain(e)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert!(matches!(e.target.as_ref(), Explained::StatementSet(s) if s.inserts.len() == 1));
}

#[test]
fn unquoted_datetime_is_refused_as_flink_refuses_it() {
    let e = err(&format!("{T}SELECT\n  x.dateTime FROM t x;"));
    let SqlError::Syntax { pos, message } = &e else {
        panic!("{e}")
    };
    assert_eq!(*pos, at(3, 4));
    assert!(message.starts_with("Encountered \". dateTime\""), "{e}");
    run(&format!("{T}SELECT x.`dateTime` FROM t x;")).unwrap();
}
