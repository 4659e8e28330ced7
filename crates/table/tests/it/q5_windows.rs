//! The official q5's inner window aggregation — `HOP(TABLE bid, DESCRIPTOR(dateTime),
//! INTERVAL '2' SECOND, INTERVAL '10' SECOND)` with `COUNT(*)` by auction — over the official
//! `datagen` table's scan, in one and two phases at parallelism 1 and 2, equals the counts
//! computed here with a plain loop over sluice-nexmark's bids.

use std::collections::BTreeMap;

use sluice_datastream::StreamEnv;
use sluice_nexmark::{Event, GeneratorConfig, NexmarkGenerator};
use sluice_sql::{BindContext, FunctionRegistry, Row, Scope, Value};
use sluice_table::scan::with_rowtime;
use sluice_table::window_agg::WindowAggCall;
use sluice_table::{
    calc, window_aggregate, Calc, LateRecords, OperatorIds, RowErrors, ScanSettings, TableScan,
    WindowAggSpec, WindowKind, WindowTime,
};

use crate::rows::{agg, millis};
use crate::support::{nexmark_session, queries_dir, table};

fn expr(text: &str, scope: &Scope, functions: &FunctionRegistry) -> sluice_sql::Expr {
    let ast = sqlparser::parser::Parser::new(&sluice_sql::dialect::FlinkDialect)
        .try_with_sql(text)
        .unwrap()
        .parse_expr()
        .unwrap();
    sluice_sql::bind_expr(&ast, scope, &BindContext::new(functions)).unwrap()
}

#[test]
fn q5_hop_counts_equal_a_plain_loop_over_the_bids() {
    let Some(queries) = queries_dir() else { return };
    let (events, tps) = (100_000, 10_000);
    let (size, slide) = (10_000i64, 2_000i64);

    // The answer: per auction and window [s, s + 10 s) with s a multiple of 2 s, the bids in it.
    let generator = NexmarkGenerator::new(GeneratorConfig {
        events,
        rate: tps,
        ..GeneratorConfig::default()
    })
    .unwrap();
    let mut want: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
    for (_, e) in generator.iter() {
        if let Event::Bid(b) = e {
            let t = b.date_time;
            let mut s = t.div_euclid(slide) * slide;
            while s > t - size {
                *want.entry((b.auction, s, s + size)).or_default() += 1;
                s -= slide;
            }
        }
    }
    assert!(want.len() > 1_000);

    let s = nexmark_session(&queries, events, tps);
    let functions = FunctionRegistry::builtins();
    let scan = TableScan::new(
        &table(&s, "datagen"),
        &BindContext::new(&functions),
        ScanSettings::default(),
    )
    .unwrap();
    let scope = Scope::new(scan.columns.clone());
    // The bid view's Calc: `auction, dateTime` where `event_type = 2`.
    let bid = Calc::new(
        vec![
            expr("bid.auction", &scope, &functions),
            expr("dateTime", &scope, &functions),
        ],
        Some(expr("event_type = 2", &scope, &functions)),
    );
    for local in [false, true] {
        let spec = WindowAggSpec {
            keys: vec![0],
            kind: WindowKind::Hop { slide, size },
            time: WindowTime::RowTime(1),
            aggs: vec![WindowAggCall {
                call: agg("COUNT", &[]),
                args: vec![],
            }],
            properties: WindowAggSpec::TVF_PROPERTIES.to_vec(),
            local: local.then(|| {
                OperatorIds::new(
                    "LocalWindowAggregate(groupBy=[auction], window=[HOP(…)], select=[auction, COUNT(*) AS count1$0, slice_end('w$) AS $slice_end])",
                    "q5-local",
                )
            }),
        };
        let name = format!(
            "WindowAggregate(groupBy=[auction], window=[{}], select=[auction, COUNT(*) AS num, start('w$) AS window_start, end('w$) AS window_end])",
            spec.kind.describe("dateTime")
        );
        for p in [1, 2] {
            let env = StreamEnv::new();
            env.set_parallelism(p);
            let (errors, late) = (RowErrors::new(), LateRecords::new());
            let bids = calc(
                &scan.stream(&env, &errors),
                &bid,
                &["auction".into(), "dateTime".into()],
                &errors,
            );
            let out = window_aggregate(
                &with_rowtime(bids, 1),
                &spec,
                &OperatorIds::new(&name, "q5-window"),
                &errors,
                &late,
            )
            .unwrap()
            .collect();
            let plan = env.execution_plan().unwrap();
            assert!(
                plan.contains("window=[HOP(time_col=[dateTime], size=[10 s], slide=[2 s])]"),
                "{plan}"
            );
            env.execute().unwrap();
            assert_eq!(errors.count(), 0, "{:?}", errors.first());
            assert_eq!(
                late.count(),
                0,
                "the 4 s watermark delay leaves no bid late"
            );
            let mut got: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
            for r in out.handle.take() {
                let Row(v) = r;
                let [Value::Int(a), Value::Int(n), s, e, wt] = &v[..] else {
                    panic!("{v:?}")
                };
                assert_eq!(millis(wt), millis(e) - 1);
                assert!(
                    got.insert((*a, millis(s), millis(e)), *n).is_none(),
                    "one row per window"
                );
            }
            assert_eq!(got.len(), want.len(), "local={local} p={p}");
            assert!(got == want, "local={local} p={p}");
            eprintln!("q5 HOP local={local} p={p}: {} rows equal", got.len());
        }
    }
}
