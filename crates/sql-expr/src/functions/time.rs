//! Date and time built-ins: `HOUR`, `MINUTE`, `SECOND`, `YEAR`, `MONTH`, `DAYOFMONTH`,
//! `DAYOFWEEK`, `DAYOFYEAR`, `QUARTER`, `WEEK` (and `EXTRACT(… FROM …)`, bound to them),
//! `DATE_FORMAT`, `TO_TIMESTAMP`, `TO_DATE`, `UNIX_TIMESTAMP`, `FROM_UNIXTIME`, and the
//! non-deterministic `CURRENT_TIMESTAMP`, `NOW`, `LOCALTIMESTAMP`, `CURRENT_DATE`, `PROCTIME`;
//! `SOURCE_WATERMARK()`, Flink's marker for a `WATERMARK FOR` that adopts the source's own
//! watermarks ([`SOURCE_WATERMARK`]: it binds, but never evaluates).
//!
//! Formats are Java `SimpleDateFormat` patterns (see `datetime`); a literal pattern with a letter
//! Sluice does not implement is refused when the statement is bound. The session time zone is UTC.

use super::{
    any_nullable, int_arg, is_integer, is_string, is_timestamp, str_arg, FunctionRegistry,
    Prepared, ScalarFunction,
};
use crate::datetime::{self, compile_format, Civil, FormatItem};
use crate::types::{DataType, LogicalType, TimestampKind};
use crate::value::{Timestamp, Value};

const DEFAULT_FORMAT: &str = "yyyy-MM-dd HH:mm:ss";

/// The name of Flink's `SOURCE_WATERMARK()`.
pub const SOURCE_WATERMARK: &str = "SOURCE_WATERMARK";

/// Flink's words for `SOURCE_WATERMARK()` anywhere but the `WATERMARK FOR` of a source that
/// emits its own watermarks (Flink's `SourceWatermarkFunction`).
pub const SOURCE_WATERMARK_MISUSED: &str = "SOURCE_WATERMARK() is a declarative marker function and doesn't have concrete runtime implementation. It can only be used as a single expression in a WATERMARK FOR clause in the CREATE TABLE DDL. The declaration will be pushed down into a table source that implements the 'org.apache.flink.table.connector.source.abilities.SupportsSourceWatermark' interface. The source will emit system-defined watermarks afterwards. Please check the documentation whether the connector supports source watermarks.";

fn timestamp_of(v: &Value) -> Option<Timestamp> {
    match v {
        Value::Timestamp(ts) => Some(*ts),
        Value::Date(d) => Some(Timestamp::from_millis(
            i64::from(*d) * datetime::MILLIS_PER_DAY,
        )),
        Value::Str(s) => datetime::parse_timestamp(s),
        _ => None,
    }
}

fn prepare_format_at(lits: &[Option<&Value>], index: usize) -> Result<Option<Prepared>, String> {
    match lits.get(index) {
        Some(Some(Value::Str(p))) => Ok(Some(Prepared::Format(compile_format(p)?))),
        _ => Ok(None),
    }
}

/// Runs `f` with the prepared format, or one compiled now (NULL if it does not compile).
fn with_format(
    prepared: Option<&Prepared>,
    pattern: &str,
    f: impl FnOnce(&[FormatItem]) -> Value,
) -> Value {
    match prepared {
        Some(Prepared::Format(items)) => f(items),
        _ => match compile_format(pattern) {
            Ok(items) => f(&items),
            Err(_) => Value::Null,
        },
    }
}

fn now() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Timestamp::from_millis(ms)
}

fn ltz(kind: TimestampKind) -> DataType {
    DataType::new(LogicalType::TimestampLtz { precision: 3, kind }).not_null()
}

fn field_fn(r: &mut FunctionRegistry, name: &str, f: fn(&Civil) -> i64) {
    r.register(
        name,
        ScalarFunction::new(
            name,
            &format!("{name}(<DATETIME>)"),
            |t, _| {
                (t.len() == 1 && is_timestamp(&t[0]))
                    .then(|| DataType::bigint().with_nullable(t[0].nullable))
            },
            move |a, _| {
                Ok(timestamp_of(&a[0])
                    .map(|ts| Value::Int(f(&Civil::of(ts))))
                    .unwrap_or(Value::Null))
            },
        ),
    );
}

