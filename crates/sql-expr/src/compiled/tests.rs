//! The compiled forms answer what the tree walk answers: for every expression below (bound from
//! SQL text) over rows with NULLs and edge values, [`CompiledExpr::eval`] gives the same value
//! (same variant, same representation) or the same error as [`Expr::eval`], and
//! [`CompiledPredicate::holds`] what [`Expr::eval_predicate`] gives.

use std::sync::Arc;

use sqlparser::parser::Parser;

use super::{CompiledExpr, CompiledPredicate};
use crate::bind_expr::{bind_expr, BindContext, Scope};
use crate::datetime::parse_timestamp;
use crate::dialect::FlinkDialect;
use crate::expr::Expr;
use crate::functions::FunctionRegistry;
use crate::types::{DataType, LogicalType, RowField};
use crate::value::{Decimal, Row, Value};

fn scope() -> Scope {
    let field = |name: &str, ty: DataType| RowField {
        name: name.into(),
        ty,
    };
    let bid = DataType::new(LogicalType::Row(vec![
        field("auction", DataType::bigint()),
        field("price", DataType::bigint()),
        field("channel", DataType::string()),
        field("dateTime", DataType::timestamp(3)),
    ]));
    let inner = DataType::new(LogicalType::Row(vec![field("v", DataType::bigint())]));
    let nested = DataType::new(LogicalType::Row(vec![field("inner", inner)]));
    Scope::of(&[
        ("i", DataType::int()),
        ("b", DataType::bigint()),
        ("d", DataType::decimal(10, 2)),
        ("x", DataType::double()),
        ("s", DataType::string()),
        ("u", DataType::string()),
        ("t", DataType::timestamp(3)),
        ("flag", DataType::boolean()),
        ("bid", bid),
        ("n", nested),
    ])
}

