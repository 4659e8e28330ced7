//! JSON output, all through `serde_json`:
//!
//! - [`to_jackson_pretty`] prints any `Serialize` value with [`JacksonPretty`], a
//!   `serde_json` formatter that reproduces Jackson's `DefaultPrettyPrinter` byte for byte
//!   (Flink's `getExecutionPlan()`), so Sluice's plans compare exactly with Flink's.
//! - [`Json`] is an ordered builder for REST responses (`Json::obj().with(k, v)`); it has no
//!   printer of its own: it serializes through `serde_json` ([`Json::to_compact`]) and
//!   converts to and from [`serde_json::Value`].

use std::io;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::ser::Formatter;

/// Jackson's `DefaultPrettyPrinter` layout: objects break lines and indent two spaces per
/// enclosing object (arrays do not indent), fields print as `"k" : v`; arrays stay on the line
/// as `[ a, b ]`; empty containers are `{ }` and `[ ]`; no trailing newline.
#[derive(Debug, Default)]
pub struct JacksonPretty {
    /// Enclosing objects.
    depth: usize,
    /// Per open container: whether it has an entry yet.
    has_entry: Vec<bool>,
}

impl JacksonPretty {
    fn indent<W: ?Sized + io::Write>(&self, w: &mut W) -> io::Result<()> {
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl Formatter for JacksonPretty {
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_entry.push(false);
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        if self.has_entry.pop().unwrap_or(false) {
            w.write_all(b"\n")?;
            self.indent(w)?;
            w.write_all(b"}")
        } else {
            w.write_all(b" }")
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if let Some(h) = self.has_entry.last_mut() {
            *h = true;
        }
        if !first {
            w.write_all(b",")?;
        }
        w.write_all(b"\n")?;
        self.indent(w)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b" : ")
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.has_entry.push(false);
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.has_entry.pop();
        w.write_all(b" ]")
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if let Some(h) = self.has_entry.last_mut() {
            *h = true;
        }
        w.write_all(if first { b" " } else { b", " })
    }
}

/// `value` as Jackson's default pretty printer prints it (see [`JacksonPretty`]).
pub fn to_jackson_pretty<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JacksonPretty::default());
    // Serializing a value into memory fails only for a map with non-string keys, which
    // `Value`/`Json` cannot hold.
    if value.serialize(&mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// An ordered JSON value for building REST responses.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// JSON `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A whole number, printed without a fraction.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// Fields keep their insertion order: Flink's formats are order-sensitive.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An empty object, to fill with [`Json::with`].
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

    /// An object's field by name; `None` for a missing field or a non-object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(f) => f.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Compact JSON, by `serde_json`.
    pub fn to_compact(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Jackson's default pretty layout (see [`JacksonPretty`]).
    pub fn to_jackson_pretty(&self) -> String {
        to_jackson_pretty(self)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Int(i) => s.serialize_i64(*i),
            Json::Float(f) if f.is_finite() => s.serialize_f64(*f),
            // JSON has no NaN/Infinity; Flink's Jackson writes them as strings.
            Json::Float(f) => s.serialize_str(&f.to_string().replace("inf", "Infinity")),
            Json::Str(v) => s.serialize_str(v),
            Json::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Json::Obj(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl From<serde_json::Value> for Json {
    fn from(v: serde_json::Value) -> Json {
        use serde_json::Value;
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Json::Int(i),
                None => Json::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Json::Str(s),
            Value::Array(a) => Json::Arr(a.into_iter().map(Json::from).collect()),
            Value::Object(m) => Json::Obj(m.into_iter().map(|(k, v)| (k, v.into())).collect()),
        }
    }
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
    use serde_json::json;

    #[test]
    fn jackson_pretty_matches_flink_layout() {
        let j = json!({
            "nodes": [
                {"id": 1, "type": "a"},
                {"predecessors": [{"id": 1, "side": "second"}]}
            ]
        });
        let expected = "{\n  \"nodes\" : [ {\n    \"id\" : 1,\n    \"type\" : \"a\"\n  }, {\n    \"predecessors\" : [ {\n      \"id\" : 1,\n      \"side\" : \"second\"\n    } ]\n  } ]\n}";
        assert_eq!(to_jackson_pretty(&j), expected);
        assert_eq!(to_jackson_pretty(&json!({})), "{ }");
        assert_eq!(to_jackson_pretty(&json!([])), "[ ]");
        assert_eq!(
            to_jackson_pretty(&json!({"a": [], "b": {}, "c": [1, "x"]})),
            "{\n  \"a\" : [ ],\n  \"b\" : { },\n  \"c\" : [ 1, \"x\" ]\n}"
        );
        assert_eq!(
            to_jackson_pretty(&json!([{}, {"k": {"n": null}}])),
            "[ { }, {\n  \"k\" : {\n    \"n\" : null\n  }\n} ]"
        );
    }

    #[test]
    fn the_builder_prints_through_serde_json() {
        let j = Json::obj()
            .with("d", "a \"q\"\n\\")
            .with("f", 2.0)
            .with("n", Json::Null)
            .with("i", Json::Float(f64::INFINITY));
        assert_eq!(
            j.to_compact(),
            r#"{"d":"a \"q\"\n\\","f":2.0,"n":null,"i":"Infinity"}"#
        );
        let v: serde_json::Value = serde_json::from_str(&j.to_compact()).unwrap();
        assert_eq!(Json::from(v).to_compact(), j.to_compact());
        assert_eq!(
            Json::obj()
                .with("a", vec![Json::Int(1)])
                .to_jackson_pretty(),
            "{\n  \"a\" : [ 1 ]\n}"
        );
    }
}
