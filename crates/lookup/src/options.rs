//! The lookup's plan options: what the node declares (every key, with its value) and what the
//! operator reads back from its context at deployment. Names after Flink: the JDBC connector's
//! `lookup.cache`, `lookup.partial-cache.*`, `lookup.max-retries`; the async mode after the
//! planner's `table.exec.async-lookup.*` (and the `LOOKUP` hint's `async`, `output-mode`,
//! `capacity`).

use std::time::Duration;

use sluice_types::duration::{format_duration, parse_duration};

use crate::{LookupCache, LookupError};

/// `true`: async mode; `false`: sync (one request at a time on the task thread).
pub const ASYNC: &str = "lookup.async";
/// Requests in flight per subtask in async mode (Flink's default 100).
pub const CAPACITY: &str = "lookup.async.capacity";
/// `ORDERED` (input order) or `ALLOW_UNORDERED` (completion order, never across a watermark).
pub const OUTPUT_MODE: &str = "lookup.async.output-mode";
/// `NONE` or `PARTIAL`.
pub const CACHE: &str = "lookup.cache";
/// Keys kept per subtask by a partial cache.
pub const MAX_ROWS: &str = "lookup.partial-cache.max-rows";
/// How long after it was written a cached row expires (`0`: never).
pub const EXPIRE_AFTER_WRITE: &str = "lookup.partial-cache.expire-after-write";
/// How long after it was last read a cached row expires (`0`: never).
pub const EXPIRE_AFTER_ACCESS: &str = "lookup.partial-cache.expire-after-access";
/// Whether "no row" answers are cached too.
pub const CACHE_MISSING_KEY: &str = "lookup.partial-cache.cache-missing-key";
/// Retries after a failed attempt (Flink JDBC's default 3).
pub const MAX_RETRIES: &str = "lookup.max-retries";
/// How long one attempt may take.
pub const TIMEOUT: &str = "lookup.timeout";
/// The pause before a retry.
pub const RETRY_DELAY: &str = "lookup.retry-delay";

/// How requests are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookupMode {
    /// One request at a time; the task thread waits for each.
    Sync,
    /// Up to `capacity` requests in flight per subtask; `ordered`: output in input order.
    Async {
        /// Requests in flight at most per subtask.
        capacity: usize,
        /// Whether output keeps input order.
        ordered: bool,
    },
}

/// A lookup's settings; stored as plan options on its node.
#[derive(Clone, Debug, PartialEq)]
pub struct LookupOptions {
    /// Sync or async, and how many requests in flight.
    pub mode: LookupMode,
    /// Whether and how rows are cached.
    pub cache: LookupCache,
    /// Retries after a failed attempt.
    pub max_retries: u32,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// The pause before a retry.
    pub retry_delay: Duration,
}

impl Default for LookupOptions {
    fn default() -> Self {
        LookupOptions {
            mode: LookupMode::Sync,
            cache: LookupCache::None,
            max_retries: 3,
            timeout: Duration::from_secs(10),
            retry_delay: Duration::from_millis(100),
        }
    }
}

impl LookupOptions {
    /// Sync mode with the defaults: one request at a time, no cache.
    pub fn sync() -> Self {
        LookupOptions::default()
    }

    /// Async mode, output in input order.
    pub fn ordered(capacity: usize) -> Self {
        LookupOptions {
            mode: LookupMode::Async {
                capacity,
                ordered: true,
            },
            ..LookupOptions::default()
        }
    }

    /// Async mode, output in completion order.
    pub fn unordered(capacity: usize) -> Self {
        LookupOptions {
            mode: LookupMode::Async {
                capacity,
                ordered: false,
            },
            ..LookupOptions::default()
        }
    }

    /// Sets the cache.
    pub fn cache(mut self, cache: LookupCache) -> Self {
        self.cache = cache;
        self
    }

    /// Sets the retries after a failed attempt.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets how long one attempt may take.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Sets the pause before a retry.
    pub fn retry_delay(mut self, d: Duration) -> Self {
        self.retry_delay = d;
        self
    }

    /// Requests in flight at most per subtask (1 in sync mode).
    pub fn capacity(&self) -> usize {
        match self.mode {
            LookupMode::Sync => 1,
            LookupMode::Async { capacity, .. } => capacity,
        }
    }

