//! The aggregates against Flink 2.3's answers. Each test quotes the query a real Flink (batch
//! `TableEnvironment`, `table.local-time-zone` UTC) ran and the types and row it printed.

use super::*;
use crate::error::SqlError;
use crate::types::LogicalType;
use crate::value::{Decimal, Value};

fn int() -> DataType {
    DataType::int()
}

fn ty(logical: LogicalType) -> DataType {
    DataType::new(logical)
}

fn call(name: &str, args: &[DataType], distinct: bool, grouped: bool) -> AggregateCall {
    match resolve_aggregate(name, args, distinct, grouped, None) {
        Ok(c) => c,
        Err(e) => panic!("{name}: {e}"),
    }
}

/// Runs `call` over single-argument rows; also checks that splitting the rows over two
/// accumulators and merging gives the same answer (the two-phase plan), where mergeable.
fn run(call: &AggregateCall, rows: &[Value]) -> Value {
    let mut acc = call.create_accumulator();
    for v in rows {
        let args: Vec<Value> = if call.function == AggregateFunction::CountStar {
            vec![]
        } else {
            vec![v.clone()]
        };
        acc.add(&args).unwrap();
    }
    let whole = acc.result();
    let variance = matches!(
        call.function,
        AggregateFunction::VarPop
            | AggregateFunction::VarSamp
            | AggregateFunction::StddevPop
            | AggregateFunction::StddevSamp
    );
    // A merged variance equals the one-phase one up to rounding (checked separately).
    if call.is_mergeable() && !variance {
        for split in 0..=rows.len() {
            let (a, b) = rows.split_at(split);
            let mut left = call.create_accumulator();
            let mut right = call.create_accumulator();
            for (acc, part) in [(&mut left, a), (&mut right, b)] {
                for v in part {
                    let args = if call.function == AggregateFunction::CountStar {
                        vec![]
                    } else {
                        vec![v.clone()]
                    };
                    acc.add(&args).unwrap();
                }
            }
            // Through serde, as state would store the local one.
            let bytes = postcard::to_stdvec(&right).unwrap();
            let right: Accumulator = postcard::from_bytes(&bytes).unwrap();
            left.merge(&right).unwrap();
            assert_eq!(left.result(), whole, "{call:?} split at {split}");
        }
    }
    whole
}

fn i(v: i64) -> Value {
    Value::Int(v)
}

fn dec(unscaled: i128, scale: u8) -> Value {
    Value::Decimal(Decimal { unscaled, scale })
}

fn s(v: &str) -> Value {
    Value::str(v)
}

fn types_of(calls: &[AggregateCall]) -> Vec<String> {
    calls.iter().map(|c| c.result_type.to_string()).collect()
}

#[test]
fn counts_sums_and_extremes_of_a_nullable_int() {
    // SELECT COUNT(*), COUNT(x), COUNT(DISTINCT x), SUM(x), MIN(x), MAX(x), AVG(x),
    //   FIRST_VALUE(x), LAST_VALUE(x) FROM (VALUES (CAST(NULL AS INT)), (CAST(1 AS INT)),
    //   (CAST(2 AS INT)), (CAST(NULL AS INT)), (CAST(2 AS INT)), (CAST(NULL AS INT))) AS T(x)
    // => [BIGINT NOT NULL, BIGINT NOT NULL, BIGINT NOT NULL, INT, INT, INT, INT, INT, INT]
    //    | +I[6, 3, 2, 5, 1, 2, 1, 1, 2]
    let rows = [Value::Null, i(1), i(2), Value::Null, i(2), Value::Null];
    let calls = [
        call("COUNT", &[], false, false),
        call("count", &[int()], false, false),
        call("COUNT", &[int()], true, false),
        call("SUM", &[int()], false, false),
        call("MIN", &[int()], false, false),
        call("MAX", &[int()], false, false),
        call("AVG", &[int()], false, false),
        call("FIRST_VALUE", &[int()], false, false),
        call("LAST_VALUE", &[int()], false, false),
    ];
    assert_eq!(
        types_of(&calls),
        [
            "BIGINT NOT NULL",
            "BIGINT NOT NULL",
            "BIGINT NOT NULL",
            "INTEGER",
            "INTEGER",
            "INTEGER",
            "INTEGER",
            "INTEGER",
            "INTEGER"
        ]
    );
    let got: Vec<Value> = calls.iter().map(|c| run(c, &rows)).collect();
    assert_eq!(got, [i(6), i(3), i(2), i(5), i(1), i(2), i(1), i(1), i(2)]);
}

