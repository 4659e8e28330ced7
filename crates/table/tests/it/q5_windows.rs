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
    calc, window_aggregate, window_join, Calc, JoinType, LateRecords, OperatorIds, RowErrors,
    ScanSettings, TableScan, WindowAggSpec, WindowJoinSpec, WindowKind, WindowProperty, WindowTime,
};

use crate::rows::{agg, millis};
use crate::support::{duckdb, nexmark_session, queries_dir, table, temp_dir, ROOT};

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
            legacy: false,
        };
        let window = "HOP(time_col=[dateTime], size=[10 s], slide=[2 s])";
        let name = format!(
            "WindowAggregate(groupBy=[auction], window=[{window}], select=[auction, COUNT(*) AS num, start('w$) AS window_start, end('w$) AS window_end])",
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
            assert!(plan.contains(&format!("window=[{window}]")), "{plan}");
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

/// The official q5's answer by plain loops over the generator's bids: per HOP window of `size`
/// every `slide`, the auctions with the most bids and their count, sorted.
pub fn hot_auctions(generator: &NexmarkGenerator, size: i64, slide: i64) -> Vec<(i64, i64)> {
    let mut counts: BTreeMap<(i64, i64), BTreeMap<i64, i64>> = BTreeMap::new();
    for (_, e) in generator.iter() {
        if let Event::Bid(b) = e {
            let t = b.date_time;
            let mut s = t.div_euclid(slide) * slide;
            while s > t - size {
                *counts
                    .entry((s, s + size))
                    .or_default()
                    .entry(b.auction)
                    .or_default() += 1;
                s -= slide;
            }
        }
    }
    assert!(counts.len() >= 9, "10 s of bids make at least 9 windows");
    let mut want: Vec<(i64, i64)> = Vec::new();
    for per_auction in counts.values() {
        let max = per_auction.values().copied().max().unwrap();
        for (&a, &n) in per_auction {
            if n >= max {
                want.push((a, n));
            }
        }
    }
    want.sort();
    want
}

/// The whole official q5 as Flink plans it: the HOP count by auction (twice), a cascaded
/// window aggregation `MAX(num)` per window over the second (`win_start`/`win_end` from its
/// columns), and a window join of the two on the window with `num >= maxn` — equal to the hot
/// auctions computed here with plain loops over the bids, which equal DuckDB's answer.
#[test]
fn the_whole_q5_equals_a_plain_loop_over_the_bids() {
    let Some(queries) = queries_dir() else { return };
    let (events, tps) = (100_000, 10_000);
    let (size, slide) = (10_000i64, 2_000i64);
    let generator = NexmarkGenerator::new(GeneratorConfig {
        events,
        rate: tps,
        ..GeneratorConfig::default()
    })
    .unwrap();
    let want = hot_auctions(&generator, size, slide);
    // And DuckDB's answer (tests/oracle/nexmark_oracle.py) over the generator's CSV export.
    if let Some(py) = duckdb() {
        let dir = temp_dir("q5");
        let csv = dir.join("events.csv");
        let file = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
        sluice_nexmark::write_csv(generator.iter(), file).unwrap();
        let out = std::process::Command::new(&py)
            .arg(format!("{ROOT}/tests/oracle/nexmark_oracle.py"))
            .args([&csv, &dir])
            .arg("q5")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut oracle: Vec<String> = std::fs::read_to_string(dir.join("q5.csv"))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        oracle.sort();
        let mut mine: Vec<String> = want.iter().map(|(a, n)| format!("{a},{n}")).collect();
        mine.sort();
        assert_eq!(mine, oracle, "the plain loop agrees with DuckDB");
        let _ = std::fs::remove_dir_all(&dir);
    }

    let s = nexmark_session(&queries, events, tps);
    let functions = FunctionRegistry::builtins();
    let scan = TableScan::new(
        &table(&s, "datagen"),
        &BindContext::new(&functions),
        ScanSettings::default(),
    )
    .unwrap();
    let scope = Scope::new(scan.columns.clone());
    let bid = Calc::new(
        vec![
            expr("bid.auction", &scope, &functions),
            expr("dateTime", &scope, &functions),
        ],
        Some(expr("event_type = 2", &scope, &functions)),
    );
    let hop = WindowKind::Hop { slide, size };
    // auction, num, window_start, window_end
    let counts_spec = WindowAggSpec {
        keys: vec![0],
        kind: hop,
        time: WindowTime::RowTime(1),
        aggs: vec![WindowAggCall {
            call: agg("COUNT", &[]),
            args: vec![],
        }],
        properties: vec![WindowProperty::Start, WindowProperty::End],
        local: None,
        legacy: false,
    };
    // maxn, window_start, window_end
    let max_spec = WindowAggSpec {
        keys: vec![],
        kind: hop,
        time: WindowTime::Windowed { start: 2, end: 3 },
        aggs: vec![WindowAggCall {
            call: agg("MAX", &[sluice_sql::DataType::bigint().not_null()]),
            args: vec![1],
        }],
        properties: vec![WindowProperty::Start, WindowProperty::End],
        local: Some(OperatorIds::new(
            "LocalWindowAggregate(max)",
            "q5-max-local",
        )),
        legacy: false,
    };
    // left: auction, num, ws, we; right: maxn, ws, we.
    let join_scope = Scope::of(&[
        ("auction", sluice_sql::DataType::bigint()),
        ("num", sluice_sql::DataType::bigint()),
        ("ts1", sluice_sql::DataType::timestamp(3)),
        ("te1", sluice_sql::DataType::timestamp(3)),
        ("maxn", sluice_sql::DataType::bigint()),
        ("ts2", sluice_sql::DataType::timestamp(3)),
        ("te2", sluice_sql::DataType::timestamp(3)),
    ]);
    let join = WindowJoinSpec {
        join_type: JoinType::Inner,
        left_keys: vec![],
        right_keys: vec![],
        left_window: (2, 3),
        right_window: (1, 2),
        condition: Some(expr("num >= maxn", &join_scope, &functions)),
    };
    for p in [1, 2] {
        let env = StreamEnv::new();
        env.set_parallelism(p);
        let (errors, late) = (RowErrors::new(), LateRecords::new());
        let bids = with_rowtime(
            calc(
                &scan.stream(&env, &errors),
                &bid,
                &["auction".into(), "dateTime".into()],
                &errors,
            ),
            1,
        );
        let ids = |n: &str| OperatorIds::new(n, n);
        let auction_bids =
            window_aggregate(&bids, &counts_spec, &ids("AuctionBids"), &errors, &late).unwrap();
        let count_bids =
            window_aggregate(&bids, &counts_spec, &ids("CountBids"), &errors, &late).unwrap();
        let max_bids =
            window_aggregate(&count_bids, &max_spec, &ids("MaxBids"), &errors, &late).unwrap();
        let out = window_join(
            &auction_bids,
            &max_bids,
            &join,
            &ids("WindowJoin"),
            &errors,
            &late,
        )
        .unwrap()
        .collect();
        env.execute().unwrap();
        assert_eq!(
            (errors.count(), late.count()),
            (0, 0),
            "{:?}",
            errors.first()
        );
        let mut got: Vec<(i64, i64)> = out
            .handle
            .take()
            .into_iter()
            .map(|r| (r.get(0).as_i64().unwrap(), r.get(1).as_i64().unwrap()))
            .collect();
        got.sort();
        assert_eq!(got.len(), want.len(), "p={p}");
        assert_eq!(got, want, "p={p}");
        eprintln!("q5 p={p}: {} rows equal", got.len());
    }
}
