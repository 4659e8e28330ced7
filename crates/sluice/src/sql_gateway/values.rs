//! SQL types and values in the gateway's JSON: a type as Flink's `LogicalTypeJsonSerializer`
//! writes it, a value as Flink's JSON format writes it with ISO-8601 times (the gateway's
//! `rowFormat` `JSON`).

use std::collections::BTreeMap;

use sluice_rest_api::{ColumnInfo, FieldValue, GatewayLogicalType, GatewayRowField};
use sluice_sql::datetime::{format_date, format_time, format_timestamp};
use sluice_sql::{DataType, LogicalType, Value};

/// A column of a result.
pub fn column(name: &str, ty: &DataType) -> ColumnInfo {
    ColumnInfo {
        name: name.to_string(),
        logical_type: logical_type(ty),
        comment: None,
    }
}

/// A type as Flink's gateway writes it (`{"type": "VARCHAR", "nullable": true, "length": n}`).
pub fn logical_type(ty: &DataType) -> GatewayLogicalType {
    let mut t = GatewayLogicalType {
        nullable: Some(ty.nullable),
        ..GatewayLogicalType::default()
    };
    let root = match &ty.logical {
        LogicalType::Boolean => "BOOLEAN",
        LogicalType::TinyInt => "TINYINT",
        LogicalType::SmallInt => "SMALLINT",
        LogicalType::Int => "INTEGER",
        LogicalType::BigInt => "BIGINT",
        LogicalType::Float => "FLOAT",
        LogicalType::Double => "DOUBLE",
        LogicalType::Decimal { precision, scale } => {
            t.precision = Some(u32::from(*precision));
            t.scale = Some(u32::from(*scale));
            "DECIMAL"
        }
        LogicalType::Char { length } => {
            t.length = Some(*length);
            "CHAR"
        }
        LogicalType::Varchar { length } => {
            t.length = Some(*length);
            "VARCHAR"
        }
        LogicalType::Binary { length } => {
            t.length = Some(*length);
            "BINARY"
        }
        LogicalType::Varbinary { length } => {
            t.length = Some(*length);
            "VARBINARY"
        }
        LogicalType::Date => "DATE",
        LogicalType::Time { precision } => {
            t.precision = Some(u32::from(*precision));
            "TIME_WITHOUT_TIME_ZONE"
        }
        LogicalType::Timestamp { precision, .. } => {
            t.precision = Some(u32::from(*precision));
            "TIMESTAMP_WITHOUT_TIME_ZONE"
        }
        LogicalType::TimestampLtz { precision, .. } => {
            t.precision = Some(u32::from(*precision));
            "TIMESTAMP_WITH_LOCAL_TIME_ZONE"
        }
        LogicalType::IntervalDayTime => {
            t.resolution = Some("DAY_TO_SECOND".into());
            "INTERVAL_DAY_TIME"
        }
        LogicalType::IntervalYearMonth => {
            t.resolution = Some("YEAR_TO_MONTH".into());
            "INTERVAL_YEAR_MONTH"
        }
        LogicalType::Row(fields) => {
            t.fields = Some(
                fields
                    .iter()
                    .map(|f| GatewayRowField {
                        name: f.name.to_string(),
                        field_type: logical_type(&f.ty),
                    })
                    .collect(),
            );
            "ROW"
        }
        LogicalType::Array(e) => {
            t.element_type = Some(Box::new(logical_type(e)));
            "ARRAY"
        }
        LogicalType::Map(k, v) => {
            t.key_type = Some(Box::new(logical_type(k)));
            t.value_type = Some(Box::new(logical_type(v)));
            "MAP"
        }
        LogicalType::Null => {
            t.nullable = None;
            "NULL"
        }
    };
    t.type_root = root.to_string();
    t
}

/// `2024-01-02 03:04:05.500000000` → `2024-01-02T03:04:05.5` (ISO-8601, fraction as short as
/// it can be, as Java's `ISO_LOCAL_TIME` prints it).
fn iso(sql: &str) -> String {
    let mut s = sql.replacen(' ', "T", 1);
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    s
}

/// A value of type `ty` as Flink's JSON format writes it (ISO-8601 dates and times, a
/// `TIMESTAMP_LTZ` in UTC with `Z`, bytes in base64, a row as an object by field name).
pub fn field(v: &Value, ty: &DataType) -> FieldValue {
    match v {
        Value::Null => FieldValue::Null,
        Value::Bool(b) => FieldValue::Bool(*b),
        Value::Int(i) => FieldValue::Int(*i),
        Value::Float(f) => FieldValue::Number(f64::from(*f)),
        Value::Double(d) => FieldValue::Number(*d),
        // Flink writes a DECIMAL as a JSON number; its digits survive up to f64's precision.
        Value::Decimal(d) => d
            .to_string()
            .parse()
            .map_or_else(|_| FieldValue::Text(d.to_string()), FieldValue::Number),
        Value::Str(s) => FieldValue::Text(s.to_string()),
        Value::Bytes(b) => FieldValue::Text(base64(b)),
        Value::Date(d) => FieldValue::Text(format_date(i64::from(*d))),
        Value::Time(n) => FieldValue::Text(iso(&format_time(*n, 9))),
        Value::Timestamp(ts) => {
            let s = iso(&format_timestamp(*ts, 9));
            match ty.logical {
                LogicalType::TimestampLtz { .. } => FieldValue::Text(s + "Z"),
                _ => FieldValue::Text(s),
            }
        }
        Value::IntervalMillis(m) => FieldValue::Int(*m),
        Value::IntervalMonths(m) => FieldValue::Int(i64::from(*m)),
        Value::Row(values) => {
            let names: Vec<(String, DataType)> = match &ty.logical {
                LogicalType::Row(fields) => fields
                    .iter()
                    .map(|f| (f.name.to_string(), f.ty.clone()))
                    .collect(),
                _ => Vec::new(),
            };
            let mut out = BTreeMap::new();
            for (i, v) in values.iter().enumerate() {
                let (name, t) = names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| (format!("f{i}"), DataType::string()));
                out.insert(name, field(v, &t));
            }
            FieldValue::Map(out)
        }
        Value::Array(values) => {
            let element = match &ty.logical {
                LogicalType::Array(e) => (**e).clone(),
                _ => DataType::string(),
            };
            FieldValue::List(values.iter().map(|v| field(v, &element)).collect())
        }
        Value::Map(entries) => {
            let (kt, vt) = match &ty.logical {
                LogicalType::Map(k, v) => ((**k).clone(), (**v).clone()),
                _ => (DataType::string(), DataType::string()),
            };
            let mut out = BTreeMap::new();
            for (k, v) in entries.iter() {
                let key = match field(k, &kt) {
                    FieldValue::Text(s) => s,
                    FieldValue::Null => "null".to_string(),
                    other => serde_json::to_string(&other).unwrap_or_default(),
                };
                out.insert(key, field(v, &vt));
            }
            FieldValue::Map(out)
        }
    }
}

/// Standard base64 with padding (Flink's JSON format writes bytes so).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_iso_8601_and_bytes_base64() {
        assert_eq!(
            iso("2024-01-02 03:04:05.500000000"),
            "2024-01-02T03:04:05.5"
        );
        assert_eq!(iso("2024-01-02 03:04:05.000000000"), "2024-01-02T03:04:05");
        assert_eq!(base64(b"Man"), "TWFu");
        assert_eq!(base64(b"Ma"), "TWE=");
        assert_eq!(base64(b"M"), "TQ==");
    }
}
