//! The byte layout of keyed state: what the LSM backend stores and what a key-group snapshot of
//! either backend contains. Checkpoints and rescaling build on it, so it is documented here and
//! changed only together with a format version.
//!
//! Per state (one LSM keyspace per state name, `state:<name>`):
//!
//! ```text
//! key   = key_group: u16 BE | key_len: u16 BE | key: postcard(K) | suffix
//! value = postcard(...)
//! ```
//!
//! | state              | suffix                 | value                  | entries per key  |
//! |--------------------|------------------------|------------------------|------------------|
//! | Value / Reducing   | (none)                 | `postcard(V)`          | 1                |
//! | Aggregating        | (none)                 | `postcard(ACC)`        | 1                |
//! | List               | (none)                 | `postcard(e1)‖postcard(e2)‖…` | 1         |
//! | Map                | `postcard(UK)`         | `postcard(UV)`         | one per map key  |
//!
//! - The key group comes first, big-endian, so entries sort by key group and a key group (or a
//!   contiguous range of them, as a subtask owns) is one contiguous scan. Max parallelism is at
//!   most 2^15, so two bytes suffice.
//! - The serialized key is length-prefixed, so `key_group | key_len | key` is a prefix of exactly
//!   the entries of that key, whatever the key's serde encoding.
//! - A list is one value: its elements' encodings concatenated (postcard is self-delimiting), as
//!   Flink's RocksDB backend stores lists. An append reads and rewrites the value (a memcpy of
//!   the encoded bytes, no re-encoding): fjall has no merge operator, and one entry per element
//!   would leave a tombstone per element on every rewrite, which later scans of the key must
//!   skip.
//! - Empty lists and maps have no entries; a cleared state has no entries.

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_types::OperatorError;

/// Length of the key-group prefix.
pub const KEY_GROUP_BYTES: usize = 2;

/// Largest serialized key (the length prefix is a `u16`).
pub const MAX_KEY_BYTES: usize = u16::MAX as usize;

/// The 2-byte big-endian key-group prefix every entry of `key_group` starts with.
///
/// # Panics
/// If `key_group` does not fit in 16 bits (max parallelism is at most 2^15).
#[inline]
#[allow(
    clippy::expect_used,
    reason = "sluice-plan rejects a max parallelism above 2^15, so key groups fit in 16 bits"
)]
pub fn key_group_prefix(key_group: u32) -> [u8; 2] {
    u16::try_from(key_group)
        .expect("key groups are below 2^15")
        .to_be_bytes()
}

/// Writes `key_group | len | key_bytes` into `out` (cleared first).
pub fn write_key_prefix(
    key_group: u32,
    key_bytes: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), OperatorError> {
    let len = u16::try_from(key_bytes.len()).map_err(|_| {
        OperatorError::failed(format!(
            "a state key serializes to {} bytes, more than the {MAX_KEY_BYTES} allowed",
            key_bytes.len()
        ))
    })?;
    out.clear();
    out.extend_from_slice(&key_group_prefix(key_group));
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(key_bytes);
    Ok(())
}

/// Splits a stored key into `(key group, serialized key, suffix)`; `None` if it is malformed.
pub fn split_key(bytes: &[u8]) -> Option<(u32, &[u8], &[u8])> {
    if bytes.len() < 4 {
        return None;
    }
    let kg = u32::from(u16::from_be_bytes([bytes[0], bytes[1]]));
    let len = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
    let rest = &bytes[4..];
    if rest.len() < len {
        return None;
    }
    Some((kg, &rest[..len], &rest[len..]))
}

/// Appends the encoding of list `values` (concatenated element encodings) to `out`.
pub fn encode_list_into<T: Serialize>(
    values: &[T],
    out: &mut Vec<u8>,
) -> Result<(), OperatorError> {
    for v in values {
        encode_into(v, out)?;
    }
    Ok(())
}

/// Decodes a list value.
pub fn decode_list<T: DeserializeOwned>(mut bytes: &[u8]) -> Result<Vec<T>, OperatorError> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (v, rest) = postcard::take_from_bytes(bytes).map_err(|e| {
            OperatorError::failed(format!(
                "cannot deserialize a list element as {}: {e}",
                std::any::type_name::<T>()
            ))
        })?;
        out.push(v);
        bytes = rest;
    }
    Ok(out)
}

/// postcard encoding of a state key or value.
pub fn encode<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, OperatorError> {
    postcard::to_allocvec(v)
        .map_err(|e| OperatorError::failed(format!("cannot serialize state: {e}")))
}

/// Appends the postcard encoding of `v` to `out`.
pub fn encode_into<T: Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) -> Result<(), OperatorError> {
    postcard::to_io(v, &mut *out)
        .map(|_| ())
        .map_err(|e| OperatorError::failed(format!("cannot serialize state: {e}")))
}

/// Decodes a postcard-encoded state key or value.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, OperatorError> {
    postcard::from_bytes(bytes).map_err(|e| {
        OperatorError::failed(format!(
            "cannot deserialize state as {}: {e}",
            std::any::type_name::<T>()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_prefix_round_trips_and_sorts_by_key_group_first() {
        let mut a = Vec::new();
        write_key_prefix(3, b"xyz", &mut a).unwrap();
        assert_eq!(a, [0, 3, 0, 3, b'x', b'y', b'z']);
        a.extend_from_slice(&[7, 7]);
        let (kg, k, s) = split_key(&a).unwrap();
        assert_eq!((kg, k, s), (3, &b"xyz"[..], &[7u8, 7][..]));
        let mut b = Vec::new();
        write_key_prefix(256, b"a", &mut b).unwrap();
        assert!(a < b, "key group 3 sorts before key group 256");
        assert_eq!(split_key(&[0, 1, 0]), None);
        assert_eq!(split_key(&[0, 1, 0, 5, 1]), None);
        let long = vec![0u8; MAX_KEY_BYTES + 1];
        assert!(write_key_prefix(0, &long, &mut a).is_err());
    }

    #[test]
    fn values_round_trip_through_postcard() {
        let v = (String::from("k"), -5_i64, vec![1u8, 2]);
        let mut buf = vec![9];
        encode_into(&v, &mut buf).unwrap();
        assert_eq!(buf[1..], encode(&v).unwrap()[..]);
        assert_eq!(decode::<(String, i64, Vec<u8>)>(&buf[1..]).unwrap(), v);
        assert!(decode::<String>(&[0xff]).is_err());
        let list = vec![String::from("a"), String::new(), String::from("bc")];
        let mut bytes = Vec::new();
        encode_list_into(&list, &mut bytes).unwrap();
        assert_eq!(decode_list::<String>(&bytes).unwrap(), list);
        assert_eq!(decode_list::<String>(&[]).unwrap(), Vec::<String>::new());
        assert!(decode_list::<String>(&[5, b'a']).is_err());
    }
}
