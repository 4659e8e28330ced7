//! Turning a Kafka record into a Sluice record. A record that fails goes to the job's
//! dead-letter output (topic, partition, offset and the error), is counted, and the job goes on.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;

/// A record as fetched, borrowed from the consumer's buffer.
#[derive(Debug, Clone, Copy)]
pub struct KafkaRecord<'a> {
    /// The topic it came from.
    pub topic: &'a str,
    /// Its partition.
    pub partition: i32,
    /// Its offset in the partition.
    pub offset: i64,
    /// The record's key, if any.
    pub key: Option<&'a [u8]>,
    /// `None` for a tombstone.
    pub payload: Option<&'a [u8]>,
    /// Kafka's record timestamp (create or log-append time), ms since the epoch.
    pub timestamp_ms: Option<i64>,
}

/// Decodes one Kafka record; `Err(reason)` sends it to the dead-letter output.
pub trait KafkaDeserializer<T>: Send + Sync + 'static {
    /// Decodes `record`; `Err(reason)` makes it a dead letter.
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<T, String>;
}

/// Any `Fn(&KafkaRecord) -> Result<T, String>` is a deserializer (e.g. one that keeps the
/// Kafka timestamp in the record).
impl<T, F> KafkaDeserializer<T> for F
where
    F: Fn(&KafkaRecord<'_>) -> Result<T, String> + Send + Sync + 'static,
{
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<T, String> {
        self(record)
    }
}

/// The value's bytes as they are (a tombstone is an empty vector).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawBytes;

impl KafkaDeserializer<Vec<u8>> for RawBytes {
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<Vec<u8>, String> {
        Ok(record.payload.unwrap_or_default().to_vec())
    }
}

/// The value as one UTF-8 line: a trailing `\n` or `\r\n` is removed; invalid UTF-8 and
/// tombstones are dead letters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lines;

impl KafkaDeserializer<String> for Lines {
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<String, String> {
        let bytes = record
            .payload
            .ok_or_else(|| "record has no value (tombstone)".to_string())?;
        let mut s =
            std::str::from_utf8(bytes).map_err(|e| format!("value is not valid UTF-8 ({e})"))?;
        s = s.strip_suffix('\n').unwrap_or(s);
        s = s.strip_suffix('\r').unwrap_or(s);
        Ok(s.to_string())
    }
}

/// The value as JSON into `T` (serde); a value that does not parse as `T` is a dead letter
/// with serde_json's message (line and column).
pub struct Json<T>(PhantomData<fn() -> T>);

impl<T> Json<T> {
    /// A JSON deserializer into `T`.
    pub fn new() -> Self {
        Json(PhantomData)
    }
}

impl<T> Default for Json<T> {
    fn default() -> Self {
        Json::new()
    }
}

impl<T: DeserializeOwned + 'static> KafkaDeserializer<T> for Json<T> {
    fn deserialize(&self, record: &KafkaRecord<'_>) -> Result<T, String> {
        let bytes = record
            .payload
            .ok_or_else(|| "record has no value (tombstone)".to_string())?;
        serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(payload: Option<&[u8]>) -> KafkaRecord<'_> {
        KafkaRecord {
            topic: "t",
            partition: 0,
            offset: 7,
            key: None,
            payload,
            timestamp_ms: Some(1),
        }
    }

    #[test]
    fn lines_bytes_and_json() {
        assert_eq!(Lines.deserialize(&rec(Some(b"a,1\r\n"))).unwrap(), "a,1");
        assert!(Lines
            .deserialize(&rec(Some(&[0xff])))
            .unwrap_err()
            .contains("UTF-8"));
        assert!(Lines
            .deserialize(&rec(None))
            .unwrap_err()
            .contains("tombstone"));
        assert_eq!(RawBytes.deserialize(&rec(None)).unwrap(), Vec::<u8>::new());
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct E {
            id: u32,
        }
        assert_eq!(
            Json::<E>::new()
                .deserialize(&rec(Some(br#"{"id":3}"#)))
                .unwrap(),
            E { id: 3 }
        );
        let e = Json::<E>::new()
            .deserialize(&rec(Some(b"{oops")))
            .unwrap_err();
        assert!(e.contains("invalid JSON") && e.contains("column"), "{e}");
    }
}
