//! Flink's partial lookup cache (`lookup.cache = PARTIAL`): the rows of recently looked-up keys,
//! at most `max_rows` keys per subtask, each expiring a time after it was written and/or last
//! read. Eviction is quick_cache's (S3-FIFO, close to LRU for a lookup's access pattern; Flink
//! uses Guava's LRU). One cache per subtask, touched only by the task thread.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{LookupKey, Row};

/// Whether and how a lookup caches rows.
#[derive(Clone, Debug, PartialEq)]
pub enum LookupCache {
    /// Every record asks the source.
    None,
    /// Recently used rows, per subtask, with Flink's partial-cache options.
    Partial {
        /// Keys kept per subtask (`lookup.partial-cache.max-rows`).
        max_rows: usize,
        /// `lookup.partial-cache.expire-after-write`; `None`: never.
        expire_after_write: Option<Duration>,
        /// `lookup.partial-cache.expire-after-access`; `None`: never.
        expire_after_access: Option<Duration>,
        /// Cache "no row" answers too (`lookup.partial-cache.cache-missing-key`, default true).
        cache_missing_key: bool,
    },
}

impl LookupCache {
    /// No cache: every record asks the source.
    pub fn none() -> Self {
        LookupCache::None
    }

    /// At most `max_rows` keys, each expiring `ttl` after it was written (0: never).
    pub fn partial(max_rows: usize, ttl: Duration) -> Self {
        LookupCache::Partial {
            max_rows: max_rows.max(1),
            expire_after_write: (!ttl.is_zero()).then_some(ttl),
            expire_after_access: None,
            cache_missing_key: true,
        }
    }

    /// Also expire a key `ttl` after it was last read (no effect on [`LookupCache::None`]).
    pub fn expire_after_access(mut self, ttl: Duration) -> Self {
        if let LookupCache::Partial {
            expire_after_access,
            ..
        } = &mut self
        {
            *expire_after_access = (!ttl.is_zero()).then_some(ttl);
        }
        self
    }

    /// Whether "no row" answers are cached too (no effect on [`LookupCache::None`]).
    pub fn cache_missing_key(mut self, yes: bool) -> Self {
        if let LookupCache::Partial {
            cache_missing_key, ..
        } = &mut self
        {
            *cache_missing_key = yes;
        }
        self
    }
}

struct Entry {
    rows: Arc<Vec<Row>>,
    written: Instant,
    read: Instant,
}

/// One subtask's cache.
pub(crate) struct Cache {
    entries: quick_cache::unsync::Cache<LookupKey, Entry>,
    write_ttl: Option<Duration>,
    access_ttl: Option<Duration>,
    cache_missing: bool,
}

impl Cache {
    pub(crate) fn new(config: &LookupCache) -> Option<Cache> {
        match config {
            LookupCache::None => None,
            LookupCache::Partial {
                max_rows,
                expire_after_write,
                expire_after_access,
                cache_missing_key,
            } => Some(Cache {
                entries: quick_cache::unsync::Cache::new((*max_rows).max(1)),
                write_ttl: *expire_after_write,
                access_ttl: *expire_after_access,
                cache_missing: *cache_missing_key,
            }),
        }
    }

    /// The cached rows of `key`, unless absent or expired (an expired entry is dropped).
    pub(crate) fn get(&mut self, key: &LookupKey, now: Instant) -> Option<Arc<Vec<Row>>> {
        let expired = {
            let e = self.entries.peek(key)?;
            self.write_ttl
                .is_some_and(|t| now.duration_since(e.written) >= t)
                || self
                    .access_ttl
                    .is_some_and(|t| now.duration_since(e.read) >= t)
        };
        if expired {
            self.entries.remove(key);
            return None;
        }
        let mut e = self.entries.get_mut(key)?;
        e.read = now;
        Some(e.rows.clone())
    }

    pub(crate) fn put(&mut self, key: LookupKey, rows: Arc<Vec<Row>>, now: Instant) {
        if rows.is_empty() && !self.cache_missing {
            return;
        }
        self.entries.insert(
            key,
            Entry {
                rows,
                written: now,
                read: now,
            },
        );
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: i64) -> Arc<Vec<Row>> {
        Arc::new(vec![serde_json::json!(v)])
    }

    #[test]
    fn entries_expire_after_write_and_after_access() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut c = Cache::new(&LookupCache::partial(10, 10 * s)).unwrap();
        c.put(1.into(), rows(1), t0);
        assert_eq!(c.get(&1.into(), t0 + 9 * s), Some(rows(1)));
        assert_eq!(c.get(&1.into(), t0 + 10 * s), None);
        assert_eq!(c.len(), 0);

        let mut c =
            Cache::new(&LookupCache::partial(10, Duration::ZERO).expire_after_access(2 * s))
                .unwrap();
        c.put(1.into(), rows(1), t0);
        // Read every second: it stays; left alone for 2 s, it goes.
        for i in 1..5 {
            assert!(c.get(&1.into(), t0 + i * s).is_some());
        }
        assert_eq!(c.get(&1.into(), t0 + 6 * s), None);
    }

    #[test]
    fn holds_at_most_max_rows_and_missing_keys_only_when_asked() {
        let t0 = Instant::now();
        let mut c = Cache::new(&LookupCache::partial(100, Duration::ZERO)).unwrap();
        for k in 0..1000 {
            c.put(LookupKey::Int(k), rows(k), t0);
        }
        assert!(c.len() <= 100, "{}", c.len());
        c.put("none".into(), Arc::new(vec![]), t0);
        assert!(c.get(&"none".into(), t0).is_some());
        let mut c =
            Cache::new(&LookupCache::partial(10, Duration::ZERO).cache_missing_key(false)).unwrap();
        c.put("none".into(), Arc::new(vec![]), t0);
        assert!(c.get(&"none".into(), t0).is_none());
        assert!(Cache::new(&LookupCache::None).is_none());
    }
}