#[test]
fn nullability_follows_the_argument_only_with_group_by() {
    // SELECT COUNT(*), COUNT(x), SUM(x), MIN(x), MAX(x), AVG(x), FIRST_VALUE(x), LAST_VALUE(x),
    //   LISTAGG(CAST(x AS STRING)) FROM (VALUES (1), (2)) AS T(x)
    // => [BIGINT NOT NULL, BIGINT NOT NULL, INT, INT, INT, INT, INT, INT, STRING NOT NULL]
    //    | +I[2, 2, 3, 1, 2, 1, 1, 2, 1,2]
    // SELECT k, … same … FROM (VALUES (1, 1), (1, 2)) AS T(k, x) GROUP BY k
    // => [INT NOT NULL, BIGINT NOT NULL, BIGINT NOT NULL, INT NOT NULL, INT NOT NULL,
    //    INT NOT NULL, INT NOT NULL, INT NOT NULL, INT NOT NULL, STRING NOT NULL]
    //    | +I[1, 2, 2, 3, 1, 2, 1, 1, 2, 1,2]
    // SELECT k, … FROM (VALUES (1, CAST(1 AS INT)), (1, CAST(NULL AS INT))) … GROUP BY k
    // => [INT NOT NULL, BIGINT NOT NULL, BIGINT NOT NULL, INT, INT, INT, INT, INT, INT]
    let nn = int().not_null();
    let string_nn = DataType::string().not_null();
    for (grouped, arg, expect) in [
        (false, &nn, "INTEGER"),
        (true, &nn, "INTEGER NOT NULL"),
        (true, &int(), "INTEGER"),
    ] {
        for name in ["SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE"] {
            let c = call(name, std::slice::from_ref(arg), false, grouped);
            assert_eq!(
                c.result_type.to_string(),
                expect,
                "{name} grouped={grouped}"
            );
        }
        assert_eq!(
            call("COUNT", std::slice::from_ref(arg), false, grouped).result_type,
            DataType::bigint().not_null()
        );
    }
    for grouped in [false, true] {
        let c = call("LISTAGG", std::slice::from_ref(&string_nn), false, grouped);
        assert_eq!(c.result_type.to_string(), "VARCHAR(2147483647) NOT NULL");
        assert_eq!(run(&c, &[s("1"), s("2")]), s("1,2"));
    }
}

#[test]
fn empty_groups_give_null_but_count_zero() {
    // SELECT COUNT(*), COUNT(x), SUM(x), MIN(x), MAX(x), AVG(x) FROM (VALUES (1), (2)) AS T(x)
    //   WHERE x > 5
    // => [BIGINT NOT NULL, BIGINT NOT NULL, INT, INT, INT, INT] | +I[0, 0, null, null, null, null]
    // SELECT SUM(x) FROM (VALUES (CAST(NULL AS INT)), (CAST(NULL AS INT))) AS T(x) => +I[null]
    // SELECT FIRST_VALUE(x), LAST_VALUE(x) FROM (… two NULL INTs …) => +I[null, null]
    // SELECT LISTAGG(x) FROM (VALUES (CAST(NULL AS STRING)), (CAST(NULL AS STRING))) => [STRING] | +I[null]
    for name in [
        "COUNT",
        "SUM",
        "MIN",
        "MAX",
        "AVG",
        "FIRST_VALUE",
        "LAST_VALUE",
    ] {
        let c = call(name, &[int()], false, false);
        let expect = if name == "COUNT" { i(0) } else { Value::Null };
        assert_eq!(run(&c, &[]), expect, "{name} of nothing");
        assert_eq!(
            run(&c, &[Value::Null, Value::Null]),
            expect,
            "{name} of NULLs"
        );
    }
    assert_eq!(run(&call("COUNT", &[], false, false), &[]), i(0));
    let listagg = call("LISTAGG", &[DataType::string()], false, false);
    assert_eq!(run(&listagg, &[Value::Null, Value::Null]), Value::Null);
    let sum0 = AggregateCall {
        function: AggregateFunction::Sum0,
        ..call("SUM", &[int()], false, false)
    };
    assert_eq!(run(&sum0, &[]), i(0));
}

