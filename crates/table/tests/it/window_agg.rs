//! Window aggregation (TUMBLE, HOP, CUMULATE, SESSION; one and two phases; the legacy layout)
//! over hand-made rows, against answers computed here with plain loops over the input.

use std::collections::BTreeMap;

use sluice_datastream::StreamEnv;
use sluice_sql::{DataType, Row, Value};
use sluice_table::window_agg::WindowAggCall;
use sluice_table::{
    window_aggregate, LateRecords, OperatorIds, RowErrors, WindowAggSpec, WindowKind,
    WindowProperty, WindowTime,
};

use sluice_table::scan::with_rowtime;
use sluice_types::{Collector, CollectorExt, Operator, OperatorError, Watermark};

use crate::rows::{agg, millis, sorted, timed, ts};

/// (key, time ms, price)
const INPUT: &[(i64, i64, i64)] = &[
    (1, 0, 10),
    (1, 3, 5),
    (2, 4, 7),
    (1, 9, 1),
    (2, 11, 2),
    (1, 12, 8),
    (1, 19, 3),
    (2, 25, 4),
    (1, 31, 6),
    (2, 26, 9),
    (1, 2, 11),
];

fn input_rows() -> Vec<Row> {
    INPUT
        .iter()
        .map(|&(k, t, p)| Row(vec![Value::Int(k), ts(t), Value::Int(p)]))
        .collect()
}

/// COUNT(*), SUM(price), MAX(price) over column 2.
fn calls() -> Vec<WindowAggCall> {
    vec![
        WindowAggCall {
            call: agg("COUNT", &[]),
            args: vec![],
        },
        WindowAggCall {
            call: agg("SUM", &[DataType::bigint()]),
            args: vec![2],
        },
        WindowAggCall {
            call: agg("MAX", &[DataType::bigint()]),
            args: vec![2],
        },
    ]
}

fn spec(kind: WindowKind, local: bool, properties: Vec<WindowProperty>) -> WindowAggSpec {
    WindowAggSpec {
        keys: vec![0],
        kind,
        time: WindowTime::RowTime(1),
        aggs: calls(),
        properties,
        local: local.then(|| OperatorIds::new("LocalWindowAggregate", "local-agg")),
        legacy: false,
    }
}

fn run(spec: &WindowAggSpec, parallelism: usize) -> Vec<Row> {
    let env = StreamEnv::new();
    env.set_parallelism(parallelism);
    let (errors, late) = (RowErrors::new(), LateRecords::new());
    let out = window_aggregate(
        &timed(&env, input_rows(), 1),
        spec,
        &OperatorIds::new("WindowAggregate(test)", "window-agg"),
        &errors,
        &late,
    )
    .unwrap()
    .collect();
    let plan = env.execution_plan().unwrap();
    assert!(plan.contains("WindowAggregate(test)"), "{plan}");
    env.execute().unwrap();
    assert_eq!(errors.count(), 0, "{:?}", errors.first());
    assert_eq!(late.count(), 0);
    sorted(out.handle.take())
}

/// The expected rows: for each key and each window `[s, e)` of `windows` holding any of the
/// key's records, COUNT, SUM, MAX and the window columns.
fn expected(windows: &[(i64, i64)], legacy: bool) -> Vec<Row> {
    let mut groups: BTreeMap<(i64, i64, i64), Vec<i64>> = BTreeMap::new();
    for &(k, t, p) in INPUT {
        for &(s, e) in windows {
            if s <= t && t < e {
                groups.entry((k, s, e)).or_default().push(p);
            }
        }
    }
    sorted(
        groups
            .into_iter()
            .map(|((k, s, e), prices)| {
                let mut row = vec![
                    Value::Int(k),
                    Value::Int(prices.len() as i64),
                    Value::Int(prices.iter().sum()),
                    Value::Int(*prices.iter().max().unwrap()),
                ];
                if legacy {
                    row.extend([ts(s), ts(e - 1)]);
                } else {
                    row.extend([ts(s), ts(e), ts(e - 1)]);
                }
                Row(row)
            })
            .collect(),
    )
}

