//! Rows of the official query compared with its two oracles' rows:
//!
//! * with the hand-written twin as text: each captured csv line (Flink's csv text) re-written in
//!   the hand-written queries' CSV form ([`handwritten_line`]: Sluice's one CSV rule, timestamps
//!   as epoch milliseconds, decimals with their scale), the sorted lines equal;
//! * with DuckDB by value ([`sluice_row`], [`duckdb_row`]): each value of the sink's column types
//!   as one canonical cell (a decimal by its digits and exponent, without trailing zeros, so
//!   `1589.000` equals `1589`; a timestamp by its epoch milliseconds; text as a JSON string),
//!   the sorted rows equal. The empty string and NULL are one cell: Flink's csv writes both as
//!   an empty field.

use sluice_sql::{DataType, LogicalType, Value};
use sluice_table::connectors::filesystem::csv::{read_row, CsvOptions};
use sluice_table::connectors::filesystem::scalar::to_text;

/// How the captured lines are read back: an empty field is NULL.
fn options() -> CsvOptions {
    CsvOptions {
        null_literal: Some(String::new()),
        ..CsvOptions::default()
    }
}

/// A captured line in the hand-written queries' CSV form (the line unchanged if it does not
/// parse as a row of `types`, so that it shows as a difference).
pub fn handwritten_line(line: &str, types: &[DataType]) -> String {
    let Ok(row) = read_row(line, types, &options()) else {
        return line.to_string();
    };
    let mut out = String::new();
    for (i, (v, ty)) in row.0.iter().zip(types).enumerate() {
        if i > 0 {
            out.push(',');
        }
        match v {
            Value::Null => sluice_csv::push_null(&mut out),
            Value::Int(n) => out.push_str(&n.to_string()),
            Value::Decimal(d) => out.push_str(&d.to_string()),
            Value::Timestamp(ts) => out.push_str(&ts.millis.to_string()),
            Value::Str(s) => sluice_csv::push_field(&mut out, s),
            other => sluice_csv::push_field(&mut out, &to_text(other, ty)),
        }
    }
    out
}

/// A hand-written twin's CSV line with each empty quoted field (`""`, the empty string) written
/// empty, as the captured csv writes both the empty string and NULL (so the two compare equal).
pub fn empty_field_as_null(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for (i, field) in split_fields(line).iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if *field != "\"\"" {
            out.push_str(field);
        }
    }
    out
}

/// The raw fields of a CSV line (quotes kept), split at commas outside quotes.
fn split_fields(line: &str) -> Vec<&str> {
    let mut fields = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                fields.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push(&line[start..]);
    fields
}

/// A decimal as a canonical cell: digits without trailing zeros and the power of ten.
fn decimal_cell(mut unscaled: i128, scale: i64) -> String {
    let mut exponent = -scale;
    if unscaled == 0 {
        return "0E0".to_string();
    }
    while unscaled % 10 == 0 {
        unscaled /= 10;
        exponent += 1;
    }
    format!("{unscaled}E{exponent}")
}

fn text_cell(s: &str) -> String {
    if s.is_empty() {
        return "NULL".to_string();
    }
    serde_json::Value::String(s.to_string()).to_string()
}

/// A row of Sluice's capture as canonical cells (one line of its csv).
pub fn sluice_row(line: &str, types: &[DataType]) -> Result<Vec<String>, String> {
    let row = read_row(line, types, &options()).map_err(|e| format!("'{line}': {e}"))?;
    Ok(row
        .0
        .iter()
        .zip(types)
        .map(|(v, ty)| match v {
            Value::Null => "NULL".to_string(),
            Value::Int(n) => n.to_string(),
            Value::Decimal(d) => decimal_cell(d.unscaled, i64::from(d.scale)),
            Value::Timestamp(ts) => format!("ts:{}", ts.millis),
            Value::Str(s) => text_cell(s),
            Value::Bool(b) => b.to_string(),
            Value::Double(x) => format!("{x:?}"),
            Value::Float(x) => format!("{:?}", f64::from(*x)),
            other => text_cell(&to_text(other, ty)),
        })
        .collect())
}

