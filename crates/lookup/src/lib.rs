//! Lookup joins (Flink SQL's `JOIN … FOR SYSTEM_TIME AS OF … ` against a lookup table): every
//! record of a stream is enriched with the rows an external system holds for its key.
//!
//! Main types: [`LookupSource`] (a PostgreSQL table by key, [`PostgresLookup`]; an HTTP JSON
//! service by URL template, [`HttpLookup`]; rows loaded into memory, [`MemoryLookup`]), [`LookupOptions`] (sync or async [`LookupMode`],
//! [`LookupCache`], retries and timeout), [`LookupExt::lookup`] (the DataStream call),
//! [`LookupStats`] (a source's counters, summed over its subtasks), [`LookupKey`], [`LookupError`].
//!
//! The options are **plan options** of the lookup's node ([`options`]: `lookup.async`,
//! `lookup.async.capacity`, `lookup.cache`, `lookup.partial-cache.*`, …), read by the operator
//! from its context when it is deployed, so a plan change (the doctor's "async lookup with
//! capacity N") turns any job's lookup asynchronous without touching its code.
//!
//! Semantics, after Flink:
//! - `join_fn(&record, Some(&row))` is called once per row the source holds for the key, and
//!   `join_fn(&record, None)` once when it holds none; returning `None` drops the output, so an
//!   inner join returns `None` for a missing row and a left join pads it.
//!   [`LookupExt::lookup_rows_with`] hands the join all rows of the key at once instead (SQL's
//!   `LEFT JOIN` with a condition on the row pads once when no row passes). A
//!   [`LookupKey::Null`] has no rows and is never sent to the source.
//! - Sync mode: one request at a time on the task thread (Flink's `LookupFunction`). Async mode:
//!   sluice-runtime's async wait operator over the lookup (Flink's `AsyncLookupFunction` under
//!   `AsyncWaitOperator`, `table.exec.async-lookup.buffer-capacity`): up to `capacity` requests
//!   in flight per subtask; `ORDERED` emits in input order (identical output to sync mode),
//!   `ALLOW_UNORDERED` in completion order but never across a watermark (the same multiset); the
//!   inputs in flight are part of checkpoints and re-issued on restore (exactly once). Records
//!   must be serde types for that (`Serialize + DeserializeOwned`), in both modes, since the mode
//!   is a plan option.
//! - A failed request (an error status other than 404, a dropped connection, a timeout of
//!   `lookup.timeout`) is retried `lookup.max-retries` times (Flink JDBC's default 3),
//!   `lookup.retry-delay` apart; when the last attempt fails the job fails with the key, the
//!   source and the last error (Flink's lookup functions throw, failing the task, and the
//!   restart strategy decides). `404` means "no row": not an error, and cached like an empty
//!   result (`lookup.partial-cache.cache-missing-key`, default true).
//! - Metrics per subtask, Flink's lookup-cache names: `hitCount`, `missCount`, `loadCount`,
//!   `numLoadFailures` (every failed attempt), `latestLoadTime` (ms), `numCachedRecords`; and
//!   `loadTimeUsTotal`, `inFlight`, `capacity` for the async mode and the doctor, and
//!   `lookupKeyRepeatPerMille`: how often the keys repeat among the last 1024 lookups
//!   (`1 − distinct / lookups`, ‰; kept with or without a cache, see `repeat`), the doctor's
//!   evidence for proposing a cache.

#![warn(missing_docs)]

mod api;
mod async_fn;
mod cache;
mod error;
mod http;
mod key;
mod memory;
mod metrics;
mod operator;
pub mod options;
mod postgres;
mod repeat;
mod source;

pub use api::LookupExt;
pub use cache::LookupCache;
pub use error::LookupError;
pub use http::HttpLookup;
pub use key::LookupKey;
pub use memory::MemoryLookup;
pub use metrics::{LookupStats, LookupStatsSnapshot};
pub use options::{LookupMode, LookupOptions};
pub use postgres::PostgresLookup;
pub use source::{LookupSource, Row};
