//! The interval, window and regular inner joins over hand-made rows, at parallelism 1 and 2,
//! against pairs found here with plain nested loops over both inputs.

use sluice_datastream::StreamEnv;
use sluice_sql::{bind_expr, BindContext, DataType, Expr, FunctionRegistry, Row, Scope, Value};
use sluice_table::{
    interval_join, regular_join, window_join, IntervalJoinSpec, JoinType, LateRecords, OperatorIds,
    RegularJoinSpec, RowErrors, WindowJoinSpec,
};

use crate::rows::{sorted, timed, ts};

/// Binds `text` over the columns `names` (all BIGINT but those starting with `t`, timestamps).
fn condition(text: &str, names: &[&str]) -> Expr {
    let cols: Vec<(&str, DataType)> = names
        .iter()
        .map(|n| {
            let ty = if n.starts_with('t') {
                DataType::timestamp(3)
            } else {
                DataType::bigint()
            };
            (*n, ty)
        })
        .collect();
    let functions = FunctionRegistry::builtins();
    let ast = sqlparser::parser::Parser::new(&sluice_sql::dialect::FlinkDialect)
        .try_with_sql(text)
        .unwrap()
        .parse_expr()
        .unwrap();
    bind_expr(&ast, &Scope::of(&cols), &BindContext::new(&functions)).unwrap()
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

/// (key, time ms, value) rows of one side.
fn side(rows: &[(Option<i64>, i64, i64)]) -> Vec<Row> {
    rows.iter()
        .map(|&(k, t, v)| Row(vec![k.map_or(Value::Null, int), ts(t), int(v)]))
        .collect()
}

const LEFT: &[(Option<i64>, i64, i64)] = &[
    (Some(1), 10, 1),
    (Some(1), 20, 2),
    (Some(2), 15, 3),
    (None, 15, 4),
    (Some(1), 40, 5),
    (Some(3), 50, 6),
    (Some(1), 20, 2),
];
const RIGHT: &[(Option<i64>, i64, i64)] = &[
    (Some(1), 8, 10),
    (Some(1), 14, 20),
    (Some(2), 12, 30),
    (None, 15, 40),
    (Some(1), 44, 50),
    (Some(2), 21, 60),
    (Some(1), 25, 70),
    (Some(1), 41, 1),
];

/// All `left ++ right` of equal non-NULL keys for which `ok(l, r)` holds.
fn pairs(ok: impl Fn(&(Option<i64>, i64, i64), &(Option<i64>, i64, i64)) -> bool) -> Vec<Row> {
    let mut out = Vec::new();
    for l in LEFT {
        for r in RIGHT {
            if l.0.is_some() && l.0 == r.0 && ok(l, r) {
                let mut row = side(&[*l]).remove(0).0;
                row.extend(side(&[*r]).remove(0).0);
                out.push(Row(row));
            }
        }
    }
    sorted(out)
}

#[test]
fn interval_join_matches_rows_within_the_bounds() {
    let (lower, upper) = (-3, 5);
    let spec = IntervalJoinSpec {
        join_type: JoinType::Inner,
        left_keys: vec![0],
        right_keys: vec![0],
        left_time: 1,
        right_time: 1,
        lower,
        upper,
        condition: Some(condition(
            "lv * 10 <> rv",
            &["lk", "tl", "lv", "rk", "tr", "rv"],
        )),
    };
    let want = pairs(|l, r| l.1 + lower <= r.1 && r.1 <= l.1 + upper && l.2 * 10 != r.2);
    assert!(want.len() >= 3, "{want:?}");
    for p in [1, 2] {
        let env = StreamEnv::new();
        env.set_parallelism(p);
        let errors = RowErrors::new();
        let out = interval_join(
            &timed(&env, side(LEFT), 1),
            &timed(&env, side(RIGHT), 1),
            &spec,
            &OperatorIds::new("IntervalJoin(test)", "ij"),
            &errors,
        )
        .unwrap()
        .collect();
        assert!(env.execution_plan().unwrap().contains("IntervalJoin(test)"));
        env.execute().unwrap();
        assert_eq!(errors.count(), 0);
        assert_eq!(sorted(out.handle.take()), want, "p={p}");
    }
}

#[test]
fn window_join_matches_rows_of_the_same_window() {
    // Windows of 10 ms: a row's (start, end) columns from its time.
    let windowed = |rows: &[(Option<i64>, i64, i64)]| -> Vec<Row> {
        rows.iter()
            .map(|&(k, t, v)| {
                let s = t - t.rem_euclid(10);
                Row(vec![k.map_or(Value::Null, int), ts(s), ts(s + 10), int(v)])
            })
            .collect()
    };
    let spec = WindowJoinSpec {
        join_type: JoinType::Inner,
        left_keys: vec![0],
        right_keys: vec![0],
        left_window: (1, 2),
        right_window: (1, 2),
        condition: None,
    };
    let mut want = Vec::new();
    for (l, lr) in LEFT.iter().zip(windowed(LEFT)) {
        for (r, rr) in RIGHT.iter().zip(windowed(RIGHT)) {
            if l.0.is_some() && l.0 == r.0 && l.1.div_euclid(10) == r.1.div_euclid(10) {
                let mut row = lr.0.clone();
                row.extend(rr.0.clone());
                want.push(Row(row));
            }
        }
    }
    let want = sorted(want);
    assert!(want.len() >= 3, "{want:?}");
    for p in [1, 2] {
        let env = StreamEnv::new();
        env.set_parallelism(p);
        let (errors, late) = (RowErrors::new(), LateRecords::new());
        let out = window_join(
            &timed(&env, windowed(LEFT), 2),
            &timed(&env, windowed(RIGHT), 2),
            &spec,
            &OperatorIds::new("WindowJoin(test)", "wj"),
            &errors,
            &late,
        )
        .unwrap()
        .collect();
        env.execute().unwrap();
        assert_eq!((errors.count(), late.count()), (0, 0));
        assert_eq!(sorted(out.handle.take()), want, "p={p}");
    }
}

#[test]
fn regular_join_keeps_every_row_and_counts_duplicates() {
    let spec = RegularJoinSpec {
        join_type: JoinType::Inner,
        left_keys: vec![0],
        right_keys: vec![0],
        condition: Some(condition("tl < tr", &["lk", "tl", "lv", "rk", "tr", "rv"])),
        state_ttl: None,
    };
    let want = pairs(|l, r| l.1 < r.1);
    assert!(want.len() >= 4, "{want:?}");
    for ttl in [None, Some(std::time::Duration::from_secs(3600))] {
        for p in [1, 2] {
            let env = StreamEnv::new();
            env.set_parallelism(p);
            let errors = RowErrors::new();
            let out = regular_join(
                &env.from_vec(side(LEFT)),
                &env.from_vec(side(RIGHT)),
                &RegularJoinSpec {
                    state_ttl: ttl,
                    ..spec.clone()
                },
                &OperatorIds::new("Join(test)", "join"),
                &errors,
            )
            .unwrap()
            .collect();
            env.execute().unwrap();
            assert_eq!(errors.count(), 0);
            assert_eq!(sorted(out.handle.take()), want, "p={p} ttl={ttl:?}");
        }
    }
}

#[test]
fn outer_joins_are_refused_naming_the_type() {
    let env = StreamEnv::new();
    let spec = RegularJoinSpec {
        join_type: JoinType::Left,
        left_keys: vec![0],
        right_keys: vec![0],
        condition: None,
        state_ttl: None,
    };
    let s = env.from_vec(side(LEFT));
    let e = regular_join(
        &s,
        &s,
        &spec,
        &OperatorIds::new("j", "j"),
        &RowErrors::new(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("LeftOuterJoin"), "{e}");
}

/// 5 000 rows a side whose watermark moves every millisecond while they flow: rows dropped
/// from the caches too early would miss matches; every row is on time (the join's watermark is
/// the smaller of the two sides'), so the answer is exactly the pairs within the bounds.
#[test]
fn interval_join_with_a_moving_watermark_misses_nothing() {
    use sluice_datastream::WatermarkStrategy;
    const N: i64 = 5_000;
    let (lower, upper) = (-20, 30);
    let key = |i: i64| i % 13;
    // left i at 2i, right j at 3j.
    let mut want = Vec::new();
    for i in 0..N {
        let (from, to) = (2 * i + lower, 2 * i + upper);
        for j in (from.max(0) + 2) / 3..=to / 3 {
            if j < N && 3 * j >= from && key(i) == key(j) {
                want.push((i, j));
            }
        }
    }
    want.sort();
    assert!(want.len() > 2_000);
    let spec = IntervalJoinSpec {
        join_type: JoinType::Inner,
        left_keys: vec![0],
        right_keys: vec![0],
        left_time: 1,
        right_time: 1,
        lower,
        upper,
        condition: None,
    };
    let side = |env: &StreamEnv, step: i64| {
        env.generate(N as u64, move |i| {
            let i = i as i64;
            Row(vec![int(key(i)), ts(step * i), int(i)])
        })
        // One source subtask a side keeps each side's times increasing.
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps(|r: &Row| crate::rows::millis(r.get(1)))
                .with_interval(std::time::Duration::from_millis(1)),
        )
    };
    for p in [1, 2] {
        let env = StreamEnv::new();
        env.set_parallelism(p);
        let errors = RowErrors::new();
        let (l, r) = (side(&env, 2), side(&env, 3));
        let out = interval_join(
            &l,
            &r,
            &spec,
            &OperatorIds::new("IntervalJoin", "ij"),
            &errors,
        )
        .unwrap()
        .collect();
        env.execute().unwrap();
        let mut got: Vec<(i64, i64)> = out
            .handle
            .take()
            .into_iter()
            .map(|r| (r.get(2).as_i64().unwrap(), r.get(5).as_i64().unwrap()))
            .collect();
        got.sort();
        assert_eq!(got.len(), want.len(), "p={p}");
        assert!(got == want, "p={p}");
    }
}
