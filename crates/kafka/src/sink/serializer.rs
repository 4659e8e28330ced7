//! How a record becomes a Kafka key and value.

use std::sync::Arc;

/// The key (`None`: no key, so the partitioner spreads records) and value bytes of a record.
pub type KeyValue = (Option<Vec<u8>>, Vec<u8>);

type SerializeFn<T> = dyn Fn(&T) -> Result<KeyValue, String> + Send + Sync;

/// Turns a record into its Kafka key and value. Cheap to clone (shared by every subtask).
pub struct Serializer<T>(Arc<SerializeFn<T>>);

impl<T> Clone for Serializer<T> {
    fn clone(&self) -> Self {
        Serializer(self.0.clone())
    }
}

impl<T: 'static> Serializer<T> {
    /// Any function from a record to its key and value bytes; an `Err` fails the job with the
    /// message (a record the program itself cannot encode is a bug, not bad input).
    pub fn new(f: impl Fn(&T) -> Result<KeyValue, String> + Send + Sync + 'static) -> Self {
        Serializer(Arc::new(f))
    }

    /// UTF-8 strings: `f` gives the key (or `None`) and the value.
    pub fn utf8(f: impl Fn(&T) -> (Option<String>, String) + Send + Sync + 'static) -> Self {
        Serializer::new(move |r| {
            let (k, v) = f(r);
            Ok((k.map(String::into_bytes), v.into_bytes()))
        })
    }

    /// The record as a JSON value (serde), keyed by `key` (UTF-8; `None`: no key).
    pub fn json(key: impl Fn(&T) -> Option<String> + Send + Sync + 'static) -> Self
    where
        T: serde::Serialize,
    {
        Serializer::new(move |r| {
            let v = serde_json::to_vec(r).map_err(|e| format!("JSON: {e}"))?;
            Ok((key(r).map(String::into_bytes), v))
        })
    }

    pub(crate) fn serialize(&self, r: &T) -> Result<KeyValue, String> {
        (self.0)(r)
    }
}
