//! A minimal ordered JSON value with the two printers plans need: compact (REST responses) and
//! Jackson's default pretty printer (Flink's `getExecutionPlan()`), so Sluice's output can be
//! compared byte for byte with Flink's.

use std::fmt::Write;

#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    /// Fields keep their insertion order: Flink's formats are order-sensitive.
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn obj() -> Json {
        Json::Obj(Vec::new())
    }

    /// Appends a field (builder style).
    pub fn with(mut self, key: &str, value: impl Into<Json>) -> Json {
        if let Json::Obj(fields) = &mut self {
            fields.push((key.to_string(), value.into()));
        }
        self
    }

    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(f) => f.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn to_compact(&self) -> String {
        let mut s = String::new();
        self.write_compact(&mut s);
        s
    }

    fn write_compact(&self, out: &mut String) {
        match self {
            Json::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_compact(out);
                }
                out.push(']');
            }
            Json::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write_compact(out);
                }
                out.push('}');
            }
            scalar => scalar.write_scalar(out),
        }
    }

    /// Jackson's `DefaultPrettyPrinter`: objects break lines and indent two spaces per enclosing
    /// object, fields print as `"k" : v`; arrays stay on the line as `[ a, b ]`; empty containers
    /// are `{ }` and `[ ]`; no trailing newline.
    pub fn to_jackson_pretty(&self) -> String {
        let mut s = String::new();
        self.write_pretty(&mut s, 0);
        s
    }

    fn write_pretty(&self, out: &mut String, depth: usize) {
        match self {
            Json::Arr(items) if items.is_empty() => out.push_str("[ ]"),
            Json::Arr(items) => {
                out.push_str("[ ");
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write_pretty(out, depth);
                }
                out.push_str(" ]");
            }
            Json::Obj(fields) if fields.is_empty() => out.push_str("{ }"),
            Json::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('\n');
                    indent(out, depth + 1);
                    write_str(out, k);
                    out.push_str(" : ");
                    v.write_pretty(out, depth + 1);
                }
                out.push('\n');
                indent(out, depth);
                out.push('}');
            }
            scalar => scalar.write_scalar(out),
        }
    }

    fn write_scalar(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Json::Float(f) if f.is_finite() => {
                if f.fract() == 0.0 && f.abs() < 1e15 {
                    let _ = write!(out, "{f:.1}");
                } else {
                    let _ = write!(out, "{f}");
                }
            }
            // JSON has no NaN/Infinity; Flink's Jackson writes them as strings.
            Json::Float(f) => write_str(out, &f.to_string().replace("inf", "Infinity")),
            Json::Str(s) => write_str(out, s),
            Json::Arr(_) | Json::Obj(_) => unreachable!("containers are handled by the callers"),
        }
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_string())
    }
}
impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}
impl From<i64> for Json {
    fn from(i: i64) -> Json {
        Json::Int(i)
    }
}
impl From<u32> for Json {
    fn from(i: u32) -> Json {
        Json::Int(i as i64)
    }
}
impl From<usize> for Json {
    fn from(i: usize) -> Json {
        Json::Int(i as i64)
    }
}
impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}
impl From<f64> for Json {
    fn from(f: f64) -> Json {
        Json::Float(f)
    }
}
impl From<Vec<Json>> for Json {
    fn from(v: Vec<Json>) -> Json {
        Json::Arr(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jackson_pretty_matches_flink_layout() {
        let j = Json::obj().with(
            "nodes",
            vec![
                Json::obj().with("id", 1i64).with("type", "a"),
                Json::obj().with(
                    "predecessors",
                    vec![Json::obj().with("id", 1i64).with("side", "second")],
                ),
            ],
        );
        let expected = "{\n  \"nodes\" : [ {\n    \"id\" : 1,\n    \"type\" : \"a\"\n  }, {\n    \"predecessors\" : [ {\n      \"id\" : 1,\n      \"side\" : \"second\"\n    } ]\n  } ]\n}";
        assert_eq!(j.to_jackson_pretty(), expected);
        assert_eq!(Json::obj().to_jackson_pretty(), "{ }");
        assert_eq!(Json::Arr(vec![]).to_jackson_pretty(), "[ ]");
    }

    #[test]
    fn compact_escapes_strings() {
        let j = Json::obj()
            .with("d", "a \"q\"\n\\")
            .with("f", 2.0)
            .with("n", Json::Null);
        assert_eq!(j.to_compact(), r#"{"d":"a \"q\"\n\\","f":2.0,"n":null}"#);
    }
}
