//! Flink's `json` format over rows: one object per line, a field per column by name; NULL as
//! `null`, a missing field read as NULL (`json.fail-on-missing-field` = false, Flink's default)
//! or refused (`true`, at any depth);
//! timestamps in Flink's SQL standard form (`json.timestamp-format.standard` = `SQL`:
//! `yyyy-MM-dd HH:mm:ss[.f]`, the fraction without trailing zeros, [`super::scalar`]); decimals as plain numbers; ROW as an object, ARRAY as an array,
//! MAP as an object with text keys.
//!
//! Numbers are read through `f64` when they are not integers, so a DECIMAL of more than 15
//! significant digits may be read inexactly.

use serde_json::{Map, Number, Value as Json};
use sluice_sql::{DataType, LogicalType, Row, Value};

use super::scalar::{from_text, to_text};

/// `v` of type `ty` as JSON.
pub fn to_json(v: &Value, ty: &DataType) -> Json {
    match (v, &ty.logical) {
        (Value::Null, _) => Json::Null,
        (Value::Bool(b), _) => Json::Bool(*b),
        (Value::Int(i), _) => Json::Number((*i).into()),
        (Value::Double(x), _) => Number::from_f64(*x).map_or(Json::Null, Json::Number),
        (Value::Float(x), _) => Number::from_f64(f64::from(*x)).map_or(Json::Null, Json::Number),
        (Value::Decimal(d), _) => serde_json::from_str::<Number>(&d.to_string())
            .map_or_else(|_| Json::String(d.to_string()), Json::Number),
        (Value::Row(fields), LogicalType::Row(types)) => Json::Object(
            fields
                .iter()
                .zip(types)
                .map(|(f, t)| (t.name.clone(), to_json(f, &t.ty)))
                .collect::<Map<String, Json>>(),
        ),
        (Value::Array(items), LogicalType::Array(et)) => {
            Json::Array(items.iter().map(|x| to_json(x, et)).collect())
        }
        (Value::Map(entries), LogicalType::Map(kt, vt)) => Json::Object(
            entries
                .iter()
                .map(|(k, x)| (to_text(k, kt), to_json(x, vt)))
                .collect(),
        ),
        (v, _) => Json::String(to_text(v, ty)),
    }
}

/// A JSON value as a value of `ty`; `Err` says what did not fit. A field missing from an
/// object is NULL.
pub fn from_json(j: &Json, ty: &DataType) -> Result<Value, String> {
    from_json_checked(j, ty, false)
}

/// The field `name` of object `o`: NULL when missing, unless `fail_on_missing`.
fn field<'a>(
    o: &'a Map<String, Json>,
    name: &str,
    fail_on_missing: bool,
) -> Result<&'a Json, String> {
    match o.get(name) {
        Some(v) => Ok(v),
        None if fail_on_missing => Err(format!("field '{name}' is missing")),
        None => Ok(&Json::Null),
    }
}

/// [`from_json`], a missing field of a ROW being an error when `fail_on_missing`.
fn from_json_checked(j: &Json, ty: &DataType, fail_on_missing: bool) -> Result<Value, String> {
    use LogicalType as L;
    Ok(match (j, &ty.logical) {
        (Json::Null, _) => Value::Null,
        (Json::Bool(b), L::Boolean) => Value::Bool(*b),
        (Json::Number(n), L::Double) => Value::Double(n.as_f64().ok_or("not a number")?),
        (Json::Number(n), L::Float) => Value::Float(n.as_f64().ok_or("not a number")? as f32),
        (Json::Number(n), _) => from_text(&n.to_string(), ty)?,
        (Json::String(s), _) if super::scalar::is_scalar(ty) => from_text(s, ty)?,
        (Json::Object(o), L::Row(fields)) => Value::Row(
            fields
                .iter()
                .map(|f| {
                    from_json_checked(field(o, &f.name, fail_on_missing)?, &f.ty, fail_on_missing)
                })
                .collect::<Result<Vec<_>, _>>()?
                .into(),
        ),
        (Json::Array(items), L::Array(et)) => Value::Array(
            items
                .iter()
                .map(|x| from_json_checked(x, et, fail_on_missing))
                .collect::<Result<Vec<_>, _>>()?
                .into(),
        ),
        (Json::Object(o), L::Map(kt, vt)) => Value::Map(
            o.iter()
                .map(|(k, x)| {
                    Ok((
                        from_text(k, kt)?,
                        from_json_checked(x, vt, fail_on_missing)?,
                    ))
                })
                .collect::<Result<Vec<_>, String>>()?
                .into(),
        ),
        (other, _) => return Err(format!("cannot read {other} as {ty}")),
    })
}

/// `row` as one JSON object line (without the line end).
pub fn write_row(out: &mut String, row: &Row, names: &[String], types: &[DataType]) {
    let object: Map<String, Json> = names
        .iter()
        .zip(types)
        .zip(&row.0)
        .map(|((n, t), v)| (n.clone(), to_json(v, t)))
        .collect();
    out.push_str(&Json::Object(object).to_string());
}

/// One JSON line as a row of the named columns; `Err` says why it is malformed (with
/// `fail_on_missing`, a missing field too).
pub fn read_row(
    line: &str,
    names: &[String],
    types: &[DataType],
    fail_on_missing: bool,
) -> Result<Row, String> {
    let parsed: Json = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Json::Object(o) = parsed else {
        return Err("not a JSON object".into());
    };
    names
        .iter()
        .zip(types)
        .map(|(n, t)| {
            from_json_checked(field(&o, n, fail_on_missing)?, t, fail_on_missing)
                .map_err(|e| format!("field '{n}': {e}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::{Decimal, Timestamp};

    #[test]
    fn nulls_quotes_timestamps_and_decimals_round_trip() {
        let names: Vec<String> = ["a", "b", "t", "d"].iter().map(|s| s.to_string()).collect();
        let types = vec![
            DataType::bigint(),
            DataType::string(),
            DataType::timestamp(3),
            DataType::decimal(10, 2),
        ];
        let row = Row(vec![
            Value::Null,
            Value::str("say \"hi\"\n"),
            Value::Timestamp(Timestamp::from_millis(1_436_918_400_123)),
            Value::Decimal(Decimal {
                unscaled: 12345,
                scale: 2,
            }),
        ]);
        let mut line = String::new();
        write_row(&mut line, &row, &names, &types);
        assert_eq!(
            line,
            r#"{"a":null,"b":"say \"hi\"\n","t":"2015-07-15 00:00:00.123","d":123.45}"#
        );
        assert_eq!(read_row(&line, &names, &types, false).unwrap(), row);
        assert!(read_row("{\"a\": \"x\"}", &names, &types, false).is_err());
    }

    #[test]
    fn rows_arrays_and_maps_nest() {
        use sluice_sql::RowField;
        let ty = DataType::new(LogicalType::Row(vec![
            RowField {
                name: "xs".into(),
                ty: DataType::new(LogicalType::Array(Box::new(DataType::int()))),
            },
            RowField {
                name: "m".into(),
                ty: DataType::new(LogicalType::Map(
                    Box::new(DataType::string()),
                    Box::new(DataType::double()),
                )),
            },
        ]));
        let v = Value::Row(
            vec![
                Value::Array(vec![Value::Int(1), Value::Null].into()),
                Value::Map(vec![(Value::str("k"), Value::Double(1.5))].into()),
            ]
            .into(),
        );
        let j = to_json(&v, &ty);
        assert_eq!(j.to_string(), r#"{"xs":[1,null],"m":{"k":1.5}}"#);
        assert_eq!(from_json(&j, &ty).unwrap(), v);
    }
}