pub(super) fn register(r: &mut FunctionRegistry) {
    field_fn(r, "YEAR", |c| c.year);
    field_fn(r, "QUARTER", |c| i64::from((c.month - 1) / 3 + 1));
    field_fn(r, "MONTH", |c| i64::from(c.month));
    field_fn(r, "DAYOFMONTH", |c| i64::from(c.day));
    field_fn(r, "DAYOFWEEK", |c| i64::from(c.iso_weekday() % 7 + 1));
    field_fn(r, "DAYOFYEAR", |c| {
        datetime::days_from_civil(c.year, c.month, c.day) - datetime::days_from_civil(c.year, 1, 1)
            + 1
    });
    field_fn(r, "WEEK", |c| {
        // ISO week number.
        let days = datetime::days_from_civil(c.year, c.month, c.day);
        let wd = i64::from(c.iso_weekday());
        let thursday = days - wd + 4;
        let (y, _, _) = datetime::civil_from_days(thursday);
        (thursday - datetime::days_from_civil(y, 1, 1)) / 7 + 1
    });
    field_fn(r, "HOUR", |c| i64::from(c.hour));
    field_fn(r, "MINUTE", |c| i64::from(c.minute));
    field_fn(r, "SECOND", |c| i64::from(c.second));
    r.register(
        "DATE_FORMAT",
        ScalarFunction::new(
            "DATE_FORMAT",
            "DATE_FORMAT(<TIMESTAMP>, <STRING>), DATE_FORMAT(<STRING>, <STRING>)",
            |t, _| {
                (t.len() == 2 && (is_timestamp(&t[0]) || is_string(&t[0])) && is_string(&t[1]))
                    .then(DataType::string)
            },
            |a, p| {
                let Some(ts) = timestamp_of(&a[0]) else {
                    return Ok(Value::Null);
                };
                Ok(with_format(p, str_arg(&a[1]), |f| {
                    Value::str(&datetime::format_with(ts, f))
                }))
            },
        )
        .with_prepare(|l| prepare_format_at(l, 1)),
    );
    r.register(
        "TO_TIMESTAMP",
        ScalarFunction::new(
            "TO_TIMESTAMP",
            "TO_TIMESTAMP(<STRING>), TO_TIMESTAMP(<STRING>, <STRING>)",
            |t, _| {
                (matches!(t.len(), 1 | 2) && t.iter().all(is_string))
                    .then(|| DataType::timestamp(3))
            },
            |a, p| {
                let pattern = a.get(1).map(str_arg).unwrap_or(DEFAULT_FORMAT);
                Ok(with_format(p, pattern, |f| {
                    datetime::parse_with(str_arg(&a[0]), f)
                        .or_else(|| {
                            if a.len() == 1 {
                                datetime::parse_timestamp(str_arg(&a[0]))
                            } else {
                                None
                            }
                        })
                        .map(Value::Timestamp)
                        .unwrap_or(Value::Null)
                }))
            },
        )
        .with_prepare(|l| prepare_format_at(l, 1)),
    );
    r.register(
        "TO_DATE",
        ScalarFunction::new(
            "TO_DATE",
            "TO_DATE(<STRING>), TO_DATE(<STRING>, <STRING>)",
            |t, _| {
                (matches!(t.len(), 1 | 2) && t.iter().all(is_string))
                    .then(|| DataType::new(LogicalType::Date))
            },
            |a, p| {
                let pattern = a.get(1).map(str_arg).unwrap_or("yyyy-MM-dd");
                Ok(with_format(p, pattern, |f| {
                    datetime::parse_with(str_arg(&a[0]), f)
                        .map(
                            |ts| Value::Date(ts.millis.div_euclid(datetime::MILLIS_PER_DAY) as i32),
                        )
                        .unwrap_or(Value::Null)
                }))
            },
        )
        .with_prepare(|l| prepare_format_at(l, 1)),
    );
    r.register(
        "UNIX_TIMESTAMP",
        ScalarFunction::new(
            "UNIX_TIMESTAMP",
            "UNIX_TIMESTAMP(), UNIX_TIMESTAMP(<STRING>), UNIX_TIMESTAMP(<STRING>, <STRING>)",
            |t, _| {
                (t.len() <= 2 && t.iter().all(is_string))
                    .then(|| DataType::bigint().with_nullable(any_nullable(t)))
            },
            |a, p| {
                if a.is_empty() {
                    return Ok(Value::Int(now().millis.div_euclid(1000)));
                }
                let pattern = a.get(1).map(str_arg).unwrap_or(DEFAULT_FORMAT);
                Ok(with_format(p, pattern, |f| {
                    datetime::parse_with(str_arg(&a[0]), f)
                        .map(|ts| Value::Int(ts.millis.div_euclid(1000)))
                        .unwrap_or(Value::Null)
                }))
            },
        )
        .with_prepare(|l| prepare_format_at(l, 1))
        .non_deterministic(),
    );
    r.register(
        "FROM_UNIXTIME",
        ScalarFunction::new(
            "FROM_UNIXTIME",
            "FROM_UNIXTIME(<INTEGER>), FROM_UNIXTIME(<INTEGER>, <STRING>)",
            |t, _| {
                (matches!(t.len(), 1 | 2) && is_integer(&t[0]) && t[1..].iter().all(is_string))
                    .then(DataType::string)
            },
            |a, p| {
                let ts = Timestamp::from_millis(int_arg(&a[0]).saturating_mul(1000));
                let pattern = a.get(1).map(str_arg).unwrap_or(DEFAULT_FORMAT);
                Ok(with_format(p, pattern, |f| {
                    Value::str(&datetime::format_with(ts, f))
                }))
            },
        )
        .with_prepare(|l| prepare_format_at(l, 1)),
    );
    for name in ["CURRENT_TIMESTAMP", "NOW"] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}()"),
                |t, _| t.is_empty().then(|| ltz(TimestampKind::Regular)),
                |_, _| Ok(Value::Timestamp(now())),
            )
            .non_deterministic(),
        );
    }
    r.register(
        "LOCALTIMESTAMP",
        ScalarFunction::new(
            "LOCALTIMESTAMP",
            "LOCALTIMESTAMP()",
            |t, _| t.is_empty().then(|| DataType::timestamp(3).not_null()),
            |_, _| Ok(Value::Timestamp(now())),
        )
        .non_deterministic(),
    );
    r.register(
        "CURRENT_DATE",
        ScalarFunction::new(
            "CURRENT_DATE",
            "CURRENT_DATE()",
            |t, _| {
                t.is_empty()
                    .then(|| DataType::new(LogicalType::Date).not_null())
            },
            |_, _| {
                Ok(Value::Date(
                    now().millis.div_euclid(datetime::MILLIS_PER_DAY) as i32,
                ))
            },
        )
        .non_deterministic(),
    );
    r.register(
        "PROCTIME",
        ScalarFunction::new(
            "PROCTIME",
            "PROCTIME()",
            |t, _| t.is_empty().then(|| ltz(TimestampKind::Proctime)),
            |_, _| Ok(Value::Timestamp(now())),
        )
        .non_deterministic(),
    );
    // A marker the runtime recognizes in a scan's watermark; the translator refuses it
    // anywhere else before a job starts, so this evaluation is only a last guard.
    r.register(
        SOURCE_WATERMARK,
        ScalarFunction::new(
            SOURCE_WATERMARK,
            "SOURCE_WATERMARK()",
            |t, _| t.is_empty().then(|| ltz(TimestampKind::Regular)),
            |_, _| Err(crate::error::SqlError::eval(SOURCE_WATERMARK_MISUSED)),
        )
        .non_deterministic(),
    );
}