#[test]
fn small_integers_wrap_like_java() {
    // SELECT SUM(x), AVG(x), MIN(x), MAX(x) FROM (VALUES (CAST(100 AS TINYINT)),
    //   (CAST(100 AS TINYINT))) AS T(x) => [TINYINT, TINYINT, TINYINT, TINYINT] | +I[-56, 100, 100, 100]
    // … (CAST(30000 AS SMALLINT)) ×2 => [SMALLINT ×4] | +I[-5536, 30000, 30000, 30000]
    // SELECT SUM(x), AVG(x) FROM (VALUES (CAST(2147483647 AS INT)), (CAST(1 AS INT)))
    //   => [INT, INT] | +I[-2147483648, 1073741824]
    // … (CAST(9223372036854775807 AS BIGINT)), (CAST(1 AS BIGINT))
    //   => [BIGINT, BIGINT] | +I[-9223372036854775808, -4611686018427387904]
    let cases: [(LogicalType, [i64; 2], &str, [i64; 2]); 4] = [
        (LogicalType::TinyInt, [100, 100], "TINYINT", [-56, 100]),
        (
            LogicalType::SmallInt,
            [30000, 30000],
            "SMALLINT",
            [-5536, 30000],
        ),
        (
            LogicalType::Int,
            [2147483647, 1],
            "INTEGER",
            [-2147483648, 1073741824],
        ),
        (
            LogicalType::BigInt,
            [i64::MAX, 1],
            "BIGINT",
            [i64::MIN, -4611686018427387904],
        ),
    ];
    for (logical, rows, type_name, [sum, avg]) in cases {
        let rows = rows.map(i);
        let sum_call = call("SUM", &[ty(logical.clone())], false, false);
        let avg_call = call("AVG", &[ty(logical)], false, false);
        assert_eq!(sum_call.result_type.to_string(), type_name);
        assert_eq!(avg_call.result_type.to_string(), type_name);
        assert_eq!(run(&sum_call, &rows), i(sum), "SUM {type_name}");
        assert_eq!(run(&avg_call, &rows), i(avg), "AVG {type_name}");
    }
}

#[test]
fn integer_average_divides_as_integers() {
    // SELECT AVG(x), SUM(x) FROM (VALUES (CAST(1 AS BIGINT)), (CAST(2 AS BIGINT))) => +I[1, 3]
    // … (CAST(-1 AS BIGINT)), (CAST(-2 AS BIGINT)) => +I[-1, -3]
    // … (CAST(-1 AS INT)), (CAST(-2 AS INT)), (CAST(-2 AS INT)) => [INT, INT] | +I[-1, -5]
    let avg = call("AVG", &[DataType::bigint()], false, false);
    assert_eq!(avg.result_type.to_string(), "BIGINT");
    assert_eq!(run(&avg, &[i(1), i(2)]), i(1));
    assert_eq!(run(&avg, &[i(-1), i(-2)]), i(-1));
    assert_eq!(
        run(&call("AVG", &[int()], false, false), &[i(-1), i(-2), i(-2)]),
        i(-1)
    );
}

#[test]
fn floating_sums_and_averages() {
    // SELECT SUM(x), AVG(x), MIN(x), MAX(x) FROM (VALUES (CAST(1.5 AS FLOAT)),
    //   (CAST(2.25 AS FLOAT)), (CAST(0.1 AS FLOAT))) => [FLOAT ×4] | +I[3.85, 1.2833333, 0.1, 2.25]
    // … DOUBLE => [DOUBLE ×4] | +I[3.85, 1.2833333333333334, 0.1, 2.25]
    // SELECT SUM(x), AVG(x), MAX(x) FROM (VALUES (CAST(1 AS DOUBLE)), (CAST('NaN' AS DOUBLE)))
    //   => +I[NaN, NaN, 1.0]
    let f = [1.5f32, 2.25, 0.1].map(Value::Float);
    let float = ty(LogicalType::Float);
    let sum = call("SUM", std::slice::from_ref(&float), false, false);
    let avg = call("AVG", std::slice::from_ref(&float), false, false);
    assert_eq!(types_of(&[sum.clone(), avg.clone()]), ["FLOAT", "FLOAT"]);
    assert_eq!(crate::cast::java_float(as_f32(&run(&sum, &f))), "3.85");
    assert_eq!(crate::cast::java_float(as_f32(&run(&avg, &f))), "1.2833333");
    assert_eq!(
        run(&call("MIN", std::slice::from_ref(&float), false, false), &f),
        Value::Float(0.1)
    );
    let d = [1.5f64, 2.25, 0.1].map(Value::Double);
    let double = DataType::double();
    let sum = call("SUM", std::slice::from_ref(&double), false, false);
    let avg = call("AVG", std::slice::from_ref(&double), false, false);
    assert_eq!(types_of(&[sum.clone(), avg.clone()]), ["DOUBLE", "DOUBLE"]);
    assert_eq!(crate::cast::java_double(as_f64(&run(&sum, &d))), "3.85");
    assert_eq!(
        crate::cast::java_double(as_f64(&run(&avg, &d))),
        "1.2833333333333334"
    );
    // MAX's comparison leaves NaN out when a number came first (only the one-phase order is
    // Flink's answer here: NaN compares with nothing, so a merge order can change it).
    let nan = [Value::Double(1.0), Value::Double(f64::NAN)];
    let mut max = call("MAX", &[double], false, false).create_accumulator();
    for v in &nan {
        max.add(std::slice::from_ref(v)).unwrap();
    }
    assert_eq!(max.result(), Value::Double(1.0));
    assert!(as_f64(&run(&sum, &nan)).is_nan());
}