/// Every window of length `size` starting at a multiple of `every` that overlaps [-50, 50).
fn fixed_windows(size: i64, every: i64) -> Vec<(i64, i64)> {
    (-50 / every..=50 / every)
        .map(|i| (i * every, i * every + size))
        .collect()
}

#[test]
fn tumble_hop_and_cumulate_in_one_and_two_phases() {
    let cumulate: Vec<(i64, i64)> = (-5..5)
        .flat_map(|p: i64| (1..=3).map(move |k| (p * 15, p * 15 + k * 5)))
        .collect();
    let cases = [
        (WindowKind::Tumble { size: 10 }, fixed_windows(10, 10)),
        (WindowKind::Hop { slide: 5, size: 10 }, fixed_windows(10, 5)),
        (WindowKind::Cumulate { step: 5, size: 15 }, cumulate),
    ];
    for (kind, windows) in cases {
        let want = expected(&windows, false);
        for p in [1, 2] {
            for local in [false, true] {
                let s = spec(kind, local, WindowAggSpec::TVF_PROPERTIES.to_vec());
                assert_eq!(run(&s, p), want, "{kind:?} p={p} local={local}");
            }
        }
    }
}

#[test]
fn sessions_merge_per_key() {
    // Sessions with a gap of 5 ms, computed here: a key's sorted times split where the next
    // time is beyond the last time + gap (Flink merges windows that touch).
    let gap = 5;
    let mut windows = Vec::new();
    for key in [1, 2] {
        let mut times: Vec<i64> = INPUT.iter().filter(|r| r.0 == key).map(|r| r.1).collect();
        times.sort();
        let mut start = times[0];
        let mut end = times[0] + gap;
        for &t in &times[1..] {
            if t > end {
                windows.push((key, start, end));
                start = t;
            }
            end = end.max(t + gap);
        }
        windows.push((key, start, end));
    }
    let mut want = Vec::new();
    for &(key, s, e) in &windows {
        let prices: Vec<i64> = INPUT
            .iter()
            .filter(|r| r.0 == key && s <= r.1 && r.1 < e)
            .map(|r| r.2)
            .collect();
        want.push(Row(vec![
            Value::Int(key),
            Value::Int(prices.len() as i64),
            Value::Int(prices.iter().sum()),
            Value::Int(*prices.iter().max().unwrap()),
            ts(s),
            ts(e),
            ts(e - 1),
        ]));
    }
    let want = sorted(want);
    for p in [1, 2] {
        let s = spec(
            WindowKind::Session { gap },
            false,
            WindowAggSpec::TVF_PROPERTIES.to_vec(),
        );
        assert_eq!(run(&s, p), want, "p={p}");
    }
}

#[test]
fn the_legacy_group_window_layout() {
    // GROUP BY k, TUMBLE(ts, INTERVAL …) selecting TUMBLE_START and TUMBLE_ROWTIME.
    let props = vec![WindowProperty::Start, WindowProperty::Time];
    let mut s = spec(WindowKind::Tumble { size: 10 }, false, props);
    s.legacy = true;
    assert_eq!(s.property_index(WindowProperty::Time), Some(5));
    assert_eq!(run(&s, 2), expected(&fixed_windows(10, 10), true));
}

#[test]
fn two_phases_are_refused_where_flink_refuses_them() {
    let mut s = spec(
        WindowKind::Session { gap: 5 },
        true,
        WindowAggSpec::TVF_PROPERTIES.to_vec(),
    );
    assert!(s.validate().is_err());
    s.kind = WindowKind::Tumble { size: 10 };
    s.aggs.push(WindowAggCall {
        call: agg("FIRST_VALUE", &[DataType::bigint()]),
        args: vec![2],
    });
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("FIRST_VALUE"), "{e}");
    s.local = None;
    s.validate().unwrap();
    s.local = Some(OperatorIds::new("l", "l"));
    s.aggs.pop();
    s.validate().unwrap();
    s.legacy = true;
    assert!(s.validate().is_err(), "legacy group windows are one phase");
    s.legacy = false;
    s.time = WindowTime::ProcTime;
    s.local = Some(OperatorIds::new("l", "l"));
    assert!(s.validate().is_err());
}

