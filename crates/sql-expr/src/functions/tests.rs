//! Expression tests: parse with `FlinkDialect`, bind against Nexmark's `bid` columns, evaluate on
//! a sample row. Expected values were checked against Flink 2.3 where they are Flink's edge cases.

use sqlparser::parser::Parser;

use crate::bind_expr::{bind_expr, BindContext, Scope, ScopeColumn};
use crate::datetime::parse_timestamp;
use crate::dialect::FlinkDialect;
use crate::error::SqlError;
use crate::expr::Expr;
use crate::functions::FunctionRegistry;
use crate::types::{DataType, LogicalType, TimestampKind};
use crate::value::{Row, Value};

fn bid_scope() -> Scope {
    let rowtime = DataType::new(LogicalType::Timestamp {
        precision: 3,
        kind: TimestampKind::Rowtime,
    });
    Scope::of(&[
        ("auction", DataType::bigint()),
        ("bidder", DataType::bigint()),
        ("price", DataType::bigint()),
        ("channel", DataType::string()),
        ("url", DataType::string()),
        ("dateTime", rowtime),
        ("extra", DataType::string()),
    ])
}

fn bid_row(hour: u32, channel: &str, url: &str) -> Row {
    let ts = parse_timestamp(&format!("2015-07-15 {hour:02}:30:12.345")).unwrap();
    Row::new(vec![
        Value::Int(1007),
        Value::Int(2001),
        Value::Int(1_234_567),
        Value::str(channel),
        Value::str(url),
        Value::Timestamp(ts),
        Value::str("cccxxc"),
    ])
}

fn registry() -> FunctionRegistry {
    let mut r = FunctionRegistry::builtins();
    r.register_shared(
        "count_char",
        crate::udf_by_identifier("com.github.nexmark.flink.udf.CountChar").unwrap(),
    );
    r
}

fn bind_in(sql: &str, scope: &Scope) -> Result<Expr, SqlError> {
    let ast = Parser::new(&FlinkDialect)
        .try_with_sql(sql)
        .unwrap()
        .parse_expr()
        .unwrap();
    let r = registry();
    bind_expr(&ast, scope, &BindContext::new(&r))
}

