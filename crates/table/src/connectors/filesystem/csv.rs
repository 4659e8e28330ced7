//! Flink's `csv` format over rows: `,` between fields (`csv.field-delimiter`), `"` quoting with
//! `""` for a quote inside, NULL as an empty unquoted field and the empty string as `""`
//! (Sluice's one CSV rule, `sluice-csv`), scalars as [`super::scalar`] writes them.

use sluice_sql::{DataType, Row, Value};

use super::scalar::{from_text, to_text};

/// Appends `row` as one CSV record (without the line end).
pub fn write_row(out: &mut String, row: &Row, types: &[DataType], delimiter: char) {
    for (i, (v, ty)) in row.0.iter().zip(types).enumerate() {
        if i > 0 {
            out.push(delimiter);
        }
        if v.is_null() {
            continue;
        }
        let text = to_text(v, ty);
        if delimiter != ',' && text.contains(delimiter) && !sluice_csv::needs_quotes(&text) {
            out.push('"');
            out.push_str(&text);
            out.push('"');
        } else {
            sluice_csv::push_field(out, &text);
        }
    }
}

/// Whether `record` ends inside an open quote (the record goes on on the next line).
pub fn open_quote(record: &str) -> bool {
    record.bytes().filter(|b| *b == b'"').count() % 2 == 1
}

/// The fields of one record: `None` for an empty unquoted field (NULL).
fn split(record: &str, delimiter: char) -> Result<Vec<Option<String>>, String> {
    let mut fields = Vec::new();
    let mut chars = record.chars().peekable();
    loop {
        let mut field = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("a quoted field is not closed".into()),
                }
            }
            match chars.peek() {
                None => {}
                Some(c) if *c == delimiter => {}
                Some(c) => return Err(format!("'{c}' after a closing quote")),
            }
        } else {
            while let Some(c) = chars.peek() {
                if *c == delimiter {
                    break;
                }
                if *c == '"' {
                    return Err("a quote inside an unquoted field".into());
                }
                field.push(*c);
                chars.next();
            }
        }
        fields.push(if field.is_empty() && !quoted {
            None
        } else {
            Some(field)
        });
        match chars.next() {
            Some(_) => continue,
            None => return Ok(fields),
        }
    }
}

/// One CSV record as a row of `types`; `Err` says why it is malformed.
pub fn read_row(record: &str, types: &[DataType], delimiter: char) -> Result<Row, String> {
    let fields = split(record, delimiter)?;
    if fields.len() != types.len() {
        return Err(format!(
            "expected {} fields, found {}",
            types.len(),
            fields.len()
        ));
    }
    fields
        .iter()
        .zip(types)
        .map(|(f, ty)| match f {
            None => Ok(Value::Null),
            Some(text) => from_text(text, ty),
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
        let types = vec![
            DataType::bigint(),
            DataType::string(),
            DataType::string(),
            DataType::timestamp(3),
            DataType::decimal(10, 2),
        ];
        let row = Row(vec![
            Value::Null,
            Value::str("a, \"b\""),
            Value::str(""),
            Value::Timestamp(Timestamp::from_millis(1_436_918_400_123)),
            Value::Decimal(Decimal {
                unscaled: -1050,
                scale: 2,
            }),
        ]);
        let mut line = String::new();
        write_row(&mut line, &row, &types, ',');
        assert_eq!(line, r#","a, ""b""","",2015-07-15 00:00:00.123,-10.50"#);
        assert_eq!(read_row(&line, &types, ',').unwrap(), row);
        assert!(read_row("1,x", &types, ',').is_err());
    }
}
