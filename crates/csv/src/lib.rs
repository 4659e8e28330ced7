//! # sluice-csv: how Sluice writes CSV
//!
//! Every CSV Sluice writes (file sinks' `write_csv`, `sluice key-group`, the Nexmark event
//! export, the Nexmark queries' canonical rows that the DuckDB oracle compares) goes through
//! [`push_field`] / [`push_field_bytes`], so there is one rule:
//!
//! * Fields are separated by `,`; records end with `\n` (LF). Writers add those.
//! * A text field is written as is, unless it is **empty**, contains `,`, `"`, CR or LF, or
//!   **starts or ends with a space or tab**: then it is enclosed in double quotes and every
//!   `"` inside is doubled (RFC 4180, section 2).
//! * So the **empty string is `""`**, and a missing value (NULL, `None`) is an **empty
//!   unquoted field** ([`push_null`] writes nothing): the two stay distinguishable. Edge
//!   spaces are quoted so that readers that trim unquoted fields keep them.
//! * Numbers are written by the caller in their plain decimal form, never quoted.
//!
//! DuckDB reads this exactly with `read_csv(path, delim = ',', quote = '"', escape = '"',
//! allow_quoted_nulls = false, ...)`: `""` is an empty string, an empty field is NULL.
//!
//! The `csv` crate was considered: its `QuoteStyle::Necessary` writes an empty string as an
//! empty field (indistinguishable from NULL) and it cannot quote per field, so it cannot
//! express this rule; and these writers append to a reused per-record buffer, where a
//! `csv::Writer` per sink would add an `io::Write` layer and buffering of its own. This crate
//! has no dependencies, so the dependency-free Nexmark generator can use it.

#![warn(missing_docs)]

use std::borrow::Cow;

/// Whether `s` must be quoted under the rule above.
#[inline]
pub fn needs_quotes(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: Option<&u8>| matches!(c, Some(b' ' | b'\t'));
    b.is_empty()
        || edge(b.first())
        || edge(b.last())
        || b.iter().any(|&c| matches!(c, b',' | b'"' | b'\n' | b'\r'))
}

/// Appends `s` as one text field.
#[inline]
pub fn push_field(out: &mut String, s: &str) {
    if !needs_quotes(s) {
        out.push_str(s);
        return;
    }
    out.push('"');
    let mut parts = s.split('"');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    for p in parts {
        out.push_str("\"\"");
        out.push_str(p);
    }
    out.push('"');
}

/// Appends `s` as one text field to a byte buffer.
#[inline]
pub fn push_field_bytes(out: &mut Vec<u8>, s: &str) {
    if !needs_quotes(s) {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    out.push(b'"');
    for &c in s.as_bytes() {
        if c == b'"' {
            out.push(b'"');
        }
        out.push(c);
    }
    out.push(b'"');
}

/// Appends a missing value (NULL / `None`): an empty unquoted field, i.e. nothing.
#[inline]
pub fn push_null(_out: &mut String) {}

/// Appends an optional text field: `None` as NULL, `Some(s)` as [`push_field`].
#[inline]
pub fn push_opt_field(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => push_field(out, s),
        None => push_null(out),
    }
}

/// `s` as one text field (borrowed when it needs no quotes).
pub fn field(s: &str) -> Cow<'_, str> {
    if needs_quotes(s) {
        let mut out = String::with_capacity(s.len() + 2);
        push_field(&mut out, s);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// Text fields joined into one record (without the line end).
pub fn record<'a>(fields: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, f) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_field(&mut out, f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(s: &str) -> String {
        let mut a = String::new();
        push_field(&mut a, s);
        let mut b = Vec::new();
        push_field_bytes(&mut b, s);
        assert_eq!(a.as_bytes(), &b[..], "{s:?}");
        assert_eq!(field(s), a);
        a
    }

    #[test]
    fn plain_text_is_written_as_is() {
        assert_eq!(both("plain"), "plain");
        assert_eq!(both("a b"), "a b");
        assert_eq!(both("ünïcödé"), "ünïcödé");
        assert!(matches!(field("x"), Cow::Borrowed("x")));
    }

    #[test]
    fn separators_quotes_and_line_breaks_are_quoted_with_quotes_doubled() {
        assert_eq!(both("a,b"), "\"a,b\"");
        assert_eq!(both("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(both("\""), "\"\"\"\"");
        assert_eq!(both("two\nlines"), "\"two\nlines\"");
        assert_eq!(both("cr\rhere"), "\"cr\rhere\"");
    }

    #[test]
    fn the_empty_string_is_quoted_and_null_is_an_empty_field() {
        assert_eq!(both(""), "\"\"");
        let mut r = String::new();
        push_opt_field(&mut r, None);
        r.push(',');
        push_opt_field(&mut r, Some(""));
        assert_eq!(r, ",\"\"");
    }

    #[test]
    fn edge_spaces_and_tabs_are_quoted() {
        assert_eq!(both(" a"), "\" a\"");
        assert_eq!(both("a\t"), "\"a\t\"");
        assert_eq!(both(" "), "\" \"");
    }

    #[test]
    fn records_join_fields_with_commas() {
        assert_eq!(record(["1", "", "a,b"]), "1,\"\",\"a,b\"");
        assert_eq!(record([]), "");
    }

    /// Reads one RFC 4180 record back (a tiny reference parser): every field round-trips.
    #[test]
    fn every_field_reads_back_as_written() {
        fn parse(line: &str) -> Vec<String> {
            let (mut out, mut cur, mut q, mut chars) =
                (Vec::new(), String::new(), false, line.chars().peekable());
            while let Some(c) = chars.next() {
                match (q, c) {
                    (true, '"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        cur.push('"');
                    }
                    (_, '"') => q = !q,
                    (false, ',') => out.push(std::mem::take(&mut cur)),
                    (_, c) => cur.push(c),
                }
            }
            out.push(cur);
            out
        }
        let samples = ["", "x", " x ", "a,b", "\"", "\"\"", "a\"b,c\n", ",", "\r\n"];
        for a in samples {
            for b in samples {
                assert_eq!(parse(&record([a, b])), vec![a, b], "{a:?} {b:?}");
            }
        }
    }
}