fn as_f32(v: &Value) -> f32 {
    match v {
        Value::Float(x) => *x,
        other => panic!("not a FLOAT: {other:?}"),
    }
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Double(x) => *x,
        other => panic!("not a DOUBLE: {other:?}"),
    }
}

#[test]
fn decimal_sum_is_exact_and_average_keeps_six_digits() {
    // SELECT SUM(x), AVG(x), MIN(x), MAX(x) FROM (VALUES (CAST(1.00 AS DECIMAL(10, 2))),
    //   (CAST(2.00 AS DECIMAL(10, 2))), (CAST(2.00 AS DECIMAL(10, 2))))
    // => [DECIMAL(38, 2), DECIMAL(38, 6), DECIMAL(10, 2), DECIMAL(10, 2)] | +I[5.00, 1.666667, 1.00, 2.00]
    // … 0.01, 0.01, 0.00 => +I[0.02, 0.006667];  … -0.01, -0.01, 0.00 => +I[-0.02, -0.006667]
    // … DECIMAL(5, 1): 1.5, 2.5 => [DECIMAL(38, 1), DECIMAL(38, 6), DECIMAL(5, 1)] | +I[4.0, 2.000000, 1.5]
    // … DECIMAL(20, 8): 1.12345678, 2 => [DECIMAL(38, 8), DECIMAL(38, 8)] | +I[3.12345678, 1.56172839]
    // … DECIMAL(3, 0): 7, 8 => [DECIMAL(38, 0), DECIMAL(38, 6)] | +I[15, 7.500000]
    let d10_2 = DataType::decimal(10, 2);
    let sum = call("SUM", std::slice::from_ref(&d10_2), false, false);
    let avg = call("AVG", std::slice::from_ref(&d10_2), false, false);
    let min = call("MIN", std::slice::from_ref(&d10_2), false, false);
    assert_eq!(
        types_of(&[sum.clone(), avg.clone(), min.clone()]),
        ["DECIMAL(38, 2)", "DECIMAL(38, 6)", "DECIMAL(10, 2)"]
    );
    let rows = [dec(100, 2), dec(200, 2), dec(200, 2)];
    assert_eq!(run(&sum, &rows).to_owned(), dec(500, 2));
    assert_eq!(avg_text(&run(&avg, &rows)), "1.666667");
    assert_eq!(avg_text(&run(&min, &rows)), "1.00");
    let rows = [dec(1, 2), dec(1, 2), dec(0, 2)];
    assert_eq!(avg_text(&run(&avg, &rows)), "0.006667");
    let rows = [dec(-1, 2), dec(-1, 2), dec(0, 2)];
    assert_eq!(avg_text(&run(&sum, &rows)), "-0.02");
    assert_eq!(avg_text(&run(&avg, &rows)), "-0.006667");
    for (p, s, rows, sum_type, avg_type, sum_text, avg_out) in [
        (
            5,
            1,
            vec![dec(15, 1), dec(25, 1)],
            "DECIMAL(38, 1)",
            "DECIMAL(38, 6)",
            "4.0",
            "2.000000",
        ),
        (
            20,
            8,
            vec![dec(112_345_678, 8), dec(200_000_000, 8)],
            "DECIMAL(38, 8)",
            "DECIMAL(38, 8)",
            "3.12345678",
            "1.56172839",
        ),
        (
            3,
            0,
            vec![dec(7, 0), dec(8, 0)],
            "DECIMAL(38, 0)",
            "DECIMAL(38, 6)",
            "15",
            "7.500000",
        ),
    ] {
        let arg = DataType::decimal(p, s);
        let sum = call("SUM", std::slice::from_ref(&arg), false, false);
        let avg = call("AVG", std::slice::from_ref(&arg), false, false);
        assert_eq!(types_of(&[sum.clone(), avg.clone()]), [sum_type, avg_type]);
        assert_eq!(avg_text(&run(&sum, &rows)), sum_text);
        assert_eq!(avg_text(&run(&avg, &rows)), avg_out);
    }
}