/// Emits a watermark at each row's time right after it (a punctuated watermark), so records
/// behind it arrive late.
struct Punctuated {
    rowtime: usize,
    last: i64,
}

impl Operator<Row, Row> for Punctuated {
    fn process(&mut self, row: Row, out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
        let t = millis(row.get(self.rowtime));
        out.collect(row)?;
        if t > self.last {
            self.last = t;
            out.emit_watermark(Watermark(t))?;
        }
        Ok(())
    }
}

#[test]
fn late_records_are_dropped_and_counted() {
    // (time, price): 12 and 5 arrive after the watermark passed their windows' ends.
    let input = [(10, 1), (25, 2), (12, 4), (31, 8), (5, 16), (38, 32)];
    let rows: Vec<Row> = input
        .iter()
        .map(|&(t, p)| Row(vec![Value::Int(1), ts(t), Value::Int(p)]))
        .collect();
    let row = |count: i64, sum: i64, max: i64, s: i64| {
        Row(vec![
            Value::Int(1),
            Value::Int(count),
            Value::Int(sum),
            Value::Int(max),
            ts(s),
            ts(s + 10),
            ts(s + 9),
        ])
    };
    let want = sorted(vec![row(1, 1, 1, 10), row(1, 2, 2, 20), row(2, 40, 32, 30)]);
    for local in [false, true] {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let (errors, late) = (RowErrors::new(), LateRecords::new());
        let punctuated = env
            .from_vec(rows.clone())
            .transform("Punctuated", |_| Punctuated {
                rowtime: 1,
                last: i64::MIN,
            });
        let out = window_aggregate(
            &with_rowtime(punctuated, 1),
            &spec(
                WindowKind::Tumble { size: 10 },
                local,
                WindowAggSpec::TVF_PROPERTIES.to_vec(),
            ),
            &OperatorIds::new("WindowAggregate(late)", "late"),
            &errors,
            &late,
        )
        .unwrap()
        .collect();
        env.execute().unwrap();
        assert_eq!(sorted(out.handle.take()), want, "local={local}");
        assert_eq!(late.count(), 2, "local={local}");
    }
}

/// A HOP record behind the watermark: the window TVF drops it (its slice fired); the legacy
/// group window still adds it to its one window that has not fired.
#[test]
fn a_late_hop_record_in_a_tvf_and_in_a_legacy_group_window() {
    // Watermark 25 when 12 arrives; HOP(5, 20): 12 is in [-5, 15), [0, 20), [5, 25) (fired) and
    // [10, 30) (not fired).
    let rows: Vec<Row> = [(10, 1), (25, 2), (12, 4)]
        .iter()
        .map(|&(t, p)| Row(vec![Value::Int(1), ts(t), Value::Int(p)]))
        .collect();
    for legacy in [false, true] {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let (errors, late) = (RowErrors::new(), LateRecords::new());
        let punctuated = env
            .from_vec(rows.clone())
            .transform("Punctuated", |_| Punctuated {
                rowtime: 1,
                last: i64::MIN,
            });
        let mut s = spec(
            WindowKind::Hop { slide: 5, size: 20 },
            false,
            WindowAggSpec::TVF_PROPERTIES.to_vec(),
        );
        s.legacy = legacy;
        let out = window_aggregate(
            &with_rowtime(punctuated, 1),
            &s,
            &OperatorIds::new("w", "w"),
            &errors,
            &late,
        )
        .unwrap()
        .collect();
        env.execute().unwrap();
        let sum_of_10_30: Vec<Value> = out
            .handle
            .take()
            .into_iter()
            .filter(|r| r.get(4) == &ts(10))
            .map(|r| r.get(2).clone())
            .collect();
        let (want_sum, want_late) = if legacy { (7, 0) } else { (3, 1) };
        assert_eq!(sum_of_10_30, vec![Value::Int(want_sum)], "legacy={legacy}");
        assert_eq!(late.count(), want_late, "legacy={legacy}");
    }
}