fn bind(sql: &str) -> Expr {
    let ast = Parser::new(&FlinkDialect)
        .try_with_sql(sql)
        .unwrap()
        .parse_expr()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let f = FunctionRegistry::builtins();
    bind_expr(&ast, &scope(), &BindContext::new(&f)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn ts(text: &str) -> Value {
    Value::Timestamp(parse_timestamp(text).unwrap())
}

fn dec(unscaled: i128) -> Value {
    Value::Decimal(Decimal { unscaled, scale: 2 })
}

#[allow(clippy::too_many_arguments)]
fn row(
    i: Value,
    b: Value,
    d: Value,
    x: Value,
    s: Value,
    u: Value,
    t: Value,
    flag: Value,
    bid: Value,
    n: Value,
) -> Row {
    Row(vec![i, b, d, x, s, u, t, flag, bid, n])
}

fn bid(auction: Value, price: Value, channel: Value, time: Value) -> Value {
    Value::Row(Arc::from(vec![auction, price, channel, time]))
}

fn rows() -> Vec<Row> {
    use Value::{Bool, Double, Int, Null};
    let nested = |v: Value| Value::Row(Arc::from(vec![Value::Row(Arc::from(vec![v]))]));
    vec![
        row(
            Int(1),
            Int(1007),
            dec(12_345),
            Double(2.5),
            Value::str("Apple"),
            Value::str("https://x.com/a/b/c?channel_id=7&k=v"),
            ts("2015-07-15 12:30:12.345"),
            Bool(true),
            bid(
                Int(1007),
                Int(1_234_567),
                Value::str("Google"),
                ts("2015-07-15 12:30:12.345"),
            ),
            nested(Int(5)),
        ),
        row(Null, Null, Null, Null, Null, Null, Null, Null, Null, Null),
        row(
            Int(i64::from(i32::MAX)),
            Int(i64::MAX),
            dec(9_999_999_999),
            Double(0.0),
            Value::str(""),
            Value::str("channel_id=&"),
            ts("1970-01-01 00:00:00"),
            Bool(false),
            bid(Null, Null, Null, Null),
            nested(Null),
        ),
        row(
            Int(i64::from(i32::MIN)),
            Int(i64::MIN),
            dec(-9_999_999_999),
            Double(f64::NAN),
            Value::str("baidu"),
            Value::str("A%"),
            ts("2015-07-15 00:00:00.001"),
            Null,
            bid(Int(0), Int(-1), Value::str("apple"), Null),
            Value::Row(Arc::from(vec![Null])),
        ),
        row(
            Int(0),
            Int(0),
            dec(0),
            Double(-1.5),
            Value::str("Apple"),
            Value::str("Apple"),
            ts("2015-07-15 00:00:00"),
            Bool(true),
            bid(
                Int(123),
                Int(0),
                Value::str("facebook"),
                ts("2015-07-15 00:00:00"),
            ),
            nested(Int(i64::MIN)),
        ),
    ]
}

const EXPRESSIONS: &[&str] = &[
    // Operands.
    "i",
    "b",
    "bid.price",
    "bid.channel",
    "bid.`dateTime`",
    "n.`inner`.v",
    "n.`inner`",
    "flag",
    "42",
    // Comparisons with literals, either way round, and between columns.
    "i = 0",
    "b > 10",
    "10 < b",
    "b <> 1007",
    "b <= 5",
    "b >= -1",
    "s = 'Apple'",
    "'b' < s",
    "t > TIMESTAMP '2015-07-15 00:00:00'",
    "TIMESTAMP '2015-07-15 00:00:00.001' >= t",
    "bid.`dateTime` < t",
    "bid.`dateTime` = t",
    "i = b",
    "b = bid.auction",
    "d > 1.5",
    "d = i",
    "x < 2",
    "x = b",
    "b = 1.5",
    "i = 2147483647",
    "b = CAST(NULL AS BIGINT)",
    "bid.price > 1000",
    "n.`inner`.v = 5",
    "s = u",
    // Three-valued logic, with errors after NULLs and short circuits.
    "NOT flag",
    "flag AND b > 0",
    "b > 0 OR flag",
    "flag AND 10 / b > 0",
    "flag OR 10 / b > 0",
    "b > 0 AND 10 / b > 1",
    "b = 0 OR 10 / b > 1",
    "NOT (b > 0)",
    "NOT (b > 0 AND flag)",
    "(b > 0 OR i > 0) AND (flag OR s = 'Apple')",
    "b BETWEEN 1 AND 2000",
    "b NOT BETWEEN 1 AND 2000",
    // IS, IN, LIKE.
    "flag IS TRUE",
    "flag IS NOT TRUE",
    "flag IS FALSE",
    "flag IS NOT FALSE",
    "b > 0 IS NULL",
    "b > 0 IS NOT TRUE",
    "(flag AND b > 0) IS FALSE",
    "s IS NULL",
    "bid.price IS NOT NULL",
    "lower(s) IS NULL",
    "10 / b IS NULL",
    "b IN (1, 2, 1007)",
    "b NOT IN (1, CAST(NULL AS BIGINT))",
    "b IN (1, CAST(NULL AS BIGINT))",
    "s IN ('Apple', u)",
    "lower(s) IN ('apple', 'google', 'facebook', 'baidu')",
    "d IN (0, 123.45)",
    "s LIKE 'A%'",
    "s NOT LIKE '%e'",
    "s LIKE u",
    "s SIMILAR TO '(A|B)%'",
    "b IS DISTINCT FROM 1007",
    "bid.price IS NOT DISTINCT FROM b",
    // CASE.
    "CASE WHEN i = 0 THEN bid.`dateTime` WHEN i = 1 THEN t ELSE bid.`dateTime` END",
    "CASE WHEN b > 0 THEN 1 ELSE 2.5 END",
    "CASE WHEN flag THEN 10 / b END",
    "CASE WHEN flag THEN b ELSE x END",
    "CASE b WHEN 1007 THEN 'a' WHEN 0 THEN 'b' ELSE s END",
    "CASE WHEN lower(s) = 'apple' THEN '0' WHEN lower(s) = 'baidu' THEN '3' \
     ELSE REGEXP_EXTRACT(u, '(&|^)channel_id=([^&]*)', 2) END",
    "CASE WHEN b > 0 THEN b > 10 ELSE flag END",
    "CASE WHEN flag THEN CAST('2015-07-15' AS DATE) ELSE t END",
    "CASE WHEN flag THEN 'a' ELSE s END",
    "CASE WHEN flag THEN i ELSE d END",
    // Arithmetic: wrap-around, division by zero, decimal overflow, intervals.
    "b + 1",
    "b - 1",
    "b * 2",
    "i * 2",
    "i + i",
    "-b",
    "-i",
    "10 / b",
    "b / i",
    "i / 7",
    "MOD(b, 123)",
    "MOD(b, 123) = 0",
    "MOD(bid.auction, 123) = 0",
    "b % 7",
    "0.908 * b",
    "0.908 * bid.price",
    "d * d",
    "d + 1",
    "d / b",
    "d * 1000000000000000000000000000000",
    "d * b",
    "CAST(b AS DECIMAL(19, 0))",
    "CAST(b AS DECIMAL(10, 2))",
    "CAST(i AS DECIMAL(38, 18))",
    "TRY_CAST(bid.price AS DECIMAL(5, 1))",
    "CAST(b AS DECIMAL(38, 30))",
    "b * d",
    "d - b",
    "d + d",
    "d - 0.005",
    "d * 0.5",
    "CAST(d AS DECIMAL(38, 2)) * 10000000000000000000000000",
    "CAST(d AS DECIMAL(38, 2)) + 999999999999999999999999999999999999",
    "0.908 * b > 1000000 AND 0.908 * b < 50000000",
    "0.908 * bid.price > 1000000",
    "d > 100",
    "d >= 0",
    "1000 < d",
    "d = 123",
    "d <= 99999999.99",
    "d > b",
    "x / b",
    "x * 2",
    "b + x",
    "t - INTERVAL '4' SECOND",
    "bid.`dateTime` - INTERVAL '4' SECOND",
    "t + INTERVAL '1' MONTH",
    "INTERVAL '4' SECOND + t",
    "t + INTERVAL '1' DAY",
    "s || 'x'",
    "s || u",
    // Casts and calls.
    "CAST(b AS INT)",
    "CAST(s AS BIGINT)",
    "TRY_CAST(s AS BIGINT)",
    "CAST(d AS DOUBLE)",
    "CAST(t AS STRING)",
    "CAST(i AS DECIMAL(3, 1))",
    "CAST(bid.price AS STRING)",
    "CAST(b > 0 AS STRING)",
    "lower(s)",
    "upper(bid.channel)",
    "REGEXP_EXTRACT(u, '(&|^)channel_id=([^&]*)', 2)",
    "REGEXP_EXTRACT(u, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL \
     OR lower(s) IN ('apple', 'google', 'facebook', 'baidu')",
    "SPLIT_INDEX(u, '/', 3)",
    "SPLIT_INDEX(u, '/', 0)",
    "SPLIT_INDEX(u, 'channel', 1)",
    "SPLIT_INDEX(u, '', 0)",
    "SUBSTRING(u, 3)",
    "SUBSTRING(u, -4, 2)",
    "SUBSTR(s, 2, 100)",
    "TRIM(u)",
    "RTRIM(u, '&v=')",
    "LTRIM(s, 'A')",
    "REGEXP_EXTRACT(u, 'channel_id=([^&]*)')",
    "REGEXP_EXTRACT(u, '(&|^)k=(v)', 2)",
    "REGEXP_EXTRACT(u, '(a)|(b)', 2)",
    "COALESCE(i, 2.5)",
    "COALESCE(b > 0, flag)",
    "CONCAT(s, '-', u, '-', 'x')",
    "CHAR_LENGTH(s) > 3",
    "ABS(b)",
    "HOUR(t)",
    "DATE_FORMAT(t, 'yyyy-MM-dd')",
];

/// A value or an error, as text that tells representations apart (`Decimal` scales, `Int`
/// against `Double`).
fn outcome<E: std::fmt::Display>(r: Result<Value, E>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn compiled_expressions_answer_as_the_tree_walk() {
    let rows = rows();
    for sql in EXPRESSIONS {
        let e = bind(sql);
        let compiled = CompiledExpr::new(&e);
        let predicate = CompiledPredicate::new(&e);
        for (n, r) in rows.iter().enumerate() {
            assert_eq!(
                outcome(compiled.eval(r)),
                outcome(e.eval(r)),
                "{sql} on row {n}"
            );
            let holds = |b: Result<bool, String>| format!("{b:?}");
            assert_eq!(
                holds(predicate.holds(r).map_err(|e| e.to_string())),
                holds(e.eval_predicate(r).map_err(|e| e.to_string())),
                "{sql} as a predicate on row {n}"
            );
        }
    }
}

/// The same rows with every string static text (as the Nexmark source gives them).
fn static_rows() -> Vec<Row> {
    fn to_static(v: &Value) -> Value {
        match v {
            Value::Str(s) => Value::static_str(Box::leak(s.to_string().into_boxed_str())),
            Value::Row(fields) => Value::Row(fields.iter().map(to_static).collect()),
            other => other.clone(),
        }
    }
    rows()
        .iter()
        .map(|r| Row(r.0.iter().map(to_static).collect()))
        .collect()
}

#[test]
fn static_strings_answer_as_shared_strings() {
    let shared = rows();
    let statics = static_rows();
    let mut more = shared.clone();
    // Non-ASCII text, whitespace to trim, an empty token.
    more[4].0[4] = Value::static_str("  héllo wörld/ß//x ");
    more[4].0[5] = Value::static_str("ü/&channel_id=ö&k=v");
    for sql in EXPRESSIONS {
        let e = bind(sql);
        let compiled = CompiledExpr::new(&e);
        for (n, (s, t)) in shared.iter().zip(&statics).enumerate() {
            assert_eq!(
                outcome(compiled.eval(t)),
                outcome(e.eval(s)),
                "{sql} on static row {n}"
            );
        }
        assert_eq!(
            outcome(compiled.eval(&more[4])),
            outcome(e.eval(&more[4])),
            "{sql} on non-ASCII text"
        );
    }
}

#[test]
fn the_rows_reach_the_edge_cases() {
    // The equivalence above means something only if the edges are reached: errors, NULLs from
    // decimal overflow and three-valued logic, wrap-around.
    let rows = rows();
    let on = |sql: &str, n: usize| bind(sql).eval(&rows[n]);
    assert!(on("10 / b", 4).is_err());
    assert!(on("flag AND 10 / b > 0", 4).is_err());
    assert_eq!(on("b = 0 OR 10 / b > 1", 4).unwrap(), Value::Bool(true));
    assert_eq!(on("i * 2", 2).unwrap(), Value::Int(-2));
    assert_eq!(on("b + 1", 2).unwrap(), Value::Int(i64::MIN));
    assert_eq!(
        on("d * 1000000000000000000000000000000", 2).unwrap(),
        Value::Null
    );
    assert_eq!(on("flag AND b > 0", 3).unwrap(), Value::Bool(false));
    assert_eq!(
        on("b NOT IN (1, CAST(NULL AS BIGINT))", 0).unwrap(),
        Value::Null
    );
    assert!(on("CAST(s AS BIGINT)", 0).is_err());
}

#[test]
fn decimal_arithmetic_and_comparisons_with_literals_are_inline() {
    // q14's `0.908 * price` and its bounds: no call of the walk's `binary` or `compare`.
    let e = bind("0.908 * bid.price > 1000000 AND 0.908 * bid.price < 50000000");
    let compiled = format!("{:?}", CompiledPredicate::new(&e));
    assert!(compiled.contains("DecArith") && compiled.contains("lit: Int(1000000)"));
    assert!(!compiled.contains("Binary {"), "{compiled}");
}

#[test]
fn the_hot_shapes_are_specialised_not_walked() {
    // What the Nexmark SQL queries evaluate per event: none of it may fall back to the walk.
    for sql in [
        "CASE WHEN i = 0 THEN bid.`dateTime` WHEN i = 1 THEN t ELSE bid.`dateTime` END",
        "i = 2",
        "MOD(bid.auction, 123) = 0",
        "0.908 * bid.price",
        "0.908 * b > 1000000 AND d * b < 50000000",
        "d + 1.5",
        "t - INTERVAL '4' SECOND",
        "lower(s) IN ('apple', 'google')",
        "REGEXP_EXTRACT(u, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL OR lower(s) = 'apple'",
        "b > 10 AND (t <= TIMESTAMP '2015-07-15 00:00:00' OR s LIKE 'A%')",
        "CAST(bid.price AS STRING)",
    ] {
        let e = bind(sql);
        let compiled = format!(
            "{:?} {:?}",
            CompiledExpr::new(&e),
            CompiledPredicate::new(&e)
        );
        assert!(!compiled.contains("Tree("), "{sql}: {compiled}");
    }
}