fn bind(sql: &str) -> Expr {
    bind_in(sql, &bid_scope()).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn eval_on(sql: &str, row: &Row) -> Value {
    bind(sql).eval(row).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn eval(sql: &str) -> Value {
    eval_on(
        sql,
        &bid_row(
            9,
            "Apple",
            "https://www.nexmark.com/abc/def/ghi/item.htm?query=1&channel_id=1234",
        ),
    )
}

fn s(x: &str) -> Value {
    Value::str(x)
}

#[test]
fn q1_multiplies_like_flink() {
    let e = bind("0.908 * price");
    // Flink 2.3 types `0.908 * price` (price BIGINT) as DECIMAL(24, 3): 0.908 is DECIMAL(4, 3).
    assert_eq!(e.data_type().to_string(), "DECIMAL(24, 3)");
    assert_eq!(e.to_string(), "*(0.908:DECIMAL(4, 3), price)");
    assert_eq!(eval("0.908 * price").to_string_value(), "1120986.836");
    assert_eq!(
        eval("0.908 * price > 1000000 AND 0.908 * price < 50000000"),
        Value::Bool(true)
    );
}

trait Text {
    fn to_string_value(&self) -> String;
}
impl Text for Value {
    fn to_string_value(&self) -> String {
        match self {
            Value::Decimal(d) => d.to_string(),
            other => format!("{other:?}"),
        }
    }
}

#[test]
fn nexmark_scalar_expressions() {
    assert_eq!(
        bind("MOD(auction, 123) = 0").to_string(),
        "=(MOD(auction, 123), 0)"
    );
    assert_eq!(eval("MOD(auction, 123) = 0"), Value::Bool(false));
    assert_eq!(eval("mod(auction, 10000)"), Value::Int(1007));
    let q14 = "CASE WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime' \
               WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime' ELSE 'otherTime' END";
    assert_eq!(bind(q14).data_type().to_string(), "VARCHAR(9) NOT NULL");
    let url = "u";
    assert_eq!(eval_on(q14, &bid_row(9, "a", url)), s("dayTime"));
    assert_eq!(eval_on(q14, &bid_row(3, "a", url)), s("nightTime"));
    assert_eq!(eval_on(q14, &bid_row(19, "a", url)), s("otherTime"));
    assert_eq!(eval("count_char(extra, 'c')"), Value::Int(4));
    let q21 =
        "CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1' \
               WHEN lower(channel) = 'facebook' THEN '2' WHEN lower(channel) = 'baidu' THEN '3' \
               ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) END";
    assert_eq!(eval(q21), s("0"));
    assert_eq!(
        eval_on(q21, &bid_row(1, "x", "a=1&channel_id=99&b")),
        s("99")
    );
    assert_eq!(eval_on(q21, &bid_row(1, "x", "nothing")), Value::Null);
    let w = "REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or \
             lower(channel) in ('apple', 'google', 'facebook', 'baidu')";
    assert_eq!(eval_on(w, &bid_row(1, "Google", "x")), Value::Bool(true));
    assert_eq!(eval_on(w, &bid_row(1, "other", "x")), Value::Bool(false));
    let u = "https://www.nexmark.com/abc/def/ghi/item.htm";
    assert_eq!(
        eval_on("SPLIT_INDEX(url, '/', 3)", &bid_row(1, "x", u)),
        s("abc")
    );
    assert_eq!(
        eval_on("SPLIT_INDEX(url, '/', 5)", &bid_row(1, "x", u)),
        s("ghi")
    );
    assert_eq!(
        eval_on("SPLIT_INDEX(url, '/', 9)", &bid_row(1, "x", u)),
        Value::Null
    );
    // q7's BETWEEN with interval arithmetic on the rowtime.
    let e = bind("`dateTime` BETWEEN `dateTime` - INTERVAL '10' SECOND AND `dateTime`");
    assert_eq!(
        e.to_string(),
        ">=(AND(dateTime, -(dateTime, 10000:INTERVAL SECOND)), dateTime)"
            .replace(">=(AND(dateTime, ", "AND(>=(dateTime, ")
            .replace("SECOND)), dateTime)", "SECOND)), <=(dateTime, dateTime))")
    );
    assert_eq!(e.eval(&bid_row(1, "x", "y")).unwrap(), Value::Bool(true));
}

#[test]
fn pieces_of_static_text_are_static() {
    use crate::value::SqlStr;
    let url = "https://www.nexmark.com/abc/def/ghi/item.htm?query=1&channel_id=1234";
    let mut row = bid_row(9, "x", url);
    row.0[3] = Value::static_str("  Apple ");
    row.0[4] = Value::static_str(url);
    for (sql, want) in [
        ("SPLIT_INDEX(url, '/', 3)", Some("abc")),
        ("SPLIT_INDEX(url, '?', 1)", Some("query=1&channel_id=1234")),
        (
            "SPLIT_INDEX(url, 'abc/', 1)",
            Some("def/ghi/item.htm?query=1&channel_id=1234"),
        ),
        ("SPLIT_INDEX(url, '/', 9)", None),
        ("SUBSTRING(url, 9, 3)", Some("www")),
        ("SUBSTR(url, -4)", Some("1234")),
        (
            "REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)",
            Some("1234"),
        ),
        ("REGEXP_EXTRACT(url, 'query=(\\d)')", Some("query=1")),
        ("REGEXP_EXTRACT(url, 'nomatch=(x)', 1)", None),
        ("TRIM(channel)", Some("Apple")),
        ("LTRIM(channel)", Some("Apple ")),
        ("RTRIM(channel, ' e')", Some("  Appl")),
        ("LOWER(SPLIT_INDEX(url, '/', 3))", Some("abc")),
    ] {
        match (eval_on(sql, &row), want) {
            (Value::Str(SqlStr::Static(got)), Some(want)) => assert_eq!(got, want, "{sql}"),
            (Value::Null, None) => {}
            (other, _) => panic!("{sql}: {other:?}, want static {want:?}"),
        }
    }
    // Text that changes is made, not borrowed.
    assert_eq!(eval_on("LOWER(TRIM(channel))", &row), s("apple"));
}

#[test]
fn flink_edge_cases_of_functions() {
    let cases: &[(&str, Value)] = &[
        ("SUBSTRING('hello', 0, 2)", s("he")),
        ("SUBSTRING('hello', -2)", s("lo")),
        ("SUBSTRING('hello', 2, 10)", s("ello")),
        ("SUBSTRING('hello', 10)", s("")),
        ("SUBSTR('hello', -3, 2)", s("ll")),
        ("SUBSTRING('hello' FROM 2 FOR 3)", s("ell")),
        ("SUBSTRING('hello', 1, -1)", Value::Null),
        ("SPLIT_INDEX('a/b/c', '/', 0)", s("a")),
        ("SPLIT_INDEX('a/b/c', '/', 3)", Value::Null),
        ("SPLIT_INDEX('a/b/c', '/', -1)", Value::Null),
        ("SPLIT_INDEX('a//c', '/', 1)", s("")),
        ("SPLIT_INDEX('', '/', 0)", Value::Null),
        ("SPLIT_INDEX('abc', '', 0)", s("abc")),
        ("SPLIT_INDEX('abc', '', 1)", Value::Null),
        ("SPLIT_INDEX('a::b::c', '::', 2)", s("c")),
        ("SPLIT_INDEX('héé', 'é', 1)", s("")),
        ("SUBSTRING('héllo', 2, 3)", s("éll")),
        ("SUBSTRING('héllo', -3)", s("llo")),
        ("SUBSTRING('héllo', 5, 9)", s("o")),
        ("SUBSTRING('hello', 2, 9223372036854775807)", s("ello")),
        ("TRIM(BOTH 'x' FROM 'xxaxx')", s("a")),
        ("RTRIM('aéé', 'é')", s("a")),
        ("UPPER('abc')", s("ABC")),
        ("LOWER('ÀB')", s("àb")),
        ("REGEXP_EXTRACT('abc', '(a)|(b)', 2)", Value::Null),
        ("REGEXP_EXTRACT('xb', '(a)|(b)', 2)", s("b")),
        ("REGEXP_EXTRACT('ab', '^b')", Value::Null),
        ("SPLIT_INDEX(CAST(NULL AS STRING), '/', 0)", Value::Null),
        ("REGEXP_EXTRACT('abc', 'x')", Value::Null),
        ("REGEXP_EXTRACT('abc', '(b)', 2)", Value::Null),
        ("REGEXP_EXTRACT('abc', 'b')", s("b")),
        ("REGEXP_EXTRACT('abcbd', 'b(.)', 1)", s("c")),
        ("MOD(-7, 3)", Value::Int(-1)),
        ("MOD(7, -3)", Value::Int(1)),
        ("-7 / 2", Value::Int(-3)),
        ("ROUND(125, -1)", Value::Int(130)),
        ("ROUND(2.5e0)", Value::Double(3.0)),
        ("POWER(2, 10)", Value::Double(1024.0)),
        ("LPAD('hi', 5, 'xy')", s("xyxhi")),
        ("RPAD('hi', 5, 'xy')", s("hixyx")),
        ("LPAD('hello', 2, 'x')", s("he")),
        ("INITCAP('hello wORLD foo_bar')", s("Hello World Foo_Bar")),
        ("TRIM('  a  ')", s("a")),
        ("LTRIM('  a  ')", s("a  ")),
        ("CHAR_LENGTH('héllo')", Value::Int(5)),
        ("CONCAT('a', CAST(NULL AS STRING))", Value::Null),
        ("CONCAT_WS('-', 'a', CAST(NULL AS STRING), 'c')", s("a-c")),
        ("REPLACE('aXbXc', 'X', '--')", s("a--b--c")),
        ("POSITION('b' IN 'abc')", Value::Int(2)),
        ("LOCATE('b', 'abcb', 3)", Value::Int(4)),
        ("'a' || 'b'", s("ab")),
        ("IF(1 > 2, 'a', 'bb')", s("bb")),
        ("NULLIF(1, 1)", Value::Null),
        ("IFNULL(CAST(NULL AS INT), 3)", Value::Int(3)),
        ("GREATEST(1, 3, 2)", Value::Int(3)),
        ("GREATEST(1, CAST(NULL AS INT))", Value::Null),
        ("COALESCE(CAST(NULL AS INT), 2)", Value::Int(2)),
        (
            "DATE_FORMAT(TIMESTAMP '2015-07-05 21:03:02.045', 'yy/M/d h:m:s a EEE EEEE MMM MMMM')",
            s("15/7/5 9:3:2 PM Sun Sunday Jul July"),
        ),
        (
            "EXTRACT(DAY FROM TIMESTAMP '2015-07-05 21:03:02')",
            Value::Int(5),
        ),
        (
            "UNIX_TIMESTAMP('2015-07-05 21:03:02')",
            Value::Int(1_436_130_182),
        ),
        ("FROM_UNIXTIME(1436130182)", s("2015-07-05 21:03:02")),
        ("FROM_UNIXTIME(0, 'yyyy-MM-dd')", s("1970-01-01")),
        ("TRY_CAST('abc' AS INT)", Value::Null),
        ("CAST(' 12 ' AS INT)", Value::Int(12)),
        ("CAST(TRUE AS STRING)", s("TRUE")),
        ("CAST(1e20 AS STRING)", s("1.0E20")),
        (
            "CAST(CAST(127 AS TINYINT) + CAST(1 AS TINYINT) AS INT)",
            Value::Int(-128),
        ),
        ("CAST(2147483647 AS INT) + 1", Value::Int(-2_147_483_648)),
        ("'abc' LIKE 'a_c'", Value::Bool(true)),
        ("'a%c' LIKE 'a\\%c' ESCAPE '\\'", Value::Bool(true)),
        ("'abc' LIKE 'A%'", Value::Bool(false)),
        ("'abc' SIMILAR TO '(a|b)bc'", Value::Bool(true)),
        ("REGEXP('abc', 'b')", Value::Bool(true)),
        ("1 = 1.0", Value::Bool(true)),
        ("'a' = 'a '", Value::Bool(false)),
        ("CAST('a' AS CHAR(3)) = 'a'", Value::Bool(false)),
    ];
    for (sql, want) in cases {
        assert_eq!(&eval(sql), want, "{sql}");
    }
    assert_eq!(
        eval("CAST(12.34 AS DECIMAL(10, 2)) / 3").to_string_value(),
        "4.1133333333333"
    );
    assert_eq!(
        eval("CASE WHEN 1 = 1 THEN 1 ELSE 2.5 END").to_string_value(),
        "1.0"
    );
    assert_eq!(eval("ROUND(1.2345, 2)").to_string_value(), "1.23");
    assert_eq!(eval("CEIL(1.2)").to_string_value(), "2");
    assert!(bind("price / 0").eval(&bid_row(1, "a", "b")).is_err());
    assert!(bind("CAST(price AS DOUBLE) / 0")
        .eval(&bid_row(1, "a", "b"))
        .is_err());
    assert_eq!(
        bind("lower(channel) = 'apple' AND HOUR(`dateTime`) >= 8").to_string(),
        "AND(=(LOWER(channel), _UTF-16LE'apple'), >=(EXTRACT(FLAG(HOUR), dateTime), 8))"
    );
}

#[test]
fn types_of_results_match_flink() {
    let t = |sql: &str| bind(sql).data_type().to_string();
    assert_eq!(t("MOD(price, 7)"), "INTEGER");
    assert_eq!(t("price / 3"), "BIGINT");
    assert_eq!(t("1.5 + price"), "DECIMAL(21, 1)");
    assert_eq!(
        t("CASE 2 WHEN 1 THEN 'a' WHEN 2 THEN 'bcd' END"),
        "VARCHAR(3)"
    );
    assert_eq!(t("'a' || 'bc'"), "CHAR(3) NOT NULL");
    assert_eq!(t("HOUR(`dateTime`)"), "BIGINT");
    assert_eq!(t("SUBSTRING(channel, 2)"), "VARCHAR(2147483647)");
    assert_eq!(t("CEIL(1.2)"), "DECIMAL(2, 0) NOT NULL");
    assert_eq!(t("ROUND(1.2345, 2)"), "DECIMAL(4, 2) NOT NULL");
    assert_eq!(t("`dateTime` - INTERVAL '10' SECOND"), "TIMESTAMP(3)");
    assert_eq!(
        t("TIMESTAMP '2015-07-05 21:03:02'"),
        "TIMESTAMP(0) NOT NULL"
    );
    assert_eq!(t("10000000000"), "BIGINT NOT NULL");
    assert_eq!(
        t("INTERVAL '1:30' MINUTE TO SECOND"),
        "INTERVAL SECOND(3) NOT NULL"
    );
    assert_eq!(
        eval("INTERVAL '1:30' MINUTE TO SECOND"),
        Value::IntervalMillis(90_000)
    );
}

#[test]
fn three_valued_logic() {
    let n = "CAST(NULL AS BOOLEAN)";
    let cases = [
        (format!("{n} AND FALSE"), Value::Bool(false)),
        (format!("{n} AND TRUE"), Value::Null),
        (format!("{n} OR TRUE"), Value::Bool(true)),
        (format!("{n} OR FALSE"), Value::Null),
        (format!("NOT {n}"), Value::Null),
        (format!("{n} IS TRUE"), Value::Bool(false)),
        (format!("{n} IS NOT FALSE"), Value::Bool(true)),
        ("1 IN (1, NULL)".to_string(), Value::Bool(true)),
        ("2 IN (1, NULL)".to_string(), Value::Null),
        ("2 NOT IN (1, NULL)".to_string(), Value::Null),
        ("2 NOT IN (1, 3)".to_string(), Value::Bool(true)),
        ("1 < CAST(NULL AS INT)".to_string(), Value::Null),
        (
            "CAST(NULL AS INT) IS NOT DISTINCT FROM CAST(NULL AS INT)".to_string(),
            Value::Bool(true),
        ),
    ];
    for (sql, want) in cases {
        assert_eq!(eval(&sql), want, "{sql}");
    }
}

#[test]
fn binding_errors_name_the_problem() {
    let scope = bid_scope();
    let e = bind_in("pirce + 1", &scope).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Column 'pirce' not found at line 1, column 1. Did you mean 'price'?"
    );
    let e = bind_in("1 + Price", &scope).unwrap_err();
    assert!(
        e.to_string()
            .contains("at line 1, column 5. Did you mean 'price'"),
        "{e}"
    );
    let two = Scope::new(
        bid_scope()
            .qualified("B")
            .columns
            .into_iter()
            .chain(bid_scope().qualified("A").columns)
            .collect(),
    );
    let e = bind_in("price", &two).unwrap_err();
    assert!(e.to_string().contains("ambiguous"), "{e}");
    assert_eq!(bind_in("B.price", &two).unwrap().to_string(), "price");
    let e = bind_in("B.prise", &two).unwrap_err();
    assert!(e.to_string().contains("Did you mean 'price'"), "{e}");
    let e = bind_in("SPLIT_INDEX(url, '/')", &scope).unwrap_err();
    assert!(
        e.to_string()
            .contains("Supported form(s): 'SPLIT_INDEX(<STRING>, <STRING>, <INTEGER>)'"),
        "{e}"
    );
    let e = bind_in("MOD(channel, 2)", &scope).unwrap_err();
    assert!(e.to_string().contains("VARCHAR(2147483647)"), "{e}");
    let e = bind_in("price = 'a'", &scope).unwrap_err();
    assert!(
        e.to_string().contains("<BIGINT> = <CHAR(1) NOT NULL>"),
        "{e}"
    );
    let e = bind_in("REGEXP_EXTRCT(url, 'a')", &scope).unwrap_err();
    assert!(
        e.to_string().contains("Did you mean 'REGEXP_EXTRACT'"),
        "{e}"
    );
    let e = bind_in("count(*)", &scope).unwrap_err();
    assert!(matches!(e, SqlError::Validation { .. }), "{e}");
    assert!(crate::is_aggregate_call(
        &Parser::new(&FlinkDialect)
            .try_with_sql("COUNT(DISTINCT bidder)")
            .unwrap()
            .parse_expr()
            .unwrap()
    ));
    let e = bind_in("ROW_NUMBER() OVER (ORDER BY price)", &scope).unwrap_err();
    assert!(
        matches!(e, SqlError::Unsupported { pos: Some(_), .. }),
        "{e}"
    );
    let e = bind_in("DATE_FORMAT(`dateTime`, 'yyyy-QQ')", &scope).unwrap_err();
    assert!(e.to_string().contains("'Q' is not supported"), "{e}");
    let e = bind_in("CASE WHEN price > 1 THEN 1 ELSE 'x' END", &scope).unwrap_err();
    assert!(e.to_string().contains("Illegal mixing of types"), "{e}");
}

#[test]
fn row_fields_and_pre_bound_aggregates() {
    let person = DataType::new(LogicalType::Row(vec![
        crate::types::RowField {
            name: "id".into(),
            ty: DataType::bigint(),
        },
        crate::types::RowField {
            name: "name".into(),
            ty: DataType::string(),
        },
    ]));
    let mut scope = Scope::new(vec![
        ScopeColumn {
            qualifier: Some("datagen".into()),
            name: "person".into(),
            ty: person,
        },
        ScopeColumn {
            qualifier: Some("datagen".into()),
            name: "cnt".into(),
            ty: DataType::bigint().not_null(),
        },
    ]);
    let row = Row::new(vec![
        Value::Row(vec![Value::Int(7), Value::str("Ann")].into()),
        Value::Int(3),
    ]);
    let e = bind_in("person.id", &scope).unwrap();
    assert_eq!(e.to_string(), "person.id");
    assert_eq!(e.eval(&row).unwrap(), Value::Int(7));
    assert_eq!(
        bind_in("datagen.person.name", &scope)
            .unwrap()
            .eval(&row)
            .unwrap(),
        s("Ann")
    );
    let count = Parser::new(&FlinkDialect)
        .try_with_sql("count(*)")
        .unwrap()
        .parse_expr()
        .unwrap();
    scope.pre_bind(&count, 1);
    assert_eq!(
        bind_in("count(*) + 1", &scope).unwrap().eval(&row).unwrap(),
        Value::Int(4)
    );
}

#[test]
fn row_values_cast_to_named_row_types_field_by_field() {
    let LogicalType::Row(fields) = bind("ROW(bidder, channel)").data_type().logical else {
        panic!("a row")
    };
    assert_eq!(
        fields[1].name, "EXPR$1",
        "Flink's names for a ROW value's fields"
    );
    let e = bind("CAST(ROW(bidder, channel) AS ROW<id BIGINT, `name` VARCHAR>)");
    let LogicalType::Row(fields) = e.data_type().logical else {
        panic!("a row")
    };
    assert_eq!(
        (fields[0].name.as_str(), fields[1].name.as_str()),
        ("id", "name")
    );
    // A bare VARCHAR is Flink's VARCHAR(2147483647): nothing is cut.
    assert_eq!(
        eval("CAST(ROW(bidder, channel) AS ROW<id BIGINT, `name` VARCHAR>)"),
        Value::Row(vec![Value::Int(2001), s("Apple")].into())
    );
    assert_eq!(
        eval("CAST(ROW(channel) AS ROW(c VARCHAR(2)))"),
        Value::Row(vec![s("Ap")].into())
    );
}