    /// Every key with its value: the node declares them all, so the fixer may change any.
    pub fn to_plan_options(&self) -> Vec<(String, String)> {
        let (is_async, capacity, ordered) = match self.mode {
            LookupMode::Sync => (false, 100, true),
            LookupMode::Async { capacity, ordered } => (true, capacity, ordered),
        };
        let (cache, max_rows, write, access, missing) = match &self.cache {
            LookupCache::None => ("NONE", 10_000, None, None, true),
            LookupCache::Partial {
                max_rows,
                expire_after_write,
                expire_after_access,
                cache_missing_key,
            } => (
                "PARTIAL",
                *max_rows,
                *expire_after_write,
                *expire_after_access,
                *cache_missing_key,
            ),
        };
        let dur = |d: Option<Duration>| d.map_or("0".to_string(), format_duration);
        [
            (ASYNC, is_async.to_string()),
            (CAPACITY, capacity.to_string()),
            (
                OUTPUT_MODE,
                if ordered {
                    "ORDERED"
                } else {
                    "ALLOW_UNORDERED"
                }
                .to_string(),
            ),
            (CACHE, cache.to_string()),
            (MAX_ROWS, max_rows.to_string()),
            (EXPIRE_AFTER_WRITE, dur(write)),
            (EXPIRE_AFTER_ACCESS, dur(access)),
            (CACHE_MISSING_KEY, missing.to_string()),
            (MAX_RETRIES, self.max_retries.to_string()),
            (TIMEOUT, format_duration(self.timeout)),
            (RETRY_DELAY, format_duration(self.retry_delay)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Reads the options back (last value of each key wins; missing keys keep their
    /// defaults); a bad value is an error naming the key.
    pub fn from_plan_options(options: &[(String, String)]) -> Result<LookupOptions, LookupError> {
        let get = |k: &str| {
            options
                .iter()
                .rfind(|(key, _)| key == k)
                .map(|(_, v)| v.trim())
        };
        let bad = |k: &str, v: &str, reason: &str| LookupError::Option {
            key: k.to_string(),
            value: v.to_string(),
            reason: reason.to_string(),
        };
        let boolean = |k: &str, default: bool| match get(k) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(bad(k, v, "expected true or false")),
        };
        let count = |k: &str, default: u64, min: u64| match get(k) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n >= min => Ok(n),
                _ => Err(bad(
                    k,
                    v,
                    &format!("expected a whole number of at least {min}"),
                )),
            },
        };
        let duration = |k: &str, default: Duration| match get(k) {
            None => Ok(default),
            Some(v) => parse_duration(v).map_err(|e| bad(k, v, &e.to_string())),
        };
        let d = LookupOptions::default();
        let is_async = boolean(ASYNC, false)?;
        let capacity = count(CAPACITY, 100, 1)? as usize;
        let ordered = match get(OUTPUT_MODE) {
            None => true,
            Some(v) if v.eq_ignore_ascii_case("ORDERED") => true,
            Some(v) if v.eq_ignore_ascii_case("ALLOW_UNORDERED") => false,
            Some(v) => return Err(bad(OUTPUT_MODE, v, "expected ORDERED or ALLOW_UNORDERED")),
        };
        let mode = if is_async {
            LookupMode::Async { capacity, ordered }
        } else {
            LookupMode::Sync
        };
        let nonzero = |d: Duration| (!d.is_zero()).then_some(d);
        let cache = match get(CACHE) {
            None => LookupCache::None,
            Some(v) if v.eq_ignore_ascii_case("NONE") => LookupCache::None,
            Some(v) if v.eq_ignore_ascii_case("PARTIAL") => LookupCache::Partial {
                max_rows: count(MAX_ROWS, 10_000, 1)? as usize,
                expire_after_write: nonzero(duration(EXPIRE_AFTER_WRITE, Duration::ZERO)?),
                expire_after_access: nonzero(duration(EXPIRE_AFTER_ACCESS, Duration::ZERO)?),
                cache_missing_key: boolean(CACHE_MISSING_KEY, true)?,
            },
            Some(v) => {
                return Err(bad(
                    CACHE,
                    v,
                    "expected NONE or PARTIAL (FULL is not supported)",
                ))
            }
        };
        let timeout = duration(TIMEOUT, d.timeout)?;
        if timeout.is_zero() {
            return Err(bad(TIMEOUT, "0", "a timeout must be above 0"));
        }
        Ok(LookupOptions {
            mode,
            cache,
            max_retries: count(MAX_RETRIES, d.max_retries.into(), 0)?.min(u32::MAX.into()) as u32,
            timeout,
            retry_delay: duration(RETRY_DELAY, d.retry_delay)?,
        })
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_through_the_plan() {
        for o in [
            LookupOptions::sync(),
            LookupOptions::ordered(64).cache(LookupCache::partial(500, Duration::from_secs(60))),
            LookupOptions::unordered(8)
                .max_retries(0)
                .timeout(Duration::from_millis(250))
                .retry_delay(Duration::from_micros(1500))
                .cache(
                    LookupCache::partial(10, Duration::ZERO)
                        .expire_after_access(Duration::from_secs(5))
                        .cache_missing_key(false),
                ),
        ] {
            assert_eq!(
                LookupOptions::from_plan_options(&o.to_plan_options()).unwrap(),
                o
            );
        }
    }

    #[test]
    fn the_last_value_wins_and_bad_values_are_named() {
        let mut p = LookupOptions::sync().to_plan_options();
        p.push((ASYNC.into(), "true".into()));
        p.push((CAPACITY.into(), "16".into()));
        assert_eq!(
            LookupOptions::from_plan_options(&p).unwrap().mode,
            LookupMode::Async {
                capacity: 16,
                ordered: true
            }
        );
        p.push((CAPACITY.into(), "0".into()));
        let e = LookupOptions::from_plan_options(&p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("lookup.async.capacity = '0'"), "{e}");
        let e = LookupOptions::from_plan_options(&[(TIMEOUT.into(), "5 parsecs".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("lookup.timeout"), "{e}");
        assert_eq!(parse_duration("10 s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
    }
}
