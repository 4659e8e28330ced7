//! Lookup tables: the right side of `JOIN t FOR SYSTEM_TIME AS OF s.proc_time`, served by a
//! sluice-lookup [`LookupSource`] chosen by the table's connector:
//!
//! | table | source |
//! |-------|--------|
//! | `'connector' = 'jdbc'` | PostgreSQL, a query per key ([`super::jdbc::lookup`]), with Flink's `lookup.*` options |
//! | the legacy `'connector.type' = 'filesystem'`, `'format.type' = 'csv'` | the file loaded into memory ([`super::filesystem::legacy`]), as Flink's `CsvTableSource` serves lookups |
//!
//! Any other table is refused, as Flink refuses a processing-time temporal join on a table
//! that is no lookup source. A lookup is by one key column of an integer or string type (what
//! sluice-lookup's [`LookupKey`] holds); more key columns are refused before the job starts.
//!
//! Rows come back as JSON ([`sluice_lookup::Row`]): PostgreSQL's as an object by column name,
//! memory tables' as an array in column order; [`LookupTable::decode`] reads either into the
//! table's SQL values.

use sluice_lookup::{LookupKey, LookupOptions, LookupSource};
use sluice_sql::{DataType, LogicalType, Result, SqlError, TableDef, Value};

use super::filesystem::legacy;
use super::jdbc::lookup as jdbc;
use crate::options::Options;
use crate::schema::PhysicalSchema;

/// How a source's rows are laid out.
#[derive(Clone, Debug)]
enum Shape {
    /// A JSON object by (database) column name.
    ByName(Vec<String>),
    /// A JSON array in the table's column order.
    ByPosition,
}

/// A table as a lookup join reads it.
#[derive(Clone, Debug)]
pub struct LookupTable {
    /// Where the rows come from.
    pub source: LookupSource,
    /// Mode, cache and retries (the node's plan options).
    pub options: LookupOptions,
    shape: Shape,
    types: Vec<DataType>,
}

impl LookupTable {
    pub(crate) fn by_name(
        source: LookupSource,
        options: LookupOptions,
        names: Vec<String>,
        types: Vec<DataType>,
    ) -> LookupTable {
        LookupTable {
            source,
            options,
            shape: Shape::ByName(names),
            types,
        }
    }

    pub(crate) fn by_position(
        source: LookupSource,
        options: LookupOptions,
        types: Vec<DataType>,
    ) -> LookupTable {
        LookupTable {
            source,
            options,
            shape: Shape::ByPosition,
            types,
        }
    }

    /// The table's columns' types.
    pub fn types(&self) -> &[DataType] {
        &self.types
    }

    /// Appends the SQL values of a source row to `out`; an error says which column did not read.
    pub fn decode(
        &self,
        row: &sluice_lookup::Row,
        out: &mut Vec<Value>,
    ) -> std::result::Result<(), String> {
        for (i, ty) in self.types.iter().enumerate() {
            let j = match &self.shape {
                Shape::ByName(names) => row.get(names[i].as_str()),
                Shape::ByPosition => row.get(i),
            };
            let v = match j {
                None => return Err(format!("the looked-up row has no column {i}: {row}")),
                Some(j) => from_json(j, ty)?,
            };
            out.push(v);
        }
        Ok(())
    }
}

/// The lookup table of `def`, looked up by its column `key` (physical index).
pub fn lookup_table(def: &TableDef, key: usize) -> Result<LookupTable> {
    let legacy_csv = def
        .options
        .iter()
        .any(|(k, v)| k == "connector.type" && v == "filesystem");
    let options = Options::new(&def.name.to_string(), &def.options);
    let schema = PhysicalSchema::of(def)?;
    let key_type = schema.types.get(key).ok_or_else(|| {
        SqlError::validation(None, "internal plan error: lookup key out of range")
    })?;
    if !matches!(
        key_type.logical,
        LogicalType::TinyInt
            | LogicalType::SmallInt
            | LogicalType::Int
            | LogicalType::BigInt
            | LogicalType::Char { .. }
            | LogicalType::Varchar { .. }
    ) {
        return Err(SqlError::unsupported(
            Some(def.pos),
            format!(
                "a lookup join on column '{}' {key_type} of table '{}': lookup keys are integer or string columns",
                schema.names[key], def.name
            ),
        ));
    }
    match options.get("connector") {
        Some("jdbc") => jdbc::lookup_table(&options, &schema, def, key),
        Some("filesystem") if legacy_csv => legacy::lookup_table(&options, &schema, def, key),
        other => Err(SqlError::unsupported(
            Some(def.pos),
            format!(
                "table '{}' (connector '{}') cannot be looked up (FOR SYSTEM_TIME AS OF a processing time): \
                 Processing-time temporal join is not supported yet. Lookup tables are 'jdbc' tables \
                 and the legacy 'connector.type' = 'filesystem' csv table",
                def.name,
                other.unwrap_or_default()
            ),
        )),
    }
}

/// The lookup key of a SQL value (an integer or a string; NULL matches nothing).
pub fn key_of(v: &Value) -> LookupKey {
    match v {
        Value::Int(i) => LookupKey::Int(*i),
        Value::Str(s) => LookupKey::Text(s.to_string()),
        _ => LookupKey::Null,
    }
}

/// A SQL value of `ty` as a memory table keeps it: JSON's own form for booleans, numbers and
/// strings, the value's serde form for the other types.
pub(crate) fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::Float(f) => J::from(f64::from(*f)),
        Value::Double(f) => J::from(*f),
        Value::Str(s) => J::String(s.to_string()),
        other => serde_json::to_value(other).unwrap_or(J::Null),
    }
}

/// The SQL value of `ty` a JSON value holds (what [`to_json`] wrote, or a PostgreSQL lookup's
/// column: booleans, integers, floats, text).
fn from_json(j: &serde_json::Value, ty: &DataType) -> std::result::Result<Value, String> {
    use LogicalType as L;
    if j.is_null() {
        return Ok(Value::Null);
    }
    let bad = || format!("{j} is not a {ty} value");
    Ok(match &ty.logical {
        L::Boolean => Value::Bool(j.as_bool().ok_or_else(bad)?),
        L::TinyInt | L::SmallInt | L::Int | L::BigInt => Value::Int(j.as_i64().ok_or_else(bad)?),
        L::Float => Value::Float(j.as_f64().ok_or_else(bad)? as f32),
        L::Double => Value::Double(j.as_f64().ok_or_else(bad)?),
        L::Char { .. } | L::Varchar { .. } => Value::Str(j.as_str().ok_or_else(bad)?.into()),
        _ => serde_json::from_value(j.clone()).map_err(|e| format!("{}: {e}", bad()))?,
    })
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::Timestamp;

    #[test]
    fn values_round_trip_through_json() {
        for (v, ty) in [
            (Value::Int(-7), DataType::bigint()),
            (Value::Str("x".into()), DataType::string()),
            (Value::Bool(true), DataType::boolean()),
            (Value::Double(1.5), DataType::double()),
            (
                Value::Timestamp(Timestamp::from_millis(1_700_000_000_123)),
                DataType::timestamp(3),
            ),
            (Value::Null, DataType::int()),
        ] {
            let back = from_json(&to_json(&v), &ty).unwrap();
            assert_eq!(format!("{back:?}"), format!("{v:?}"));
        }
        assert!(from_json(&serde_json::json!("x"), &DataType::bigint()).is_err());
        assert_eq!(key_of(&Value::Null), LookupKey::Null);
        assert_eq!(key_of(&Value::Int(3)), LookupKey::Int(3));
    }
}