fn avg_text(v: &Value) -> String {
    match v {
        Value::Decimal(d) => d.to_string(),
        other => panic!("not a DECIMAL: {other:?}"),
    }
}

#[test]
fn decimal_overflow_gives_null_and_sum_restarts() {
    // SELECT SUM(x), AVG(x) FROM (VALUES
    //   (CAST('900000000000000000000000000000000000' AS DECIMAL(38, 2))) ×2)
    // => [DECIMAL(38, 2), DECIMAL(38, 6)] | +I[null, null]
    // … the same two, then (CAST(1 AS DECIMAL(38, 2))) => +I[1.00, null]
    let arg = DataType::decimal(38, 2);
    let big = dec(900_000_000_000_000_000_000_000_000_000_000_000 * 100, 2);
    let sum = call("SUM", std::slice::from_ref(&arg), false, false);
    let avg = call("AVG", std::slice::from_ref(&arg), false, false);
    let mut acc = sum.create_accumulator();
    let mut avg_acc = avg.create_accumulator();
    for v in [big.clone(), big.clone()] {
        acc.add(std::slice::from_ref(&v)).unwrap();
        avg_acc.add(std::slice::from_ref(&v)).unwrap();
    }
    assert_eq!(acc.result(), Value::Null);
    assert_eq!(avg_acc.result(), Value::Null);
    acc.add(&[dec(100, 2)]).unwrap();
    avg_acc.add(&[dec(100, 2)]).unwrap();
    assert_eq!(avg_text(&acc.result()), "1.00");
    assert_eq!(avg_acc.result(), Value::Null);
}

#[test]
fn strings_booleans_and_times_keep_their_type() {
    // SELECT MIN(x), MAX(x), FIRST_VALUE(x), LAST_VALUE(x), LISTAGG(x), LISTAGG(x, '|'),
    //   COUNT(DISTINCT x) FROM (VALUES ('b'), ('a'), (CAST(NULL AS STRING)), ('c'), ('a')) AS T(x)
    // => [STRING, STRING, STRING, STRING, STRING, STRING, BIGINT NOT NULL]
    //    | +I[a, c, b, a, b,a,c,a, b|a|c|a, 3]
    let string = DataType::string();
    let rows = [s("b"), s("a"), Value::Null, s("c"), s("a")];
    let one = std::slice::from_ref(&string);
    assert_eq!(run(&call("MIN", one, false, false), &rows), s("a"));
    assert_eq!(run(&call("MAX", one, false, false), &rows), s("c"));
    assert_eq!(run(&call("FIRST_VALUE", one, false, false), &rows), s("b"));
    assert_eq!(run(&call("LAST_VALUE", one, false, false), &rows), s("a"));
    let listagg = call("LISTAGG", one, false, false);
    assert_eq!(listagg.result_type.to_string(), "VARCHAR(2147483647)");
    assert_eq!(run(&listagg, &rows), s("b,a,c,a"));
    let with_sep = call("LISTAGG", &[string.clone(), string.clone()], false, false);
    let mut acc = with_sep.create_accumulator();
    for v in &rows {
        acc.add(&[v.clone(), s("|")]).unwrap();
    }
    assert_eq!(acc.result(), s("b|a|c|a"));
    assert_eq!(run(&call("COUNT", one, true, false), &rows), i(3));
    // SELECT MIN(x), MAX(x), LISTAGG(x), LISTAGG(x, '; ') FROM (VALUES (CAST('bb' AS VARCHAR(5))),
    //   (CAST('a' AS VARCHAR(5)))) => [VARCHAR(5), VARCHAR(5), VARCHAR(5) NOT NULL,
    //   VARCHAR(5) NOT NULL] | +I[a, bb, bb,a, bb; a]
    let v5 = ty(LogicalType::Varchar { length: 5 }).not_null();
    assert_eq!(
        call("MIN", std::slice::from_ref(&v5), false, false)
            .result_type
            .to_string(),
        "VARCHAR(5)"
    );
    assert_eq!(
        call("LISTAGG", &[v5.clone(), string.not_null()], false, false)
            .result_type
            .to_string(),
        "VARCHAR(5) NOT NULL"
    );
    // SELECT MIN(x), MAX(x), COUNT(DISTINCT x) FROM (VALUES (TRUE), (FALSE), (TRUE))
    //   => [BOOLEAN, BOOLEAN, BIGINT NOT NULL] | +I[false, true, 2]
    let b = [Value::Bool(true), Value::Bool(false), Value::Bool(true)];
    let boolean = [DataType::boolean()];
    assert_eq!(
        run(&call("MIN", &boolean, false, false), &b),
        Value::Bool(false)
    );
    assert_eq!(
        run(&call("MAX", &boolean, false, false), &b),
        Value::Bool(true)
    );
    assert_eq!(run(&call("COUNT", &boolean, true, false), &b), i(2));
    // SELECT MIN(x), MAX(x), FIRST_VALUE(x), LAST_VALUE(x) FROM (VALUES
    //   (TIMESTAMP '2020-01-02 03:04:05.123'), (TIMESTAMP '2020-01-01 00:00:00'))
    // => [TIMESTAMP(3) ×4] | +I[2020-01-01T00:00, 2020-01-02T03:04:05.123, 2020-01-02T03:04:05.123, 2020-01-01T00:00]
    let later = Value::Timestamp(crate::value::Timestamp::from_millis(1_577_934_245_123));
    let earlier = Value::Timestamp(crate::value::Timestamp::from_millis(1_577_836_800_000));
    let ts = [DataType::timestamp(3)];
    let t = [later.clone(), earlier.clone()];
    assert_eq!(run(&call("MIN", &ts, false, false), &t), earlier);
    assert_eq!(run(&call("MAX", &ts, false, false), &t), later);
    assert_eq!(
        call("MAX", &ts, false, false).result_type.to_string(),
        "TIMESTAMP(3)"
    );
}

