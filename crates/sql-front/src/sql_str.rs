//! [`SqlStr`], the text of a SQL string value: static text or shared text, one type.
//!
//! Why it exists: a source often produces text that already lives for the whole program (the
//! Nexmark generator's channels, URLs and cities are slices of process-wide tables). Copying such
//! text into a fresh `Arc<str>` per event cost an allocation, a copy and a free per string per row,
//! which the hand-written jobs never pay. A `SqlStr` keeps that text borrowed (`&'static str`), and
//! a string function that returns a piece of a static input (SUBSTRING, SPLIT_INDEX, TRIM,
//! REGEXP_EXTRACT) returns a static piece, still without allocating. Text built at run time (a
//! CONCAT, a cast, a decoded record) is shared behind an `Arc<str>` as before.
//!
//! The two forms are indistinguishable to everything else: a `SqlStr` is equal, ordered and
//! hashed by its content, dereferences to `str`, and serializes exactly as a `str` (the same bytes
//! as the `Arc<str>` it replaced: savepoints and the network exchange do not change). What is read
//! back is always shared text.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The text of a SQL string value: borrowed for the program's life, or shared.
#[derive(Clone)]
pub enum SqlStr {
    /// Text that lives as long as the program (a literal, a generator's table): no allocation.
    Static(&'static str),
    /// Text made at run time, shared by reference count.
    Shared(Arc<str>),
}

impl SqlStr {
    /// Static text, borrowed (no allocation, no copy).
    pub const fn from_static(s: &'static str) -> SqlStr {
        SqlStr::Static(s)
    }

    /// The text, as a `str`.
    #[inline]
    pub fn as_str(&self) -> &str {
        match self {
            SqlStr::Static(s) => s,
            SqlStr::Shared(s) => s,
        }
    }

    /// The piece `range` of this text: static text gives a static piece (no allocation), shared
    /// text a fresh shared copy of the piece. The whole text is returned as a clone (no copy).
    /// Panics, like slicing a `str`, if `range` is out of bounds or not on character boundaries.
    pub fn slice(&self, range: std::ops::Range<usize>) -> SqlStr {
        match self {
            SqlStr::Static(s) => SqlStr::Static(&s[range]),
            SqlStr::Shared(s) if range.start == 0 && range.end == s.len() => self.clone(),
            SqlStr::Shared(s) => SqlStr::Shared(Arc::from(&s[range])),
        }
    }

    /// The piece of this text that `piece` is (a sub-slice of `self.as_str()`, as returned by
    /// `str::trim`, `split`, a regex match, …): static when this text is static. A `piece` that
    /// does not lie inside this text is copied.
    pub fn sub(&self, piece: &str) -> SqlStr {
        let whole = self.as_str();
        let start = (piece.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
        if start <= whole.len() && piece.len() <= whole.len() - start {
            self.slice(start..start + piece.len())
        } else {
            SqlStr::from(piece)
        }
    }
}

impl Deref for SqlStr {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SqlStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for SqlStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for SqlStr {
    /// A shared copy of `s` (use [`SqlStr::from_static`] for static text).
    fn from(s: &str) -> SqlStr {
        SqlStr::Shared(Arc::from(s))
    }
}

impl From<String> for SqlStr {
    fn from(s: String) -> SqlStr {
        SqlStr::Shared(Arc::from(s))
    }
}

impl From<Arc<str>> for SqlStr {
    fn from(s: Arc<str>) -> SqlStr {
        SqlStr::Shared(s)
    }
}

impl PartialEq for SqlStr {
    #[inline]
    fn eq(&self, other: &SqlStr) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SqlStr {}

impl PartialEq<str> for SqlStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SqlStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for SqlStr {
    fn partial_cmp(&self, other: &SqlStr) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SqlStr {
    #[inline]
    fn cmp(&self, other: &SqlStr) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for SqlStr {
    /// As `str` hashes (and so as the `Arc<str>` it replaced).
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for SqlStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SqlStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl Serialize for SqlStr {
    /// As a `str`, whichever the form (the bytes an `Arc<str>` wrote).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SqlStr {
    /// Shared text, read as an `Arc<str>` is.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SqlStr, D::Error> {
        Arc::<str>::deserialize(deserializer).map(SqlStr::Shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash<T: Hash + ?Sized>(v: &T) -> u64 {
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn both_forms_are_equal_ordered_and_hashed_by_content() {
        let s = SqlStr::from_static("channel");
        let a = SqlStr::from("channel");
        assert_eq!(s, a);
        assert_eq!(s.cmp(&a), Ordering::Equal);
        assert_eq!(hash(&s), hash(&a));
        assert_eq!(hash(&s), hash(&Arc::<str>::from("channel")));
        let b = SqlStr::from("b");
        assert!(SqlStr::from_static("a") < b);
        assert_eq!(&*s, "channel");
    }

    #[test]
    fn serializes_exactly_as_arc_str() {
        for s in [
            "",
            "Google",
            "ünïcödé text with 130 chars ".repeat(5).as_str(),
        ] {
            let arc: Arc<str> = Arc::from(s);
            let want = postcard::to_stdvec(&arc).unwrap();
            let shared = postcard::to_stdvec(&SqlStr::from(s)).unwrap();
            let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
            let stat = postcard::to_stdvec(&SqlStr::from_static(leaked)).unwrap();
            assert_eq!(shared, want);
            assert_eq!(stat, want);
            let back: SqlStr = postcard::from_bytes(&want).unwrap();
            assert_eq!(back, SqlStr::from(s));
        }
        // Pinned: a varint length, then the UTF-8 bytes.
        assert_eq!(
            postcard::to_stdvec(&SqlStr::from_static("abc")).unwrap(),
            vec![3, b'a', b'b', b'c']
        );
    }

    #[test]
    fn pieces_of_static_text_stay_static() {
        let s = SqlStr::from_static("https://www.nexmark.com/a?channel_id=7");
        let piece = s.sub(s.trim_start_matches("https://"));
        assert!(matches!(piece, SqlStr::Static(_)));
        assert_eq!(&*piece, "www.nexmark.com/a?channel_id=7");
        assert!(matches!(s.slice(0..5), SqlStr::Static("https")));
        let shared = SqlStr::from("hello world");
        assert!(matches!(shared.slice(0..5), SqlStr::Shared(_)));
        assert_eq!(&*shared.slice(6..11), "world");
        // A piece from elsewhere is copied, not trusted.
        assert_eq!(&*s.sub("elsewhere"), "elsewhere");
        assert_eq!(&*s.sub(""), "");
    }
}
