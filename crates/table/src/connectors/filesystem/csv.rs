//! Flink's `csv` format over rows, written byte for byte as Flink 2.3 writes it (Flink's
//! `CsvRowDataSerializationSchema` over Jackson's CSV generator, default options):
//!
//! * `,` between fields (`csv.field-delimiter`), no header; `\n` after each record of a file,
//!   none after a Kafka record (Flink's serialization schema sets an empty line separator, which
//!   leaves the quick check below unchanged: `"` is above `\n`).
//! * NULL as `csv.null-literal` (default: nothing, an empty field), never quoted.
//! * Numbers and booleans as they print, never quoted. DECIMAL as Java's
//!   `BigDecimal.stripTrailingZeros().toString()` (`1589` for 1589.000, `2.92376E+6` for
//!   2923760.000), or plainly with its scale when `csv.write-bigdecimal-in-scientific-notation`
//!   is `false`.
//! * Text (strings, and dates, times and timestamps as [`super::scalar`] writes them) quoted by
//!   Jackson's quick check, not by need: when it is longer than 24 UTF-16 units, or holds a
//!   character below the "safe" one (one past the highest of the delimiter, `"` and `\n`: for
//!   `,` every character below `-`, space included), or a `"` or `\`. Inside quotes a `"` is
//!   doubled; there is no escape character. So the empty string is an empty field, as NULL is.
//!
//! Reading follows Flink's reader: a field equal to `csv.null-literal` (quoted or not) is NULL;
//! otherwise an empty field is the empty string for a string column and does not parse for any
//! other type (Flink fails the job there; here the record is a dead letter, or the field NULL
//! with `csv.ignore-parse-errors`).

use sluice_sql::{DataType, Decimal, LogicalType, Row, Value};

use super::scalar::{from_text, to_text};

/// A csv table's `csv.*` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    /// `csv.field-delimiter`.
    pub delimiter: char,
    /// `csv.null-literal`: the text of NULL (none: NULL is an empty field and reads back as an
    /// empty string or a parse error, as in Flink).
    pub null_literal: Option<String>,
    /// `csv.write-bigdecimal-in-scientific-notation` (Flink's default `true`).
    pub decimal_scientific: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: ',',
            null_literal: None,
            decimal_scientific: true,
        }
    }
}

/// Appends `row` as one CSV record (without the line end).
pub fn write_row(out: &mut String, row: &Row, types: &[DataType], options: &CsvOptions) {
    for (i, (v, ty)) in row.0.iter().zip(types).enumerate() {
        if i > 0 {
            out.push(options.delimiter);
        }
        match v {
            Value::Null => out.push_str(options.null_literal.as_deref().unwrap_or("")),
            Value::Decimal(d) if options.decimal_scientific => out.push_str(&java_decimal(*d)),
            Value::Decimal(d) => out.push_str(&d.to_string()),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Double(_) => {
                out.push_str(&to_text(v, ty))
            }
            _ => push_text(out, &to_text(v, ty), options.delimiter),
        }
    }
}

/// Jackson's quick check: whether it quotes `text` (see the module doc).
fn jackson_quotes(text: &str, delimiter: char) -> bool {
    let safe = u32::from(delimiter)
        .max(u32::from('"'))
        .max(u32::from('\n'))
        + 1;
    text.encode_utf16().count() > 24
        || text
            .chars()
            .any(|c| u32::from(c) < safe || c == '"' || c == '\\')
}

fn push_text(out: &mut String, text: &str, delimiter: char) {
    if !jackson_quotes(text, delimiter) {
        out.push_str(text);
        return;
    }
    out.push('"');
    for c in text.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
}

/// Java's `BigDecimal.stripTrailingZeros().toString()`: the digits without trailing zeros, in
/// plain notation unless the exponent is positive or below -6 (then `d.dddE±n`).
pub fn java_decimal(d: Decimal) -> String {
    let (mut unscaled, mut scale) = (d.unscaled, i64::from(d.scale));
    if unscaled == 0 {
        return "0".to_string();
    }
    while unscaled % 10 == 0 {
        unscaled /= 10;
        scale -= 1;
    }
    let sign = if unscaled < 0 { "-" } else { "" };
    let digits = unscaled.unsigned_abs().to_string();
    let adjusted = digits.len() as i64 - 1 - scale;
    if scale >= 0 && adjusted >= -6 {
        let scale = scale as usize;
        if scale == 0 {
            return format!("{sign}{digits}");
        }
        if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            return format!("{sign}{int}.{frac}");
        }
        return format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()));
    }
    let (first, rest) = digits.split_at(1);
    let point = if rest.is_empty() { "" } else { "." };
    let exp_sign = if adjusted >= 0 { "+" } else { "-" };
    format!("{sign}{first}{point}{rest}E{exp_sign}{}", adjusted.abs())
}

