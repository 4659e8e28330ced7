//! The library behind `sluice key-group --type i64|string -p P [--max-parallelism M] [KEY...]`.
//!
//! The command answers "where would Flink put this key?" without running a job, in the same CSV
//! shape as the Flink-generated fixture (`key,key_group,subtask`), so its output can be diffed
//! against Flink directly.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use super::java_hash::JavaHash;
use super::key_groups::{assign_to_key_group, check_max_parallelism, key_group_to_subtask};

/// The Java type a command-line key stands for; it decides which `hashCode()` is used, so the
/// same text (`"5"`) lands differently as a `Long` and as a `String`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// A Java `Long`.
    I64,
    /// A Java `String`.
    String,
}

impl KeyType {
    /// The spelling used by `--type`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::I64 => "i64",
            KeyType::String => "string",
        }
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KeyType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "i64" => Ok(KeyType::I64),
            "string" => Ok(KeyType::String),
            other => Err(format!(
                "unknown key type {other:?} (expected \"i64\" or \"string\")"
            )),
        }
    }
}

/// The CSV header matching [`key_group_line`].
pub fn key_group_csv_header() -> &'static str {
    "key,key_group,subtask"
}

/// One CSV line (without line terminator) `key,key_group,subtask` for `raw_key`.
///
/// An `i64` key is printed in canonical form (`+05` → `5`); a string key is printed verbatim,
/// as one CSV field under Sluice's rule ([`sluice_csv`]: RFC 4180-quoted if it contains a comma,
/// quote, CR or LF or has edge spaces). The empty string is a valid key and prints as `""`.
///
/// Errors (instead of panicking) on an `i64` key that does not parse, naming the key, and on an
/// invalid parallelism/max-parallelism pair.
pub fn key_group_line(
    key_type: KeyType,
    raw_key: &str,
    parallelism: u32,
    max_parallelism: u32,
) -> Result<String, String> {
    check_max_parallelism(parallelism, max_parallelism)?;
    let (shown, hash): (Cow<'_, str>, i32) = match key_type {
        KeyType::I64 => {
            let v: i64 = raw_key
                .parse()
                .map_err(|e| format!("invalid i64 key {raw_key:?}: {e}"))?;
            (Cow::Owned(v.to_string()), v.java_hash_code())
        }
        KeyType::String => (sluice_csv::field(raw_key), raw_key.java_hash_code()),
    };
    let key_group = assign_to_key_group(hash, max_parallelism);
    let subtask = key_group_to_subtask(max_parallelism, parallelism, key_group);
    Ok(format!("{shown},{key_group},{subtask}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_flink_fixture_rows() {
        let line = |t, k, p, m| key_group_line(t, k, p, m).unwrap();
        assert_eq!(line(KeyType::I64, "-5", 16, 32_768), "-5,16647,8");
        assert_eq!(line(KeyType::I64, "-4", 5, 1000), "-4,505,2");
        assert_eq!(line(KeyType::String, "a", 3, 128), "a,81,1");
        // The empty key is `""` (Sluice's CSV rule: an empty field would read as NULL).
        assert_eq!(line(KeyType::String, "", 7, 128), "\"\",94,5");
        assert_eq!(
            line(KeyType::String, "VIP_CUSTOMER", 16, 32_768),
            "VIP_CUSTOMER,30217,14"
        );
        assert_eq!(line(KeyType::String, "key_0", 4, 256), "key_0,200,3");
    }

    #[test]
    fn i64_key_is_canonicalised_and_hashed_as_long() {
        let plus = key_group_line(KeyType::I64, "+05", 4, 128).unwrap();
        let plain = key_group_line(KeyType::I64, "5", 4, 128).unwrap();
        assert_eq!(plus, plain);
        assert!(plain.starts_with("5,"));
        // Same text as a String hashes differently ("5".hashCode() == 53, 5L.hashCode() == 5).
        let s = key_group_line(KeyType::String, "5", 4, 32_768).unwrap();
        let l = key_group_line(KeyType::I64, "5", 4, 32_768).unwrap();
        assert_ne!(s, l);
    }

    #[test]
    fn string_keys_are_csv_quoted_when_needed() {
        let kg = |k: &str| assign_to_key_group(k.java_hash_code(), 128);
        let quoted = key_group_line(KeyType::String, "a,b", 1, 128).unwrap();
        assert_eq!(quoted, format!("\"a,b\",{},0", kg("a,b")));
        let quotes = key_group_line(KeyType::String, "say \"hi\"", 1, 128).unwrap();
        assert_eq!(quotes, format!("\"say \"\"hi\"\"\",{},0", kg("say \"hi\"")));
        let newline = key_group_line(KeyType::String, "x\ny", 1, 128).unwrap();
        assert!(newline.starts_with("\"x\ny\","), "{newline}");
        let plain = key_group_line(KeyType::String, "日本 😀", 1, 128).unwrap();
        assert!(plain.starts_with("日本 😀,"), "{plain}");
    }

    #[test]
    fn bad_i64_key_is_named_in_error() {
        let e = key_group_line(KeyType::I64, "12x", 4, 128).unwrap_err();
        assert!(e.contains("12x"), "{e}");
        let e = key_group_line(KeyType::I64, "9223372036854775808", 4, 128).unwrap_err();
        assert!(e.contains("9223372036854775808"), "{e}");
        assert!(key_group_line(KeyType::I64, "", 4, 128).is_err());
    }

    #[test]
    fn bad_parallelism_is_an_error_not_a_panic() {
        assert!(key_group_line(KeyType::String, "a", 0, 128).is_err());
        assert!(key_group_line(KeyType::String, "a", 4, 0).is_err());
        assert!(key_group_line(KeyType::String, "a", 300, 128).is_err());
        assert!(key_group_line(KeyType::String, "a", 4, 40_000).is_err());
    }

    #[test]
    fn key_type_parses_cli_spelling() {
        assert_eq!("i64".parse::<KeyType>(), Ok(KeyType::I64));
        assert_eq!("string".parse::<KeyType>(), Ok(KeyType::String));
        assert!("long".parse::<KeyType>().unwrap_err().contains("long"));
        assert_eq!(KeyType::String.to_string(), "string");
        assert_eq!(key_group_csv_header(), "key,key_group,subtask");
    }
}