/// A row of DuckDB's answer (one JSON array, `run.py`'s form) as canonical cells of `types`.
pub fn duckdb_row(line: &str, types: &[DataType]) -> Result<Vec<String>, String> {
    use serde_json::Value as J;
    let bad = |what: &str| format!("DuckDB's row {line}: {what}");
    let J::Array(cells) = serde_json::from_str::<J>(line).map_err(|e| bad(&e.to_string()))? else {
        return Err(bad("not a JSON array"));
    };
    if cells.len() != types.len() {
        return Err(bad(&format!(
            "{} columns, the sink has {}",
            cells.len(),
            types.len()
        )));
    }
    cells
        .iter()
        .zip(types)
        .map(|(c, ty)| {
            Ok(match (c, &ty.logical) {
                (J::Null, _) => "NULL".to_string(),
                (
                    J::Number(n),
                    LogicalType::Timestamp { .. } | LogicalType::TimestampLtz { .. },
                ) => {
                    format!(
                        "ts:{}",
                        n.as_i64()
                            .ok_or_else(|| bad("a timestamp that is no integer"))?
                    )
                }
                (J::Number(n), LogicalType::Double | LogicalType::Float) => {
                    format!("{:?}", n.as_f64().ok_or_else(|| bad("not a number"))?)
                }
                (J::String(_) | J::Number(_), LogicalType::Decimal { .. }) => {
                    let text = match c {
                        J::String(s) => s.clone(),
                        number => number.to_string(),
                    };
                    let d = sluice_sql::cast::parse_decimal(&text)
                        .ok_or_else(|| bad(&format!("'{text}' is no decimal")))?;
                    decimal_cell(d.unscaled, i64::from(d.scale))
                }
                (J::Number(n), _) => n.to_string(),
                (J::Bool(b), _) => b.to_string(),
                (J::String(s), _) => text_cell(s),
                (other, _) => return Err(bad(&format!("unexpected cell {other}"))),
            })
        })
        .collect()
}

/// The columns compared for a query whose answer ROW_NUMBER's ties leave open (all columns for
/// the others): q19 numbers each auction's bids by price alone, so among bids of one price which
/// bid takes which number (and which make the top 10) is the run's order; the multiset of
/// (auction, price, rank_number) is not. q18 keeps each (bidder, auction)'s last bid by event
/// time: among bids of the same millisecond the last to arrive wins (Flink's keep-last), so
/// (auction, bidder, dateTime) is compared.
pub fn tie_free_columns(query: &str) -> Option<&'static [usize]> {
    match query {
        "q18" => Some(&[0, 1, 5]),
        "q19" => Some(&[0, 2, 7]),
        _ => None,
    }
}

/// Each row cut down to `columns`.
pub fn project(rows: Vec<Vec<String>>, columns: &[usize]) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|r| columns.iter().filter_map(|&i| r.get(i).cloned()).collect())
        .collect()
}

/// The two sorted row sets compared: `None` when equal, else what differs first.
pub fn first_difference(ours: &[Vec<String>], theirs: &[Vec<String>]) -> Option<String> {
    if ours == theirs {
        return None;
    }
    let show = |r: Option<&Vec<String>>| r.map_or("(none)".to_string(), |r| r.join(", "));
    let at = ours
        .iter()
        .zip(theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    Some(format!(
        "{} rows against {}; first difference (sorted, row {at}):\n  Sluice: {}\n  DuckDB: {}",
        ours.len(),
        theirs.len(),
        show(ours.get(at)),
        show(theirs.get(at))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_compare_values_not_text() {
        let types = vec![
            DataType::bigint(),
            DataType::decimal(23, 3),
            DataType::timestamp(3),
            DataType::string(),
        ];
        let sluice = sluice_row(r#"1000,2.92376E+6,"2023-11-14 22:13:20.01",x"#, &types).unwrap();
        let duck = duckdb_row(r#"[1000, "2923760.000", 1700000000010, "x"]"#, &types).unwrap();
        assert_eq!(sluice, duck);
        let other = duckdb_row(r#"[1000, "2923760.001", 1700000000010, "x"]"#, &types).unwrap();
        assert_ne!(sluice, other);
        // NULL and the empty string are one cell.
        let a = sluice_row("1,1,\"2023-11-14 22:13:20\",", &types).unwrap();
        let b = duckdb_row(r#"[1, "1.000", 1700000000000, null]"#, &types).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn the_twins_empty_strings_are_empty_fields() {
        assert_eq!(
            empty_field_as_null(r##"1,"",x,"""","""##),
            r##"1,,x,"""","##
        );
        assert_eq!(
            empty_field_as_null(r##""a,"""",b","""##),
            r##""a,"""",b","##
        );
        assert_eq!(empty_field_as_null("1,2"), "1,2");
    }

    #[test]
    fn captured_lines_take_the_handwritten_form() {
        let types = vec![
            DataType::bigint(),
            DataType::decimal(23, 3),
            DataType::timestamp(3),
            DataType::string(),
        ];
        let line = r#"7,1589,"2023-11-14 22:13:20.01","a long text of more than 24 units""#;
        assert_eq!(
            handwritten_line(line, &types),
            "7,1589.000,1700000000010,a long text of more than 24 units"
        );
    }
}