/// Whether `record` ends inside an open quote (the record goes on on the next line).
pub fn open_quote(record: &str) -> bool {
    record.bytes().filter(|b| *b == b'"').count() % 2 == 1
}

/// The fields of one record (quotes removed).
fn split(record: &str, delimiter: char) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = record.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
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
        fields.push(field);
        match chars.next() {
            Some(_) => continue,
            None => return Ok(fields),
        }
    }
}

/// One field's value as Flink's reader takes it (see the module doc).
fn read_field(text: &str, ty: &DataType, options: &CsvOptions) -> Result<Value, String> {
    if options.null_literal.as_deref() == Some(text) {
        return Ok(Value::Null);
    }
    if text.is_empty()
        && !matches!(
            ty.logical,
            LogicalType::Char { .. } | LogicalType::Varchar { .. }
        )
    {
        return Err(format!(
            "an empty field is not a {ty} (set 'csv.null-literal' = '' to read it as NULL)"
        ));
    }
    from_text(text, ty)
}

/// One CSV record as a row of `types`; `Err` says why it is malformed.
pub fn read_row(record: &str, types: &[DataType], options: &CsvOptions) -> Result<Row, String> {
    let fields = split(record, options.delimiter)?;
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
        .map(|(f, ty)| read_field(f, ty, options))
        .collect::<Result<Vec<_>, _>>()
        .map(Row)
}

/// The fields of one record as text, NULL (`None`) where it equals the null literal.
pub fn read_texts(record: &str, options: &CsvOptions) -> Result<Vec<Option<String>>, String> {
    Ok(split(record, options.delimiter)?
        .into_iter()
        .map(|f| (options.null_literal.as_deref() != Some(f.as_str())).then_some(f))
        .collect())
}

/// One field's value with `csv.ignore-parse-errors`: NULL where it does not parse.
pub fn lenient_field(text: Option<&str>, ty: &DataType, options: &CsvOptions) -> Value {
    match text {
        None => Value::Null,
        Some(t) => read_field(t, ty, options).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::Timestamp;

    fn dec(unscaled: i128, scale: u8) -> Decimal {
        Decimal { unscaled, scale }
    }

    #[test]
    fn decimals_are_written_as_javas_stripped_big_decimal() {
        assert_eq!(java_decimal(dec(452_184, 3)), "452.184");
        assert_eq!(java_decimal(dec(1_589_000, 3)), "1589");
        assert_eq!(java_decimal(dec(2_923_760_000, 3)), "2.92376E+6");
        assert_eq!(java_decimal(dec(10, 0)), "1E+1");
        assert_eq!(java_decimal(dec(304_180, 3)), "304.18");
        assert_eq!(java_decimal(dec(-50, 3)), "-0.05");
        assert_eq!(java_decimal(dec(1, 7)), "1E-7");
        assert_eq!(java_decimal(dec(12, 7)), "0.0000012");
        assert_eq!(java_decimal(dec(0, 3)), "0");
    }

    #[test]
    fn text_is_quoted_by_jacksons_quick_check() {
        let q = |t| jackson_quotes(t, ',');
        assert!(!q("Kent") && !q("channel-6074") && !q("tj@mpna.com") && !q(""));
        assert!(q("Deiter Abrams") && q("a,b") && q("say \"hi\"") && q("x\\y") && q("a+b"));
        assert!(q("abcdefghijklmnopqrstuvwxyz"), "over 24 units");
        assert!(!q("abcdefghijklmnopqrstuvwx"), "24 units");
    }

    #[test]
    fn rows_are_written_as_flink_writes_them_and_read_back() {
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
            Value::str("plain"),
            Value::Timestamp(Timestamp::from_millis(1_436_918_400_120)),
            Value::Decimal(dec(-1050, 2)),
        ]);
        let options = CsvOptions::default();
        let mut line = String::new();
        write_row(&mut line, &row, &types, &options);
        assert_eq!(line, r#","a, ""b""",plain,"2015-07-15 00:00:00.12",-10.5"#);
        // Without a null literal the empty BIGINT does not parse, as in Flink.
        assert!(read_row(&line, &types, &options).is_err());
        let with_null = CsvOptions {
            null_literal: Some(String::new()),
            ..CsvOptions::default()
        };
        let mut want = row.clone();
        want.0[4] = Value::Decimal(dec(-1050, 2));
        assert_eq!(read_row(&line, &types, &with_null).unwrap(), want);
        assert!(read_row("1,x", &types, &options).is_err());
        // An empty string field is the empty string without a null literal.
        let strings = [DataType::string(), DataType::string()];
        assert_eq!(
            read_row("x,", &strings, &options).unwrap(),
            Row(vec![Value::str("x"), Value::str("")])
        );
    }
}