#[test]
fn distinct_aggregates_count_each_value_once() {
    // SELECT COUNT(DISTINCT x), SUM(DISTINCT x), AVG(DISTINCT x), MIN(DISTINCT x)
    //   FROM (VALUES (1), (1), (2)) => [BIGINT NOT NULL, INT, INT, INT] | +I[2, 3, 1, 1]
    let nn = [int().not_null()];
    let rows = [i(1), i(1), i(2)];
    let got: Vec<Value> = ["COUNT", "SUM", "AVG", "MIN"]
        .iter()
        .map(|n| run(&call(n, &nn, true, false), &rows))
        .collect();
    assert_eq!(got, [i(2), i(3), i(1), i(1)]);
    // SELECT COUNT(x, y) FROM (VALUES (1, 2), (1, CAST(NULL AS INT))) => [BIGINT NOT NULL] | +I[1]
    let count2 = call("COUNT", &[int(), int()], false, false);
    let mut acc = count2.create_accumulator();
    acc.add(&[i(1), i(2)]).unwrap();
    acc.add(&[i(1), Value::Null]).unwrap();
    assert_eq!(acc.result(), i(1));
}

#[test]
fn variances_compute_in_the_arguments_type() {
    // SELECT STDDEV_POP(x), STDDEV_SAMP(x), VAR_POP(x), VAR_SAMP(x) FROM (VALUES (CAST(1 AS INT)),
    //   (CAST(2 AS INT)), (CAST(4 AS INT))) => [INT ×4] | +I[1, 1, 1, 2]
    // … DOUBLE => [DOUBLE ×4] | +I[1.247219128924647, 1.5275252316519465, 1.5555555555555554, 2.333333333333333]
    // … DECIMAL(10, 2) => [DECIMAL(38, 6) ×4] | +I[1.247219, 1.527525, 1.555556, 2.333333]
    // … (CAST(1 AS DOUBLE)) alone => +I[0.0, null, 0.0, null]
    // SELECT k, STDDEV_POP(x), … FROM (VALUES (1, 1e0), (1, 2e0)) GROUP BY k
    //   => [INT NOT NULL, DOUBLE NOT NULL ×4] | +I[1, 0.5, 0.7071067811865476, 0.25, 0.5]
    let names = ["STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP"];
    let ints = [i(1), i(2), i(4)];
    let got: Vec<Value> = names
        .iter()
        .map(|n| run(&call(n, &[int()], false, false), &ints))
        .collect();
    assert_eq!(got, [i(1), i(1), i(1), i(2)]);
    let doubles = [1.0, 2.0, 4.0].map(Value::Double);
    let got: Vec<String> = names
        .iter()
        .map(|n| {
            let c = call(n, &[DataType::double()], false, false);
            assert_eq!(c.result_type.to_string(), "DOUBLE");
            crate::cast::java_double(as_f64(&run(&c, &doubles)))
        })
        .collect();
    assert_eq!(
        got,
        [
            "1.247219128924647",
            "1.5275252316519465",
            "1.5555555555555554",
            "2.333333333333333"
        ]
    );
    let decimals = [dec(100, 2), dec(200, 2), dec(400, 2)];
    let got: Vec<String> = names
        .iter()
        .map(|n| {
            let c = call(n, &[DataType::decimal(10, 2)], false, false);
            assert_eq!(c.result_type.to_string(), "DECIMAL(38, 6)");
            avg_text(&run(&c, &decimals))
        })
        .collect();
    assert_eq!(got, ["1.247219", "1.527525", "1.555556", "2.333333"]);
    let one = [Value::Double(1.0)];
    let got: Vec<Value> = names
        .iter()
        .map(|n| run(&call(n, &[DataType::double()], false, false), &one))
        .collect();
    assert_eq!(
        got,
        [
            Value::Double(0.0),
            Value::Null,
            Value::Double(0.0),
            Value::Null
        ]
    );
    let two = [Value::Double(1.0), Value::Double(2.0)];
    let got: Vec<String> = names
        .iter()
        .map(|n| {
            let c = call(n, &[DataType::double().not_null()], false, true);
            assert_eq!(c.result_type.to_string(), "DOUBLE NOT NULL");
            crate::cast::java_double(as_f64(&run(&c, &two)))
        })
        .collect();
    assert_eq!(got, ["0.5", "0.7071067811865476", "0.25", "0.5"]);
}

