//! A hand-assembled q2 — the official `datagen` table's scan, one Calc (Flink merges the `bid`
//! view's filter with q2's: `event_type = 2 AND MOD(bid.auction, 123) = 0`, projecting
//! `auction, price`), a filesystem csv sink — over 100 000 events equals DuckDB's answer over
//! sluice-nexmark's own CSV export of the same events (tests/oracle/nexmark_oracle.py).
//!
//! DuckDB comes from `target/venv-oracle` (scripts/test.sh installs it) or `SLUICE_PYTHON`;
//! without it the test skips loudly, and fails under `CI=true`.

use std::process::Command;

use sluice_datastream::StreamEnv;
use sluice_nexmark::{GeneratorConfig, NexmarkGenerator};
use sluice_sql::{bind_expr, BindContext, FunctionRegistry, Scope, SessionConfig};
use sluice_table::{calc, insert_into, Calc, RowErrors, ScanSettings, TableScan};

use crate::support::{create, duckdb, nexmark_session, queries_dir, table, temp_dir, ROOT};

fn expr(text: &str, scope: &Scope, functions: &FunctionRegistry) -> sluice_sql::Expr {
    let ast = sqlparser::parser::Parser::new(&sluice_sql::dialect::FlinkDialect)
        .try_with_sql(text)
        .unwrap()
        .parse_expr()
        .unwrap();
    bind_expr(&ast, scope, &BindContext::new(functions)).unwrap()
}

#[test]
fn q2_over_the_datagen_table_equals_duckdb() {
    let Some(queries) = queries_dir() else { return };
    let Some(py) = duckdb() else { return };
    let (events, tps) = (100_000, 10_000);
    let dir = temp_dir("q2");

    // The oracle: DuckDB over the generator's own export.
    let csv = dir.join("events.csv");
    let generator = NexmarkGenerator::new(GeneratorConfig {
        events,
        rate: tps,
        ..GeneratorConfig::default()
    })
    .unwrap();
    let file = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
    assert_eq!(
        sluice_nexmark::write_csv(generator.iter(), file).unwrap(),
        events
    );
    let out = Command::new(&py)
        .arg(format!("{ROOT}/tests/oracle/nexmark_oracle.py"))
        .arg(&csv)
        .arg(&dir)
        .arg("q2")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oracle: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let oracle: Vec<String> = std::fs::read_to_string(dir.join("q2.csv"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(!oracle.is_empty());

    // Sluice: scan → Calc → filesystem csv sink.
    let s = nexmark_session(&queries, events, tps);
    let functions = FunctionRegistry::builtins();
    let scan = TableScan::new(
        &table(&s, "datagen"),
        &BindContext::new(&functions),
        ScanSettings::default(),
    )
    .unwrap();
    let scope = Scope::new(scan.columns.clone());
    let q2 = Calc::new(
        vec![
            expr("bid.auction", &scope, &functions),
            expr("bid.price", &scope, &functions),
        ],
        Some(expr(
            "event_type = 2 AND MOD(bid.auction, 123) = 0",
            &scope,
            &functions,
        )),
    );
    let out_dir = dir.join("q2-out");
    let sink = create(&format!(
        "CREATE TABLE nexmark_q2 (auction BIGINT, price BIGINT) WITH ('connector' = 'filesystem', \
         'path' = '{}', 'format' = 'csv')",
        out_dir.display()
    ));
    for p in [1, 2] {
        let _ = std::fs::remove_dir_all(&out_dir);
        let env = StreamEnv::new();
        env.set_parallelism(p);
        let errors = RowErrors::new();
        let rows = calc(
            &scan.stream(&env, &errors),
            &q2,
            &["auction".into(), "price".into()],
            &errors,
        );
        insert_into(
            &rows,
            &q2.output_types(),
            &sink,
            &SessionConfig::new(),
            &errors,
        )
        .unwrap();
        let plan = env.execution_plan().unwrap();
        assert!(
            plan.contains("Calc(select=[bid.auction AS auction, bid.price AS price], where=[AND("),
            "{plan}"
        );
        env.execute().unwrap();
        let mut got = sluice_runtime::sinks::committed_lines(&out_dir).unwrap();
        got.sort();
        assert_eq!(got.len(), oracle.len(), "p={p}");
        assert_eq!(got, oracle, "p={p}");
        assert_eq!(errors.count(), 0);
        eprintln!("q2 p={p}: {} rows equal DuckDB's", got.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
