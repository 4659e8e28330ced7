use std::fmt;

/// The key a record is looked up by: an integer or a text (a PostgreSQL key column of an
/// integer or text type; the `{key}` of an HTTP URL template), or SQL's NULL.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LookupKey {
    /// An integer key.
    Int(i64),
    /// A text key.
    Text(String),
    /// SQL NULL: equal to nothing, so it has no rows (SQL's `=`, as in Flink's lookup join); it
    /// is never sent to the source.
    Null,
}

impl fmt::Display for LookupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupKey::Int(i) => write!(f, "{i}"),
            LookupKey::Text(s) => f.write_str(s),
            LookupKey::Null => f.write_str("NULL"),
        }
    }
}

impl From<i64> for LookupKey {
    fn from(v: i64) -> Self {
        LookupKey::Int(v)
    }
}
impl From<i32> for LookupKey {
    fn from(v: i32) -> Self {
        LookupKey::Int(v.into())
    }
}
impl From<u32> for LookupKey {
    fn from(v: u32) -> Self {
        LookupKey::Int(v.into())
    }
}
impl From<String> for LookupKey {
    fn from(v: String) -> Self {
        LookupKey::Text(v)
    }
}
impl From<&str> for LookupKey {
    fn from(v: &str) -> Self {
        LookupKey::Text(v.to_string())
    }
}