#[test]
fn variances_are_welfords_in_double_then_cast() {
    let names = ["VAR_POP", "VAR_SAMP", "STDDEV_POP", "STDDEV_SAMP"];
    let all = |arg: DataType, rows: &[Value]| -> Vec<Value> {
        names
            .iter()
            .map(|n| run(&call(n, std::slice::from_ref(&arg), false, false), rows))
            .collect()
    };
    // SELECT VAR_POP(x), VAR_SAMP(x), STDDEV_POP(x), STDDEV_SAMP(x) FROM (VALUES
    //   (CAST(1 AS INT)), (CAST(2 AS INT))) => [INT ×4] | +I[0, 0, 0, 0]
    // (the textbook integer rewrite would give VAR_SAMP = (5 - 9/2) / 1 = 1)
    assert_eq!(all(int(), &[i(1), i(2)]), [i(0), i(0), i(0), i(0)]);
    // … (CAST(100000 AS INT)), (CAST(200000 AS INT)), (CAST(400000 AS INT))
    //   => +I[2147483647, 2147483647, 124721, 152752]   (Java's (int) saturates)
    assert_eq!(
        all(int(), &[i(100_000), i(200_000), i(400_000)]),
        [i(2147483647), i(2147483647), i(124721), i(152752)]
    );
    // SELECT VAR_POP(x), VAR_SAMP(x) FROM (VALUES (CAST(10 AS TINYINT)), (CAST(100 AS TINYINT)))
    //   => [TINYINT, TINYINT] | +I[-23, -46]
    let tiny = ty(LogicalType::TinyInt);
    assert_eq!(all(tiny, &[i(10), i(100)])[..2], [i(-23), i(-46)]);
    // … DOUBLE 0.1, 0.2, 0.3, 0.4, 1e9
    //   => +I[1.5999999992E17, 1.999999999E17, 3.999999999E8, 4.4721359538815457E8]
    let d = [0.1, 0.2, 0.3, 0.4, 1e9].map(Value::Double);
    let got: Vec<String> = all(DataType::double(), &d)
        .iter()
        .map(|v| crate::cast::java_double(as_f64(v)))
        .collect();
    assert_eq!(
        got,
        [
            "1.5999999992E17",
            "1.999999999E17",
            "3.999999999E8",
            "4.4721359538815457E8"
        ]
    );
    // … FLOAT 0.1, 0.2, 0.7 => [FLOAT ×4] | +I[0.06888889, 0.10333333, 0.26246694, 0.32145503]
    let f = [0.1f32, 0.2, 0.7].map(Value::Float);
    let got: Vec<String> = all(ty(LogicalType::Float), &f)
        .iter()
        .map(|v| crate::cast::java_float(as_f32(v)))
        .collect();
    assert_eq!(
        got,
        ["0.06888889", "0.10333333", "0.26246694", "0.32145503"]
    );
    // … DECIMAL(20, 8) 1.12345678, 2, 3.5 => [DECIMAL(38, 8) ×4]
    //   | +I[0.96292063, 1.44438095, 0.98128519, 1.20182401]
    let d20 = DataType::decimal(20, 8);
    assert_eq!(
        call("VAR_POP", std::slice::from_ref(&d20), false, false)
            .result_type
            .to_string(),
        "DECIMAL(38, 8)"
    );
    let rows = [
        dec(112_345_678, 8),
        dec(200_000_000, 8),
        dec(350_000_000, 8),
    ];
    let got: Vec<String> = all(d20, &rows).iter().map(avg_text).collect();
    assert_eq!(
        got,
        ["0.96292063", "1.44438095", "0.98128519", "1.20182401"]
    );
}

