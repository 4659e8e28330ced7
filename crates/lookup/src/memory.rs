//! A lookup table held in memory: rows loaded once (a file read before the job starts, as Flink's
//! legacy `CsvTableSource` loads its whole file into a map when its lookup function opens) and
//! looked up by key without I/O. Sync mode answers it on the task thread without entering the
//! subtask's runtime (no request can fail or time out); async mode answers at once.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::{LookupKey, Row};

/// Rows by key, shared by every subtask (cloning shares them).
#[derive(Clone)]
pub struct MemoryLookup {
    name: String,
    rows: Arc<HashMap<LookupKey, Arc<Vec<Row>>>>,
    none: Arc<Vec<Row>>,
}

impl fmt::Debug for MemoryLookup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryLookup")
            .field("name", &self.name)
            .field("keys", &self.rows.len())
            .finish()
    }
}

impl MemoryLookup {
    /// The table `name` (for names and errors) holding `rows`: each key's rows in order (a row
    /// whose key is [`LookupKey::Null`] is left out: no key equals it).
    pub fn new(name: &str, rows: impl IntoIterator<Item = (LookupKey, Row)>) -> MemoryLookup {
        let mut by_key: HashMap<LookupKey, Vec<Row>> = HashMap::new();
        // A NULL key equals nothing: such a row can never be found.
        for (k, r) in rows.into_iter().filter(|(k, _)| *k != LookupKey::Null) {
            by_key.entry(k).or_default().push(r);
        }
        MemoryLookup {
            name: name.to_string(),
            rows: Arc::new(by_key.into_iter().map(|(k, v)| (k, Arc::new(v))).collect()),
            none: Arc::new(Vec::new()),
        }
    }

    /// How many distinct keys the table holds.
    pub fn keys(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn describe(&self) -> String {
        format!("in-memory table {} ({} keys)", self.name, self.rows.len())
    }

    /// The rows of `key` (empty: none), shared.
    pub(crate) fn get(&self, key: &LookupKey) -> Arc<Vec<Row>> {
        self.rows.get(key).unwrap_or(&self.none).clone()
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_kept_per_key_in_order() {
        let t = MemoryLookup::new(
            "side",
            [
                (LookupKey::Int(1), Row::from("a")),
                (LookupKey::Int(2), Row::from("b")),
                (LookupKey::Int(1), Row::from("c")),
                (LookupKey::Null, Row::from("d")),
            ],
        );
        assert_eq!(t.keys(), 2);
        assert_eq!(
            *t.get(&LookupKey::Int(1)),
            vec![Row::from("a"), Row::from("c")]
        );
        assert!(t.get(&LookupKey::Int(3)).is_empty());
        assert!(t.get(&LookupKey::Text("1".into())).is_empty());
        assert!(t.get(&LookupKey::Null).is_empty());
    }
}