#[test]
fn merged_variances_agree_up_to_rounding() {
    let c = call("VAR_SAMP", &[DataType::double()], false, true);
    let rows: Vec<Value> = (1..=20)
        .map(|k| Value::Double(f64::from(k * k) / 7.0))
        .collect();
    let whole = as_f64(&run(&c, &rows));
    for split in 0..=rows.len() {
        let (mut left, mut right) = (c.create_accumulator(), c.create_accumulator());
        for v in &rows[..split] {
            left.add(std::slice::from_ref(v)).unwrap();
        }
        for v in &rows[split..] {
            right.add(std::slice::from_ref(v)).unwrap();
        }
        left.merge(&right).unwrap();
        let merged = as_f64(&left.result());
        assert!(
            (merged - whole).abs() <= whole * 1e-12,
            "{merged} vs {whole}"
        );
    }
}

#[test]
fn refusals_are_worded_as_flinks() {
    // SELECT SUM(x) FROM (VALUES ('a')) AS T(x) => Cannot apply 'SUM' to arguments of type
    //   'SUM(<CHAR(1)>)'. Supported form(s): 'SUM(<NUMERIC>)'
    let char1 = ty(LogicalType::Char { length: 1 });
    let err =
        resolve_aggregate("SUM", std::slice::from_ref(&char1), false, false, None).unwrap_err();
    assert!(matches!(err, SqlError::Validation { .. }));
    assert!(err.to_string().contains(
        "Cannot apply 'SUM' to arguments of type 'SUM(<CHAR(1)>)'. Supported form(s): 'SUM(<NUMERIC>)'"
    ));
    let err = resolve_aggregate("avg", &[char1], false, false, None).unwrap_err();
    assert!(err.to_string().contains("'AVG(<NUMERIC>)'"), "{err}");
    // SELECT LISTAGG(x) FROM (VALUES (1)) => Cannot apply 'LISTAGG' to arguments of type
    //   'LISTAGG(<INTEGER>)'. Supported form(s): 'LISTAGG(<CHARACTER>)' 'LISTAGG(<CHARACTER>, <CHARACTER_LITERAL>)'
    let err = resolve_aggregate("LISTAGG", &[int()], false, false, None).unwrap_err();
    assert!(err.to_string().contains(
        "Cannot apply 'LISTAGG' to arguments of type 'LISTAGG(<INTEGER>)'. Supported form(s): 'LISTAGG(<CHARACTER>)' 'LISTAGG(<CHARACTER>, <CHARACTER_LITERAL>)'"
    ), "{err}");
    // SELECT MAX(x, x) … => Invalid number of arguments to function 'MAX'. Was expecting 1 arguments
    let err = resolve_aggregate("MAX", &[int(), int()], false, false, None).unwrap_err();
    assert!(err
        .to_string()
        .contains("Invalid number of arguments to function 'MAX'. Was expecting 1 arguments"));
    // SELECT SUMM(x) … => No match found for function signature SUMM(<NUMERIC>); Sluice names
    // the nearest aggregates. BOOL_AND and EVERY are not Flink functions either.
    let pos = crate::error::Position { line: 1, column: 8 };
    match resolve_aggregate("SUMM", &[int()], false, false, Some(pos)).unwrap_err() {
        SqlError::UnknownName {
            nearest_names,
            pos: p,
            ..
        } => {
            assert_eq!(nearest_names.first().map(String::as_str), Some("SUM"));
            assert_eq!(p, Some(pos));
        }
        other => panic!("{other}"),
    }
    assert!(resolve_aggregate("BOOL_AND", &[DataType::boolean()], false, false, None).is_err());
}

#[test]
fn first_and_last_value_do_not_merge() {
    assert!(!call("FIRST_VALUE", &[int()], false, true).is_mergeable());
    assert!(call("LISTAGG", &[DataType::string()], false, true).is_mergeable());
    let c = call("COUNT", &[int()], true, true);
    assert_eq!(c.display(&["bidder"]), "COUNT(DISTINCT bidder)");
    assert_eq!(call("COUNT", &[], false, true).display(&[]), "COUNT(*)");
}
